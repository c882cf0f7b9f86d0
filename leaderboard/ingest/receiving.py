"""Receiving: the ingest's subscription and receive loop on the broker (``IngestLink``).

The link subscribes at QoS 1 to every table's events, scores and status of the venue
(``$share/{group}/...`` with a shared group, so that several instances share the load: the
unique ``(table, seq)`` key makes storage exactly-once whoever receives a message), hands
what arrives to the Ingestor in batches, checks gaps on a timer, and reconnects with
jittered exponential backoff (wire.mqtt.MqttSession) until stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

import structlog

from leaderboard.db import connection_lost
from leaderboard.ingest.results import INGEST_SUFFIXES, IngestResult, Item
from runtime.errors import one_line
from wire.mqtt import MqttClient, MqttSession, MqttSettings, Received, stopped_within
from wire.topics import DEFAULT_ROOT, ID_PATTERN, SHARED_PREFIX, TableTopics


class IngestSink(Protocol):
    """What the receive loop feeds (`leaderboard.ingest.ingestor.Ingestor` is one): where it
    listens, how it batches, and the screening, storing and gap checks it hands work to."""

    venue: str
    topic_root: str
    batch_max: int

    @property
    def pipelined(self) -> bool:
        """Whether a batch may be screened while the one before is still being stored."""

    async def start_workers(self) -> None:
        """Start the verification workers, if any."""

    async def drain(self, timeout_s: float) -> None:
        """Finish what is under way, within ``timeout_s``."""

    def close(self) -> None:
        """Stop the workers and release the database."""

    async def screen_received(self, messages: Sequence[tuple[str, bytes]]) -> list[Item] | None:
        """Screen and verify a received batch; None when nothing of it is to be stored."""

    async def store_received(self, items: list[Item], *,
                             stop: asyncio.Event | None = None) -> list[IngestResult]:
        """Store a screened batch in one transaction (again after a lost database connection,
        until ``stop``); each item's result, in order (none when the batch failed)."""

    async def check_gaps(self) -> list[tuple[str, int]]:
        """Ask tables to resend what is missing; the (table, seq) asked for."""

    def now(self) -> datetime:
        """The ingest's clock (what a message's own time is measured against)."""

__all__ = ["Alongside", "IngestLink", "subscription_filters"]

_log = structlog.get_logger("leaderboard.ingest")

# What the ingest accepted from a table: verified, new (not a copy of a stored message), or a
# verified unsequenced notice. Only these tell that a table is live (D384).
_ACCEPTED: Final = frozenset({"stored", "notice"})
_VERIFIED: Final = _ACCEPTED | {"duplicate"}

# A coroutine run beside the receive loop on each connection (the standings publisher).
Alongside = Callable[[MqttClient, asyncio.Event], Coroutine[Any, Any, None]]


def subscription_filters(venue: str, *, root: str = DEFAULT_ROOT,
                         shared_group: str | None = None) -> tuple[str, ...]:
    """The ingest's filters: every table's events, scores and status (optionally shared)."""
    filters = [f"{root}/{venue}/tables/+/{suffix}" for suffix in INGEST_SUFFIXES]
    TableTopics(venue, "x", root)  # validates venue and root
    if shared_group is None:
        return tuple(filters)
    if not ID_PATTERN.fullmatch(shared_group):
        raise ValueError(f"shared group {shared_group!r}: use 1 to 64 of a-z, 0-9 and '-'")
    return tuple(f"{SHARED_PREFIX}{shared_group}/{f}" for f in filters)


