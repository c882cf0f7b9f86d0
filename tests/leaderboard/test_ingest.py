"""Ingest.handle on SQLite and PostgreSQL: verify, store once, detect gaps, refuse with reasons.

Every test runs on both databases (``database_url``). Messages are really sealed with Ed25519
keys; the ingest trusts only the keys of the tables enrolled in the database.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.ingest import (
    INGEST_REASONS,
    OUT_OF_WINDOW,
    REPLAYED_SEQ,
    STORE_ERROR,
    TABLE_INACTIVE,
    WRONG_TOPIC,
    WRONG_VENUE,
    Ingestor,
    MqttResender,
    subscription_filters,
)
from leaderboard.ingest import storing as ingest_storing
from leaderboard.models import (
    Entry,
    Hand,
    Message,
    Patron,
    Rejection,
    Score,
    TableProgress,
    TableRecord,
)
from leaderboard.projections import MALFORMED_BODY, SCORE_CONFLICT
from wire.envelope import REJECTION_REASONS, canonical_json, seal, verify_envelope
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics

VENUE = "casino-1"
ROOT = "showdown-test/ingest"
T0 = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)


# --- helpers (also used by test_projections.py and test_ingest_mqtt.py) ----------------------


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def key_of(key_id: str, salt: str = "") -> Signer:
    """A fixed key per id (another ``salt`` gives another key under the same id)."""
    return Signer.from_seed(key_id, hashlib.sha256(f"{key_id}/{salt}".encode()).digest())


class FakeTable:
    """Seals one table's messages with rising seqs and keeps them, as a table's journal does."""

    def __init__(self, table: str, *, venue: str = VENUE, root: str = ROOT,
                 key: Signer | None = None) -> None:
        self.table = table
        self.venue = venue
        self.key = key or key_of(table)
        self.topics = TableTopics(venue, table, root)
        self.seq = 0
        self.sent: dict[int, tuple[str, bytes]] = {}

    def message(self, kind: str, body: dict[str, Any], *, seq: int | None = None,
                key: Signer | None = None, venue: str | None = None) -> tuple[str, bytes]:
        """Seal the next message (or one at ``seq``); returns (topic, payload)."""
        if seq is None:
            self.seq += 1
            seq = self.seq
        envelope = seal(venue=venue or self.venue, table=self.table, seq=seq,
                        wall=T0 + timedelta(seconds=seq), type=kind, body=body,
                        boot="boot-1", mono=seq * 1_000, signer=key or self.key)
        topic = self.topics.scores if kind.startswith("score.") else self.topics.events
        payload = envelope.encode()
        if seq and key is None and venue is None:
            self.sent.setdefault(seq, (topic, payload))
        return topic, payload

    def score(self, entry: str, cents: int, *, seq: int | None = None,
              key: Signer | None = None, **extra: Any) -> tuple[str, bytes]:
        body = {"entry_id": entry, "stage": "qualifying", "heat_id": "heat-1",
                "table": self.table, "seat": 1, "score": cents, "hands": 30,
                "status": "finished", "markers_forfeited": 0, "last_hand_id": "h",
                "at": "2026-07-03T13:00:00Z", **extra}
        return self.message("score.recorded", body, seq=seq, key=key)

    def ack(self, entry: str, cents: int, method: str = "card_tap") -> tuple[str, bytes]:
        return self.message("score.acknowledged", {
            "entry_id": entry, "score": cents, "stage": "qualifying", "method": method,
            "by": None, "at": "2026-07-03T13:01:00Z"})

    def seated(self, entry: str, seat: int) -> tuple[str, bytes]:
        return self.message("entry.seated", {"entry_id": entry, "seat": seat,
                                             "heat_id": "heat-1", "at": "2026-07-03T12:00:00Z"})

    def unseated(self, entry: str, seat: int, hands_played: int = 4) -> tuple[str, bytes]:
        return self.message("entry.unseated", {
            "entry_id": entry, "seat": seat, "hands_played": hands_played,
            "reason": "patron left", "at": "2026-07-03T12:30:00Z"})

    def hand(self, hand_id: str, kind: str = "hand.settled", **extra: Any) -> tuple[str, bytes]:
        status = "settled" if kind == "hand.settled" else "void"
        return self.message(kind, {"v": 1, "table": self.table, "hand_id": hand_id,
                                   "status": status, "heat_id": "heat-1",
                                   "stage": "qualifying", "nets": {"1": 500}, **extra})

    def alert(self, text: str = "shoe jam") -> tuple[str, bytes]:
        return self.message("alert", {"kind": "device_jam", "message": text, "source": "shoe",
                                      "at": "2026-07-03T13:00:00Z"})


def enroll(engine: sa.Engine, *tables: FakeTable, active: bool = True) -> None:
    """Enrol tables (their public keys) as the desk would."""
    with engine.begin() as connection:
        for table in tables:
            connection.execute(sa.insert(TableRecord).values(
                table_id=table.table, venue=table.venue, public_key=table.key.public_key.base64,
                enrolled_at=T0, active=active))


def register_entry(engine: sa.Engine, entry_id: str, patron_id: str = "P1",
                   **columns: Any) -> None:
    """A registered entry (and its patron), as the desk creates them; ``columns`` override
    (``status="seated", table_id="t01", seat=3``: as the desk seats it)."""
    with engine.begin() as connection:
        if connection.scalar(sa.select(Patron.patron_id).where(Patron.patron_id == patron_id)) \
                is None:
            connection.execute(sa.insert(Patron).values(
                patron_id=patron_id, name="A. Patron", id_kind="id_document",
                id_number=f"id-{patron_id}", birth_date=datetime(1980, 1, 1).date(),
                created_at=T0))
        connection.execute(sa.insert(Entry).values(
            entry_id=entry_id, patron_id=patron_id, buy_in_cents=10_000, bought_at=T0,
            **{"stage": "qualifying", "status": "registered", **columns}))


class Resends:
    """An injected resend(table, from_seq) that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, table: str, from_seq: int) -> None:
        self.calls.append((table, from_seq))


