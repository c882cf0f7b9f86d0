"""Ingest batches on SQLite and PostgreSQL: copies and replays inside a batch, on_change after the
commit, a database failure confined to its message, racing instances, worker processes."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
import sqlalchemy as sa

from leaderboard import projections
from leaderboard.ingest import (
    REPLAYED_SEQ,
    STORE_ERROR,
    Ingestor,
)
from leaderboard.ingest import storing as ingest_storing
from leaderboard.models import (
    Message,
)
from leaderboard.projections import decoding as projection_decoding
from tests.leaderboard.ingest_support import (
    ROOT,
    VENUE,
    FakeClock,
    FakeTable,
    Resends,
    enroll,
    key_of,
    make_ingestor,
    progress,
    rejection_reasons,
    scores,
    stored,
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resends() -> Resends:
    return Resends()


# --- batches, callbacks, failures ----------------------------------------------------------------


async def test_a_batch_with_copies_and_a_replay_inside_it(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    one = t01.score("E1", 4_000)
    replay = t01.score("E1", 8_000, seq=1)
    two = t01.alert()
    results = await ingest.handle_batch([one, one, replay, two, ("elsewhere/x", b"{}")])
    assert [(r.outcome, r.reason) for r in results] == [
        ("stored", None), ("duplicate", None), ("rejected", REPLAYED_SEQ), ("stored", None),
        ("ignored", None)]
    assert scores(engine)["E1"][2] == 4_000


async def test_on_change_is_called_after_the_commit_with_each_kind_once(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    seen: list[tuple[str, int]] = []

    def changed(kind: str) -> None:
        with engine.connect() as connection:  # committed: visible to another connection
            seen.append((kind, connection.scalar(sa.select(sa.func.count(Message.id))) or 0))

    ingest = Ingestor(engine, venue=VENUE, clock=clock, topic_root=ROOT, on_change=changed)
    await ingest.handle_batch([t01.score("E1", 1), t01.ack("E1", 1), t01.alert()])
    assert seen == [("score.recorded", 3), ("score.acknowledged", 3), ("alert", 3)]
    await ingest.handle(*t01.sent[1])  # a duplicate changes nothing
    assert len(seen) == 3


async def test_every_body_of_a_batch_is_read_once(
    engine: sa.Engine, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest reads each body into its definition once, whether the batch path applies
    it or leaves it to the one-by-one path (two scores of one entry, an acknowledgement of a
    score in the batch: left to project())."""
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    read: list[tuple[str, int]] = []
    real_decode = projection_decoding.decode

    def counting(envelope: Any) -> Any:
        read.append((envelope.table, envelope.seq))
        return real_decode(envelope)

    monkeypatch.setattr(projection_decoding, "decode", counting)
    batch = [t01.score("E1", 1_000), t01.score("E1", 2_000), t01.ack("E1", 1_000),
             t01.seated("E2", 3), t01.alert()]
    results = await ingest.handle_batch(batch)
    assert [r.outcome for r in results] == ["stored"] * 5
    assert sorted(read) == [("t01", seq) for seq in range(1, 6)]  # once each, no more
    assert scores(engine)["E1"][2] == 1_000  # the first score counts; the second is refused


async def test_a_message_the_database_refuses_fails_alone_and_is_recovered_by_resend(
    engine: sa.Engine, clock: FakeClock, resends: Resends, monkeypatch: pytest.MonkeyPatch
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    real_project = projections.project
    broken = {"on": True}

    def flaky(connection: Any, envelope: Any, **kw: Any) -> Any:
        if envelope.seq == 2 and broken["on"]:
            raise sa.exc.OperationalError("UPDATE", {}, Exception("disk I/O error"))
        return real_project(connection, envelope, **kw)

    real_bulk = projections.project_bulk

    def flaky_bulk(connection: Any, items: Any, decoded: Any = None) -> Any:
        if broken["on"] and any(envelope.seq == 2 for envelope, _, _ in items):
            raise sa.exc.OperationalError("INSERT", {}, Exception("disk I/O error"))
        return real_bulk(connection, items, decoded)

    monkeypatch.setattr(ingest_storing, "project", flaky)
    monkeypatch.setattr(ingest_storing, "project_bulk", flaky_bulk)
    batch = [t01.alert(), t01.score("E1", 100), t01.alert()]
    results = await ingest.handle_batch(batch)
    assert [r.outcome for r in results] == ["stored", "failed", "stored"]
    assert results[1].reason == STORE_ERROR
    assert stored(engine) == [("t01", 1, "alert"), ("t01", 3, "alert")]
    assert resends.calls == [("t01", 2)]  # the gap it left is asked for at once
    assert rejection_reasons(engine) == [STORE_ERROR]
    broken["on"] = False
    again = await ingest.handle(*t01.sent[2])
    assert (again.outcome, again.reason) == ("stored", None)
    assert scores(engine)["E1"][2] == 100
    assert progress(engine, "t01") == (3, 3, [])


async def test_two_instances_racing_on_the_same_messages_store_each_exactly_once(
    engine: sa.Engine
) -> None:
    tables = [FakeTable(f"r{n}") for n in range(3)]
    enroll(engine, *tables)
    messages = []
    for table in tables:
        for n in range(40):
            messages.append(table.score(f"{table.table}-e{n}", 100 * n) if n % 4 == 0
                            else table.alert(f"{n}"))
    rng = random.Random(7)
    a, b = make_ingestor(engine, FakeClock()), make_ingestor(engine, FakeClock())

    async def feed(ingest: Ingestor, order: list[tuple[str, bytes]]) -> list[str]:
        outcomes: list[str] = []
        for start in range(0, len(order), 7):
            outcomes += [r.outcome for r in await ingest.handle_batch(order[start:start + 7])]
        return outcomes

    one, two = messages[:], messages[:]
    rng.shuffle(one)
    rng.shuffle(two)
    outcome_a, outcome_b = await asyncio.gather(feed(a, one), feed(b, two))
    everything = outcome_a + outcome_b
    assert everything.count("stored") == len(messages)
    assert everything.count("duplicate") == len(messages)
    assert len(stored(engine)) == len(messages)
    assert len(scores(engine)) == 30
    for table in tables:
        assert progress(engine, table.table) == (40, 40, [])


async def test_verification_in_worker_processes_gives_the_same_results(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t09 = FakeTable("t01"), FakeTable("t09")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, verify_workers=1, key_refresh_s=0)
    try:
        first = [t01.alert(), t01.score("E1", 5, key=key_of("t01", salt="x")), t09.alert(),
                 (t01.topics.events, b"[1]"), t01.alert()]
        results = await ingest.handle_batch(first)
        assert [(r.outcome, r.reason) for r in results] == [
            ("stored", None), ("rejected", "bad_signature"), ("rejected", "unknown_signer"),
            ("rejected", "not_object"), ("stored", None)]
        enroll(engine, t09)  # a worker's "unknown signer" is checked again here, keys reloaded
        again = await ingest.handle_batch([t09.sent[1], *(t01.alert() for _ in range(4))])
        assert [r.outcome for r in again] == ["stored"] * 5
    finally:
        ingest.close()
    assert [seq for _, seq, _ in stored(engine, "t01")] == [1, 3, 4, 5, 6, 7]


