"""The table's MQTT link: outbox to broker, desk commands from it, availability (birth/will).

    async with MqttLink(settings, identity, signer, journal, on_command,
                        command_keys=desk_keys) as link:
        ...                      # after each commit that wrote outbox rows: link.wake()

While open, a background task keeps one connection to the broker (wire.mqtt.MqttSession:
reconnects after any failure with jittered exponential backoff; with a cluster's several
addresses each lost connection moves to the next node). On every connection it

- connects as client id = table id with a persistent session (clean_session False) and a last
  will: a retained, signed ``availability`` envelope ``{"state": "offline"}`` on the status topic;
- subscribes to the table's ``cmd`` topic (QoS 1) and publishes the retained ``online``
  availability (birth) again, on *every* connect, so a broker restart never leaves the table
  shown offline (zigbee2mqtt #4854);
- drains the outbox strictly in ``seq`` order, one message at a time at QoS 1, and marks a
  message delivered only once ``publish`` has returned, which is after the broker's PUBACK
  (wire.mqtt.MqttClient.publish);
- hands every ``cmd`` message that is a valid envelope signed by an enrolled command key and
  addressed to this venue and table to ``on_command``; anything else is logged, counted by
  reason and answered with a signed ``command_rejected`` notice on the events topic.

Messages on topics this link did not subscribe to are dropped: amqtt 0.12.1 sends every
client, on CONNECT, the retained messages matching *any* client's subscriptions.

After a lost connection the link logs ``mqtt_resumed`` once the next connection's first
message is acknowledged (the birth), with the seconds since the loss (the failover time),
and ``mqtt_outbox_resumed`` at the first outbox message acknowledged after it; the outbox
resumes from the first message not acknowledged, so a message the lost node had taken but
not acknowledged is published again (the central service deduplicates on (table, seq)).

Outbox messages are signed when published (Ed25519 is deterministic, so a republished message
is byte-for-byte the same). Availability and rejection notices use ``seq`` 0: they are not
part of the table's sequence.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Self

import structlog

from game.errors import ConfigError
from runtime.clocks import StampClock, utc_stamp
from wire.envelope import Envelope, EnvelopeError, envelope_for, seal, verify_envelope
from wire.messages import Availability, CommandRejected
from wire.mqtt import MqttClient, MqttError, MqttSession, MqttSettings, Will, exception_leaves
from wire.outbox import OutboxItem, OutboxSource
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics, TopicError, validate_id

__all__ = [
    "VERIFY_ERROR",
    "WRONG_TABLE",
    "WRONG_VENUE",
    "LinkCounters",
    "MqttLink",
    "OutboxOrderError",
    "OutboxSource",
    "TableIdentity",
]

# Rejection reasons beyond the envelope's own (wire.envelope.REJECTION_REASONS).
WRONG_VENUE: Final = "wrong_venue"
WRONG_TABLE: Final = "wrong_table"
VERIFY_ERROR: Final = "verify_error"  # verification itself failed (a bug): never delivered
UNSEQUENCED: Final = 0
_MAX_DETAIL: Final = 300  # characters of a rejection's detail in logs and notices

_log = structlog.get_logger("controller.mqtt_link")



@dataclass(frozen=True, slots=True, kw_only=True)
class TableIdentity:
    """Who this table is: venue and table ids, and the id of this run (boot)."""

    venue: str
    table: str
    boot_id: str

    def __post_init__(self) -> None:
        validate_id("venue", self.venue)
        validate_id("table", self.table)
        if not self.boot_id:
            raise TopicError("boot id must not be empty")

    @property
    def client_id(self) -> str:
        """The MQTT client id of its persistent session: venue and table, so that two venues'
        (or two test runs') tables of the same id on one broker never take over each other's
        session (a production Mosquitto replaces it by the table's username anyway)."""
        return f"{self.venue}-{self.table}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkCounters:
    """A snapshot of the link's counters, for the status message and `showdown table status`."""

    connected: bool
    subscribed: bool
    published: int
    resent: int
    reconnects: int
    connect_failures: int
    commands: int
    commands_rejected: int
    rejections: Mapping[str, int]
    command_errors: int
    pending: int
    last_published_seq: int | None
    broker: str = ""  # host:port in use (or tried next)
    failovers: int = 0  # moves to another node of a cluster
    last_failover_s: float | None = None  # connection lost -> first message acknowledged

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "connected": self.connected,
            "subscribed": self.subscribed,
            "published": self.published,
            "resent": self.resent,
            "reconnects": self.reconnects,
            "connect_failures": self.connect_failures,
            "commands": self.commands,
            "commands_rejected": self.commands_rejected,
            "rejections": dict(sorted(self.rejections.items())),
            "command_errors": self.command_errors,
            "pending": self.pending,
            "last_published_seq": self.last_published_seq,
            "broker": self.broker,
            "failovers": self.failovers,
            "last_failover_s": self.last_failover_s,
        }


class OutboxOrderError(RuntimeError):
    """The outbox returned pending messages out of ``seq`` order; the link stops publishing."""


@dataclass(slots=True)
class _Counts:
    published: int = 0
    resent: int = 0
    subscribed: bool = False
    commands: int = 0
    command_errors: int = 0
    pending: int = 0
    last_published_seq: int | None = None
    rejections: Counter[str] = field(default_factory=Counter)
    lost_at: float | None = None  # loop time the last connection was lost (until resumed)
    outbox_lost_at: float | None = None  # the same, until an outbox message is acknowledged
    last_failover_s: float | None = None


class _Rejected(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


class MqttLink:
    """Async context manager owning the table's MQTT connection (see the module docstring)."""

    def __init__(
        self,
        settings: MqttSettings,
        identity: TableIdentity,
        signer: Signer,
        outbox: OutboxSource,
        on_command: Callable[[Envelope], Awaitable[None]],
        *,
        command_keys: KeyRing,
        status_extra: Callable[[], Mapping[str, Any]] | None = None,
        clock: StampClock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if signer.key_id != identity.table:
            raise ConfigError(
                "table key", "name",
                f"the signing key is {signer.key_id!r} but this table is {identity.table!r}",
            )
        self.settings = settings
        self.identity = identity
        self.topics = TableTopics(identity.venue, identity.table, settings.topic_root)
        self._signer = signer
        self._outbox = outbox
        self._on_command = on_command
        self._command_keys = command_keys
        self._status_extra = status_extra
        self._clock = clock or utc_stamp
        self._rng = rng if rng is not None else random.Random()
        self._log = _log.bind(venue=identity.venue, table=identity.table)
        settings.ssl_context()  # TLS files are checked now, not at the first connect
        self._session = MqttSession(
            settings, client_id=identity.client_id, clean_session=False, will=self._will,
            rng=self._rng, log=self._log)
        self._counts = _Counts()
        self._resend: deque[OutboxItem] = deque()
        self._wake = asyncio.Event()
        self._closing = asyncio.Event()
        self._connected = asyncio.Event()
        self._subscribed = asyncio.Event()  # connected and the cmd subscription granted
        self._client: MqttClient | None = None
        self._task: asyncio.Task[None] | None = None

    # --- public surface --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Start the background connection task (returns at once; the broker may be down)."""
        if self._task is not None:
            raise RuntimeError("an MqttLink can be entered only once")
        self._task = asyncio.create_task(self._run(), name=f"mqtt_link[{self.identity.table}]")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop: finish the message in flight, publish ``offline`` retained, disconnect."""
        await self.close()

    async def close(self) -> None:
        """Like leaving the context; re-raises what stopped the link if it failed."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        self._wake.set()
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=self.settings.timeout_s + 1.0)
            if not done:
                self._log.warning("mqtt_close_forced")
                task.cancel()
                await asyncio.wait({task})
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            raise error

    def wake(self) -> None:
        """Tell the link new outbox rows are committed (cheap; call after every commit)."""
        self._wake.set()

    def resend(self, messages: Iterable[OutboxItem]) -> None:
        """Publish these (already delivered) messages again, in the order given, before new ones."""
        self._resend.extend(messages)
        self._wake.set()

    @property
    def delivered(self) -> int:
        """How many outbox messages the broker has acknowledged since the link started."""
        return self._counts.published

    @property
    def connected(self) -> bool:
        """True while connected to the broker."""
        return self._connected.is_set()

    @property
    def broker_address(self) -> tuple[str, int]:
        """(host, port) of the broker in use, or the one tried next while disconnected."""
        return self._session.address

    async def wait_connected(self) -> None:
        """Return once connected (immediately if already)."""
        await self._connected.wait()

    async def wait_subscribed(self) -> None:
        """Return once connected with the desk-command subscription granted: from then on
        the broker holds commands for this table (its session is persistent)."""
        await self._subscribed.wait()

    @property
    def failed(self) -> BaseException | None:
        """What stopped the link, if something other than close() did."""
        task = self._task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    def counters(self) -> LinkCounters:
        """A snapshot of the counters."""
        c = self._counts
        return LinkCounters(
            connected=self.connected,
            subscribed=self.connected and c.subscribed,
            published=c.published,
            resent=c.resent,
            reconnects=self._session.reconnects,
            connect_failures=self._session.connect_failures,
            commands=c.commands,
            commands_rejected=sum(c.rejections.values()),
            rejections=dict(c.rejections),
            command_errors=c.command_errors,
            pending=c.pending,
            last_published_seq=c.last_published_seq,
            broker=self._session.broker,
            failovers=self._session.failovers,
            last_failover_s=c.last_failover_s,
        )

    async def publish_status(self) -> bool:
        """Publish the retained ``online`` availability again (fresh counters and status extra).

        Returns False if not connected (the next connection publishes it anyway).
        """
        client = self._client
        if client is None or not self.connected:
            return False
        try:
            await client.publish(self.topics.status, self._availability("online"), qos=1,
                                 retain=True)
        except MqttError as exc:
            self._log.warning("mqtt_status_not_published", error=str(exc))
            return False
        return True

    # --- connection loop -------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._reconnecting()
        except BaseExceptionGroup as group:
            # A failure other than the connection's (outbox, a bug): surface the error itself.
            leaves = exception_leaves(group)
            if len(leaves) == 1:
                self._log.error("mqtt_link_failed", error=repr(leaves[0]))
                raise leaves[0] from None
            self._log.error("mqtt_link_failed", error=repr(group))
            raise

    async def _reconnecting(self) -> None:
        await self._session.run(self._connection, self._closing)

    def _will(self) -> Will:
        return Will(self.topics.status, self._availability("offline", clean=False), qos=1,
                    retain=True)

    async def _connection(self, client: MqttClient) -> None:
        """One connection, from CONNECT to its end; returns normally only when closing."""
        self._client = client
        self._connected.set()
        try:
            self._log.info("mqtt_connected", broker=client.where,
                           reconnects=self._session.reconnects)
            self._counts.subscribed = await client.subscribe(self.topics.cmd, qos=1)
            if not self._counts.subscribed:
                # Publishing goes on (scores matter more); the operator must fix the ACL.
                self._log.error("mqtt_cmd_subscription_refused", topic=self.topics.cmd)
            else:
                self._subscribed.set()
            await client.publish(self.topics.status, self._availability("online"), qos=1,
                                 retain=True)
            self._resumed(client)
            async with asyncio.TaskGroup() as group:
                receiver = group.create_task(self._receive(client), name="mqtt_link.receive")
                await self._drain(client)
                receiver.cancel()
            # Closing: a clean DISCONNECT discards the will, so say "offline" ourselves.
            await client.publish(
                self.topics.status, self._availability("offline", clean=True), qos=1,
                retain=True,
            )
            self._log.info("mqtt_closed", published=self._counts.published)
        finally:
            if not self._closing.is_set():
                # From the first loss: a next node that fails too is part of the failover.
                now = asyncio.get_running_loop().time()
                if self._counts.lost_at is None:
                    self._counts.lost_at = now
                if self._counts.outbox_lost_at is None:
                    self._counts.outbox_lost_at = now
            self._connected.clear()
            self._subscribed.clear()
            self._client = None

    def _resumed(self, client: MqttClient) -> None:
        """The first message after a lost connection is acknowledged: log the failover time."""
        lost = self._counts.lost_at
        if lost is None:
            return
        self._counts.lost_at = None
        seconds = round(asyncio.get_running_loop().time() - lost, 3)
        self._counts.last_failover_s = seconds
        self._log.info("mqtt_resumed", broker=client.where, seconds=seconds,
                       failovers=self._session.failovers)

    def _outbox_resumed(self, client: MqttClient, seq: int) -> None:
        lost = self._counts.outbox_lost_at
        if lost is None:
            return
        self._counts.outbox_lost_at = None
        self._log.info("mqtt_outbox_resumed", broker=client.where, seq=seq,
                       seconds=round(asyncio.get_running_loop().time() - lost, 3))

    # --- outbox -> broker ------------------------------------------------------------------

    async def _drain(self, client: MqttClient) -> None:
        """Publish resend requests, then pending outbox messages in seq order, until closing."""
        while not self._closing.is_set():
            if self._resend:
                message = self._resend[0]
                await self._publish(client, message)
                self._resend.popleft()
                self._counts.resent += 1
                continue
            self._wake.clear()
            batch = self._outbox.pending(self.settings.batch_size)
            self._counts.pending = len(batch)
            if not batch:
                await self._wake.wait()
                continue
            self._check_order(batch)
            for message in batch:
                if self._closing.is_set() or self._resend:
                    break
                await self._publish(client, message)
                # publish() returned: the broker has acknowledged (PUBACK) this message.
                self._outbox.mark_delivered(message.seq)
                self._outbox_resumed(client, message.seq)
                self._counts.published += 1
                self._counts.pending -= 1
                self._counts.last_published_seq = message.seq

    def _check_order(self, batch: Sequence[OutboxItem]) -> None:
        seqs = [m.seq for m in batch]
        if any(b <= a for a, b in itertools.pairwise(seqs)):
            self._log.error("mqtt_outbox_out_of_order", seqs=seqs[:20])
            raise OutboxOrderError(
                f"outbox returned seqs {seqs[:20]} not in increasing order; refusing to publish"
            )
        last = self._counts.last_published_seq
        if last is not None and seqs[0] <= last:
            # Not marked delivered after all (or marked lazily): publish again, the receiver
            # deduplicates by (table, seq).
            self._log.warning("mqtt_outbox_repeats_published", first_seq=seqs[0],
                              last_published=last)

    async def _publish(self, client: MqttClient, message: OutboxItem) -> None:
        envelope = envelope_for(
            message, venue=self.identity.venue, table=self.identity.table, signer=self._signer
        )
        topic = self.topics.for_suffix(message.topic_suffix)
        await client.publish(topic, envelope.encode(), qos=1, retain=message.retain)

    # --- broker -> commands ----------------------------------------------------------------

    async def _receive(self, client: MqttClient) -> None:
        async for message in client.messages():
            if message.topic != self.topics.cmd:
                # amqtt sends retained messages of other clients' subscriptions (D12).
                self._log.debug("mqtt_foreign_message_dropped", topic=message.topic)
                continue
            await self._command(client, message.payload)

    async def _command(self, client: MqttClient, raw: bytes) -> None:
        try:
            envelope = verify_envelope(raw, self._command_keys)
            self._check_addressee(envelope)
        except EnvelopeError as exc:
            await self._reject(client, raw, exc.reason, exc.detail)
            return
        except _Rejected as exc:
            await self._reject(client, raw, exc.reason, exc.detail)
            return
        except Exception as exc:  # a verifier bug must not let a bad command stop the link
            self._log.exception("mqtt_command_verify_failed")
            await self._reject(client, raw, VERIFY_ERROR, f"{type(exc).__name__}: {exc}")
            return
        self._counts.commands += 1
        self._log.info("mqtt_command", type=envelope.type, sender=envelope.signer,
                       seq=envelope.seq)
        try:
            await self._on_command(envelope)
        except Exception:
            self._counts.command_errors += 1
            self._log.exception("mqtt_command_handler_failed", type=envelope.type,
                                sender=envelope.signer, seq=envelope.seq)

    def _check_addressee(self, envelope: Envelope) -> None:
        if envelope.venue != self.identity.venue:
            raise _Rejected(WRONG_VENUE, f"command is for venue {envelope.venue!r}")
        target = envelope.body.get("table")
        if target != self.identity.table:
            raise _Rejected(WRONG_TABLE, f"command body names table {target!r}")

    async def _reject(self, client: MqttClient, raw: bytes, reason: str, detail: str) -> None:
        self._counts.rejections[reason] += 1
        detail = detail if len(detail) <= _MAX_DETAIL else detail[:_MAX_DETAIL] + "..."
        claimed = _claimed(raw)
        digest = hashlib.sha256(raw).hexdigest()
        self._log.warning("mqtt_command_rejected", reason=reason, detail=detail,
                          payload_sha256=digest, payload_bytes=len(raw), **claimed)
        wall, mono = self._clock()
        notice = seal(
            venue=self.identity.venue, table=self.identity.table, seq=UNSEQUENCED, wall=wall,
            type=CommandRejected.TYPE,
            body=CommandRejected(reason=reason, detail=detail, payload_sha256=digest,
                                 payload_bytes=len(raw), **claimed).encode(),
            boot=self.identity.boot_id, mono=mono, signer=self._signer,
        )
        try:
            await client.publish(self.topics.events, notice.encode(), qos=1, retain=False)
        except MqttError as exc:
            self._log.warning("mqtt_rejection_not_published", error=str(exc))

    # --- availability ----------------------------------------------------------------------

    def _availability(self, state: str, *, clean: bool | None = None) -> bytes:
        status = (dict(self._status_extra())
                  if state == "online" and self._status_extra is not None else None)
        body = Availability(state=state, link=self.counters().as_dict(), clean=clean,
                            status=status).encode()
        wall, mono = self._clock()
        return seal(
            venue=self.identity.venue, table=self.identity.table, seq=UNSEQUENCED, wall=wall,
            type=Availability.TYPE, body=body, boot=self.identity.boot_id, mono=mono,
            signer=self._signer,
        ).encode()


def _claimed(raw: bytes) -> dict[str, Any]:
    """What an unverified command claims to be (sender, seq, type), for the rejection notice."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(obj, dict):
        return {}
    claimed: dict[str, Any] = {}
    for name, key in (("table", "claimed_sender"), ("type", "claimed_type")):
        value = obj.get(name)
        if isinstance(value, str) and len(value) <= 64 and value.isprintable():
            claimed[key] = value
    seq = obj.get("seq")
    if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**63:
        claimed["claimed_seq"] = seq
    return claimed
