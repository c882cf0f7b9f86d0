"""Ingest over MQTT: real signed messages from fake tables, on the embedded broker and Mosquitto.

A fake table publishes sealed messages at QoS 1 and answers signed resend requests on its
``cmd`` topic from what it has sealed (as a table answers from its journal). Waits are guarded
against hangs only; nothing asserts about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from controller.embedded_broker import EmbeddedBroker
from leaderboard.ingest import Ingestor, MqttResender, SubscriptionRefused, stopped_within
from leaderboard.models import Message
from tests.fixtures.services import MqttBroker
from tests.leaderboard.ingest_support import VENUE, FakeTable, enroll, key_of, progress, scores
from wire.envelope import EnvelopeError, verify_envelope
from wire.mqtt import MqttClient, MqttSettings, connect
from wire.signing import KeyRing, PublicKey

GUARD_S = 20.0  # against hangs only
LEADERBOARD = key_of("leaderboard")


class Changes:
    """on_change for the ingest: wakes waiters, who re-check (and re-check every 20 ms: a
    batch of duplicates changes nothing, so it calls nobody)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.kinds: list[str] = []

    def __call__(self, kind: str) -> None:
        self.kinds.append(kind)
        self.event.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(GUARD_S):
            while True:
                self.event.clear()
                if condition():
                    return
                await stopped_within(self.event, 0.02)


class MqttTable:
    """A fake table on the broker: publishes its sealed messages and answers resend requests."""

    def __init__(self, table: FakeTable, broker: MqttBroker, command_key: PublicKey) -> None:
        self.table = table
        self.broker = broker
        self.commands = KeyRing([command_key])
        self.requests: list[int] = []
        self.ready = asyncio.Event()
        self._client: MqttClient | None = None

    async def run(self) -> None:
        identifier = f"fake-{self.table.table}-{secrets.token_hex(4)}"
        async with connect(MqttSettings(host=self.broker.host, port=self.broker.port),
                           client_id=identifier) as client:
            self._client = client
            await client.subscribe(self.table.topics.cmd, qos=1)
            self.ready.set()
            async for message in client.messages():
                if message.topic != self.table.topics.cmd:
                    continue  # amqtt sends other subscriptions' retained messages
                try:
                    command = verify_envelope(message.payload, self.commands)
                except EnvelopeError:
                    continue
                body = command.body
                if body.get("table") != self.table.table or body.get("command") != "resend":
                    continue
                from_seq = int(body["from_seq"])
                self.requests.append(from_seq)
                for seq in sorted(s for s in self.table.sent if s >= from_seq):
                    await self.publish_seq(seq)

    async def publish_seq(self, seq: int) -> None:
        assert self._client is not None
        topic, payload = self.table.sent[seq]
        await self._client.publish(topic, payload, qos=1)

    async def publish(self, topic: str, payload: bytes) -> None:
        assert self._client is not None
        await self._client.publish(topic, payload, qos=1)


def settings_for(broker: MqttBroker, root: str) -> MqttSettings:
    return MqttSettings(host=broker.host, port=broker.port, topic_root=root,
                        backoff_initial_s=0.1, backoff_max_s=1.0)


