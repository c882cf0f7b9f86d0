"""MqttLink against real brokers: the embedded amqtt one (always) and Mosquitto (where present).

Outages are made with a TCP proxy between the link and the broker (the test's subscriber
talks to the broker directly), so they work on the shared Mosquitto too: the proxy can cut
every connection abruptly, refuse new ones, and hold the broker's replies (PUBACKs) back.
No test asserts anything about time; waits are guarded against hangs only, and nothing waits
for something not to happen (state is checked at a point where it cannot change).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.embedded_broker import EmbeddedBroker
from controller.mqtt_link import (
    AVAILABILITY_TYPE,
    COMMAND_REJECTED_TYPE,
    MqttLink,
    OutboxOrderError,
    TableIdentity,
)
from game.errors import ConfigError
from tests.fixtures.services import MqttBroker
from wire.envelope import Envelope, canonical_json, seal, verify_envelope
from wire.mqtt import MqttSettings
from wire.outbox import OutboxMessage, TopicSuffix
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics

GUARD_S = 10.0  # against hangs only
VENUE = "casino-1"
T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)


# --- helpers -------------------------------------------------------------------------------


class Signal:
    """Wake waiters whenever something changes; they re-check their condition."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(GUARD_S):
            while True:
                self._event.clear()
                if condition():
                    return
                await self._event.wait()


class MemoryOutbox:
    """An in-memory OutboxSource with the journal's contract (pending by seq, mark delivered)."""

    def __init__(self) -> None:
        self.messages: dict[int, OutboxMessage] = {}
        self.delivered: list[int] = []  # in the order mark_delivered was called
        self.changed = Signal()

    def add(self, count: int = 1, suffix: TopicSuffix = "events") -> list[OutboxMessage]:
        added = []
        for _ in range(count):
            seq = len(self.messages) + 1
            message = OutboxMessage(
                seq=seq, topic_suffix=suffix, type="hand_settled",
                body={"hand": seq, "paid_cents": 2_500 * seq},
                wall=T0 + timedelta(seconds=seq), mono_ns=1_000 * seq, boot_id="boot-a",
            )
            self.messages[seq] = message
            added.append(message)
        return added

    def pending(self, limit: int = 100) -> list[OutboxMessage]:
        return [m for _, m in sorted(self.messages.items()) if not m.delivered][:limit]

    def pending_seqs(self) -> list[int]:
        return [m.seq for m in self.pending(10_000)]

    def mark_delivered(self, seq: int) -> None:
        self.messages[seq] = dataclasses.replace(self.messages[seq], delivered=True)
        self.delivered.append(seq)
        self.changed.notify()

    async def until_delivered(self, seq: int) -> None:
        await self.changed.until(lambda: self.messages[seq].delivered)


class Proxy:
    """A TCP proxy in front of the broker that a test can cut, restore and hold replies in."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.BaseTransport] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._replies = asyncio.Event()
        self._replies.set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Abort every connection (no DISCONNECT reaches the broker) and refuse new ones."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for transport in list(self._transports):
            transport.abort()  # type: ignore[attr-defined]
        self._transports.clear()
        self._replies.set()
        for task in list(self._tasks):
            task.cancel()

    async def restore(self) -> None:
        await self.start()

    def hold_replies(self) -> None:
        """Stop forwarding broker -> client bytes (PUBACKs among them) until release."""
        self._replies.clear()

    def release_replies(self) -> None:
        self._replies.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        self._transports |= {writer.transport, up_writer.transport}
        for task in (
            asyncio.create_task(self._pump(reader, up_writer, gate=None)),
            asyncio.create_task(self._pump(up_reader, writer, gate=self._replies)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    gate: asyncio.Event | None) -> None:
        try:
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._transports.discard(writer.transport)
            writer.close()


@dataclass
class Inbox:
    """What a subscriber on the table's topics received, verified."""

    table_keys: KeyRing
    messages: list[aiomqtt.Message] = field(default_factory=list)
    changed: Signal = field(default_factory=Signal)

    def envelopes(self, suffix: str | None = None) -> list[Envelope]:
        return [
            verify_envelope(bytes(m.payload), self.table_keys)
            for m in self.messages
            if m.payload and (suffix is None or m.topic.value.endswith("/" + suffix))
        ]

    def seqs(self) -> list[int]:
        """Seqs of sequenced messages on events and scores, in arrival order."""
        return [e.seq for e in self.envelopes() if e.seq > 0 and e.type == "hand_settled"]

    def states(self) -> list[tuple[str, bool | None]]:
        return [(e.body["state"], e.body.get("clean")) for e in self.envelopes("status")
                if e.type == AVAILABILITY_TYPE]

    async def until(self, condition: Callable[[Inbox], bool]) -> None:
        await self.changed.until(lambda: condition(self))


