"""The table's pure decision core: typed inputs in, typed messages out, no event loop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.messages.desk import CloseHeat, DeskOrder, OpenHeat, Seat, Unseat, VoidHand
from game.messages.table import (
    Alert,
    CommandResult,
    DeviceState,
    EntrySeated,
    EntryUnseated,
    HandVoided,
    HeatClosed,
    HeatOpened,
)
from game.poker.cards import parse_card
from game.table.core import Decision, TableCore
from game.table.inputs import (
    Acknowledge,
    Boot,
    CardSeen,
    ChipsSeen,
    DeviceTrouble,
    NoMoreBets,
    ShoeReported,
    TableInput,
    Unreadable,
    VoidByDealer,
    WagerKeyed,
    decode_input,
)
from runtime.settings_files import read_paytables, read_tournament

T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
R25 = 2_500
CHIP = bytes.fromhex("E004000000000001")
OTHER_SET = bytes.fromhex("E004000200000001")
UNKNOWN = bytes.fromhex("E0040009FFFFFFFF")


SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)


def core() -> TableCore:
    registry = ChipRegistry([Chip(uid=CHIP, value_cents=R25, chip_set="house"),
                             Chip(uid=OTHER_SET, value_cents=R25, chip_set="old")],
                            chip_set="house")
    return TableCore(table_id="t07", settings=SETTINGS,
                     paytables=PAYTABLES, deal=DEFAULT_DEAL, registry=registry)


class Feed:
    """Applies inputs one second apart and keeps them, to replay them on a fresh core."""

    def __init__(self) -> None:
        self.core = core()
        self.now = T0
        self.inputs: list[tuple[TableInput, datetime]] = []

    def __call__(self, given: TableInput) -> Decision:
        self.now += timedelta(seconds=1)
        self.inputs.append((given, self.now))
        return self.core.apply(given, self.now)

    def desk(self, command: Any, **meta: Any) -> Decision:
        return self(DeskOrder(command=command, **meta))

    def replayed(self) -> TableCore:
        fresh = core()
        for given, at in self.inputs:
            fresh.apply(given, at)
        return fresh


def at(n: int) -> str:
    return (T0 + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")


def test_opening_a_heat_and_seating_an_entry_produce_their_messages() -> None:
    feed = Feed()
    opened = feed.desk(OpenHeat(stage="qualifying", heat_id="Q1"), command_id="c1")
    assert opened.messages == (
        HeatOpened(heat_id="Q1", stage="qualifying", at=at(1)),
        CommandResult(command_id="c1", command="open_heat", accepted=True, reason=None))
    seated = feed.desk(Seat(entry_id="E1", seat=2), command_id="c2")
    assert seated.messages[0] == EntrySeated(entry_id="E1", seat=2, heat_id="Q1", at=at(2))
    assert feed.core.session is not None and sorted(feed.core.session.seats) == [2]


def test_a_refusal_names_the_reason_and_a_desk_command_gets_its_result() -> None:
    feed = Feed()
    refused = feed(NoMoreBets(by="D1"))
    assert (refused.ok, refused.error) == (False, "no heat is open at this table")
    seat = feed.desk(Seat(entry_id="E1", seat=1), command_id="c9")
    assert seat.messages == (CommandResult(command_id="c9", command="seat", accepted=False,
                                           reason="no heat is open at this table"),)
    assert feed(Acknowledge(entry_id="E1")).error == (
        "entry E1 has no unacknowledged score at this table")
    assert feed(WagerKeyed(seat=1, spot="ante", amount_cents=-5)).error == (
        "cannot key -5 on 'ante'")
    assert feed(Boot()).ok
    assert feed.core.inputs_applied == 5


def test_a_desk_command_applies_once_per_signer_and_seq() -> None:
    feed = Feed()
    assert feed.desk(OpenHeat(stage="qualifying", heat_id="Q1"), signer="desk",
                     command_seq=7).ok
    again = feed.desk(OpenHeat(stage="qualifying", heat_id="Q2"), signer="desk", command_seq=7)
    assert again.error == "duplicate command 7 from desk: already applied"
    assert feed.core.heat_id == "Q1"


def test_devices_report_states_and_alerts() -> None:
    feed = Feed()
    good = feed(DeviceTrouble(device="S1", kind="reconnected", detail="back"))
    assert good.messages == (DeviceState(device="S1", state="reconnected", detail="back",
                                         at=at(1)),)
    lost = feed(DeviceTrouble(device="S1", kind="lost", detail="unplugged"))
    assert lost.messages == (Alert(kind="device_lost", message="S1: unplugged",
                                   source="device", at=at(2)),)
    shoe = feed(ShoeReported(device="S1", state="ready", detail=""))
    assert shoe.messages == (DeviceState(device="S1", state="ready", detail="", at=at(3)),)
    card = feed(CardSeen(card=parse_card("Ah"), read_index=4))
    assert card.messages == (Alert(kind="card_without_hand", source="table", at=at(4),
                                   message="card Ah read (shoe read 4) with no hand open"),)
    assert feed.core.alerts_raised == 2


def test_a_chip_that_must_not_count_is_reported_once_while_it_lies_there() -> None:
    feed = Feed()
    feed.desk(OpenHeat(stage="qualifying", heat_id="Q1"))
    feed.desk(Seat(entry_id="E1", seat=1))
    first = feed(ChipsSeen(seat=1, spot="ante", uids=frozenset({CHIP, UNKNOWN, OTHER_SET})))
    kinds = sorted(m.kind for m in first.messages if isinstance(m, Alert))
    assert kinds == ["other_chip_set", "unknown_chip"]
    again = feed(ChipsSeen(seat=1, spot="ante", uids=frozenset({CHIP, UNKNOWN, OTHER_SET})))
    assert again.messages == ()
    wagers, _ = feed.core.spots.wagers(1, "E1", report=False)
    assert wagers.ante == R25  # only the registered chip of the set in play counts
    assert feed(ChipsSeen(seat=1, spot="rest", uids=frozenset({UNKNOWN}))).messages == ()


def seated_in_a_hand() -> Feed:
    feed = Feed()
    feed.desk(OpenHeat(stage="qualifying", heat_id="Q1"))
    for seat in (1, 2):
        feed.desk(Seat(entry_id=f"E{seat}", seat=seat))
        feed(WagerKeyed(seat=seat, spot="ante", amount_cents=R25))
        feed(WagerKeyed(seat=seat, spot="odds", amount_cents=R25))
    opened = feed(NoMoreBets(by="D1"))
    assert opened.ok, opened.error
    assert opened.detail == {"hand_id": "t07-000001", "seats": [1, 2]}
    return feed


def test_an_unseat_during_a_hand_is_held_until_it_ends_then_applied() -> None:
    feed = seated_in_a_hand()
    held = feed.desk(Unseat(seat=2, entry_id="E2", reason="left"), command_id="u1")
    assert held.messages == (CommandResult(command_id="u1", command="unseat", accepted=True,
                                           reason=None, held_until_hand_ends="t07-000001"),)
    assert feed.core.status()["held_commands"] == [
        {"command": "unseat", "seat": 2, "entry_id": "E2", "reason": "left"}]
    twice = feed.desk(Unseat(seat=2, entry_id="E2", reason="left"))
    assert twice.error == "unseat is already held until hand t07-000001 ends"
    wrong = feed.desk(Unseat(seat=1, entry_id="E2"))
    assert wrong.error == "seat 1 holds entry E1, not E2"
    closing = feed.desk(CloseHeat(), command_id="c9")
    assert closing.ok
    ended = feed(VoidByDealer(reason="misdeal", by="supervisor"))
    kinds = [type(m) for m in ended.messages]
    assert kinds == [HandVoided, EntryUnseated, CommandResult, CommandResult]
    results = [m for m in ended.messages if isinstance(m, CommandResult)]
    assert [(r.command_id, r.accepted, r.reason) for r in results] == [
        ("u1", True, None), ("c9", False, "entries still seated: E1")]
    assert feed.core.held == [] and feed.core.heat_id == "Q1"


def test_the_desk_voids_the_hand_in_progress_by_its_id() -> None:
    feed = seated_in_a_hand()
    wrong = feed.desk(VoidHand(hand_id="t07-000009", reason="misdeal"))
    assert wrong.error == "hand t07-000009 is not the hand in progress"
    voided = feed.desk(VoidHand(hand_id="t07-000001", reason="misdeal"), signer="desk-1")
    [record] = [m for m in voided.messages if isinstance(m, HandVoided)]
    assert record.record["void"]["by"] == "desk-1"
    assert record.record["heat_id"] == "Q1" and record.record["voided_at"] == at(10)
    assert feed.core.hand is None


def test_replaying_the_same_inputs_gives_the_same_state() -> None:
    feed = seated_in_a_hand()
    feed.desk(Unseat(seat=2, entry_id="E2", reason="left"))
    feed(VoidByDealer(reason="misdeal", by="supervisor"))
    assert feed.replayed().status() == feed.core.status()


def test_journal_records_decode_to_typed_inputs() -> None:
    assert decode_input("start", {}) == Boot()
    assert decode_input("card", {"card": "Ah", "source": "manual"}) == CardSeen(
        card=parse_card("Ah"), source="manual")
    assert decode_input("chips", {"seat": 1, "spot": "ante", "uids": ["E004000000000001"]}
                        ) == ChipsSeen(seat=1, spot="ante", uids=frozenset({CHIP}))
    assert decode_input("dealer", {"action": "void", "reason": "x", "by": "S"}) == (
        VoidByDealer(reason="x", by="S"))
    assert decode_input("desk", {"command": "seat", "entry_id": "E1", "seat": 3,
                                 "command_id": "k-1", "signer": "k", "command_seq": 1}) == (
        DeskOrder(command=Seat(entry_id="E1", seat=3), command_id="k-1", signer="k",
                  command_seq=1))
    assert decode_input("nonsense", {}) == Unreadable(reason="unknown input kind 'nonsense'")
    assert decode_input("dealer", {"action": "dance"}) == Unreadable(
        reason="unknown dealer action 'dance'")
    assert decode_input("card", {}) == Unreadable(reason="missing field 'card'")
    assert decode_input("card", {"card": "Zz"}).reason.startswith("invalid card")  # type: ignore[union-attr]


def test_an_unreadable_desk_command_is_refused_with_its_result_naming_the_field() -> None:
    feed = Feed()
    given = decode_input("desk", {"command": "seat", "entry_id": "E1", "command_id": "c3"})
    assert isinstance(given, Unreadable) and given.desk
    refused = feed(given)
    assert refused.messages == (CommandResult(command_id="c3", command="seat", accepted=False,
                                              reason="seat body lacks 'seat'"),)



def test_an_empty_heat_closes_and_a_new_one_may_open() -> None:
    feed = Feed()
    feed.desk(OpenHeat(stage="semi_final", heat_id="S1"))
    assert feed.desk(OpenHeat(stage="final", heat_id="F1")).error == "heat S1 is still open"
    closed = feed.desk(CloseHeat(), command_id="c2")
    assert closed.messages[0] == HeatClosed(heat_id="S1", at=at(3))
    assert feed.core.session is None
    assert feed.desk(OpenHeat(stage="final", heat_id="F1")).ok
