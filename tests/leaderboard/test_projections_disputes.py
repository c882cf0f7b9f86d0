"""The table's dispute messages stored centrally: ``hand.disputed`` (a dealer's or
supervisor's dispute) as a dispute, ``hand.corrected`` (a ruling applied to an entry's chips)
as a hand's correcting record; through the batch path and one by one, on SQLite and
PostgreSQL. A repeat changes nothing; a bad body is refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from leaderboard.ingest import Ingestor
from leaderboard.models import Dispute, HandCorrection
from leaderboard.projections import MALFORMED_BODY, project
from tests.leaderboard.ingest_support import ROOT, VENUE, FakeClock, FakeTable, enroll
from tests.leaderboard.test_projections_console import DISPUTE, sealed

RAISED = {"hand_id": "t01-000004", "entry_id": "E1", "seat": 3, "claim": "trips not paid",
          "by": "D12", "role": "dealer", "heat_id": "heat-1", "stage": "qualifying",
          "at": "2026-07-03T13:05:00Z"}
CORRECTED = {"hand_id": "t01-000004", "entry_id": "E1", "seat": 3, "ruling": "hand_corrected",
             "recorded_net": 2_500, "counted_net": 10_000, "balance_before": 202_500,
             "balance_after": 210_000, "hands_played": 5, "markers_returned": [],
             "dispute_id": 7, "by": "desk-a", "reason": "trips pay 3 to 1",
             "heat_id": "heat-1", "at": "2026-07-03T13:20:00Z"}


def rows(engine: sa.Engine) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with engine.connect() as c:
        disputes = [(r.seq, r.entry_id, r.raised_by_role, r.raised_by, r.hand_ids, r.note,
                     r.score_cents, r.status)
                    for r in c.execute(sa.select(Dispute).order_by(Dispute.seq))]
        corrections = [(r.seq, r.hand_id, r.entry_id, r.ruling, r.balance_before,
                        r.balance_after, r.dispute_id)
                       for r in c.execute(sa.select(HandCorrection))]
    return disputes, corrections


EXPECTED = (
    [(1, "E1", "dealer", "D12", ["t01-000004"], "trips not paid", None, "open"),
     (2, "E1", "participant", "E1", None, "hand 12 was paid short", 23_450, "open")],
    [(3, "t01-000004", "E1", "hand_corrected", 202_500, 210_000, 7)])


async def test_a_batch_stores_hand_disputes_and_correcting_records(engine: sa.Engine) -> None:
    ingest = Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)
    t01 = FakeTable("t01")
    enroll(engine, t01)
    batch = [t01.message("hand.disputed", RAISED), t01.message("score.disputed", DISPUTE),
             t01.message("hand.corrected", CORRECTED)]
    results = await ingest.handle_batch(batch)
    assert [(r.outcome, r.changes) for r in results] == [
        ("stored", ("hand.disputed",)), ("stored", ("score.disputed",)),
        ("stored", ("hand.corrected",))]
    assert rows(engine) == EXPECTED
    again = await ingest.handle_batch(batch)
    assert {r.outcome for r in again} == {"duplicate"}
    assert rows(engine) == EXPECTED


def test_one_by_one_gives_the_same_rows(engine: sa.Engine) -> None:
    messages = [sealed("hand.disputed", RAISED, 1), sealed("score.disputed", DISPUTE, 2),
                sealed("hand.corrected", CORRECTED, 3)]
    with engine.begin() as connection:
        changes = [project(connection, m).changes for m in messages]
        assert project(connection, messages[2]).changes == ()
    assert changes == [("hand.disputed",), ("score.disputed",), ("hand.corrected",)]
    assert rows(engine) == EXPECTED


@pytest.mark.parametrize(("kind", "body", "field"), [
    ("hand.disputed", {**RAISED, "role": "cashier"}, "role"),
    ("hand.disputed", {**RAISED, "claim": ""}, "claim"),
    ("hand.corrected", {**CORRECTED, "ruling": "upheld"}, "ruling"),
    ("hand.corrected", {**CORRECTED, "recorded_net": "R25"}, "recorded_net"),
])
def test_a_bad_body_is_refused_by_name(engine: sa.Engine, kind: str, body: dict[str, Any],
                                       field: str) -> None:
    with engine.begin() as connection:
        result = project(connection, sealed(kind, body, 1))
    [(reason, detail)] = [(r.reason, r.detail) for r in result.refused]
    assert reason == MALFORMED_BODY and f"field {field!r}" in detail
    assert rows(engine) == ([], [])


# A supervisor's ruling made at the table's console (rule_hand): the same correcting record,
# naming the supervisor, with no desk dispute behind it, saying where it was made.
AT_TABLE = {**CORRECTED, "dispute_id": None, "by": "S-0007", "made_at": "table",
            "ruling": "hand_voided", "counted_net": 0, "balance_after": 200_000}


async def test_a_ruling_made_at_the_table_is_stored_like_the_desks(engine: sa.Engine) -> None:
    ingest = Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)
    t01 = FakeTable("t01")
    enroll(engine, t01)
    results = await ingest.handle_batch([t01.message("hand.corrected", CORRECTED),
                                         t01.message("hand.corrected", AT_TABLE)])
    assert [(r.outcome, r.changes) for r in results] == [("stored", ("hand.corrected",))] * 2
    with engine.connect() as c:
        stored = [(r.seq, r.ruling, r.balance_after, r.dispute_id, r.by, r.reason)
                  for r in c.execute(sa.select(HandCorrection).order_by(HandCorrection.seq))]
    assert stored == [(1, "hand_corrected", 210_000, 7, "desk-a", "trips pay 3 to 1"),
                      (2, "hand_voided", 200_000, None, "S-0007", "trips pay 3 to 1")]
    with engine.begin() as connection:
        bad = project(connection, sealed("hand.corrected", {**AT_TABLE, "made_at": "bar"}, 9))
    assert [r.reason for r in bad.refused] == [MALFORMED_BODY]