def stored(engine: sa.Engine, table: str | None = None) -> list[tuple[str, int, str]]:
    """(table, seq, type) of every stored message, in key order."""
    query = sa.select(Message.table_id, Message.seq, Message.type)
    if table is not None:
        query = query.where(Message.table_id == table)
    with engine.connect() as connection:
        return [(r.table_id, int(r.seq), r.type)
                for r in connection.execute(query.order_by(Message.table_id, Message.seq))]


def rejection_reasons(engine: sa.Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(Rejection.reason).order_by(Rejection.id)))


def progress(engine: sa.Engine, table: str) -> tuple[int, int, list[list[int]]]:
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(TableProgress.contiguous_seq, TableProgress.highest_seq, TableProgress.gaps)
            .where(TableProgress.table_id == table)).one()
    return int(row.contiguous_seq), int(row.highest_seq), [list(g) for g in row.gaps]


def scores(engine: sa.Engine) -> dict[str, tuple[Any, ...]]:
    """entry -> (table, seq, cents, acknowledged?, method, voided?)."""
    with engine.connect() as connection:
        return {r.entry_id: (r.table_id, int(r.seq), int(r.score_cents),
                             r.acknowledged_at is not None, r.ack_method,
                             r.voided_at is not None)
                for r in connection.execute(sa.select(Score))}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resends() -> Resends:
    return Resends()


def make_ingestor(engine: sa.Engine, clock: FakeClock, resends: Resends | None = None,
                  **options: Any) -> Ingestor:
    options.setdefault("resend_after_s", 0.0)
    return Ingestor(engine, venue=VENUE, resend=resends, clock=clock, topic_root=ROOT,
                    **options)


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


# --- out of order ----------------------------------------------------------------------------


def _session_of(table: FakeTable) -> list[tuple[str, bytes]]:
    """A small heat: seat, two hands, score, acknowledgement."""
    return [
        table.seated("E1", 2),
        table.hand(f"{table.table}-000001"),
        table.hand(f"{table.table}-000002", "hand.voided", void={"reason": "misdeal"}),
        table.alert(),
        table.score("E1", 15_500),
        table.ack("E1", 15_500),
    ]


def _final_state(engine: sa.Engine) -> dict[str, Any]:
    with engine.connect() as connection:
        hands = {r.hand_id: (r.status, int(r.seq)) for r in connection.execute(sa.select(Hand))}
        entries = {r.entry_id: (r.table_id, r.seat) for r in connection.execute(sa.select(Entry))}
    return {"messages": stored(engine), "scores": scores(engine), "hands": hands,
            "entries": entries}


