"""The daemon's deterministic core: inputs in, messages out, identical state on replay."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.table_service import Applied, TableService
from game.chips.registry import Chip, ChipRegistry, format_uid
from game.hand.deal import DEFAULT_DEAL
from game.wagers.settle import WAGERS, SeatWagers
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import VirtualPlayer

SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)
T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
R25 = 2_500


def make_registry() -> ChipRegistry:
    chips = [Chip(uid=bytes.fromhex(f"E0040000{i:08X}"), value_cents=R25,
                  chip_set="gold-reef-2026") for i in range(2_000)]
    chips += [Chip(uid=bytes.fromhex(f"E0040001{i:08X}"), value_cents=50_000,
                   chip_set="bonus-marker") for i in range(18)]
    chips.append(Chip(uid=bytes.fromhex("E004000200000001"), value_cents=R25, chip_set="old-set"))
    return ChipRegistry(chips, chip_set="gold-reef-2026")


class Table:
    """Drives a TableService the way the devices and consoles would, and keeps the record."""

    def __init__(self) -> None:
        self.service = self._new()
        self.record: list[tuple[str, dict[str, Any], datetime]] = []
        self.now = T0
        self.next_chip = 0

    @staticmethod
    def _new() -> TableService:
        return TableService(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                            deal=DEFAULT_DEAL, registry=make_registry())

    def send(self, kind: str, **payload: Any) -> Applied:
        self.now += timedelta(seconds=1)
        self.record.append((kind, payload, self.now))
        return self.service.apply(kind, payload, self.now)

    def chips_for(self, amount: int) -> list[str]:
        uids = [format_uid(bytes.fromhex(f"E0040000{self.next_chip + i:08X}"))
                for i in range(amount // R25)]
        self.next_chip += len(uids)
        return uids

    def place(self, seat: int, wagers: SeatWagers, markers: list[str] | None = None) -> None:
        marker_uids = iter(markers or [])
        for spot in WAGERS:
            uids = self.chips_for(wagers.amount(spot))
            if spot in wagers.markers:
                uids.append(next(marker_uids))
            self.send("chips", seat=seat, spot=spot, uids=uids, reader="R1", antenna=0,
                      report_seq=0)

    def replayed(self) -> TableService:
        fresh = self._new()
        for kind, payload, wall in self.record:
            fresh.apply(kind, payload, wall)
        return fresh


def messages(applied: Applied, kind: str) -> list[dict[str, Any]]:
    return [dict(m.body) for m in applied.messages if m.type == kind]


def test_a_whole_qualifying_heat_scores_what_the_game_core_computes() -> None:
    table = Table()
    assert table.send("desk", command="open_heat", stage="qualifying", heat_id="Q-0703-1",
                      command_id="c1").ok
    for seat in (1, 3):
        assert table.send("desk", command="seat", entry_id=f"E{seat}", seat=seat,
                          command_id=f"s{seat}").ok
    rng = random.Random(12)
    players = {s: VirtualPlayer(name=str(s), rng=random.Random(rng.random())) for s in (1, 3)}
    dealer = VirtualDealer(rng=random.Random(99))
    scores: dict[str, int] = {}
    expected_nets = {1: 0, 3: 0}
    while table.service.session and table.service.session.seats:
        session = table.service.session
        seated = dict(session.seats)
        for seat, entry in seated.items():
            table.place(seat, players[seat].wagers(
                seat=seat, balance_cents=entry.balance_cents, markers_left=0,
                rules=session.rules.house))
        assert table.send("dealer", action="no_more_bets", by="D1").ok
        hand = table.service.hand
        assert hand is not None
        deck = iter(dealer.shuffled_deck())
        decided: set[str] = set()
        while (target := hand.next_target) is not None:
            street = {0: "preflop", 3: "flop"}.get(target.index) if target.kind == "board" else None
            if street and street not in decided:
                decided.add(street)
                decide(table, players, street)
            table.send("card", card=str(next(deck)), read_index=0, quality=99, device="S1")
        decide(table, players, "river")
        settled = table.send("dealer", action="settle", by="D1")
        assert settled.ok, settled.error
        [record] = messages(settled, "hand.settled")
        assert record["alerts"] == []
        for seat_str, net in record["nets"].items():
            expected_nets[int(seat_str)] += net
        for body in messages(settled, "score.recorded"):
            scores[body["entry_id"]] = body["score"]
    assert scores == {f"E{s}": 200_000 + expected_nets[s] for s in (1, 3)}
    assert table.service.status() == table.replayed().status()


def decide(table: Table, players: dict[int, VirtualPlayer], street: str) -> None:
    hand = table.service.hand
    assert hand is not None
    placed = hand.cards()
    board = [c for t, c in placed if t.kind == "board"]
    for seat in hand.seats_in_hand:
        wagers = hand.wagers(seat)
        if wagers is None or wagers.play:
            continue
        hole = [c for t, c in placed if t.kind == "seat" and t.seat == seat]
        session = table.service.session
        assert session is not None
        amount = players[seat].play(seat=seat, street=street, hole=hole, board=board,
                                    wagers=wagers, balance_cents=session.seats[seat].balance_cents)
        if amount:
            table.send("chips", seat=seat, spot="play", uids=table.chips_for(amount),
                       reader="R1", antenna=0, report_seq=0)


def test_problem_chips_are_alerted_once_and_never_counted() -> None:
    table = Table()
    table.send("desk", command="open_heat", stage="qualifying", heat_id="Q1")
    table.send("desk", command="seat", entry_id="E1", seat=1)
    unknown = "E0049999DEADBEEF"
    other_set = "E004000200000001"
    first = table.send("chips", seat=1, spot="ante", uids=[*table.chips_for(R25), unknown,
                                                           other_set])
    kinds = sorted(b["kind"] for b in messages(first, "alert"))
    assert kinds == ["other_chip_set", "unknown_chip"]
    again = table.send("chips", seat=1, spot="ante", uids=[unknown, other_set])
    assert messages(again, "alert") == []
    wagers, _ = table.service.spots.wagers(1, "E1")
    assert wagers.ante == 0


def test_refused_inputs_are_answered_with_the_reason() -> None:
    table = Table()
    refused = table.send("dealer", action="no_more_bets")
    assert not refused.ok
    assert "no heat is open" in (refused.error or "")
    answer = table.send("desk", command="seat", entry_id="E1", seat=1, command_id="c9")
    assert not answer.ok
    [result] = messages(answer, "command.result")
    assert result == {"command_id": "c9", "command": "seat", "accepted": False,
                      "reason": "no heat is open at this table"}
    card = table.send("card", card="Ah", read_index=4)
    assert [b["kind"] for b in messages(card, "alert")] == ["card_without_hand"]
    assert not table.send("card", card="Zz").ok
    assert not table.send("nonsense").ok


def test_void_scores_acknowledgement_and_replay() -> None:
    table = Table()
    table.send("desk", command="open_heat", stage="qualifying", heat_id="Q1")
    table.send("desk", command="seat", entry_id="E1", seat=2)
    table.place(2, SeatWagers(ante=R25, odds=R25))
    table.send("dealer", action="no_more_bets")
    voided = table.send("dealer", action="void", reason="misdeal", by="supervisor")
    [record] = messages(voided, "hand.voided")
    assert record["void"]["reason"] == "misdeal"
    assert table.service.session is not None
    assert table.service.session.seats[2].hands_played == 0
    assert not table.send("dealer", action="acknowledge", entry_id="E1").ok
    assert table.replayed().status() == table.service.status()


def test_markers_on_side_bets_in_the_final() -> None:
    table = Table()
    table.send("desk", command="open_heat", stage="final", heat_id="F1")
    table.send("desk", command="seat", entry_id="F-1", seat=1)
    wagers = SeatWagers(ante=R25, odds=R25, trips_plus=R25, markers=frozenset({"trips_plus"}))
    table.place(1, wagers, markers=["E004000100000000"])
    seen, _ = table.service.spots.wagers(1, "F-1")
    assert seen == wagers
    misplaced = table.send("chips", seat=1, spot="ante",
                           uids=[*table.chips_for(R25), "E004000100000001"])
    assert [b["kind"] for b in messages(misplaced, "alert")] == ["misplaced_marker"]


@pytest.mark.parametrize("kind", ["card", "chips", "dealer", "desk", "manual_wager"])
def test_malformed_payloads_are_refused_not_raised(kind: str) -> None:
    table = Table()
    assert not table.send(kind).ok
    assert not table.send(kind, seat="x", spot=None, card=3, action=None, command=None).ok


def test_wager_rules_are_enforced_through_the_hand() -> None:
    table = Table()
    table.send("desk", command="open_heat", stage="qualifying", heat_id="Q1")
    table.send("desk", command="seat", entry_id="E1", seat=1)
    table.place(1, replace(SeatWagers(ante=R25, odds=2 * R25)))
    closed = table.send("dealer", action="no_more_bets")
    assert closed.ok
    assert [b["kind"] for b in messages(closed, "alert")] == ["wager_invalid"]


def two_seated_in_a_hand() -> Table:
    """A table with E1 in seat 1 and E2 in seat 2, their first hand in progress."""
    table = Table()
    table.send("desk", command="open_heat", stage="qualifying", heat_id="Q1")
    table.send("desk", command="seat", entry_id="E1", seat=1)
    table.send("desk", command="seat", entry_id="E2", seat=2)
    table.place(1, SeatWagers(ante=R25, odds=R25))
    table.place(2, SeatWagers(ante=R25, odds=R25))
    table.send("dealer", action="no_more_bets")
    return table


def test_an_unseat_during_a_hand_is_held_until_the_hand_ends() -> None:
    table = two_seated_in_a_hand()
    wrong = table.send("desk", command="unseat", seat=2, entry_id="E1", reason="left")
    assert not wrong.ok and wrong.error == "seat 2 holds entry E2, not E1"
    empty = table.send("desk", command="unseat", seat=4, reason="left")
    assert not empty.ok and empty.error == "seat 4 is empty"
    held = table.send("desk", command="unseat", seat=2, entry_id="E2", reason="patron left",
                      command_id="u1")
    assert held.ok and held.detail == {"held_until": "t07-000001"}
    assert messages(held, "entry.unseated") == []
    assert messages(held, "command.result") == [{
        "command_id": "u1", "command": "unseat", "accepted": True, "reason": None,
        "held_until_hand_ends": "t07-000001"}]
    again = table.send("desk", command="unseat", seat=2, entry_id="E2", reason="patron left")
    assert not again.ok and again.error == "unseat is already held until hand t07-000001 ends"
    assert table.service.status()["held_commands"] == [
        {"command": "unseat", "seat": 2, "entry_id": "E2", "reason": "patron left"}]
    assert table.service.session is not None and 2 in table.service.session.seats
    # A replay (a power cut now) holds it all the same.
    assert table.replayed().status() == table.service.status()
    ended = table.send("dealer", action="void", reason="misdeal", by="supervisor")
    assert [m.type for m in ended.messages] == ["hand.voided", "entry.unseated",
                                                "command.result"]
    assert messages(ended, "entry.unseated") == [{
        "entry_id": "E2", "seat": 2, "hands_played": 0, "reason": "patron left",
        "at": "2026-07-03T11:00:21Z"}]
    assert messages(ended, "command.result") == [{
        "command_id": "u1", "command": "unseat", "accepted": True, "reason": None}]
    assert sorted(table.service.session.seats) == [1]
    assert table.service.status()["held_commands"] == []
    assert table.replayed().status() == table.service.status()
    # Between hands it applies at once, and still checks who sits there.
    wrong = table.send("desk", command="unseat", seat=1, entry_id="E2", reason="left")
    assert not wrong.ok and wrong.error == "seat 1 holds entry E1, not E2"
    done = table.send("desk", command="unseat", seat=1, entry_id="E1", reason="called away")
    assert done.ok and [b["entry_id"] for b in messages(done, "entry.unseated")] == ["E1"]


def test_a_table_back_mid_hand_applies_the_queued_table_fault_when_the_hand_ends() -> None:
    table = two_seated_in_a_hand()
    # The desk declared the table out of service (D60); its commands were queued by the
    # broker and arrive as the table comes back inside the hand.
    for n, (seat, entry) in enumerate([(1, "E1"), (2, "E2")]):
        assert table.send("desk", command="unseat", seat=seat, entry_id=entry, command_seq=n,
                          signer="desk", reason="table out of service: power").ok
    assert table.send("desk", command="close_heat", command_seq=2, signer="desk").ok
    # A second delivery of a held command is refused as a duplicate, as ever.
    dup = table.send("desk", command="close_heat", command_seq=2, signer="desk")
    assert not dup.ok and "already applied" in (dup.error or "")
    voided = table.send("desk", command="void_hand", hand_id="t07-000001",
                         reason="table out of service", signer="desk", command_seq=3)
    assert [m.type for m in voided.messages] == [
        "hand.voided", "entry.unseated", "command.result", "entry.unseated", "command.result",
        "heat.closed", "command.result", "command.result"]
    assert all(b["accepted"] for b in messages(voided, "command.result"))
    assert table.service.session is None and table.service.heat_id is None
    assert table.replayed().status() == table.service.status()


def test_a_held_command_that_cannot_apply_when_the_hand_ends_is_refused_then() -> None:
    table = two_seated_in_a_hand()
    table.send("desk", command="unseat", seat=2, entry_id="E2", reason="left", command_id="u2")
    table.send("desk", command="close_heat", command_id="c9")
    ended = table.send("dealer", action="void", reason="misdeal", by="supervisor")
    results = messages(ended, "command.result")
    # E2 leaves; E1 still sits, so the heat cannot close: refused with the reason, once.
    assert [(r["command_id"], r["accepted"], r["reason"]) for r in results] == [
        ("u2", True, None), ("c9", False, "entries still seated: E1")]
    assert table.service.heat_id == "Q1"