async def _next_or_stop(client: MqttClient, stop: asyncio.Event) -> Received | None:
    """The next message, or None once ``stop`` is set (waiting for whichever comes first)."""
    if stop.is_set():
        return None
    receive = asyncio.ensure_future(client.next_message())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({receive, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not receive.done():
            receive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await receive
    if receive.cancelled():
        return None
    return receive.result()


class IngestLink:
    """The ingest's connection to the broker: THE receive loop of the leaderboard.

    Connects, subscribes (SubscriptionRefused ends the loop: a floor that seems quiet is
    worse than an error), feeds what the broker delivers to the Ingestor in batches (all
    that has arrived while the previous batch was stored, up to ``batch_max``), checks gaps
    every ``gap_check_s``, and reconnects until ``stop``. ``client_id`` makes the session
    persistent (the broker queues while we are away); without it a clean session with a
    random id is used. ``Ingestor.run`` runs one on its own; the service
    (leaderboard.app.ServiceLink) runs one with its standings publisher ``alongside``
    (started with each connection, cancelled when it ends) and publishes its commands
    through ``client``, so that it has one connection to the broker.
    """

    def __init__(self, ingestor: IngestSink, settings: MqttSettings, *,
                 shared_group: str | None = None, client_id: str | None = None,
                 gap_check_s: float = 0.5, rng: random.Random | None = None,
                 subscribed: asyncio.Event | None = None,
                 alongside: Alongside | None = None) -> None:
        if settings.topic_root != ingestor.topic_root:
            raise ValueError(f"settings.topic_root {settings.topic_root!r} differs from the "
                             f"ingest's {ingestor.topic_root!r}")
        if gap_check_s <= 0:
            raise ValueError(f"gap_check_s must be positive, got {gap_check_s}")
        self.ingestor = ingestor
        self.settings = settings
        self.filters = subscription_filters(ingestor.venue, root=settings.topic_root,
                                            shared_group=shared_group)
        self.client_id = client_id or (
            f"leaderboard-{ingestor.venue}-{random.getrandbits(48):012x}")
        self.persistent = client_id is not None
        self.gap_check_s = gap_check_s
        self.subscribed = subscribed if subscribed is not None else asyncio.Event()
        self.client: MqttClient | None = None  # while connected and subscribed
        # What the page's connection indicator tells (leaderboard.app.LeaderboardService.
        # link_status), noted only after a batch is stored (D384): the time, by its own clock,
        # of the latest message the ingest accepted (verified, not a duplicate, not retained:
        # a retained message is an old one), in time.time() terms and never later than its
        # arrival, so an old message (a replay, a resend) never looks fresh; and every table
        # a verified message came from, retained or not.
        self.last_message_at: float | None = None  # time.time()
        self.tables_seen: set[str] = set()
        self._alongside = alongside
        self._session = MqttSession(settings, client_id=self.client_id,
                                    clean_session=not self.persistent, rng=rng)

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, subscribe and ingest until ``stop`` is set, reconnecting after a loss."""
        ingestor = self.ingestor
        await ingestor.start_workers()
        try:
            await self._session.run(lambda client: self._connection(client, stop), stop)
        finally:
            await ingestor.drain(self.settings.timeout_s)
            await asyncio.to_thread(ingestor.close)

    async def _connection(self, client: MqttClient, stop: asyncio.Event) -> None:
        try:
            await client.subscribe_all(self.filters, qos=1)
            self._session.backoff.reset()
            self.client = client
            self.subscribed.set()
            _log.info("ingest_subscribed", broker=client.where, filters=list(self.filters),
                      client_id=self.client_id, persistent=self.persistent)
            async with asyncio.TaskGroup() as tasks:
                beside = [tasks.create_task(self._gaps(stop), name="ingest.gap_check")]
                if self._alongside is not None:
                    beside.append(tasks.create_task(self._alongside(client, stop),
                                                    name="ingest.alongside"))
                await self._receive(client, stop)
                for task in beside:
                    task.cancel()
        finally:
            self.client = None
            self.subscribed.clear()

    async def _receive(self, client: MqttClient, stop: asyncio.Event) -> None:
        """Batches of what has arrived, stored one at a time in arrival order.

        A batch's first message is awaited through the client (which notices a lost
        connection); the rest are taken as they are (``take_nowait``), not through a task
        and a wait per message.

        With PostgreSQL, or verification in worker processes, in a pipeline of two: a batch
        is verified while the one before it is stored (its transaction then mostly waits: for
        the database server, or for the other instance's lock on a table's progress). With
        SQLite and verification here, one after the other: SQLite works in this process, and
        two busy threads only slow each other down (measured: bench/README.md).
        """
        ingestor = self.ingestor
        pipelined = ingestor.pipelined
        storing: asyncio.Task[None] | None = None
        try:
            while True:
                first = await _next_or_stop(client, stop)
                if first is None:
                    return
                received = [first, *client.take_nowait(ingestor.batch_max - 1)]
                items = await ingestor.screen_received(
                    [(m.topic, m.payload) for m in received])
                if storing is not None:
                    await asyncio.shield(storing)
                    storing = None
                if items is None:
                    continue
                # A task, shielded: a transaction under way is finished (its thread cannot
                # be stopped) and accounted for even if this loop is cancelled meanwhile.
                storing = asyncio.create_task(self._store(received, items, stop),
                                              name="ingest.store")
                if not pipelined:
                    await asyncio.shield(storing)
                    storing = None
        finally:
            if storing is not None:  # what was received is stored before the loop ends
                await storing

    async def _store(self, received: list[Received], items: list[Item],
                     stop: asyncio.Event) -> None:
        """Store a screened batch, then note what it says about the tables' link."""
        results = await self.ingestor.store_received(items, stop=stop)
        self._heard(received, items, results)

    def _heard(self, received: list[Received], items: list[Item],
               results: list[IngestResult]) -> None:
        """Note the tables of the verified messages and the time of the freshest accepted
        live one (see ``last_message_at``)."""
        arrived = time.time()
        now = self.ingestor.now()
        for item, result in zip(items, results, strict=False):
            envelope = item.envelope
            if envelope is None or result.outcome not in _VERIFIED:
                continue
            self.tables_seen.add(envelope.table)
            if result.outcome not in _ACCEPTED or received[item.index].retain:
                continue
            age = max(0.0, (now - envelope.wall).total_seconds())
            sent = arrived - age
            if self.last_message_at is None or sent > self.last_message_at:
                self.last_message_at = sent

    async def _gaps(self, stop: asyncio.Event) -> None:
        while not await stopped_within(stop, self.gap_check_s):
            try:
                await self.ingestor.check_gaps()
            except Exception as exc:  # the database away: try again at the next tick
                if connection_lost(exc):  # a failover: one line, a warning (D388)
                    _log.warning("ingest_gap_check_failed", database_away=True,
                                 error=one_line(exc)[:200])
                else:
                    _log.error("ingest_gap_check_failed", error=repr(exc))
