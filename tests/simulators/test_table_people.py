"""The virtual table's people and payout moves without a daemon: the staff roster and its
PINs, the patrons' proofs, the drawn signature, and the dealer paying and taking on the
simulated chip reader (simulators.staff, simulators.payout)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from drivers.id_codec import encode_tap
from game.staff import StaffRoster, secret_matches
from simulators.payout import pay_spots
from simulators.rfid import RfidReaderSimulator
from simulators.staff import VirtualStaff, patron_proof, seat_hashes, signature_png
from simulators.table_play import MARKER_SET, play_registry


async def test_the_roster_enrols_a_dealer_and_a_supervisor_by_pin_hash() -> None:
    staff = VirtualStaff("t07")
    roster = StaffRoster.decode((await staff.roster(4)).args())  # as the table reads it
    assert roster.version == 4 and roster.card_salt is not None
    dealer, supervisor = roster.member("VD-T07"), roster.member("VS-T07")
    assert dealer is not None and dealer.role == "dealer"
    assert supervisor is not None and supervisor.role == "supervisor"
    assert dealer.pin_hash is not None and supervisor.pin_hash is not None
    # hashed at the simulator's cost: only a simulated table accepts them
    assert dealer.pin_hash.startswith("scrypt$16$8$1$")
    assert secret_matches(staff.dealer.pin, dealer.pin_hash, simulated=True)
    assert not secret_matches(staff.supervisor.pin, dealer.pin_hash, simulated=True)
    assert not secret_matches(staff.dealer.pin, dealer.pin_hash)
    assert staff.dealer.pin not in str(roster.args())


async def test_a_patrons_proofs_are_the_same_on_every_run_and_only_hashed_at_seating() -> None:
    proof = patron_proof(2026, "E-1")
    assert proof == patron_proof(2026, "E-1") != patron_proof(2026, "E-2")
    assert proof != patron_proof(2027, "E-1")
    assert len(proof.card_number) == 16 and proof.card_number.isdigit()
    assert encode_tap(proof.card_number, "track2").startswith(b";" + proof.card_number.encode())
    hashes = await seat_hashes(proof)
    assert proof.card_number not in str(hashes) and proof.pin not in str(hashes)
    assert secret_matches(proof.card_number, hashes["card_hash"], simulated=True)
    assert secret_matches(proof.pin, hashes["pin_hash"], simulated=True)
    assert not secret_matches(proof.pin, hashes["pin_hash"])  # a table with a real device


def test_the_drawn_signature_is_a_png_the_console_accepts() -> None:
    url = signature_png(1, "E-1")
    assert url == signature_png(1, "E-1") != signature_png(1, "E-2")
    prefix, _, data = url.partition(",")
    png = base64.b64decode(data, validate=True)
    assert prefix == "data:image/png;base64"
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) >= 200  # the gate's minimum


def _sim() -> RfidReaderSimulator:
    return RfidReaderSimulator(registry=play_registry(), seat_entries={})


def _cents(sim: RfidReaderSimulator, seat: int, spot: str) -> int:
    return sum(c.value_cents for u in sim.chips_on(seat, spot)
               if (c := sim.registry.lookup(u)) is not None and c.chip_set != MARKER_SET)


def _line(seat: int, spot: str, result: str, stake: int, net: int, *,
          state: str = "waiting") -> dict[str, Any]:
    return {"seat": seat, "spot": spot, "result": result, "stake": stake, "net": net,
            "expected": max(0, stake + net), "held": stake, "state": state}


def test_the_dealer_takes_losers_pays_winners_and_leaves_paid_spots() -> None:
    sim = _sim()
    sim.place(1, "ante", 2500)
    sim.place(1, "odds", 2500)
    sim.place(2, "ante", 5000)
    marker = next(c.uid for c in sim.registry if c.chip_set == MARKER_SET)
    sim.place(2, "trips_plus", 2500, uids=[marker])
    spots = [_line(1, "ante", "lose", 2500, -2500), _line(1, "odds", "win", 2500, 3750),
             _line(2, "ante", "push", 5000, 0, state="paid"),
             _line(2, "trips_plus", "win", 2500, 9000)]
    assert pay_spots(sim, spots) is None
    assert _cents(sim, 1, "ante") == 0 and not sim.chips_on(1, "ante")
    assert _cents(sim, 1, "odds") == 6250  # 3:2 on R25: R37.50 paid in change
    assert _cents(sim, 2, "ante") == 5000
    assert _cents(sim, 2, "trips_plus") == 11_500 and marker not in sim.chips_on(2, "trips_plus")


@pytest.mark.parametrize("winner", [True, False])
def test_an_overpay_is_one_chip_more_on_a_winning_spot_only(winner: bool) -> None:
    sim = _sim()
    sim.place(3, "ante", 10_000)
    sim.place(3, "odds", 10_000)
    spots = [_line(3, "ante", "win" if winner else "lose", 10_000, 10_000 if winner else -10_000),
             _line(3, "odds", "push", 10_000, 0, state="paid")]
    over = pay_spots(sim, spots, overpay=True)
    if not winner:
        assert over is None and _cents(sim, 3, "ante") == 0
        return
    assert over is not None and (over.seat, over.spot) == (3, "ante")
    assert over.cents == min(c.value_cents for c in sim.registry if c.chip_set != MARKER_SET)
    assert over.uid in sim.chips_on(3, "ante")
    assert _cents(sim, 3, "ante") == 20_000 + over.cents
    sim.remove(3, "ante", [over.uid])  # taken back: the spot holds what it must
    assert _cents(sim, 3, "ante") == 20_000
