"""What the MqttLink tests share: a table's environment, an in-memory outbox, a cutting TCP
proxy, and a subscriber (a peer on the broker, through wire.mqtt) that collects what the
table publishes.

The link is tested against real brokers: the embedded amqtt one (always) and Mosquitto (where
present). Outages are made with the proxy between the link and the broker (the test's peers
talk to the broker directly), so they work on the shared Mosquitto too. No test asserts
anything about time; waits are guarded against hangs only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.mqtt_link import (
    MqttLink,
    TableIdentity,
)
from tests.fixtures.services import MqttBroker
from wire.envelope import Envelope, seal, verify_envelope
from wire.messages import Availability
from wire.mqtt import MqttClient, MqttSettings, Received, connect
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
    messages: list[Received] = field(default_factory=list)
    changed: Signal = field(default_factory=Signal)

    def envelopes(self, suffix: str | None = None) -> list[Envelope]:
        return [
            verify_envelope(m.payload, self.table_keys)
            for m in self.messages
            if m.payload and (suffix is None or m.topic.endswith("/" + suffix))
        ]

    def seqs(self) -> list[int]:
        """Seqs of sequenced messages on events and scores, in arrival order."""
        return [e.seq for e in self.envelopes() if e.seq > 0 and e.type == "hand_settled"]

    def states(self) -> list[tuple[str, bool | None]]:
        return [(e.body["state"], e.body.get("clean")) for e in self.envelopes("status")
                if e.type == Availability.TYPE]

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
        async with peer(self.broker) as desk:
            for payload in payloads:
                await desk.publish(self.topics.cmd, payload, qos=1)


def peer(broker: MqttBroker, **options: Any) -> AbstractAsyncContextManager[MqttClient]:
    """A client of the test's own on the broker (a desk, a subscriber, a cleaner)."""
    return connect(MqttSettings(host=broker.host, port=broker.port, timeout_s=GUARD_S),
                   **options)


@asynccontextmanager
async def table_env(mqtt_broker: MqttBroker, unique_topic: str) -> AsyncIterator[Env]:
    """One test's table on the broker (the ``env`` fixture of each test module)."""
    suffix = unique_topic.rsplit("/", 1)[1]
    env = Env(
        broker=mqtt_broker, root=unique_topic, table=f"t-{suffix}",
        table_key=Signer.generate(f"t-{suffix}"), desk_key=Signer.generate("desk-1"),
    )
    yield env
    # The shared Mosquitto keeps retained messages and persistent sessions: clear ours.
    async with peer(mqtt_broker) as cleaner:
        await cleaner.publish(env.topics.status, b"", qos=1, retain=True)
    async with peer(mqtt_broker, client_id=env.table, clean_session=True):
        pass


@asynccontextmanager
async def subscribed(env: Env, topic_filter: str | None = None) -> AsyncIterator[Inbox]:
    """A subscriber on the table's topics (directly on the broker), collecting into an Inbox."""
    inbox = Inbox(env.table_keys)
    base = env.topics.base
    async with peer(env.broker) as client:
        await client.subscribe(topic_filter or f"{base}/#", qos=1)

        async def collect() -> None:
            async for message in client.messages():
                if message.topic.startswith(base + "/"):  # amqtt sends others too (D12)
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