@dataclass
class Env:
    """One test's table: ids, keys, topics, outbox and the commands its link delivered."""

    broker: MqttBroker
    root: str
    table: str
    table_key: Signer
    desk_key: Signer
    outbox: MemoryOutbox = field(default_factory=MemoryOutbox)
    commands: list[Envelope] = field(default_factory=list)
    commands_changed: Signal = field(default_factory=Signal)

    @property
    def topics(self) -> TableTopics:
        return TableTopics(VENUE, self.table, self.root)

    @property
    def table_keys(self) -> KeyRing:
        return KeyRing([self.table_key.public_key])

    def settings(self, port: int | None = None, **changes: Any) -> MqttSettings:
        options: dict[str, Any] = {
            "host": self.broker.host, "port": self.broker.port if port is None else port,
            "topic_root": self.root, "backoff_initial_s": 0.02, "backoff_max_s": 0.2,
            "timeout_s": GUARD_S,
        }
        options.update(changes)
        return MqttSettings(**options)

    def link(self, port: int | None = None, *, on_command: Any = None,
             **changes: Any) -> MqttLink:
        async def record(envelope: Envelope) -> None:
            self.commands.append(envelope)
            self.commands_changed.notify()

        return MqttLink(
            self.settings(port, **changes),
            TableIdentity(venue=VENUE, table=self.table, boot_id="boot-a"),
            self.table_key, self.outbox, on_command or record,
            command_keys=KeyRing([self.desk_key.public_key]),
            rng=random.Random(7),
        )

    def command(self, seq: int, *, signer: Signer | None = None, venue: str = VENUE,
                table: str | None = None, **body: Any) -> bytes:
        desk = signer or self.desk_key
        return seal(
            venue=venue, table=desk.key_id, seq=seq, wall=T0, type="assign_seat",
            body={"table": table or self.table, "seat": 1, "entry": f"E-{seq}", **body},
            boot="desk-boot", mono=seq, signer=desk,
        ).encode()

    async def send(self, *payloads: bytes) -> None:
        """Publish payloads on the table's cmd topic, in order, from a short-lived client."""
        async with _client(self.broker) as desk:
            for payload in payloads:
                await desk.publish(self.topics.cmd, payload, qos=1)


def _client(broker: MqttBroker, **options: Any) -> aiomqtt.Client:
    return aiomqtt.Client(broker.host, broker.port, timeout=GUARD_S, **options)


@pytest.fixture
async def env(mqtt_broker: MqttBroker, unique_topic: str) -> AsyncIterator[Env]:
    suffix = unique_topic.rsplit("/", 1)[1]
    env = Env(
        broker=mqtt_broker, root=unique_topic, table=f"t-{suffix}",
        table_key=Signer.generate(f"t-{suffix}"), desk_key=Signer.generate("desk-1"),
    )
    yield env
    # The shared Mosquitto keeps retained messages and persistent sessions: clear ours.
    async with _client(mqtt_broker) as cleaner:
        await cleaner.publish(env.topics.status, b"", qos=1, retain=True)
    async with _client(mqtt_broker, identifier=env.table, clean_session=True):
        pass