async def test_out_of_order_arrival_gives_the_same_state_as_in_order(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    register_entry(engine, "E1")
    in_order = _session_of(t01)
    ingest = make_ingestor(engine, clock)
    for message in in_order:
        assert (await ingest.handle(*message)).reason is None
    expected = _final_state(engine)
    assert expected["scores"] == {"E1": ("t01", 5, 15_500, True, "card_tap", False)}
    assert expected["entries"] == {"E1": ("t01", 2)}
    assert expected["hands"] == {"t01-000001": ("settled", 2), "t01-000002": ("void", 3)}
    # The same session at another table, arriving backwards, on a fresh entry row.
    with engine.begin() as connection:
        connection.execute(sa.delete(Score))
        connection.execute(sa.update(Entry).values(table_id=None, seat=None))
    backwards = list(reversed(_session_of(t02)))
    for message in backwards:
        result = await ingest.handle(*message)
        assert (result.outcome, result.reason) == ("stored", None)
    state = _final_state(engine)
    assert state["scores"] == {"E1": ("t02", 5, 15_500, True, "card_tap", False)}
    assert state["entries"] == {"E1": ("t02", 2)}
    assert {h: s for h, s in state["hands"].items() if h.startswith("t02")} == {
        "t02-000001": ("settled", 2), "t02-000002": ("void", 3)}
    assert progress(engine, "t02") == (6, 6, [])


_EXAMPLES = itertools.count(1)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(6)), copies=st.lists(st.integers(0, 5), max_size=4),
       batch=st.integers(1, 4))
async def test_any_arrival_order_with_copies_stores_each_once_and_projects_the_same(
    engine: sa.Engine, order: list[int], copies: list[int], batch: int
) -> None:
    # Each example uses tables and entries of its own in the shared database.
    name = f"p{next(_EXAMPLES)}"
    table = FakeTable(name)
    enroll(engine, table)
    register_entry(engine, f"{name}-e", patron_id=f"{name}-p")
    messages = [
        table.seated(f"{name}-e", 3),
        table.hand(f"{name}-h1"),
        table.hand(f"{name}-h1", "hand.voided"),  # the later record of the same hand wins
        table.score(f"{name}-e", 7_000),
        table.ack(f"{name}-e", 7_000),
        table.alert(),
    ]
    arrivals = [messages[i] for i in order] + [messages[i] for i in copies]
    ingest = make_ingestor(engine, FakeClock())
    outcomes = []
    for start in range(0, len(arrivals), batch):
        outcomes += await ingest.handle_batch(arrivals[start:start + batch])
    assert sorted(r.outcome for r in outcomes) == sorted(
        ["stored"] * 6 + ["duplicate"] * len(copies))
    assert all(r.reason is None for r in outcomes)
    assert [seq for _, seq, _ in stored(engine, name)] == [1, 2, 3, 4, 5, 6]
    assert progress(engine, name) == (6, 6, [])
    assert scores(engine)[f"{name}-e"] == (name, 4, 7_000, True, "card_tap", False)
    with engine.connect() as connection:
        hand = connection.execute(sa.select(Hand.status, Hand.seq)
                                  .where(Hand.hand_id == f"{name}-h1")).one()
        seat = connection.execute(sa.select(Entry.table_id, Entry.seat)
                                  .where(Entry.entry_id == f"{name}-e")).one()
    assert (hand.status, hand.seq) == ("void", 3)
    assert tuple(seat) == (name, 3)


def _tangle(prefix: str, engine: sa.Engine) -> list[tuple[str, bytes]]:
    """Two tables' messages that touch the same entries and hands: conflicts, repeats,
    acknowledgements of the wrong figure or from the wrong table, a void, a malformed body,
    an unregistered entry. The tables and entries are named after ``prefix``."""
    t1, t2 = FakeTable(f"{prefix}-t1"), FakeTable(f"{prefix}-t2")
    enroll(engine, t1, t2)
    e = [f"{prefix}-e{n}" for n in range(6)]
    for entry in e[1:3]:
        register_entry(engine, entry, patron_id=f"{prefix}-p")
    return [
        t1.seated(e[1], 3), t1.hand(f"{prefix}-h1"), t1.hand(f"{prefix}-h1", "hand.voided"),
        t1.score(e[1], 7_000), t1.ack(e[1], 7_000), t1.ack(e[1], 7_000),
        t1.score(e[2], 500), t1.ack(e[2], 999), t1.seated(e[3], 1),
        t1.message("score.voided", {"entry_id": e[1], "reason": "misdeal"}),
        t1.message("score.recorded", {"entry_id": e[5], "score": 1}),  # malformed
        t1.seated(e[1], 5), t1.hand(f"{prefix}-h2"),
        t2.score(e[1], 100), t2.hand(f"{prefix}-h1"), t2.ack(e[2], 500),
        t2.score(e[4], 800), t2.ack(e[4], 800), t2.seated(e[2], 2),
    ]


