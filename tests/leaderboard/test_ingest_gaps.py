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
from leaderboard.models import AuditEntry
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
from wire.messages import Availability
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


async def test_seqs_a_rotated_table_cannot_resend_are_alerted_once_and_not_asked_for(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    """D412 (D414): the table's journal was rotated at seq 56; the centre (rebuilt)
    lacks 1-3 and 7: one critical alert names them, nothing below 8 is asked for again."""
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends, resend_after_s=0, resend_interval_s=5)
    for _ in range(10):
        t01.alert()
    for n in (4, 5, 6, 8):
        await ingest.handle(*t01.sent[n])
    assert resends.calls == [("t01", 1)]  # before the table says what it can resend
    birth = t01.message("availability", {
        "state": "online", "link": {"last_published_seq": 10},
        "status": {"state": "online", Availability.FIRST_RESENDABLE: 8}}, seq=0)
    clock.advance(5)
    assert (await ingest.handle(t01.topics.status, birth[1])).outcome == "notice"
    assert progress(engine, "t01") == (8, 8, [])
    assert resends.calls == [("t01", 1), ("t01", 9)]  # the tail it can resend, still asked for
    for _ in range(3):  # the retained notice again (a reconnect, another instance)
        clock.advance(5)
        await ingest.handle(t01.topics.status, birth[1])
        await ingest.check_gaps()
    assert {seq for _, seq in resends.calls[1:]} == {9}
    await ingest.handle(*t01.sent[9])
    await ingest.handle(*t01.sent[10])
    clock.advance(60)
    assert await ingest.check_gaps() == []
    assert progress(engine, "t01") == (10, 10, [])
    with engine.connect() as connection:
        alerts = connection.execute(
            sa.select(AuditEntry.detail)
            .where(AuditEntry.action == "alert.messages_unresendable")).scalars().all()
    assert len(alerts) == 1
    assert alerts[0]["table"] == "t01" and alerts[0]["ranges"] == [[1, 3], [7, 7]]
    assert "restore a backup of the central database taken before" in \
        alerts[0]["problem"].lower()


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

