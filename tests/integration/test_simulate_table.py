"""`showdown simulate table` (issue 14 §2): every fault switch on a short script (one seat,
a scripted deck and player, one or two hands, no pauses), through the real daemon, drivers
and simulated devices. Each run asserts that the daemon stayed up and stopped cleanly, that
the table raised the alert a real fault raises, that the virtual staff put it right, and that
the hand ended as a real table's would (paid, voided, or the next one held), from the
table's own journal.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from floor.rehearsal import rehearse_table
from floor.rehearsal_config import SeatConfig, SimTableConfig
from game.poker.cards import parse_cards
from simulators.rehearsal_report import RunReport
from simulators.scripted_play import HandScript
from tests.fixtures.services import MqttBroker

# One seat, dealt in the table's sequence (seat, dealer, seat, dealer, burn, flop, burn,
# turn, river): the seat holds two aces against the dealer's 7-2 on a dry board, so it wins.
WINNING_HAND = parse_cards("Ah 7c As 2d 3h Kh Qd 9s 4c 8c 5d")
SEED = 14


def _config(tmp_path: Path, faults: tuple[str, ...] = (), *, hands: int = 1,
            **more: Any) -> SimTableConfig:
    """One scripted seat. The stall timeout is long unless a stall is rehearsed, and the
    dealer patient: a machine starved of CPU must not look like a hung device (nothing here
    asserts a duration)."""
    given: dict[str, Any] = {
        "stall_seconds": 2.0 if any(".stall" in f for f in faults) else 20.0,
        "timeout": 60.0, "seed": SEED, "hands": hands, "players": 1,
        "directory": tmp_path / "run", "faults": faults, "deck": "scripted",
        "deck_hands": (WINNING_HAND,),
        "seats": {1: SeatConfig(hands=(HandScript(ante_cents=2_500, decision="preflop"),))}}
    return SimTableConfig(**{**given, **more})


def _journal(tmp_path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    with Journal.open(tmp_path / "run" / "journal.sqlite", read_only=True) as journal:
        return [(m.type, m.body) for m in journal.messages(1)]


async def _rehearse(tmp_path: Path, *faults: str, hands: int = 1) -> RunReport:
    report = await rehearse_table(_config(tmp_path, faults, hands=hands), seed=SEED)
    assert report is not None  # the daemon ran its virtual dealer and stopped cleanly
    return report


# fault -> the alert kinds its record must carry
CASES = {
    "shoe.corrupt@hand1": {"device_bad_frame"},
    "shoe.drop@hand1": set(),
    "shoe.stall@hand1": {"device_stalled"},
    "shoe.unplug@hand1": {"device_disconnected"},
    "shoe.jam@hand1.card2": {"device:jam"},
    "rfid.unplug@hand1": {"device_disconnected"},
    "rfid.stall@hand1": {"device_stalled"},
    "rfid.unknown_chip@hand1": {"unknown_chip"},
    "rfid.cloned_chip@hand1": {"chip_clone"},
    "rfid.foreign_chip@hand1": {"other_chip_set"},
}


@pytest.mark.soak  # a simulated table per device fault: make test-soak (D387)
@pytest.mark.parametrize("fault", sorted(CASES))
async def test_a_device_fault_is_alerted_put_right_and_the_hand_is_paid(
        tmp_path: Path, fault: str) -> None:
    report = await _rehearse(tmp_path, fault)
    assert report.problems == [], report.lines()
    [record] = report.faults
    assert str(record.spec).startswith(fault.partition("@")[0])
    assert {a.kind for a in record.alerts} >= CASES[fault], report.lines()
    assert record.remedy
    messages = _journal(tmp_path)
    [settled] = [b for t, b in messages if t == "hand.settled"]
    [seat] = settled["seats"]
    assert seat["wagers"]["ante"] == 2_500 and seat["wagers"]["play"] == 7_500  # as scripted
    assert settled["nets"] == {"1": 7_500}  # the aces win Play 1:1; Ante and Odds push
    assert [b["outcome"] for t, b in messages if t == "payout.checked"] == ["verified"]


async def test_a_card_lost_with_the_shoes_power_voids_the_hand(tmp_path: Path) -> None:
    report = await _rehearse(tmp_path, "shoe.power@hand1", hands=2)
    assert report.problems == [], report.lines()
    assert (report.hands_played, report.hands_voided) == (2, 1)
    [record] = report.faults
    assert "device_session_changed" in {a.kind for a in record.alerts}
    assert "voided" in record.remedy
    messages = _journal(tmp_path)
    [voided] = [b for t, b in messages if t == "hand.voided"]
    assert "never read" in str(voided)
    assert len([t for t, _ in messages if t == "hand.settled"]) == 1  # the next hand is paid


@pytest.mark.parametrize(("fault", "alert", "outcome"), [
    ("payout.overpay@hand1", "payout_overpaid", "overridden"),
    ("payout.underpay@hand1", "payout_underpaid", "verified"),
])
async def test_a_mispaid_hand_holds_the_next_until_it_is_put_right(
        tmp_path: Path, fault: str, alert: str, outcome: str) -> None:
    report = await _rehearse(tmp_path, fault)
    assert report.problems == [], report.lines()
    [record] = report.faults
    assert alert in {a.kind for a in record.alerts}
    assert "refused" in record.remedy
    messages = _journal(tmp_path)
    assert [b["outcome"] for t, b in messages if t == "payout.checked"] == [outcome]


async def test_an_unshuffled_deck_holds_the_next_hand_for_the_supervisor(
        tmp_path: Path) -> None:
    report = await _rehearse(tmp_path, "deck.unshuffled@hand1", hands=2)
    assert report.problems == [], report.lines()
    [record] = report.faults
    assert "deck_suspect" in {a.kind for a in record.alerts}
    messages = _journal(tmp_path)
    cleared = [b for t, b in messages if t == "device" and b["state"] == "fault_cleared"]
    assert len(cleared) == 1 and cleared[0]["device"] == "deck"
    assert len([t for t, _ in messages if t == "hand.settled"]) == 2


async def test_a_fault_with_a_probability_strikes_by_the_seed(tmp_path: Path) -> None:
    report = await _rehearse(tmp_path, "rfid.unknown_chip=1", "shoe.corrupt=0.2", hands=2)
    assert report.problems == [], report.lines()
    chips = [r for r in report.faults if r.spec.kind.name == "rfid.unknown_chip"]
    assert [r.hand for r in chips] == [1, 2]
    assert all(r.alerts for r in chips)


async def test_a_fault_that_never_strikes_is_reported(tmp_path: Path) -> None:
    report = await _rehearse(tmp_path, "rfid.unplug@hand3")
    assert report.problems == ["rfid.unplug@hand3 (hand 1): the run ended before hand 3"]


async def test_a_rehearsal_on_a_given_broker(tmp_path: Path, mqtt_broker: MqttBroker) -> None:
    token = secrets.token_hex(3)  # a broker shared with other runs: ids of its own
    cfg = replace(_config(tmp_path, ("rfid.cloned_chip@hand1",)),
                  broker=f"{mqtt_broker.host}:{mqtt_broker.port}", venue=f"test-{token}",
                  table=f"t-{token}")
    report = await rehearse_table(cfg, seed=SEED)
    assert report is not None and report.problems == [], report
    assert [b["outcome"] for t, b in _journal(tmp_path) if t == "payout.checked"] \
        == ["verified"]


async def test_an_unshuffled_deck_mode_is_the_unshuffled_deck_fault_every_hand(
        tmp_path: Path) -> None:
    cfg = _config(tmp_path, hands=2, deck="factory", deck_hands=(), seats={})
    report = await rehearse_table(cfg, seed=SEED)
    assert report is not None
    assert report.problems == [], report.lines()
    [record] = report.faults
    assert str(record.spec) == "--deck factory"
    assert [a.kind for a in record.alerts].count("deck_suspect") >= 2  # each hand's deck
    messages = _journal(tmp_path)
    assert len([t for t, _ in messages if t == "hand.settled"]) == 2


async def test_a_run_directory_used_again_plays_out_the_heat_left_open(
        tmp_path: Path) -> None:
    cfg = _config(tmp_path, deck="random", deck_hands=(), seats={})
    first = await rehearse_table(cfg, seed=SEED)
    # the same seed again: the decks advance with the journal (D406), no deck repeats
    second = await rehearse_table(cfg, seed=SEED)
    assert first is not None and second is not None
    assert first.problems == second.problems == []
    messages = _journal(tmp_path)
    types = [t for t, _ in messages]
    assert types.count("heat.opened") == 1 and types.count("hand.settled") == 2
    assert "deck_suspect" not in [b.get("kind") for t, b in messages if t == "alert"]


async def test_a_chip_passed_to_another_seat_is_pooling_matched_to_its_fault(
        tmp_path: Path) -> None:
    """rfid.pooled_chip: seat 2's player passes a chip of its starting stack (issued by the
    reader at seating, no button) to seat 1, who wagers it: the table raises chip_pooling and
    the report matches it to the fault."""
    seats = {s: SeatConfig(hands=(HandScript(ante_cents=2_500, decision="preflop"),))
             for s in (1, 2)}
    cfg = _config(tmp_path, ("rfid.pooled_chip@hand1",), players=2, seats=seats)
    report = await rehearse_table(cfg, seed=SEED)
    assert report is not None
    assert report.problems == [], report.lines()
    [record] = report.faults
    assert [a.kind for a in record.alerts] == ["chip_pooling"], report.lines()
    assert "played by entry" in record.alerts[0].message and record.remedy
    assert any("rfid.pooled_chip@hand1 at hand 1" in line for line in report.lines())
    messages = _journal(tmp_path)
    assert [b["kind"] for t, b in messages if t == "alert"
            and b["kind"] != "device_recovered"] == ["chip_pooling"]  # notices aside


async def test_five_percent_corrupted_shoe_frames_are_counted_in_the_journal_and_report(
        tmp_path: Path) -> None:
    """shoe.corrupt=0.05: every damaged frame is refused and sent again (the hands are
    paid as usual), and the run leaves a trace: `device_recovered` notices in the journal
    with the counts, and the report's "recovered device faults" line with their total."""
    report = await _rehearse(tmp_path, "shoe.corrupt=0.05", hands=3)
    assert report.problems == [], report.lines()
    messages = _journal(tmp_path)
    notices = [b for t, b in messages if t == "alert" and b["kind"] == "device_recovered"]
    assert notices, report.lines()
    # A damaged frame the driver refused (bad_frames) or could not even frame (noise) is
    # sent again by the shoe: retransmits counts each frame healed.
    journaled = sum(b["evidence"]["counts"].get("retransmits", 0) for b in notices)
    assert journaled >= 1
    [(device, counts)] = report.recovered_totals().items()
    assert counts["retransmits"] == journaled
    lines = report.lines()
    assert f"recovered device faults: {len(notices)} notices" in lines
    assert any(line.startswith(f"- {device}: ") and f"{journaled} frames retransmitted" in line
               for line in lines), lines
    assert report.as_dict()["recovered"] == {device: counts}
    [record] = report.faults  # the line fault's record carries the notices too
    assert "device_recovered" in {a.kind for a in record.alerts}
