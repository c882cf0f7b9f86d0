"""Disputes as records (rules 22, 37, 53): raised by a participant, a dealer or a supervisor
within the round, linked to hands and score, ruled by a supervisor (a hand voided or corrected
by a correcting record, never an edit), closed; on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.desk import CorrectHand
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound
from leaderboard.desk import dispute_records as disputes
from leaderboard.models import AuditEntry, Hand, HandCorrection, Score
from tests.leaderboard.desk_fields import (
    AFTER_QUALIFYING,
    HEAT_TIME,
    buy,
    qualifying_field,
    table_reports,
)
from tests.leaderboard.desk_helpers import FakeClock, add_score, local, register, settings

HAND = "t01-000003"
RECORD: dict[str, Any] = {
    "v": 1, "table": "t01", "hand_id": HAND, "status": "settled", "heat_id": "heat-1",
    "stage": "qualifying", "nets": {"2": 7_500, "4": -2_500},
    "seats": [{"seat": 2, "entry_id": None}, {"seat": 4, "entry_id": "E-other"}]}


def seated_with_a_hand(session: Session, clock: FakeClock) -> str:
    """An entry seated at t01, seat 2, that won R75 in hand t01-000003 (stored by ingest)."""
    clock.now = HEAT_TIME
    entry = buy(session, clock, register(session, clock, "8001015009087"))
    desk.open_heat(session, settings(), clock, actor="desk-1", table="t01",
                   stage="qualifying")
    desk.seat_entry(session, settings(), clock, actor="desk-1", entry_id=entry, table="t01",
                    seat=2)
    record = {**RECORD, "seats": [{"seat": 2, "entry_id": entry}, RECORD["seats"][1]]}
    table_reports(session, "hand.settled", record, table="t01", seq=20)
    return entry


def test_a_participant_dealer_and_supervisor_each_raise_a_dispute_linked_to_hand_and_score(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    for seq, role, by in ((21, "dealer", "D12"), (22, "supervisor", "S3")):
        table_reports(session, "hand.disputed", {
            "hand_id": HAND, "entry_id": entry, "seat": 2, "claim": f"{role}: odds paid short",
            "by": by, "role": role, "heat_id": "heat-1", "stage": "qualifying"},
            table="t01", seq=seq)
    clock.now = local(2026, 7, 3, 14, 30)
    at_desk = disputes.raise_dispute(session, settings(), clock, actor="clerk-7",
                                     entry_id=entry, claim="my trips were not paid",
                                     hand_ids=[HAND])
    add_score(session, entry, 207_500, stage="qualifying", recorded=local(2026, 7, 3, 15, 0),
              acknowledged=None, seq=30)
    table_reports(session, "score.disputed", {"entry_id": entry, "score": 207_500,
                                              "note": "the last hand was misdealt",
                                              "stage": "qualifying", "heat_id": "heat-1"},
                  table="t01", seq=31)
    rows = disputes.dispute_records(session, entry_id=entry)
    assert [(d.raised_by_role, d.raised_by, d.recorded_by, d.seq, d.status) for d in rows] == [
        ("dealer", "D12", None, 21, "open"), ("supervisor", "S3", None, 22, "open"),
        ("participant", entry, None, 31, "open"),  # the table's messages are at 14:00
        ("participant", entry, "clerk-7", None, "open")]
    assert at_desk.dispute_id == rows[3].dispute_id and at_desk.table == "t01"
    dealer = rows[0]
    [hand] = dealer.hands
    assert (hand.hand_id, hand.table, hand.seq, hand.seat, hand.net_cents) == (
        HAND, "t01", 20, 2, 7_500)
    assert (rows[2].score_cents, rows[2].counted_cents, rows[2].hands) == (207_500, 207_500, ())
    audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "dispute.raised")
                            ).one()
    assert (audit.actor, audit.detail["hand_ids"], audit.detail["claim"]) == (
        "clerk-7", [HAND], "my trips were not paid")


def test_a_desk_dispute_names_a_hand_the_entry_played_and_a_claim(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    s = settings()
    with pytest.raises(DeskError, match="say what is disputed"):
        disputes.raise_dispute(session, s, clock, actor="c", entry_id=entry, claim="  ",
                               hand_ids=[HAND])
    with pytest.raises(DeskError, match="has no recorded score yet: name the hand"):
        disputes.raise_dispute(session, s, clock, actor="c", entry_id=entry, claim="x")
    with pytest.raises(NotFound, match="no hand 't01-000099' is stored"):
        disputes.raise_dispute(session, s, clock, actor="c", entry_id=entry, claim="x",
                               hand_ids=["t01-000099"])
    other = buy(session, clock, register(session, clock, "8101015009087"))
    with pytest.raises(DeskError, match=f"entry {other} did not play hand {HAND}"):
        disputes.raise_dispute(session, s, clock, actor="c", entry_id=other, claim="x",
                               hand_ids=[HAND])
    with pytest.raises(NotFound, match="no entry 'E-nobody'"):
        disputes.raise_dispute(session, s, clock, actor="c", entry_id="E-nobody", claim="x")
    assert disputes.dispute_records(session) == []


def test_voiding_a_hand_while_the_entry_plays_sends_the_table_a_correcting_command(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    raised = disputes.raise_dispute(session, settings(), clock, actor="clerk-7",
                                    entry_id=entry, claim="misdealt", hand_ids=[HAND])
    ruled = disputes.rule_dispute(session, settings(), clock, actor="S3-Mokoena",
                                  dispute_id=raised.dispute_id, ruling="hand_voided",
                                  why="two cards exposed: the hand is void")
    command = ruled.command
    assert command is not None and command.table == "t01" and command.command == "correct_hand"
    assert CorrectHand.decode(command.args) == CorrectHand(
        hand_id=HAND, entry_id=entry, ruling="void", reason="two cards exposed: the hand is void",
        dispute_id=raised.dispute_id)
    assert desk.recorded_command(session, command.seq).args == command.args  # resendable
    assert (ruled.status, ruled.ruling, ruled.ruled_by) == ("ruled", "hand_voided", "S3-Mokoena")
    assert ruled.ruling_detail["applied"] == "table"
    with pytest.raises(Conflict, match="has not been applied by table t01 yet"):
        disputes.close_dispute(session, clock, actor="S3-Mokoena",
                               dispute_id=raised.dispute_id, outcome="hand voided")
    table_reports(session, "hand.corrected", {
        "hand_id": HAND, "entry_id": entry, "seat": 2, "ruling": "hand_voided",
        "recorded_net": 7_500, "counted_net": 0, "balance_before": 207_500,
        "balance_after": 200_000, "hands_played": 2, "markers_returned": [],
        "dispute_id": raised.dispute_id, "by": "desk-key", "reason": "two cards exposed",
        "heat_id": "heat-1"}, table="t01", seq=25)
    closed = disputes.close_dispute(session, clock, actor="S3-Mokoena",
                                    dispute_id=raised.dispute_id,
                                    outcome="told at the table: hand voided, R75 taken back")
    assert (closed.status, closed.closed_by) == ("closed", "S3-Mokoena")
    [hand] = closed.hands
    assert [(c["ruling"], c["balance_before"], c["balance_after"]) for c in hand.corrections
            ] == [("hand_voided", 207_500, 200_000)]
    stored = session.get(Hand, HAND)
    assert stored is not None and stored.body["nets"] == {"2": 7_500, "4": -2_500}
    assert [d.dispute_id for d in disputes.dispute_records(session, status="closed")] == [
        raised.dispute_id]
    assert disputes.dispute_records(session, status="open") == []


def test_correcting_a_hand_after_the_score_is_recorded_corrects_the_score_beside_it(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    add_score(session, entry, 207_500, stage="qualifying", recorded=local(2026, 7, 3, 15, 0),
              acknowledged=None, seq=30)
    table_reports(session, "score.disputed", {"entry_id": entry, "score": 207_500,
                                              "note": "the odds were paid short",
                                              "stage": "qualifying"}, table="t01", seq=31)
    [raised] = disputes.dispute_records(session, status="open")
    with pytest.raises(DeskError, match="concerns 0 hands: name the one ruled on"):
        disputes.rule_dispute(session, settings(), clock, actor="S3", dispute_id=raised.dispute_id,
                              ruling="hand_corrected", net_cents=10_000, why="re-paid")
    ruled = disputes.rule_dispute(session, settings(), clock, actor="S3",
                                  dispute_id=raised.dispute_id, ruling="hand_corrected",
                                  hand_id=HAND, net_cents=10_000,
                                  why="odds pay 2 to 1 on a flush, not 1 to 1")
    assert ruled.command is None
    assert (ruled.ruling_detail["applied"], ruled.ruling_detail["score_before"],
            ruled.ruling_detail["score_after"]) == ("score", 207_500, 210_000)
    assert ruled.counted_cents == 210_000 and [h.hand_id for h in ruled.hands] == [HAND]
    score = session.get(Score, entry)
    assert score is not None and (score.score_cents, score.counted_cents) == (207_500, 210_000)
    assert "dispute" in (score.correction_reason or "")
    records = {r.entry_id: r for r in desk.score_records(session, settings(), Stage.QUALIFYING)}
    assert records[entry].score_cents == 210_000
    actions = [(a.actor, a.action) for a in session.scalars(
        select(AuditEntry).where(AuditEntry.action.in_(("score.corrected", "dispute.ruled")))
        .order_by(AuditEntry.id))]
    assert actions == [("S3", "score.corrected"), ("S3", "dispute.ruled")]
    assert session.scalars(select(HandCorrection)).all() == []  # nothing for a table to apply
    closed = disputes.close_dispute(session, clock, actor="S3", dispute_id=raised.dispute_id,
                                    outcome="score corrected to R2,100")
    assert closed.outcome == "score corrected to R2,100"


def test_a_dismissal_changes_nothing_and_a_dispute_is_ruled_once(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    raised = disputes.raise_dispute(session, settings(), clock, actor="c", entry_id=entry,
                                    claim="paid short", hand_ids=[HAND])
    with pytest.raises(DeskError, match="--why"):
        disputes.rule_dispute(session, settings(), clock, actor="S3",
                              dispute_id=raised.dispute_id, ruling="dismissed", why="")
    with pytest.raises(DeskError, match="a ruling is one of dismissed, hand_voided"):
        disputes.rule_dispute(session, settings(), clock, actor="S3",
                              dispute_id=raised.dispute_id, ruling="upheld", why="x")
    with pytest.raises(Conflict, match="is not ruled yet"):
        disputes.close_dispute(session, clock, actor="S3", dispute_id=raised.dispute_id,
                               outcome="x")
    ruled = disputes.rule_dispute(session, settings(), clock, actor="S3",
                                  dispute_id=raised.dispute_id, ruling="dismissed",
                                  why="camera shows the payout was right")
    assert (ruled.ruling, ruled.command, ruled.ruling_detail) == ("dismissed", None, {})
    with pytest.raises(Conflict, match="was already ruled dismissed by S3"):
        disputes.rule_dispute(session, settings(), clock, actor="S4",
                              dispute_id=raised.dispute_id, ruling="hand_voided", why="x")
    with pytest.raises(NotFound, match="no dispute 999"):
        disputes.dispute_record(session, 999)
    assert disputes.close_dispute(session, clock, actor="S3", dispute_id=raised.dispute_id,
                                  outcome="shown the footage").status == "closed"


def test_raising_or_ruling_after_the_round_is_refused_with_why(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    early = disputes.raise_dispute(session, s, clock, actor="clerk", entry_id=f.a_entries[0],
                                   claim="miscounted")
    clock.now = AFTER_QUALIFYING
    desk.allocate_semis(session, s, clock, actor="desk-1")
    with pytest.raises(Conflict, match="qualifying round is over: the semi-final places were"
                                       " allocated"):
        disputes.raise_dispute(session, s, clock, actor="clerk", entry_id=f.a_entries[1],
                               claim="late")
    with pytest.raises(Conflict, match="a dispute can no longer be ruled on"):
        disputes.rule_dispute(session, s, clock, actor="S3", dispute_id=early.dispute_id,
                              ruling="dismissed", why="too late")
    assert disputes.dispute_record(session, early.dispute_id).status == "open"
    assert len(disputes.dispute_records(session)) == 1


def test_a_ruling_the_table_could_not_apply_is_ruled_again_on_the_recorded_score(
    session: Session, clock: FakeClock
) -> None:
    entry = seated_with_a_hand(session, clock)
    s = settings()
    raised = disputes.raise_dispute(session, s, clock, actor="c", entry_id=entry,
                                    claim="misdealt", hand_ids=[HAND])
    first = disputes.rule_dispute(session, s, clock, actor="S3", dispute_id=raised.dispute_id,
                                  ruling="hand_voided", why="misdealt")
    assert first.command is not None
    with pytest.raises(Conflict, match="was already ruled hand_voided by S3"):
        disputes.rule_dispute(session, s, clock, actor="S3", dispute_id=raised.dispute_id,
                              ruling="hand_voided", why="again")
    # The entry's stage ended at the table before the command arrived: the table refused it.
    add_score(session, entry, 207_500, stage="qualifying", recorded=local(2026, 7, 3, 15, 0),
              acknowledged=None, seq=30)
    again = disputes.rule_dispute(session, s, clock, actor="S4", dispute_id=raised.dispute_id,
                                  ruling="hand_voided", why="misdealt; applied on the score")
    assert again.command is None and again.ruled_by == "S4"
    assert (again.ruling_detail["applied"], again.counted_cents) == ("score", 200_000)
    # Another dispute of the same hand for the same entry: already ruled, final (rule 23).
    other = disputes.raise_dispute(session, s, clock, actor="c", entry_id=entry,
                                   claim="and it was paid short", hand_ids=[HAND])
    with pytest.raises(Conflict, match=f"hand {HAND} was already ruled on for entry"):
        disputes.rule_dispute(session, s, clock, actor="S3", dispute_id=other.dispute_id,
                              ruling="hand_corrected", net_cents=9_000, why="x")
    score = session.get(Score, entry)
    assert score is not None and score.counted_cents == 200_000