def _tangle_state(engine: sa.Engine, prefix: str) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        return value.replace(prefix, "") if isinstance(value, str) else value

    with engine.connect() as connection:
        hands = {plain(r.hand_id): (plain(r.table_id), int(r.seq), r.status)
                 for r in connection.execute(sa.select(Hand)
                                             .where(Hand.hand_id.startswith(prefix)))}
        entries = {plain(r.entry_id): (plain(r.table_id), r.seat)
                   for r in connection.execute(sa.select(Entry)
                                               .where(Entry.entry_id.startswith(prefix)))}
        refused = sorted((r.reason, plain(r.table_id)) for r in connection.execute(
            sa.select(Rejection.reason, Rejection.table_id)
            .where(Rejection.table_id.startswith(prefix))))
    return {"hands": hands, "entries": entries, "refused": refused,
            "scores": {plain(k): tuple(plain(v) for v in value)
                       for k, value in scores(engine).items() if k.startswith(prefix)}}


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(19)), copies=st.lists(st.integers(0, 18), max_size=5),
       batch=st.integers(2, 12))
async def test_a_batch_gives_the_results_of_its_messages_one_by_one(
    engine: sa.Engine, order: list[int], copies: list[int], batch: int
) -> None:
    # Batches apply what they can in a few statements (projections.project_bulk); whatever
    # the order, the outcome of every message and the final rows must be those of handling
    # the same arrivals one at a time with project() alone (the reference).
    number = next(_EXAMPLES)
    one, many = f"o{number}", f"m{number}"
    singly, batched = _tangle(one, engine), _tangle(many, engine)
    arrivals = [*order, *copies]
    ingest = make_ingestor(engine, FakeClock())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ingest_storing, "project_bulk", lambda _connection, _items: {})
        expected = [await ingest.handle(*singly[i]) for i in arrivals]
    got = []
    for start in range(0, len(arrivals), batch):
        got += await ingest.handle_batch([batched[i] for i in arrivals[start:start + batch]])
    assert [(r.outcome, r.reason, r.seq, r.changes) for r in got] == [
        (r.outcome, r.reason, r.seq, r.changes) for r in expected]
    assert _tangle_state(engine, many) == _tangle_state(engine, one)


# --- conflicts and malformed bodies ------------------------------------------------------------


async def test_a_second_score_for_one_entry_is_refused_never_overwritten(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    ingest = make_ingestor(engine, clock)
    assert (await ingest.handle(*t01.score("E1", 12_000))).reason is None
    second = await ingest.handle(*t02.score("E1", 50_000))
    # Stored (the table's record stays whole, no gap) but not counted as E1's score.
    assert (second.outcome, second.reason) == ("stored", SCORE_CONFLICT)
    assert scores(engine) == {"E1": ("t01", 1, 12_000, False, None, False)}
    assert rejection_reasons(engine) == [SCORE_CONFLICT]
    assert progress(engine, "t02") == (1, 1, [])
    # The same table recording the entry twice is a conflict too.
    third = await ingest.handle(*t01.score("E1", 13_000))
    assert third.reason == SCORE_CONFLICT
    assert ingest.counters().rejections == {SCORE_CONFLICT: 2}
    assert ingest.counters().stored == 3


async def test_a_malformed_body_is_stored_refused_and_counted(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    body = {"entry_id": "E1", "stage": "qualifying", "heat_id": "h", "hands": 3,
            "status": "finished"}  # no score
    result = await ingest.handle(*t01.message("score.recorded", body))
    assert (result.outcome, result.reason) == ("stored", MALFORMED_BODY)
    assert "lacks 'score'" in result.detail
    bad_ack = await ingest.handle(*t01.message("score.acknowledged", {
        "entry_id": "E1", "score": "12000", "method": "card_tap"}))
    assert bad_ack.reason == MALFORMED_BODY
    assert scores(engine) == {}
    assert progress(engine, "t01") == (2, 2, [])  # no hole: nothing to ask again
    assert resends.calls == []
    assert rejection_reasons(engine) == [MALFORMED_BODY, MALFORMED_BODY]


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


async def test_a_message_the_database_refuses_fails_alone_and_is_recovered_by_resend(
    engine: sa.Engine, clock: FakeClock, resends: Resends, monkeypatch: pytest.MonkeyPatch
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    real_project = ingest_storing.project
    broken = {"on": True}

    def flaky(connection: Any, envelope: Any, **kw: Any) -> Any:
        if envelope.seq == 2 and broken["on"]:
            raise sa.exc.OperationalError("UPDATE", {}, Exception("disk I/O error"))
        return real_project(connection, envelope, **kw)

    real_bulk = ingest_storing.project_bulk

    def flaky_bulk(connection: Any, items: Any) -> Any:
        if broken["on"] and any(envelope.seq == 2 for envelope, _, _ in items):
            raise sa.exc.OperationalError("INSERT", {}, Exception("disk I/O error"))
        return real_bulk(connection, items)

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
        outcomes = []
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
