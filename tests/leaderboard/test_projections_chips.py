"""``chips.reconciled`` stored centrally (issue 13, rule 19): one ChipReconciliation row per
message, through the batch path and the one-by-one path, on SQLite and PostgreSQL; a body
that breaks a rule is stored and refused by name."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from leaderboard.ingest import Ingestor
from leaderboard.models import ChipReconciliation
from leaderboard.projections import MALFORMED_BODY, project
from tests.leaderboard.ingest_support import ROOT, VENUE, FakeClock, FakeTable, enroll, stored
from tests.leaderboard.test_projections_console import sealed

A, B, C = "E05D010101000001", "E05D010101000002", "E05D010003000001"
BACK = {"entry_id": "E1", "seat": 2, "chip_set": "showdown-2026", "heat_id": "heat-1",
        "issued": [A, B], "held": [A, B, C], "returned": [A, C], "missing": [B],
        "foreign": [], "issued_cents": 5_000, "held_cents": 55_000, "returned_cents": 52_500,
        "missing_cents": 2_500, "at": "2026-07-03T14:00:00Z"}
ALL_BACK = {**BACK, "entry_id": "E2", "returned": [A, B, C], "missing": [],
            "returned_cents": 55_000, "missing_cents": 0}


@pytest.fixture
def ingest(engine: sa.Engine) -> Ingestor:
    return Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)


def rows(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as c:
        return [(r.entry_id, r.table_id, r.seq, r.heat_id, r.seat, r.issued, r.returned,
                 r.missing, r.missing_cents)
                for r in c.execute(sa.select(ChipReconciliation).order_by(ChipReconciliation.seq))]


EXPECTED = [("E1", "t01", 1, "heat-1", 2, [A, B], [A, C], [B], 2_500),
            ("E2", "t01", 2, "heat-1", 2, [A, B], [A, B, C], [], 0)]


async def test_a_batch_stores_each_reconciliation_once(engine: sa.Engine,
                                                       ingest: Ingestor) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    batch = [t01.message("chips.reconciled", BACK), t01.message("chips.reconciled", ALL_BACK)]
    results = await ingest.handle_batch(batch)
    assert [(r.outcome, r.changes) for r in results] == [
        ("stored", ("chips.reconciled",)), ("stored", ("chips.reconciled",))]
    assert stored(engine) == [("t01", 1, "chips.reconciled"), ("t01", 2, "chips.reconciled")]
    assert rows(engine) == EXPECTED
    again = await ingest.handle_batch(batch)
    assert {r.outcome for r in again} == {"duplicate"}
    assert len(rows(engine)) == 2


async def test_one_by_one_gives_the_same_rows(engine: sa.Engine) -> None:
    messages = [sealed("chips.reconciled", BACK, 1), sealed("chips.reconciled", ALL_BACK, 2)]
    with engine.begin() as connection:
        changes = [project(connection, m).changes for m in messages]
        again = project(connection, messages[0])
    assert changes == [("chips.reconciled",), ("chips.reconciled",)]
    assert again.changes == ()
    assert rows(engine) == EXPECTED


@pytest.mark.parametrize(("body", "field"), [
    ({**BACK, "missing": []}, "missing"),  # held, not returned, yet not missing
    ({**BACK, "issued": ["e05d"]}, "issued"),
    ({**BACK, "missing_cents": -1}, "missing_cents"),
    ({**BACK, "seat": "two"}, "seat"),
])
async def test_a_bad_reconciliation_is_stored_and_refused_by_name(
    engine: sa.Engine, ingest: Ingestor, body: dict[str, Any], field: str
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    result = await ingest.handle(*t01.message("chips.reconciled", body))
    assert (result.outcome, result.reason) == ("stored", MALFORMED_BODY)
    assert f"'{field}'" in result.detail
    assert rows(engine) == []