@asynccontextmanager
async def subscribed(env: Env, topic_filter: str | None = None) -> AsyncIterator[Inbox]:
    """A subscriber on the table's topics (directly on the broker), collecting into an Inbox."""
    inbox = Inbox(env.table_keys)
    base = env.topics.base
    async with _client(env.broker) as client:
        await client.subscribe(topic_filter or f"{base}/#", qos=1)

        async def collect() -> None:
            async for message in client.messages:
                if message.topic.value.startswith(base + "/"):  # amqtt sends others too (D12)
                    inbox.messages.append(message)
                    inbox.changed.notify()

        task = asyncio.create_task(collect())
        try:
            yield inbox
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task


@asynccontextmanager
async def proxied(env: Env) -> AsyncIterator[Proxy]:
    proxy = Proxy(env.broker.host, env.broker.port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.cut()


async def connected(link: MqttLink) -> None:
    async with asyncio.timeout(GUARD_S):
        await link.wait_connected()


def seqs(messages: Iterable[OutboxMessage]) -> list[int]:
    return [m.seq for m in messages]


# --- publishing ----------------------------------------------------------------------------


async def test_outbox_is_published_in_seq_order_signed_and_marked_delivered(env: Env) -> None:
    env.outbox.add(20, "events")
    env.outbox.add(5, "scores")
    async with subscribed(env) as inbox, env.link() as link:
        await env.outbox.until_delivered(25)
        env.outbox.add(10, "events")  # more rows committed while running: wake() sends them
        link.wake()
        await env.outbox.until_delivered(35)
        await inbox.until(lambda i: len(i.seqs()) == 35)
        counters = link.counters()
    assert inbox.seqs() == list(range(1, 36))
    assert env.outbox.delivered == list(range(1, 36))
    assert env.outbox.pending_seqs() == []
    by_seq = {e.seq: e for e in inbox.envelopes() if e.seq > 0}
    assert {s for s, e in by_seq.items() if e.body == {"hand": s, "paid_cents": 2_500 * s}} == set(
        range(1, 36)
    )
    scores = [e.seq for e in inbox.envelopes("scores")]
    assert scores == [21, 22, 23, 24, 25]
    assert by_seq[3].ts == "2026-07-03T11:00:03.000Z"
    assert (by_seq[3].mono, by_seq[3].boot, by_seq[3].venue, by_seq[3].table) == (
        3_000, "boot-a", VENUE, env.table
    )
    assert (counters.published, counters.pending, counters.last_published_seq) == (35, 0, 35)
    assert {m.qos for m in inbox.messages if m.topic.value.endswith("/events")} == {1}


async def test_message_is_marked_delivered_only_after_the_puback(env: Env) -> None:
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(1)
        proxy.hold_replies()  # the broker's PUBACKs stop reaching the link
        env.outbox.add(2)  # seqs 2 and 3
        link.wake()
        # The broker has message 2 (the subscriber got it) but its PUBACK is held back.
        await inbox.until(lambda i: i.seqs() == [1, 2])
        assert env.outbox.pending_seqs() == [2, 3]
        assert env.outbox.delivered == [1]
        proxy.release_replies()
        await env.outbox.until_delivered(3)
        await inbox.until(lambda i: len(i.seqs()) == 3)
    assert inbox.seqs() == [1, 2, 3]  # 3 was sent only after 2 was acknowledged
    assert env.outbox.delivered == [1, 2, 3]


async def test_unacknowledged_message_is_sent_again_after_the_connection_drops(env: Env) -> None:
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(1)
        proxy.hold_replies()
        env.outbox.add(1)
        link.wake()
        await inbox.until(lambda i: i.seqs() == [1, 2])
        await proxy.cut()  # the PUBACK of 2 is lost with the connection
        assert env.outbox.pending_seqs() == [2]
        env.outbox.add(1)
        await proxy.restore()
        await env.outbox.until_delivered(3)
        await inbox.until(lambda i: len(i.seqs()) == 4)
        reconnects = link.counters().reconnects
    # At least once: 2 arrives twice (the receiver deduplicates by seq), never out of order.
    assert inbox.seqs() == [1, 2, 2, 3]
    assert env.outbox.delivered == [1, 2, 3]
    assert reconnects == 1


async def test_messages_made_during_an_outage_stay_pending_and_follow_in_order(env: Env) -> None:
    env.outbox.add(3)
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        await env.outbox.until_delivered(3)
        await proxy.cut()
        env.outbox.add(5)  # hands keep being resolved while the broker is unreachable
        link.wake()
        assert env.outbox.pending_seqs() == [4, 5, 6, 7, 8]
        await proxy.restore()
        await env.outbox.until_delivered(8)
        await inbox.until(lambda i: len(i.seqs()) == 8)
        counters = link.counters()
    assert inbox.seqs() == list(range(1, 9))
    assert env.outbox.delivered == list(range(1, 9))
    assert counters.reconnects >= 1


async def test_resend_publishes_delivered_messages_again_in_the_order_given(env: Env) -> None:
    sent = env.outbox.add(4)
    async with subscribed(env) as inbox, env.link() as link:
        await env.outbox.until_delivered(4)
        link.resend(sent[1:3])
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(5)
        await inbox.until(lambda i: len(i.seqs()) == 7)
        counters = link.counters()
    assert inbox.seqs() == [1, 2, 3, 4, 2, 3, 5]
    assert env.outbox.delivered == [1, 2, 3, 4, 5]  # resent ones are not marked again
    assert (counters.published, counters.resent) == (5, 2)


async def test_retained_outbox_message_is_published_retained(env: Env) -> None:
    message = OutboxMessage(seq=1, topic_suffix="status", type="table_state",
                            body={"mode": "error"}, wall=T0, mono_ns=1, boot_id="boot-a",
                            retain=True)
    env.outbox.messages[1] = message
    async with env.link():
        await env.outbox.until_delivered(1)
        # Published after the birth, so it is what the broker now retains on the status topic.
        async with subscribed(env, env.topics.status) as inbox:
            await inbox.until(lambda i: bool(i.messages))
    [retained] = inbox.messages
    assert retained.retain
    envelope = inbox.envelopes("status")[0]
    assert (envelope.seq, envelope.type, envelope.body) == (1, "table_state", {"mode": "error"})


async def test_outbox_out_of_order_stops_the_link(env: Env) -> None:
    class Shuffled(MemoryOutbox):
        def pending(self, limit: int = 100) -> list[OutboxMessage]:
            return list(reversed(super().pending(limit)))

    env.outbox = Shuffled()
    env.outbox.add(2)
    link = env.link()
    await link.__aenter__()
    async with asyncio.timeout(GUARD_S):
        while link.failed is None:
            await asyncio.sleep(0.01)
    with pytest.raises(OutboxOrderError, match=r"seqs \[2, 1\] not in increasing order"):
        await link.close()
    assert env.outbox.delivered == []


# --- availability: birth and will ----------------------------------------------------------


async def test_birth_on_every_connect_and_will_when_the_connection_is_lost(env: Env) -> None:
    async with subscribed(env, env.topics.status) as inbox, proxied(env) as proxy:
        async with env.link(proxy.port):
            await inbox.until(lambda i: i.states() == [("online", None)])
            await proxy.cut()  # abrupt: no DISCONNECT, the broker publishes the will
            await inbox.until(lambda i: len(i.states()) == 2)
            await proxy.restore()
            await inbox.until(lambda i: len(i.states()) == 3)
        await inbox.until(lambda i: len(i.states()) == 4)
        status = inbox.envelopes("status")
    assert inbox.states() == [
        ("online", None), ("offline", False), ("online", None), ("offline", True)
    ]
    assert {e.seq for e in status} == {0}  # availability is not part of the sequence
    assert status[2].body["link"]["reconnects"] == 1
    assert [m.retain for m in inbox.messages] == [False] * 4  # live deliveries
    async with subscribed(env, env.topics.status) as late:
        await late.until(lambda i: bool(i.messages))
    assert late.states() == [("offline", True)]
    assert late.messages[0].retain


async def test_publish_status_refreshes_the_retained_birth(env: Env) -> None:
    extra = {"mode": "running", "hands": 0}

    async def ignore(envelope: Envelope) -> None:
        return None

    link = MqttLink(
        env.settings(), TableIdentity(venue=VENUE, table=env.table, boot_id="boot-a"),
        env.table_key, env.outbox, ignore, command_keys=KeyRing(), status_extra=lambda: extra,
    )
    async with subscribed(env, env.topics.status) as inbox, link:
        await inbox.until(lambda i: len(i.states()) == 1)
        extra = {"mode": "error", "hands": 3}
        assert await link.publish_status()
        await inbox.until(lambda i: len(i.states()) == 2)
    online = [e.body for e in inbox.envelopes("status") if e.body["state"] == "online"]
    assert [b["status"] for b in online] == [{"mode": "running", "hands": 0},
                                            {"mode": "error", "hands": 3}]
    assert online[0]["link"]["connected"] is True


# --- commands ------------------------------------------------------------------------------


async def test_signed_desk_command_reaches_on_command(env: Env) -> None:
    async with env.link() as link:
        await connected(link)
        await env.send(env.command(1, seat=2))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    [command] = env.commands
    assert command.signer == "desk-1"
    assert command.type == "assign_seat"
    assert command.body == {"table": env.table, "seat": 2, "entry": "E-1"}
    assert (counters.commands, counters.commands_rejected) == (1, 0)


async def test_bad_commands_are_rejected_counted_answered_and_never_delivered(env: Env) -> None:
    unsigned = json.loads(env.command(2))
    del unsigned["sig"]
    forged = json.loads(env.command(3))
    forged["body"]["seat"] = 6  # changed after signing
    impostor = Signer.generate("desk-1")  # claims to be desk-1 with another key
    stranger = Signer.generate("desk-9")  # not enrolled
    bad = [
        (b"\x00\x01garbage", "not_json"),
        (b"", "not_json"),
        (b'["not", "an", "object"]', "not_object"),
        (canonical_json(unsigned), "missing_field"),
        (canonical_json(forged), "bad_signature"),
        (env.command(4, signer=impostor), "bad_signature"),
        (env.command(5, signer=stranger), "unknown_signer"),
        (env.command(6, table="t-other"), "wrong_table"),
        (env.command(7, venue="casino-2"), "wrong_venue"),
        (seal(venue=VENUE, table=env.table, seq=8, wall=T0, type="assign_seat",
              body={"table": env.table}, boot="b", mono=0, signer=env.table_key).encode(),
         "unknown_signer"),  # a table's own key is not a command key
    ]
    async with subscribed(env, env.topics.events) as inbox, env.link() as link:
        await connected(link)
        await env.send(*(payload for payload, _ in bad), env.command(9))
        # Commands are handled in order: when 9 arrives, every bad one has been handled.
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        await inbox.until(lambda i: len(i.messages) == len(bad))
        counters = link.counters()
    assert [c.seq for c in env.commands] == [9]
    notices = inbox.envelopes("events")
    assert {n.type for n in notices} == {COMMAND_REJECTED_TYPE}
    assert {n.seq for n in notices} == {0}
    assert [n.body["reason"] for n in notices] == [reason for _, reason in bad]
    assert notices[5].body["claimed_sender"] == "desk-1"
    assert notices[5].body["claimed_seq"] == 4
    expected: dict[str, int] = {}
    for _, reason in bad:
        expected[reason] = expected.get(reason, 0) + 1
    assert counters.rejections == expected
    assert (counters.commands, counters.commands_rejected) == (1, len(bad))


async def test_messages_on_other_topics_are_dropped(env: Env) -> None:
    # amqtt sends, on CONNECT, retained messages matching any client's subscription (D12):
    # the link must not take them for commands.
    other = f"{env.topics.base}/other"
    async with _client(env.broker) as publisher:
        await publisher.publish(other, b"retained, not a command", qos=1, retain=True)
    try:
        async with subscribed(env), env.link() as link:
            await connected(link)
            await env.send(env.command(1))
            await env.commands_changed.until(lambda: len(env.commands) == 1)
            counters = link.counters()
        assert (counters.commands, counters.commands_rejected) == (1, 0)
    finally:
        async with _client(env.broker) as cleaner:
            await cleaner.publish(other, b"", qos=1, retain=True)


async def test_commands_sent_while_the_table_is_away_arrive_when_it_returns(env: Env) -> None:
    # The persistent session (same client id, clean_session False) keeps the cmd subscription
    # and queues QoS 1 commands while the table is disconnected.
    async with env.link() as link:
        await connected(link)
    await env.send(env.command(1), env.command(2))
    async with env.link() as link:
        await env.commands_changed.until(lambda: len(env.commands) == 2)
        counters = link.counters()
    assert [c.seq for c in env.commands] == [1, 2]
    assert counters.commands_rejected == 0


async def test_a_failing_verifier_rejects_the_command_and_the_link_goes_on(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller import mqtt_link

    def verify(raw: bytes, keyring: KeyRing) -> Envelope:
        if raw == b"boom":
            raise RuntimeError("verifier bug")
        return verify_envelope(raw, keyring)

    monkeypatch.setattr(mqtt_link, "verify_envelope", verify)
    async with env.link() as link:
        await connected(link)
        await env.send(b"boom", env.command(1))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    assert counters.rejections == {"verify_error": 1}
    assert link.failed is None


async def test_a_failing_command_handler_does_not_stop_the_link(env: Env) -> None:
    async def handler(envelope: Envelope) -> None:
        if envelope.seq == 1:
            raise RuntimeError("table service bug")
        env.commands.append(envelope)
        env.commands_changed.notify()

    async with env.link(on_command=handler) as link:
        await connected(link)
        await env.send(env.command(1), env.command(2))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    assert [c.seq for c in env.commands] == [2]
    assert (counters.commands, counters.command_errors) == (2, 1)


# --- broker restart (embedded broker only: the shared Mosquitto is never stopped) ----------


async def test_reconnects_after_the_embedded_broker_restarts(unique_topic: str) -> None:
    async with EmbeddedBroker() as broker:
        where = MqttBroker(kind="embedded", host=broker.host, port=broker.port)
        table = f"t-{unique_topic.rsplit('/', 1)[1]}"
        env = Env(broker=where, root=unique_topic, table=table,
                  table_key=Signer.generate(table), desk_key=Signer.generate("desk-1"))
        env.outbox.add(3)
        async with env.link() as link:
            await env.outbox.until_delivered(3)
            await broker.stop()
            env.outbox.add(3)  # made while the broker is down
            link.wake()
            assert env.outbox.pending_seqs() == [4, 5, 6]
            restarted = EmbeddedBroker(port=where.port)
            async with restarted:
                # Delivered means acknowledged by the restarted broker.
                await env.outbox.until_delivered(6)
                async with subscribed(env) as inbox:
                    # The new broker knows nothing of the old one: the retained "online"
                    # it holds was published on reconnect.
                    await inbox.until(lambda i: i.states() == [("online", None)])
                    env.outbox.add(2)
                    link.wake()
                    await inbox.until(lambda i: i.seqs() == [7, 8])
                    # Commands work on the new connection too.
                    await env.send(env.command(1))
                    await env.commands_changed.until(lambda: len(env.commands) == 1)
                counters = link.counters()
    assert env.outbox.delivered == list(range(1, 9))
    assert counters.reconnects >= 1
    assert counters.published == 8


async def test_link_keeps_trying_while_no_broker_listens(unique_topic: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    where = MqttBroker(kind="embedded", host="127.0.0.1", port=port)
    table = f"t-{unique_topic.rsplit('/', 1)[1]}"
    env = Env(broker=where, root=unique_topic, table=table,
              table_key=Signer.generate(table), desk_key=Signer.generate("desk-1"))
    env.outbox.add(2)
    async with env.link() as link:
        assert not link.connected
        async with EmbeddedBroker(port=port):
            await env.outbox.until_delivered(2)
    assert env.outbox.delivered == [1, 2]
    # Leaving while the broker is down is immediate and quiet; nothing is lost.
    env.outbox.add(1)
    async with env.link():
        pass
    assert env.outbox.pending_seqs() == [3]


# --- settings and wiring -------------------------------------------------------------------


def test_the_signing_key_must_be_the_tables() -> None:
    signer = Signer.generate("t-2")

    async def ignore(envelope: Envelope) -> None:
        return None

    with pytest.raises(ConfigError, match="signing key is 't-2' but this table is 't-1'"):
        MqttLink(MqttSettings(), TableIdentity(venue=VENUE, table="t-1", boot_id="b"), signer,
                 MemoryOutbox(), ignore, command_keys=KeyRing())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"port": 0}, "port: must be 1..65535"),
        ({"host": ""}, "host: must not be empty"),
        ({"password": "x"}, "password: given without a username"),
        ({"key_file": Path("k.pem")}, "key_file: given without cert_file"),
        ({"keepalive_s": 0}, "keepalive_s: must be 1..65535"),
        ({"timeout_s": 0}, "timeout_s: must be positive"),
        ({"backoff_initial_s": 5.0, "backoff_max_s": 1.0}, "need 0 < backoff_initial_s"),
        ({"batch_size": 0}, "batch_size: must be at least 1"),
        ({"topic_root": "showdown/#"}, "topic_root: .*must not contain"),
        ({"topic_root": "/showdown"}, "topic_root: .*non-empty levels"),
    ],
)
def test_settings_are_validated(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MqttSettings(**changes)


def test_tls_files_are_checked(tmp_path: Path) -> None:
    assert MqttSettings().ssl_context() is None
    assert MqttSettings(tls=True).ssl_context() is not None  # system CAs
    with pytest.raises(ConfigError, match=r"ca_file: .* is not a readable file"):
        MqttSettings(ca_file=tmp_path / "missing.pem").ssl_context()
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(ConfigError, match="tls: cannot load certificates"):
        MqttSettings(ca_file=garbage).ssl_context()


# --- TLS, client certificate and password (a private Mosquitto started for the test) --------


@dataclass(frozen=True)
class TlsBroker:
    port: int
    ca: Path
    cert: Path
    key: Path
    username: str = "table"
    password: str = "s3cret"  # noqa: S105 - a throwaway test broker


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _make_certificates(d: Path) -> None:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate, all EC P-256."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", d / "ca.key", "-out", d / "ca.pem", "-days", "2",
             "-subj", "/CN=showdown test CA")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, subject, extra in (("server", "/CN=127.0.0.1", ("-extfile", d / "san.ext")),
                                 ("client", "/CN=table", ())):
        _openssl("req", *ec, "-keyout", d / f"{name}.key", "-out", d / f"{name}.csr",
                 "-subj", subject)
        _openssl("x509", "-req", "-in", d / f"{name}.csr", "-CA", d / "ca.pem", "-CAkey",
                 d / "ca.key", "-CAcreateserial", "-out", d / f"{name}.pem", "-days", "2", *extra)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def tls_broker(tmp_path: Path) -> AsyncIterator[TlsBroker]:
    missing = [tool for tool in ("mosquitto", "mosquitto_passwd", "openssl")
               if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} installed")
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    _make_certificates(tmp_path)
    broker = TlsBroker(port=_free_port(), ca=tmp_path / "ca.pem", cert=tmp_path / "client.pem",
                       key=tmp_path / "client.key")
    passwords = tmp_path / "passwords"
    passwords.touch(mode=0o600)
    subprocess.run(["mosquitto_passwd", "-b", str(passwords), broker.username, broker.password],
                   check=True, capture_output=True)
    user = "user root\n" if os.getuid() == 0 else ""
    (tmp_path / "mosquitto.conf").write_text(
        f"listener {broker.port} 127.0.0.1\ncafile {broker.ca}\n"
        f"certfile {tmp_path / 'server.pem'}\nkeyfile {tmp_path / 'server.key'}\n"
        f"require_certificate true\nallow_anonymous false\npassword_file {passwords}\n"
        f"persistence false\n{user}"
    )
    process = await asyncio.create_subprocess_exec(
        mosquitto, "-c", str(tmp_path / "mosquitto.conf"),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(GUARD_S):  # until it listens
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", broker.port)
                except OSError:
                    await asyncio.sleep(0.02)
                    continue
                writer.close()
                break
        yield broker
    finally:
        process.terminate()
        await process.wait()


def _tls_env(broker: TlsBroker, unique_topic: str) -> Env:
    table = f"t-{unique_topic.rsplit('/', 1)[1]}"
    return Env(broker=MqttBroker(kind="mosquitto-tls", host="127.0.0.1", port=broker.port),
               root=unique_topic, table=table, table_key=Signer.generate(table),
               desk_key=Signer.generate("desk-1"))


def _tls_options(broker: TlsBroker, **changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"ca_file": broker.ca, "cert_file": broker.cert,
                               "key_file": broker.key, "username": broker.username,
                               "password": broker.password}
    options.update(changes)
    return options


async def test_tls_with_client_certificate_and_password(
    tls_broker: TlsBroker, unique_topic: str
) -> None:
    env = _tls_env(tls_broker, unique_topic)
    env.outbox.add(3)
    tls = MqttSettings(**{"host": "127.0.0.1", "port": tls_broker.port,
                          **_tls_options(tls_broker)})
    async with aiomqtt.Client("127.0.0.1", tls_broker.port, username=tls_broker.username,
                              password=tls_broker.password, tls_context=tls.ssl_context(),
                              timeout=GUARD_S) as watcher:
        await watcher.subscribe(f"{env.topics.base}/events", qos=1)
        async with env.link(**_tls_options(tls_broker)) as link:
            await env.outbox.until_delivered(3)
            received: list[int] = []
            async with asyncio.timeout(GUARD_S):
                async for message in watcher.messages:
                    received.append(verify_envelope(bytes(message.payload),
                                                    env.table_keys).seq)
                    if len(received) == 3:
                        break
            await watcher.publish(env.topics.cmd, env.command(1), qos=1)
            await env.commands_changed.until(lambda: len(env.commands) == 1)
            assert link.connected
    assert received == [1, 2, 3]


async def test_a_refused_password_is_retried_with_backoff(
    tls_broker: TlsBroker, unique_topic: str
) -> None:
    env = _tls_env(tls_broker, unique_topic)
    async with env.link(**_tls_options(tls_broker, password="wrong")) as link:  # noqa: S106
        async with asyncio.timeout(GUARD_S):
            while link.counters().connect_failures < 3:
                await asyncio.sleep(0.02)
        counters = link.counters()
    assert not counters.connected
    assert counters.reconnects == 0