@asynccontextmanager
async def running(*coros: Coroutine[Any, Any, None]) -> AsyncIterator[list[asyncio.Task[None]]]:
    """Run tasks for the block; cancel them after (re-raising what failed)."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


@asynccontextmanager
async def ingesting(ingest: Ingestor, settings: MqttSettings,
                    shared_group: str | None = None) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(ingest.run(settings, shared_group=shared_group, stop=stop,
                                          ready=ready))
    try:
        async with asyncio.timeout(GUARD_S):
            await asyncio.wait({task, asyncio.create_task(ready.wait())},
                               return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        yield
    finally:
        stop.set()
        async with asyncio.timeout(GUARD_S):
            await task


def count_messages(engine: sa.Engine) -> int:
    with engine.connect() as connection:
        return connection.scalar(sa.select(sa.func.count(Message.id))) or 0


async def test_a_tables_messages_are_ingested_once_over_mqtt(
    mqtt_broker: MqttBroker, unique_topic: str, engine: sa.Engine
) -> None:
    t01 = FakeTable("t01", root=unique_topic)
    enroll(engine, t01)
    changes = Changes()
    settings = settings_for(mqtt_broker, unique_topic)
    ingest = Ingestor(engine, venue=VENUE, topic_root=unique_topic, on_change=changes)
    table = MqttTable(t01, mqtt_broker, LEADERBOARD.public_key)
    sent = [t01.seated("E1", 1), t01.hand("t01-000001"), t01.score("E1", 8_800),
            t01.ack("E1", 8_800)]
    async with ingesting(ingest, settings), running(table.run()):
        await asyncio.wait_for(table.ready.wait(), GUARD_S)
        for topic, payload in [*sent, sent[1], sent[2]]:  # two published twice
            await table.publish(topic, payload)
        await changes.until(lambda: ingest.counters().received >= 6)
    assert count_messages(engine) == 4
    assert scores(engine)["E1"] == ("t01", 3, 8_800, True, "card_tap", False)
    counts = ingest.counters()
    assert (counts.stored, counts.duplicates, counts.rejected) == (4, 2, 0)
    assert progress(engine, "t01") == (4, 4, [])


async def test_a_table_that_missed_messages_is_asked_and_resends_them(
    mqtt_broker: MqttBroker, unique_topic: str, engine: sa.Engine
) -> None:
    t01 = FakeTable("t01", root=unique_topic)
    enroll(engine, t01)
    changes = Changes()
    settings = settings_for(mqtt_broker, unique_topic)
    resender = MqttResender(settings, LEADERBOARD, venue=VENUE)
    ingest = Ingestor(engine, venue=VENUE, topic_root=unique_topic, on_change=changes,
                      resend=resender, resend_after_s=0.2, resend_interval_s=1.0)
    table = MqttTable(t01, mqtt_broker, LEADERBOARD.public_key)
    for n in range(1, 11):
        t01.score(f"E{n}", 100 * n) if n % 2 else t01.alert(f"n{n}")
    async with ingesting(ingest, settings), running(table.run()):
        await asyncio.wait_for(table.ready.wait(), GUARD_S)
        # The broker lost 3, 4 and 7 on the way; 9 and 10 never left the table before its
        # link dropped. Its birth on reconnect says it has published up to 10.
        for seq in (1, 2, 5, 6, 8):
            await table.publish_seq(seq)
        birth = t01.message("availability", {"state": "online",
                                             "link": {"last_published_seq": 10}}, seq=0)
        await table.publish(t01.topics.status, birth[1])
        await changes.until(lambda: count_messages(engine) == 10)
    assert [seq for _, seq, _ in _stored(engine)] == list(range(1, 11))
    assert table.requests[0] == 3
    assert progress(engine, "t01") == (10, 10, [])
    assert sorted(scores(engine)) == sorted(f"E{n}" for n in range(1, 11, 2))
    assert ingest.counters().resend_requests >= 1
    assert resender.sent[0][:2] == ("t01", 3)


def _stored(engine: sa.Engine) -> list[tuple[str, int, str]]:
    with engine.connect() as connection:
        return [(r.table_id, int(r.seq), r.type) for r in connection.execute(
            sa.select(Message.table_id, Message.seq, Message.type).order_by(Message.seq))]


async def test_two_instances_on_a_shared_subscription_store_each_message_once(
    mqtt_broker: MqttBroker, unique_topic: str, engine: sa.Engine
) -> None:
    if mqtt_broker.embedded:
        pytest.skip("amqtt 0.12.1 cannot deliver to shared subscriptions, so the embedded"
                    " broker refuses them (the next test); Mosquitto runs this one")
    tables = [FakeTable(f"t{n:02d}", root=unique_topic) for n in range(1, 4)]
    enroll(engine, *tables)
    changes = Changes()
    settings = settings_for(mqtt_broker, unique_topic)
    a = Ingestor(engine, venue=VENUE, topic_root=unique_topic, on_change=changes)
    b = Ingestor(engine, venue=VENUE, topic_root=unique_topic, on_change=changes)
    sent = []
    for table in tables:
        for n in range(1, 31):
            sent.append(table.score(f"{table.table}-e{n}", n) if n % 5 == 0
                        else table.alert(f"{n}"))
    publishers = [MqttTable(t, mqtt_broker, LEADERBOARD.public_key) for t in tables]
    async with ingesting(a, settings, "lb"), ingesting(b, settings, "lb"), \
            running(*(p.run() for p in publishers)):
        for publisher in publishers:
            await asyncio.wait_for(publisher.ready.wait(), GUARD_S)
        for index in range(30):  # interleave the tables; then every message once more
            for publisher in publishers:
                await publisher.publish_seq(index + 1)
        for publisher in publishers:
            for seq in range(1, 31):
                await publisher.publish_seq(seq)
        total = len(sent) * 2

        def all_received() -> bool:
            return a.counters().received + b.counters().received >= total

        await changes.until(all_received)
    counts_a, counts_b = a.counters(), b.counters()
    assert counts_a.received > 0
    assert counts_b.received > 0  # the broker shared the load
    assert counts_a.received + counts_b.received == total  # each delivered to one instance
    assert counts_a.stored + counts_b.stored == len(sent)
    assert counts_a.duplicates + counts_b.duplicates == len(sent)
    assert count_messages(engine) == len(sent)
    with engine.connect() as connection:
        doubled = connection.execute(
            sa.select(Message.table_id, Message.seq).group_by(Message.table_id, Message.seq)
            .having(sa.func.count() > 1)).all()
    assert doubled == []
    for table in tables:
        assert progress(engine, table.table) == (30, 30, [])
    assert len(scores(engine)) == 18


async def test_a_refused_shared_subscription_stops_the_ingest_naming_the_setting(
    unique_topic: str, engine: sa.Engine
) -> None:
    # amqtt grants $share/... and then delivers nothing; the embedded broker refuses it, and
    # the ingest stops with an error, rather than listen to a floor that seems quiet.
    async with EmbeddedBroker() as broker:
        settings = MqttSettings(host=broker.host, port=broker.port, topic_root=unique_topic,
                                backoff_initial_s=0.1, backoff_max_s=1.0)
        ingest = Ingestor(engine, venue=VENUE, topic_root=unique_topic)
        with pytest.raises(SubscriptionRefused) as refused:
            async with ingesting(ingest, settings, "lb"):
                pass
        port = broker.port
    assert refused.value.topic_filter.startswith(f"$share/lb/{unique_topic}/")
    message = str(refused.value)
    assert message.startswith(f"mqtt: shared_group: the broker at 127.0.0.1:{port}"
                              f" refused the shared subscription $share/lb/")
    assert "use Mosquitto, or remove shared_group" in message
    # without the group, the same broker and ingest subscribe
    async with EmbeddedBroker() as broker:
        settings = MqttSettings(host=broker.host, port=broker.port, topic_root=unique_topic)
        async with ingesting(ingest, settings):
            pass


async def test_stopped_within_waits_for_stop_or_time_and_never_swallows_a_cancellation() -> None:
    stop = asyncio.Event()
    assert await stopped_within(stop, 0.01) is False
    stop.set()
    assert await stopped_within(stop, 60) is True
    # The stop event set and the task cancelled in the same turn of the loop: the
    # cancellation wins (asyncio.wait_for on Python 3.11 returns the result instead).
    other = asyncio.Event()
    waiting = asyncio.create_task(stopped_within(other, 60))
    await asyncio.sleep(0)
    other.set()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
