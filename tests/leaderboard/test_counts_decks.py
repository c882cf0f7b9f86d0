"""The tables' chip counts and deck steps stored centrally (``chips.counted`` and
``decks.event`` -> ``chip_counts`` and ``deck_events``, revision 0015) on SQLite and
PostgreSQL, through the batch path and the one-by-one path, and the reports
`showdown leaderboard counts` and `showdown leaderboard decks` print from them: who counted
and confirmed, differences over the tolerance and heats without counts as alerts; decks per
table and day with the balance checked again from the steps."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from cli.main import main
from leaderboard.ingest import Ingestor
from leaderboard.models import ChipCountRecord, DeckEventRecord
from leaderboard.projections import MALFORMED_BODY, project
from leaderboard.tally_reports import deck_days, heat_counts
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import Database
from tests.leaderboard.ingest_support import ROOT, VENUE, FakeTable, enroll
from tests.leaderboard.test_projections_console import sealed

OPENING = {"heat_id": "H1", "stage": "opening", "counted": {"500": 40, "10000": 3},
           "expected": {"500": 40, "10000": 3}, "total_cents": 50_000,
           "expected_cents": 50_000, "difference_cents": 0, "tolerance_cents": 0,
           "over_tolerance": False, "dealer_id": "D-1", "supervisor_id": "S-1",
           "counted_at": "2026-12-06T09:00:00Z", "confirmed_at": "2026-12-06T09:01:00Z"}
# two R5 chips short at closing, with R5.00 tolerated: an alert
CLOSING = {**OPENING, "stage": "closing", "counted": {"500": 38, "10000": 3},
           "total_cents": 49_000, "difference_cents": -1_000, "tolerance_cents": 500,
           "over_tolerance": True, "counted_at": "2026-12-06T17:00:00Z",
           "confirmed_at": "2026-12-06T17:02:00Z"}


def step(kind: str, decks: int, day: str, position: tuple[int, int, int], *, by: str = "S-1",
         witness: str | None = None, problems: tuple[str, ...] = (),
         seals: tuple[str, ...] = ()) -> dict[str, Any]:
    sealed_, in_play, awaiting = position
    return {"kind": kind, "decks": decks, "day": day, "by": by, "at": f"{day}T10:00:00Z",
            "sealed": sealed_, "in_play": in_play, "awaiting": awaiting,
            "seals": list(seals), "lot": "L-9" if kind == "received" else None,
            "source": "cage" if kind == "received" else None, "witness": witness,
            "note": None, "problems": list(problems)}


DAY1, DAY2 = "2026-12-06", "2026-12-07"
STEPS = [step("received", 10, DAY1, (10, 0, 0), seals=("A1",)),
         step("opened", 3, DAY1, (7, 3, 0), by="D-1", seals=("A1",)),
         step("used", 2, DAY1, (7, 1, 2), by="D-1"),
         step("destroyed", 1, DAY1, (7, 1, 1), witness="D-1"),
         step("opened", 9, DAY2, (-2, 10, 1), by="D-1",
              problems=("2 more decks opened than received",))]


@pytest.fixture
def ingest(engine: sa.Engine) -> Ingestor:
    return Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)


async def _store_all(engine: sa.Engine, ingest: Ingestor) -> FakeTable:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    batch = [t01.message("heat.opened", {"heat_id": "H1", "stage": "qualifying",
                                         "at": "2026-12-06T09:00:00Z"}),
             t01.message("chips.counted", OPENING),
             t01.message("chips.counted", CLOSING),
             t01.message("heat.closed", {"heat_id": "H1", "at": "2026-12-06T17:05:00Z"}),
             t01.message("heat.opened", {"heat_id": "H2", "stage": "qualifying",
                                         "at": "2026-12-06T18:00:00Z"}),
             t01.message("heat.closed", {"heat_id": "H2", "at": "2026-12-06T19:00:00Z"}),
             *(t01.message("decks.event", s) for s in STEPS)]
    results = await ingest.handle_batch(batch)
    assert [r.outcome for r in results] == ["stored"] * len(batch)
    assert [r.changes for r in results if r.changes] == (
        [("chips.counted",)] * 2 + [("decks.event",)] * len(STEPS))
    return t01


async def test_counts_are_stored_once_and_reported_with_their_alerts(
        engine: sa.Engine, ingest: Ingestor) -> None:
    t01 = await _store_all(engine, ingest)
    with engine.connect() as c:
        rows = [(r.heat_id, r.stage, r.counted, r.total_cents, r.difference_cents,
                 r.over_tolerance, r.dealer_id, r.supervisor_id)
                for r in c.execute(sa.select(ChipCountRecord).order_by(ChipCountRecord.seq))]
        assert rows == [
            ("H1", "opening", {"500": 40, "10000": 3}, 40 * 500 + 3 * 10_000, 0, False, "D-1",
             "S-1"),
            ("H1", "closing", {"500": 38, "10000": 3}, 38 * 500 + 3 * 10_000, -2 * 500, True,
             "D-1", "S-1")]
        h1, h2 = heat_counts(c)
    assert (h1.heat_id, h1.closed, h1.alerts) == (
        "H1", True, ["closing count differs by -R10.00, over the tolerance of R5.00"])
    assert (h2.heat_id, h2.counts, h2.alerts) == (
        "H2", {}, ["no confirmed opening count", "no confirmed closing count"])
    again = await ingest.handle_batch([t01.sent[2], t01.sent[3]])
    assert {r.outcome for r in again} == {"duplicate"}


async def test_decks_per_day_carry_the_position_and_check_the_balance(
        engine: sa.Engine, ingest: Ingestor) -> None:
    await _store_all(engine, ingest)
    with engine.connect() as c:
        [first] = deck_days(c, DAY1)
        [second] = deck_days(c, DAY2, table="t01")
        assert deck_days(c, DAY1, table="t02") == []
    assert (first.received, first.opened, first.used, first.destroyed) == (10, 3, 2, 1)
    # received 10 = opened 3 + sealed 7; opened 3 = used 2 + in play 1; used 2 = destroyed 1
    # + awaiting 1
    assert (first.end.sealed, first.end.in_play, first.end.awaiting) == (7, 1, 1)
    assert first.problems == [] and [s["witness"] for s in first.steps] == [
        None, None, None, "D-1"]
    assert second.start == first.end
    assert second.problems == ["2 more decks opened than received"]


async def test_a_position_that_does_not_follow_from_the_steps_is_a_problem(
        engine: sa.Engine, ingest: Ingestor) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    told = step("used", 1, DAY1, (5, -1, 1), by="D-1")  # the table claims 5 sealed
    await ingest.handle_batch([t01.message("decks.event", s) for s in (
        step("received", 2, DAY1, (2, 0, 0)), told)])
    with engine.connect() as c:
        [day] = deck_days(c, DAY1)
    assert day.problems == [
        "seq 2: the table reported {'sealed': 5, 'in_play': -1, 'awaiting': 1}, its steps give"
        " {'sealed': 2, 'in_play': -1, 'awaiting': 1}", "1 more decks used than opened"]


def test_one_by_one_gives_the_same_rows(engine: sa.Engine) -> None:
    messages = [sealed("chips.counted", OPENING, 1), sealed("decks.event", STEPS[0], 2)]
    with engine.begin() as connection:
        changes = [project(connection, m).changes for m in messages]
        again = project(connection, messages[0])
    assert changes == [("chips.counted",), ("decks.event",)] and again.changes == ()
    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(DeckEventRecord)).scalar() == 1
        assert c.execute(sa.select(ChipCountRecord.total_cents)).scalar() == 50_000


@pytest.mark.parametrize(("kind", "body", "field"), [
    ("chips.counted", {**OPENING, "total_cents": 1}, "total_cents"),
    ("chips.counted", {**OPENING, "supervisor_id": "D-1"}, "supervisor_id"),
    ("chips.counted", {**OPENING, "confirmed_at": "yesterday"}, "confirmed_at"),
    ("decks.event", {**STEPS[3], "witness": None}, "witness"),
    ("decks.event", {**STEPS[0], "decks": 0}, "decks"),
])
async def test_a_bad_body_is_stored_and_refused_by_name(
        engine: sa.Engine, ingest: Ingestor, kind: str, body: dict[str, Any],
        field: str) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    result = await ingest.handle(*t01.message(kind, body))
    assert (result.outcome, result.reason) == ("stored", MALFORMED_BODY)
    assert f"'{field}'" in result.detail


async def test_the_cli_reports(database_url: Database, capsys: pytest.CaptureFixture[str]
                               ) -> None:
    engine = database_url.engine()
    database_url.migrate(engine)
    ingest = Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT,
                      resend_after_s=0)
    await _store_all(engine, ingest)
    capsys.readouterr()
    assert main(["leaderboard", "counts", "--db", database_url.url, "--table", "t01"]) == 0
    out = capsys.readouterr().out
    assert ("  closing: R490.00 counted by D-1, confirmed by S-1 at 2026-12-06T17:02:00+00:00;"
            " expected R500.00, difference -R10.00 ALERT: over the tolerance of R5.00") in out
    assert "t01 heat H2\n  opening: none confirmed\n" in out
    assert "  ALERT: no confirmed closing count" in out
    assert main(["leaderboard", "decks", "--db", database_url.url, "--day", DAY2,
                 "--json"]) == 0
    [day] = json.loads(capsys.readouterr().out)
    assert (day["start"], day["end"], day["balanced"]) == (
        {"sealed": 7, "in_play": 1, "awaiting": 1},
        {"sealed": -2, "in_play": 10, "awaiting": 1}, False)
    with pytest.raises(SystemExit) as usage:
        main(["leaderboard", "decks", "--db", database_url.url, "--day", "7 Dec"])
    assert usage.value.code == 2
    assert "'7 Dec' is not a day such as 2026-12-06" in capsys.readouterr().err
