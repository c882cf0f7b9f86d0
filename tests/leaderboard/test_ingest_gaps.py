"""Ingest gaps on SQLite and PostgreSQL: resend requests (when, from which seq, how often), the
signed resend command, and the subscription filters."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from leaderboard.ingest import (
    Ingestor,
    MqttResender,
    subscription_filters,
)
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
    stored,
)
from wire.envelope import verify_envelope
from wire.signing import KeyRing
from wire.topics import TableTopics


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resends() -> Resends:
    return Resends()


# --- gaps and resend requests ----------------------------------------------------------------


async def test_a_gap_asks_for_a_resend_from_the_first_missing_seq_rate_limited(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends, resend_interval_s=5)
    messages = [t01.alert(f"a{n}") for n in range(1, 8)]
    for n in (1, 2, 5):
        await ingest.handle(*messages[n - 1])
    assert progress(engine, "t01") == (2, 5, [[3, 4]])
    assert resends.calls == [("t01", 3)]
    await ingest.handle(*messages[6])  # seq 7: another gap, still within the interval
    assert progress(engine, "t01") == (2, 7, [[3, 4], [6, 6]])
    assert resends.calls == [("t01", 3)]
    clock.advance(4.9)
    assert await ingest.check_gaps() == []
    clock.advance(0.1)
    assert await ingest.check_gaps() == [("t01", 3)]
    assert resends.calls == [("t01", 3), ("t01", 3)]
    await ingest.handle(*messages[2])  # seq 3 arrives
    assert progress(engine, "t01") == (3, 7, [[4, 4], [6, 6]])
    for n in (6, 4):
        await ingest.handle(*messages[n - 1])
    assert progress(engine, "t01") == (7, 7, [])
    clock.advance(60)
    assert await ingest.check_gaps() == []
    assert ingest.counters().resend_requests == 2
    assert [seq for _, seq, _ in stored(engine)] == [1, 2, 3, 4, 5, 6, 7]


async def test_a_gap_waits_resend_after_s_before_asking(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends, resend_after_s=1.0)
    first, second = t01.alert(), t01.alert()
    await ingest.handle(*second)  # seq 2 before seq 1: a gap, probably just reordering
    assert resends.calls == []
    clock.advance(0.5)
    assert await ingest.check_gaps() == []
    await ingest.handle(*first)  # it was: no request was needed
    clock.advance(5)
    assert await ingest.check_gaps() == []
    await ingest.handle(*t01.message("alert", {"kind": "x"}, seq=5))
    clock.advance(1.0)
    assert await ingest.check_gaps() == [("t01", 3)]


async def test_the_rate_limit_is_shared_by_instances_through_the_database(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    calls_a, calls_b = Resends(), Resends()
    a = make_ingestor(engine, clock, calls_a)
    b = make_ingestor(engine, clock, calls_b)
    await a.handle(*t01.message("alert", {"kind": "x"}, seq=3))
    await b.handle(*t01.message("alert", {"kind": "x"}, seq=4))
    assert calls_a.calls + calls_b.calls == [("t01", 1)]


async def test_an_availability_announcing_later_seqs_asks_for_the_tail(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    for _ in range(4):
        t01.alert()
    await ingest.handle(*t01.sent[1])
    await ingest.handle(*t01.sent[2])  # 3 and 4 are lost, and nothing follows them
    birth = t01.message("availability", {"state": "online",
                                         "link": {"last_published_seq": 4}}, seq=0)
    assert (await ingest.handle(t01.topics.status, birth[1])).outcome == "notice"
    assert resends.calls == [("t01", 3)]
    await ingest.handle(*t01.sent[3])
    await ingest.handle(*t01.sent[4])
    clock.advance(60)
    assert await ingest.check_gaps() == []
    assert progress(engine, "t01") == (4, 4, [])


async def test_a_failing_resender_is_counted_and_asked_again_later(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    attempts: list[int] = []

    async def broken(table: str, from_seq: int) -> None:
        attempts.append(from_seq)
        raise ConnectionError("broker down")

    ingest = Ingestor(engine, venue=VENUE, resend=broken, clock=clock, topic_root=ROOT,
                      resend_after_s=0, resend_interval_s=5)
    assert (await ingest.handle(*t01.message("alert", {"kind": "x"}, seq=2))).outcome == "stored"
    clock.advance(5)
    await ingest.check_gaps()
    assert attempts == [1, 1]
    assert ingest.counters().resend_failures == 2



# --- the resend command and the subscription ---------------------------------------------


def test_resend_command_is_a_signed_desk_style_command_for_the_table() -> None:
    from wire.mqtt import MqttSettings

    key = key_of("leaderboard")
    resender = MqttResender(MqttSettings(topic_root=ROOT), key, venue=VENUE,
                            clock=FakeClock())
    topic, payload = resender.command("t07", 42)
    topic2, payload2 = resender.command("t07", 42)
    assert topic == topic2 == TableTopics(VENUE, "t07", ROOT).cmd
    first = verify_envelope(payload, KeyRing([key.public_key]))
    second = verify_envelope(payload2, KeyRing([key.public_key]))
    assert (first.type, first.table, first.venue) == ("resend", "leaderboard", VENUE)
    assert first.body["table"] == "t07"
    assert first.body["command"] == "resend"
    assert first.body["from_seq"] == 42
    assert second.seq > first.seq > 0  # a new command each time: the table applies both
    with pytest.raises(ValueError, match="from_seq"):
        resender.command("t07", 0)


def test_subscription_filters_plain_and_shared() -> None:
    assert subscription_filters(VENUE, root=ROOT) == tuple(
        f"{ROOT}/{VENUE}/tables/+/{s}" for s in ("events", "scores", "status"))
    shared = subscription_filters(VENUE, root=ROOT, shared_group="leaderboard")
    assert shared[1] == f"$share/leaderboard/{ROOT}/{VENUE}/tables/+/scores"
    with pytest.raises(ValueError, match="shared group"):
        subscription_filters(VENUE, shared_group="a/b")

