"""Ingest.handle on SQLite and PostgreSQL: a message stored once, and every refusal with its reason.

Every test runs on both databases (``database_url``). Messages are really sealed with Ed25519
keys; the ingest trusts only the keys of the tables enrolled in the database. The helpers live
in tests/leaderboard/ingest_support.py (imported from here too by older test modules).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import sqlalchemy as sa

from leaderboard.ingest import (
    INGEST_REASONS,
    OUT_OF_WINDOW,
    REPLAYED_SEQ,
    TABLE_INACTIVE,
    WRONG_TOPIC,
    WRONG_VENUE,
)
from leaderboard.models import (
    Message,
    Rejection,
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
    rejection_reasons,
    scores,
    stored,
)
from wire.envelope import REJECTION_REASONS, canonical_json, verify_envelope
from wire.signing import KeyRing


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resends() -> Resends:
    return Resends()


# --- storing once ----------------------------------------------------------------------------


async def test_a_message_is_stored_once_and_its_copy_is_a_harmless_duplicate(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    message = t01.alert()
    first = await ingest.handle(*message)
    again = await ingest.handle(*message)
    assert (first.outcome, first.table, first.seq, first.type) == ("stored", "t01", 1, "alert")
    assert (again.outcome, again.reason) == ("duplicate", None)
    assert stored(engine) == [("t01", 1, "alert")]
    counts = ingest.counters()
    assert (counts.received, counts.stored, counts.duplicates, counts.rejected) == (2, 1, 1, 0)
    assert rejection_reasons(engine) == []  # duplicates are counted, not kept as rejections
    assert progress(engine, "t01") == (1, 1, [])
    assert resends.calls == []


async def test_stored_row_holds_what_was_signed(engine: sa.Engine, clock: FakeClock) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    topic, payload = t01.hand("t01-000001")
    await ingest.handle(topic, payload)
    envelope = verify_envelope(payload, KeyRing([t01.key.public_key]))
    with engine.connect() as connection:
        row = connection.execute(sa.select(Message)).one()
    assert (row.type, row.ts) == (envelope.type, envelope.ts)
    assert canonical_json(row.body) == canonical_json(envelope.body)
    assert row.received_at is not None


async def test_a_replayed_seq_with_other_content_is_refused_and_the_first_kept(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    await ingest.handle(*t01.score("E1", 12_000))
    # The same (table, seq), validly signed by the table's key, saying something else.
    replay = t01.score("E1", 99_000, seq=1)
    result = await ingest.handle(*replay)
    assert (result.outcome, result.reason) == ("rejected", REPLAYED_SEQ)
    assert scores(engine)["E1"][2] == 12_000
    assert stored(engine) == [("t01", 1, "score.recorded")]
    assert rejection_reasons(engine) == [REPLAYED_SEQ]
    assert ingest.counters().rejections == {REPLAYED_SEQ: 1}
    with engine.connect() as connection:
        row = connection.execute(sa.select(Rejection)).one()
    assert row.table_id == "t01"
    assert row.payload_sha256 == hashlib.sha256(replay[1]).hexdigest()


async def test_a_forged_message_signed_by_another_key_is_refused(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    forged = t01.score("E1", 1_000_000, key=key_of("t01", salt="thief"))
    result = await ingest.handle(*forged)
    assert (result.outcome, result.reason, result.table) == ("rejected", "bad_signature", "t01")
    assert stored(engine) == []
    assert scores(engine) == {}
    assert rejection_reasons(engine) == ["bad_signature"]


async def test_unknown_table_is_refused_until_enrolled(engine: sa.Engine, clock: FakeClock) -> None:
    t01, t09 = FakeTable("t01"), FakeTable("t09")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, key_refresh_s=60)
    first = await ingest.handle(*t09.alert())
    assert (first.outcome, first.reason, first.table) == ("rejected", "unknown_signer", "t09")
    enroll(engine, t09)
    assert await ingest.refresh_keys() == 2
    second = await ingest.handle(*t09.message("alert", {"kind": "x"}, seq=1))
    assert second.outcome == "stored"
    assert rejection_reasons(engine) == ["unknown_signer"]


async def test_a_newly_enrolled_table_is_found_without_refresh_after_key_refresh_s(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, key_refresh_s=2)
    await ingest.handle(*t01.alert())  # keys loaded now
    enroll(engine, t02)
    clock.advance(2)
    assert (await ingest.handle(*t02.alert())).outcome == "stored"


async def test_an_inactive_table_is_refused_with_its_own_reason(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t03 = FakeTable("t03")
    enroll(engine, t03, active=False)
    ingest = make_ingestor(engine, clock)
    result = await ingest.handle(*t03.alert())
    assert (result.outcome, result.reason) == ("rejected", TABLE_INACTIVE)


def _envelope_json(table: FakeTable) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(table.alert()[1])
    return result


def _raw(obj: Any) -> bytes:
    return canonical_json(obj)


async def test_every_envelope_rejection_reason_is_counted_and_kept(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    good = _envelope_json(t01)
    stranger = FakeTable("t77")
    cases: dict[str, bytes] = {
        "too_large": b"{" + b" " * (256 * 1024) + b"}",
        "not_json": b"\xff\xfe",
        "duplicate_key": b'{"v":1,"v":1}',
        "not_object": b"[1,2,3]",
        "unknown_version": _raw({**good, "v": 2}),
        "missing_field": _raw({k: v for k, v in good.items() if k != "mono"}),
        "extra_field": _raw({**good, "extra": 1}),
        "wrong_type": _raw({**good, "seq": "2"}),
        "invalid_value": _raw({**good, "seq": -2}),
        "not_canonical": json.dumps(good).encode(),
        "unknown_signer": stranger.alert()[1],
        "bad_signature": _raw({**good, "body": {"kind": "changed"}}),
    }
    assert set(cases) == set(REJECTION_REASONS)
    topic = t01.topics.events
    for reason, payload in cases.items():
        result = await ingest.handle(topic, payload)
        assert (result.outcome, result.reason) == ("rejected", reason), reason
    assert rejection_reasons(engine) == list(cases)
    assert ingest.counters().rejections == dict.fromkeys(cases, 1)
    assert ingest.counters().rejected == len(cases)
    assert stored(engine) == []
    assert set(INGEST_REASONS) >= set(REJECTION_REASONS)


async def test_topic_and_venue_must_match_the_signed_sender(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    ingest = make_ingestor(engine, clock)
    _, payload = t01.alert()
    on_wrong_topic = await ingest.handle(t02.topics.events, payload)
    assert (on_wrong_topic.outcome, on_wrong_topic.reason) == ("rejected", WRONG_TOPIC)
    other_venue = t01.message("alert", {"kind": "x"}, venue="casino-2", seq=5)
    result = await ingest.handle(t01.topics.events, other_venue[1])
    assert (result.outcome, result.reason) == ("rejected", WRONG_VENUE)
    # Topics that are not this venue's table topics are dropped without a record (amqtt sends
    # retained messages of other subscriptions to every client).
    for topic in (f"{ROOT}/casino-2/tables/t01/events", f"{ROOT}/{VENUE}/standings",
                  "elsewhere/x", t01.topics.cmd):
        assert (await ingest.handle(topic, payload)).outcome == "ignored"
    assert (await ingest.handle(t01.topics.events, payload)).outcome == "stored"
    assert rejection_reasons(engine) == [WRONG_TOPIC, WRONG_VENUE]
    assert ingest.counters().ignored == 4


async def test_seq_far_ahead_is_out_of_window_and_the_table_is_asked_to_resend(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends, window=1_000)
    await ingest.handle(*t01.alert())
    far = await ingest.handle(*t01.message("alert", {"kind": "x"}, seq=1_002))
    assert (far.outcome, far.reason) == ("rejected", OUT_OF_WINDOW)
    assert resends.calls == [("t01", 2)]  # from the first seq not stored
    edge = await ingest.handle(*t01.message("alert", {"kind": "x"}, seq=1_001))
    assert edge.outcome == "stored"  # exactly window ahead of the highest seen: accepted
    assert stored(engine) == [("t01", 1, "alert"), ("t01", 1_001, "alert")]


async def test_seq_zero_is_a_notice_only_for_availability_and_command_rejections(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock)
    online = t01.message("availability", {"state": "online", "link": {}}, seq=0)
    rejected = t01.message("command_rejected", {"reason": "bad_signature", "detail": "x"}, seq=0)
    sneaky = t01.score("E1", 1_000, seq=0)
    assert (await ingest.handle(t01.topics.status, online[1])).outcome == "notice"
    assert (await ingest.handle(*rejected)).outcome == "notice"
    result = await ingest.handle(*sneaky)
    assert (result.outcome, result.reason) == ("rejected", OUT_OF_WINDOW)
    assert stored(engine) == []
    assert ingest.counters().notices == 2


