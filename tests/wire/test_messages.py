"""The message contract: every message and desk command round-trips, every rule names its field."""

from __future__ import annotations

from typing import Any

import pytest

from game.messages.console import PayoutLine
from game.messages.fields import MessageError
from wire.messages import (
    COMMANDS,
    TABLE_MESSAGES,
    TOPIC_OF,
    AckScore,
    Alert,
    Availability,
    ChipsCounted,
    ChipsReconciled,
    CloseHeat,
    CommandRejected,
    CommandResult,
    CorrectHand,
    DecksEvent,
    DeskOrder,
    DeviceState,
    EntrySeated,
    EntryUnseated,
    HandCorrected,
    HandDisputed,
    HandSettled,
    HandVoided,
    HeatClosed,
    HeatOpened,
    OpenHeat,
    PayoutChecked,
    Resend,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
    Seat,
    StaffEvent,
    Standings,
    Unseat,
    VoidHand,
    decode_table_message,
    topic_of,
)
from wire.outbox import Outgoing
from wire.topics import TOPIC_SUFFIXES

AT = "2026-07-03T11:00:01Z"

MESSAGES: list[Any] = [
    DeviceState(device="S1", state="connected", detail="", at=AT),
    Alert(kind="device_lost", message="S1: unplugged", source="device", at=AT),
    Alert(kind="unknown_chip", message="chip", source="chips", at=AT, seat=2),
    Alert(kind="late_wager", message="m", source="hand", at=AT, seat=1, hand_id="t07-000001",
          alert_id=3),
    HeatOpened(heat_id="Q-1", stage="qualifying", at=AT),
    HeatClosed(heat_id="Q-1", at=AT),
    EntrySeated(entry_id="E1", seat=2, heat_id="Q-1", at=AT),
    EntryUnseated(entry_id="E1", seat=2, hands_played=4, reason="left", at=AT),
    HandSettled(hand_id="t07-000001", heat_id="Q-1",
                record={"hand_id": "t07-000001", "heat_id": "Q-1", "status": "settled",
                        "table": "t07", "nets": {"1": 500}}),
    HandVoided(hand_id="t07-000002", heat_id=None,
               record={"hand_id": "t07-000002", "status": "void", "table": "t07"}),
    ScoreRecorded(entry_id="E1", stage="qualifying", heat_id="Q-1", table="t07", seat=2,
                  score=23_450, hands=30, status="finished", markers_forfeited=0,
                  last_hand_id="t07-000030", at=AT),
    ScoreAcknowledged(entry_id="E1", score=23_450, stage="qualifying", method="card_tap",
                      by="D1", at=AT),
    ScoreVoided(entry_id="E1", reason="misdeal"),
    ScoreVoided(entry_id="E1", reason="misdeal", at=AT),
    CommandResult(command_id="c1", command="seat", accepted=True, reason=None),
    CommandResult(command_id="c2", command="unseat", accepted=True, reason=None,
                  held_until_hand_ends="t07-000003"),
    Availability(state="online", link={"published": 3}, clean=None, status={"heat": "Q-1"}),
    Availability(state="offline", link={}, clean=True),
    CommandRejected(reason="bad_signature", detail="x", payload_sha256="ab" * 32,
                    payload_bytes=120, claimed_sender="desk-1", claimed_type="seat"),
    ScoreAcknowledged(entry_id="E1", score=23_450, stage="qualifying", method="card+signature",
                      at=AT, evidence="ab" * 32),
    ScoreDisputed(entry_id="E1", score=23_450, note="hand 12 was paid short", stage="qualifying",
                  heat_id="Q-1", at=AT),
    PayoutChecked(hand_id="t07-000001", outcome="verified", heat_id="Q-1", at=AT),
    PayoutChecked(hand_id="t07-000002", outcome="overridden", heat_id="Q-1",
                  mismatches=(PayoutLine(seat=2, spot="ante", expected=20_000, held=25_000),),
                  by="S1", reason="player walked away with the overpay; surveillance notified",
                  at=AT),
    StaffEvent(event="signed_in", method="pin", staff_id="D12", role="dealer", at=AT),
    StaffEvent(event="sign_in_failed", method="card", detail="unknown card ****0123", at=AT),
    HandDisputed(hand_id="t07-000001", entry_id="E1", seat=2, claim="odds paid short",
                 by="D12", role="dealer", heat_id="Q-1", stage="qualifying", at=AT),
    HandCorrected(hand_id="t07-000001", entry_id="E1", seat=2, ruling="hand_voided",
                  recorded_net=5_000, counted_net=0, balance_before=205_000,
                  balance_after=200_000, hands_played=3, markers_returned=("trips_plus",),
                  dispute_id=7, by="desk-1", reason="misdeal upheld", heat_id="Q-1", at=AT),
    ChipsReconciled(entry_id="E-1", seat=2, chip_set="showdown-2026", heat_id="Q-1",
                    issued=("E05D010101000001",), held=("E05D010101000001", "E05D010001000002"),
                    returned=("E05D010001000002",), missing=("E05D010101000001",),
                    issued_cents=2_500, held_cents=12_500, returned_cents=10_000,
                    missing_cents=2_500, at=AT),
    ChipsCounted(heat_id="Q-1", stage="closing", counted=((500, 38), (10_000, 3)),
                 expected=((500, 40), (10_000, 3)), total_cents=49_000, expected_cents=50_000,
                 difference_cents=-1_000, tolerance_cents=0, over_tolerance=True,
                 dealer_id="D1", supervisor_id="S1", counted_at=AT, confirmed_at=AT),
    DecksEvent(kind="destroyed", decks=2, day="2026-12-06", by="S1", at=AT, sealed=4,
               in_play=1, awaiting=0, seals=("A1", "A2"), witness="D1"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_table_message_round_trips(message: Any) -> None:
    body = message.encode()
    again = decode_table_message(message.TYPE, body, sender="t07")
    assert again == message
    assert again.encode() == body


def test_every_table_message_type_has_one_class_and_one_topic() -> None:
    assert set(TABLE_MESSAGES) == set(TOPIC_OF)
    assert set(TOPIC_OF.values()) <= set(TOPIC_SUFFIXES)
    assert {type(m) for m in MESSAGES} == set(TABLE_MESSAGES.values())
    assert topic_of(ScoreRecorded.decode({**SCORE})) == "scores"
    assert topic_of(Alert(kind="k", message="m", source="s", at=AT)) == "events"
    assert topic_of(Availability(state="online", link={})) == "status"


def test_outgoing_reads_its_topic_type_and_body_from_the_message() -> None:
    out = Outgoing(message=HeatClosed(heat_id="Q-1", at=AT))
    assert (out.topic_suffix, out.type, dict(out.body), out.retain) == (
        "events", "heat.closed", {"heat_id": "Q-1", "at": AT}, False)


def test_bodies_are_the_same_keys_and_values_the_table_always_sent() -> None:
    # The shapes below are what stored messages and their signatures hold (table_service).
    assert ScoreAcknowledged(entry_id="E1", score=5, stage="final", method="desk", by=None,
                             at=AT).encode() == {
        "entry_id": "E1", "score": 5, "stage": "final", "method": "desk", "by": None, "at": AT}
    assert Alert(kind="k", message="m", source="table", at=AT).encode() == {
        "kind": "k", "message": "m", "source": "table", "at": AT}
    assert CommandResult(command_id=None, command="seat", accepted=False,
                         reason="no").encode() == {
        "command_id": None, "command": "seat", "accepted": False, "reason": "no"}
    assert EntryUnseated(entry_id="E1", seat=3, hands_played=0, reason="", at=AT).encode() == {
        "entry_id": "E1", "seat": 3, "hands_played": 0, "reason": "", "at": AT}


def test_standings_round_trip() -> None:
    doc = {"v": 1, "stages": []}
    assert Standings.decode(Standings(document=doc).encode()) == Standings(document=doc)


SCORE: dict[str, Any] = {"entry_id": "E1", "stage": "qualifying", "heat_id": "Q-1",
                         "score": 1_000, "hands": 30, "status": "finished", "table": "t07",
                         "seat": 2}


@pytest.mark.parametrize(("type_", "body", "field", "problem"), [
    ("score.recorded", {**SCORE, "score": -1}, "score", "must be within 0..9223372036854775807"),
    ("score.recorded", {**SCORE, "score": True}, "score", "must be a whole number"),
    ("score.recorded", {**SCORE, "hands": 2**31}, "hands", "must be within 0..2147483647"),
    ("score.recorded", {**SCORE, "entry_id": "E" * 41}, "entry_id",
     "must be at most 40 characters"),
    ("score.recorded", {**SCORE, "entry_id": ""}, "entry_id", "must not be empty"),
    ("score.recorded", {**SCORE, "entry_id": "E\x00"}, "entry_id", "must not contain NUL"),
    ("score.recorded", {**SCORE, "heat_id": 5}, "heat_id", "must be text"),
    ("score.recorded", {**SCORE, "stage": "warmup"}, "stage", "must be one of"),
    ("score.recorded", {**SCORE, "status": "active"}, "status",
     "must be one of ['ended_early', 'finished']"),
    ("score.recorded", {**SCORE, "table": "t02"}, "table", "must be the sender 't07'"),
    ("score.recorded", {**SCORE, "seat": "2"}, "seat", "must be a whole number"),
    ("score.acknowledged", {"entry_id": "E1", "score": 5, "method": "x" * 33}, "method",
     "must be at most 32 characters"),
    ("hand.settled", {"hand_id": "h", "status": "void"}, "status",
     "must be 'settled' for hand.settled"),
    ("hand.voided", {"hand_id": "h", "status": "settled"}, "status",
     "must be 'void' for hand.voided"),
    ("hand.voided", {"hand_id": "h" * 65}, "hand_id", "must be at most 64 characters"),
    ("hand.voided", {"hand_id": "h", "table": "t99"}, "table", "must be the sender 't07'"),
    ("entry.seated", {"entry_id": "E1", "seat": -1}, "seat", "must be within 0.."),
    ("entry.unseated", {"entry_id": "E1", "seat": 1, "hands_played": 1.5}, "hands_played",
     "must be a whole number"),
    ("heat.opened", {"heat_id": "Q", "stage": "warmup"}, "stage", "must be one of"),
    ("command.result", {"accepted": "yes"}, "accepted", "must be true or false"),
    ("availability", {"state": "asleep"}, "state", "must be one of ['offline', 'online']"),
    ("alert", {"kind": ""}, "kind", "must not be empty"),
])
def test_each_rule_refuses_with_the_field_named(type_: str, body: dict[str, Any], field: str,
                                                problem: str) -> None:
    with pytest.raises(MessageError) as caught:
        decode_table_message(type_, body, sender="t07")
    assert (caught.value.type, caught.value.field) == (type_, field)
    assert caught.value.problem is not None and problem in caught.value.problem
    assert f"{type_} body field {field!r} {problem}" in str(caught.value)


@pytest.mark.parametrize(("type_", "body", "field"), [
    ("score.recorded", {k: v for k, v in SCORE.items() if k != "hands"}, "hands"),
    ("score.acknowledged", {"entry_id": "E1", "score": 5}, "method"),
    ("score.voided", {"entry_id": "E1"}, "reason"),
    ("hand.settled", {"status": "settled"}, "hand_id"),
    ("entry.seated", {"entry_id": "E1"}, "seat"),
    ("entry.unseated", {"seat": 1}, "entry_id"),
    ("heat.closed", {}, "heat_id"),
    ("device", {}, "state"),
    ("command_rejected", {}, "reason"),
])
def test_a_missing_field_is_named(type_: str, body: dict[str, Any], field: str) -> None:
    with pytest.raises(MessageError, match=f"^{type_} body lacks {field!r}$"):
        decode_table_message(type_, body)


def test_optional_fields_may_be_null_or_absent_and_unknown_types_are_refused() -> None:
    assert HandVoided.decode({"hand_id": "h", "heat_id": None}).heat_id is None
    assert ScoreRecorded.decode({**SCORE, "table": None, "seat": None}).table is None
    with pytest.raises(MessageError, match="must be a table message type"):
        decode_table_message("hand.replayed", {})
    with pytest.raises(MessageError, match="must be a JSON object"):
        decode_table_message("alert", [])  # type: ignore[arg-type]


# --- desk commands ------------------------------------------------------------------------------

COMMAND_VALUES: list[Any] = [
    OpenHeat(stage="semi_final", heat_id="S-1"),
    Seat(entry_id="E1", seat=3),
    Unseat(seat=3, entry_id="E1", reason="patron left"),
    Unseat(seat=3),
    VoidHand(hand_id="t07-000004", reason="misdeal"),
    CloseHeat(),
    AckScore(entry_id="E1", method="desk"),
    Resend(from_seq=1_700_000_000_000),
    CorrectHand(hand_id="t07-000004", entry_id="E1", ruling="void", reason="misdeal",
                dispute_id=3),
    CorrectHand(hand_id="t07-000004", entry_id="E1", ruling="correct", net=-2_500,
                reason="odds overpaid"),
]


@pytest.mark.parametrize("command", COMMAND_VALUES, ids=lambda c: type(c).__name__)
def test_every_desk_command_round_trips(command: Any) -> None:
    order = DeskOrder(command=command, table="t07", command_id="desk-1-9", signer="desk-1",
                      command_seq=9)
    body = order.encode()
    assert body["command"] == command.NAME and body["table"] == "t07"
    assert DeskOrder.decode(body) == order
    plain = DeskOrder(command=command, table="t07", command_id="desk-1-9")
    assert "signer" not in plain.encode() and DeskOrder.decode(plain.encode()) == plain
    assert COMMANDS[command.NAME] is type(command)


def test_a_desk_body_has_the_shape_the_desk_always_sent() -> None:
    order = DeskOrder(command=Seat(entry_id="E1", seat=3), table="t07", command_id="k-5")
    assert order.encode() == {"table": "t07", "command": "seat", "command_id": "k-5",
                              "entry_id": "E1", "seat": 3}


@pytest.mark.parametrize(("body", "field", "text"), [
    ({"command": "dance"}, "command", "must be a known command"),
    ({}, "command", "lacks 'command'"),
    ({"command": "seat", "entry_id": "E1"}, "seat", "seat body lacks 'seat'"),
    ({"command": "seat", "entry_id": "E1", "seat": "3"}, "seat", "must be a whole number"),
    ({"command": "open_heat", "stage": "warmup", "heat_id": "Q"}, "stage", "must be one of"),
    ({"command": "open_heat", "stage": "final"}, "heat_id", "lacks 'heat_id'"),
    ({"command": "void_hand", "hand_id": "h"}, "reason", "lacks 'reason'"),
    ({"command": "resend", "from_seq": -1}, "from_seq", "must be within 0.."),
    ({"command": "ack_score", "entry_id": ""}, "entry_id", "must not be empty"),
    ({"command": "unseat", "seat": 1, "entry_id": 7}, "entry_id", "must be text"),
    ({"command": "close_heat", "command_seq": "x"}, "command_seq", "must be a whole number"),
])
def test_a_bad_desk_command_is_refused_with_the_field_named(body: dict[str, Any], field: str,
                                                            text: str) -> None:
    with pytest.raises(MessageError) as caught:
        DeskOrder.decode(body)
    assert caught.value.field == field
    assert text in str(caught.value)


def test_ack_score_method_defaults_to_desk() -> None:
    order = DeskOrder.decode({"command": "ack_score", "entry_id": "E1"})
    assert order.command == AckScore(entry_id="E1", method="desk")
