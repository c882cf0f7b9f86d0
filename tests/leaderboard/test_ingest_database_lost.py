"""Issue 34 point 1: a batch the ingest received is not dropped when its transaction loses the
database (a failover): it is stored again on a new connection (D389); and after a
dropped connection every table is asked for its tail (D391).

The lost database is a real one: the engine's next connections answer as a demoted primary
does (``default_transaction_read_only`` for their session only, SQLSTATE 25006 on the first
write, while the ping at checkout passes), so nothing of the machine's PostgreSQL changes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa

from leaderboard.db import make_engine
from leaderboard.models import TableRecord
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import Database
from tests.leaderboard.ingest_support import (
    FakeTable,
    Resends,
    enroll,
    make_ingestor,
    progress,
    stored,
)


def _demoted_for(engine: sa.Engine, connections: int) -> list[Any]:
    """The engine's next ``connections`` new connections are read-only (as on a standby);
    the list of every connection opened from now on."""
    opened: list[Any] = []

    @sa.event.listens_for(engine, "connect")
    def _read_only(dbapi_connection: Any, _record: Any) -> None:
        opened.append(dbapi_connection)
        if len(opened) <= connections:
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET SESSION default_transaction_read_only = on")
            dbapi_connection.commit()

    engine.dispose()  # the pooled (writable) connections go: the next ones are new
    return opened


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_batch_that_lost_the_database_is_stored_on_a_new_connection(
    database_url: Database, log_events: list[dict[str, Any]]
) -> None:
    engine = make_engine(database_url.url)
    try:
        database_url.migrate(engine)
        t01 = FakeTable("t01")
        enroll(engine, t01)
        ingest = make_ingestor(engine, FakeClock(), Resends(), store_retry_s=(0.01, 0.05))
        opened = _demoted_for(engine, 2)
        batch = [t01.alert(), t01.score("E1", 100), t01.alert()]
        items = await ingest.screen_received(batch)
        assert items is not None
        results = await ingest.store_received(items, stop=asyncio.Event())
        assert [r.outcome for r in results] == ["stored"] * 3
        assert stored(engine) == [("t01", 1, "alert"), ("t01", 2, "score.recorded"),
                                  ("t01", 3, "alert")]
        assert progress(engine, "t01") == (3, 3, [])
        assert all(c.closed for c in opened[:2])  # each read-only connection was dropped
        events = [e["event"] for e in log_events if e["event"].startswith("ingest_database")]
        assert events == ["ingest_database_lost", "ingest_database_back"]
        back = next(e for e in log_events if e["event"] == "ingest_database_back")
        assert back["attempts"] == 3
        assert ingest.counters().as_dict()["failed"] == 0
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_stopping_ingest_gives_up_a_batch_the_database_never_takes(
    database_url: Database
) -> None:
    engine = make_engine(database_url.url)
    try:
        database_url.migrate(engine)
        t01 = FakeTable("t01")
        enroll(engine, t01)
        ingest = make_ingestor(engine, FakeClock(), Resends(), store_retry_s=(0.01, 0.05))
        _demoted_for(engine, 10_000)
        items = await ingest.screen_received([t01.alert()])
        assert items is not None
        stop = asyncio.Event()
        storing = asyncio.create_task(ingest.store_received(items, stop=stop))
        await asyncio.sleep(0.2)
        assert not storing.done()  # still trying: nothing is dropped while the service runs
        stop.set()
        assert await storing == []
        assert ingest.counters().as_dict()["failed"] == 1
    finally:
        engine.dispose()


async def test_after_a_dropped_connection_every_table_is_asked_for_its_tail_once(
    engine: sa.Engine
) -> None:
    t01, t02, t03, quiet = (FakeTable(t) for t in ("t01", "t02", "t03", "t04"))
    enroll(engine, t01, t02, t03, quiet)
    resends = Resends()
    ingest = make_ingestor(engine, FakeClock(), resends)
    try:
        for message in (t01.alert(), t01.alert(), t02.alert(), t03.alert()):
            assert (await ingest.handle(*message)).outcome == "stored"
        with engine.begin() as connection:  # t03 is no longer enrolled
            connection.execute(sa.update(TableRecord).where(TableRecord.table_id == "t03")
                               .values(active=False))
        assert await ingest.check_gaps() == []
        with engine.connect() as connection:  # as a failover drops one
            connection.invalidate()
        asked = await ingest.check_gaps()
        # The tables that sent something, from the seq after their highest stored; not the
        # quiet one, nor the one no longer enrolled.
        assert asked == [("t01", 3), ("t02", 2)] == resends.calls
        assert await ingest.check_gaps() == []  # once per drop
    finally:
        ingest.close()
