"""The virtual dealer's payout after a hand settles: for every spot the table says is not yet
paid (its status ``payout``), take the losing chips, pay a winner from the float, and take a
used bonus marker, on the simulated RFID reader, so that each spot holds what the table
expects. A fault can be asked for: one chip too many on one winning spot (an overpay).

Pure moves on `simulators.rfid.RfidReaderSimulator`; waiting for the table to see them is the
caller's (simulators.table_play).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulators.felt import ChipTable

__all__ = ["Overpaid", "only_over_left", "overpay_seen", "pay_spots"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Overpaid:
    """The chip paid too many: where it lies and which chip it is (to take it back)."""

    seat: int
    spot: str
    uid: bytes
    cents: int


def _value(sim: ChipTable, uids: frozenset[bytes]) -> int:
    """Cents of the value chips among ``uids`` (markers and unknown chips count nothing)."""
    registry = sim.registry
    total = 0
    for uid in uids:
        chip = registry.lookup(uid)
        if chip is not None and chip.chip_set == registry.chip_set:
            total += chip.value_cents
    return total


def _spare_chip(sim: ChipTable, taken: set[bytes]) -> tuple[bytes, int]:
    """The float's smallest free chip (one chip too many), not one just taken."""
    on_table = {u for uids in sim.table().values() for u in uids}
    free = [c for c in sim.registry if c.chip_set == sim.registry.chip_set
            and sim.owner_of(c.uid) is None and c.uid not in on_table and c.uid not in taken]
    if not free:
        raise ValueError("the float has no free chip left to overpay with")
    chip = min(free, key=lambda c: (c.value_cents, c.uid))
    return chip.uid, chip.value_cents


def pay_spots(sim: ChipTable, spots: Sequence[Mapping[str, Any]], *,
              overpay: bool = False) -> Overpaid | None:
    """Make every unpaid spot of a payout view hold its ``expected`` cents; with ``overpay``
    one winning spot gets one chip more. Returns the overpaid chip (None: none was)."""
    over: Overpaid | None = None
    # Chips taken off a spot of this payout are not paid out again at once: put straight
    # on another spot, the reader could see them there before it sees them gone.
    taken: set[bytes] = set()
    for line in spots:
        if line.get("state") == "paid":
            continue
        seat, spot, expected = int(line["seat"]), str(line["spot"]), int(line["expected"])
        here = sim.chips_on(seat, spot)
        markers = [u for u in here if (chip := sim.registry.lookup(u)) is not None
                   and chip.chip_set != sim.registry.chip_set]
        if markers:  # a bonus marker is used up either way: the dealer takes it
            sim.remove(seat, spot, markers)
        held = _value(sim, sim.chips_on(seat, spot))
        if expected == 0:
            taken.update(sim.remove(seat, spot))
            continue
        if held > expected:  # change is made afresh from the float
            taken.update(sim.remove(seat, spot))
            held = 0
        extra: list[bytes] = []
        if overpay and over is None and line.get("result") == "win":
            uid, cents = _spare_chip(sim, taken)
            extra = [uid]
            over = Overpaid(seat=seat, spot=spot, uid=uid, cents=cents)
        if expected > held or extra:  # one place: the reader sees the pay and the extra at once
            pay = expected - held if expected > held else None
            try:  # the dealer pays from the tray
                sim.place(seat, spot, pay, uids=extra, float_only=True, avoid=taken)
            except ValueError:  # the tray holds too little else: the chips just taken too
                sim.place(seat, spot, pay, uids=extra, float_only=True)
    return over


def overpay_seen(hand_id: str, over: Overpaid) -> Callable[[Mapping[str, Any]], bool]:
    """A table status test: the payout of `hand_id` shows `over`'s spot overpaid."""

    def seen(status: Mapping[str, Any]) -> bool:
        payout = status.get("payout") or {}
        return payout.get("hand_id") == hand_id and any(
            s["seat"] == over.seat and s["spot"] == over.spot and s["state"] == "over"
            for s in payout.get("spots", []))
    return seen


def only_over_left(hand_id: str, over: Overpaid) -> Callable[[Mapping[str, Any]], bool]:
    """A table status test: every spot of `hand_id`'s payout but `over`'s is paid (or the
    payout is over)."""

    def left(status: Mapping[str, Any]) -> bool:
        payout = status.get("payout") or {}
        if payout.get("hand_id") != hand_id:
            return True
        return all(s["state"] == "paid" for s in payout.get("spots", [])
                   if (s["seat"], s["spot"]) != (over.seat, over.spot))
    return left
