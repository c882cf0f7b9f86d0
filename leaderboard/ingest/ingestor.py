"""The Ingestor: every table's signed messages, screened, verified, stored once, projected.

It ties the parts together: screening (leaderboard.ingest.screening), verification in worker
processes (verifying), storage in one transaction per batch (storing), gaps and resend
requests (gaps), counters (results); ``run`` receives over MQTT (receiving.IngestLink).
Storage runs in a thread, one batch at a time (a lock); resend requests go out after the
commit, through the injected ``resend(table, from_seq)``. A batch whose transaction lost the
database connection (a failover) is stored again, on a new connection, until it is stored
or the receive loop stops: what the ingest received is not dropped (D389). After
the engine has dropped a connection (a failover, a restart of the database), the next gap
check asks every enrolled table that has sent something to resend from its highest stored
seq + 1: a tail the database lost (an asynchronous standby's missing last commits) comes
back even if the table sends nothing more (the tail check, D391).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

import structlog
from sqlalchemy import Engine, event, select

from leaderboard.ingest.gaps import GapTracker
from leaderboard.ingest.receiving import IngestLink
from leaderboard.ingest.results import Batch, IngestCounters, IngestResult, Item, Tally
from leaderboard.ingest.screening import Screener
from leaderboard.ingest.storing import DatabaseLost, Store
from leaderboard.ingest.verifying import VerifierPool
from leaderboard.models import TableProgress, TableRecord
from wire.messages import CommandRejected
from wire.mqtt import MqttSettings, stopped_within
from wire.signing import KeyRing
from wire.topics import DEFAULT_ROOT, TableTopics

__all__ = ["Ingestor", "OnChange", "Resend"]

Resend = Callable[[str, int], Awaitable[None]]
OnChange = Callable[[str], None]

_log = structlog.get_logger("leaderboard.ingest")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Ingestor:
    """Verifies, stores and projects the tables' messages (see leaderboard.ingest)."""

    def __init__(
        self,
        engine: Engine,
        keyring: KeyRing | None = None,
        *,
        venue: str,
        resend: Resend | None = None,
        clock: Callable[[], datetime] = _utc_now,
        on_change: OnChange | None = None,
        topic_root: str = DEFAULT_ROOT,
        window: int = 100_000,
        resend_after_s: float = 2.0,
        resend_interval_s: float = 5.0,
        key_refresh_s: float = 2.0,
        batch_max: int = 500,
        verify_workers: int = 0,
        store_retry_s: tuple[float, float] = (0.1, 1.0),
    ) -> None:
        TableTopics(venue, "x", topic_root)  # validates venue and root
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if resend_after_s < 0 or resend_interval_s < 0 or key_refresh_s < 0:
            raise ValueError("resend_after_s, resend_interval_s and key_refresh_s must be >= 0")
        if batch_max < 1:
            raise ValueError(f"batch_max must be at least 1, got {batch_max}")
        if verify_workers < 0:
            raise ValueError(f"verify_workers must be >= 0, got {verify_workers}")
        if engine.dialect.name not in ("postgresql", "sqlite"):
            raise ValueError(f"ingest supports PostgreSQL and SQLite, not {engine.dialect.name}")
        self.engine = engine
        self.venue = venue
        self.topic_root = topic_root
        self.window = window
        self.batch_max = batch_max
        self.verify_workers = verify_workers
        # After a lost database connection: the first wait before storing again, the longest.
        self.store_retry_s = store_retry_s
        self._resend = resend
        self._clock = clock
        self._on_change = on_change
        self._lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()
        self._tally = Tally()
        self._screener = Screener(engine, keyring, venue=venue, topic_root=topic_root,
                                  clock=clock, key_refresh=timedelta(seconds=key_refresh_s))
        self._pool = VerifierPool(verify_workers)
        self._gaps = GapTracker(resend_after=timedelta(seconds=resend_after_s),
                                resend_interval=timedelta(seconds=resend_interval_s))
        self._store = Store(engine, window=window, clock=clock, gaps=self._gaps,
                            tally=self._tally)
        # Set (from any thread) when the engine drops a connection: the tail check is due.
        self._tails_due = False
        self._dropped = self._connection_dropped  # one bound method, to remove it again
        event.listen(engine, "invalidate", self._dropped)

    @property
    def resend_after(self) -> timedelta:
        """How long a gap stays open before the table is asked to resend."""
        return self._gaps.resend_after

    @property
    def resend_interval(self) -> timedelta:
        """The least time between two resend requests to one table."""
        return self._gaps.resend_interval

    # --- the public surface --------------------------------------------------------------------

    async def refresh_keys(self) -> int:
        """Reload the enrolled tables' keys (call after enrolling a table); returns how many."""
        async with self._lock:
            return await asyncio.to_thread(self._screener.load_keys)

    async def handle(self, topic: str, payload: bytes) -> IngestResult:
        """Ingest one received message (verify, store, project, ask for resends)."""
        return (await self.handle_batch([(topic, payload)]))[0]

    async def handle_batch(self, messages: Sequence[tuple[str, bytes]]) -> list[IngestResult]:
        """Ingest several messages in one transaction (as if handled one by one, in order)."""
        if not messages:
            return []
        async with self._lock:
            batch = await asyncio.to_thread(self._process, messages)
        self._account(batch)
        await self._request_resends(batch.resends)
        return batch.results

    @property
    def pipelined(self) -> bool:
        """Whether the receive loop screens a batch while the one before is being stored:
        with verification workers, or a database server; SQLite works in this process, and
        two busy threads there only slow each other down (bench/README.md)."""
        return self.verify_workers > 0 or self.engine.dialect.name != "sqlite"

    async def screen_received(self, messages: Sequence[tuple[str, bytes]]) -> list[Item] | None:
        """The first stage of handle_batch for the receive loop: verification, which may run
        while the previous batch is being stored. None if it failed (logged and counted;
        the gap is asked for again)."""
        try:
            return await asyncio.to_thread(self._screen_all, messages)
        except Exception:
            self._batch_failed(len(messages))
            return None

    async def store_received(self, items: list[Item], *,
                             stop: asyncio.Event | None = None) -> list[IngestResult]:
        """The second stage: resend requests go out in the background. A batch that lost
        the database connection is stored again (waits from ``store_retry_s``) until it is
        stored or ``stop`` is set; another failure is logged and counted, never the end of
        the loop, and what was lost then is asked for again once the gap shows. Each item's
        result, in order (none when the batch failed)."""
        lost_at: float | None = None
        delay, longest = self.store_retry_s
        attempts = 0
        while True:
            try:
                async with self._lock:
                    batch = await asyncio.to_thread(self._store.store_screened, items)
                break
            except DatabaseLost as exc:
                attempts += 1
                if lost_at is None:
                    lost_at = time.monotonic()
                    _log.warning("ingest_database_lost", size=len(items),
                                 error=str(exc).splitlines()[0][:200])
                if await stopped_within(stop or asyncio.Event(), delay):
                    self._batch_failed(len(items))  # the service stops: the gap shows later
                    return []
                delay = min(longest, delay * 2)
            except Exception:
                self._batch_failed(len(items))
                return []
        if lost_at is not None:
            _log.info("ingest_database_back", size=len(items), attempts=attempts + 1,
                      seconds=round(time.monotonic() - lost_at, 3))
        self._account(batch)
        if batch.resends:
            task = asyncio.create_task(self._request_resends(batch.resends),
                                       name="ingest.resend")
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return batch.results

    def now(self) -> datetime:
        """The ingest's clock (the receive loop measures a message's age against it)."""
        return self._clock()

    async def check_gaps(self) -> list[tuple[str, int]]:
        """Ask for what is still missing (gaps past ``resend_after_s``), and, after a dropped
        database connection, every table's tail; returns the requests."""
        async with self._lock:
            resends = await asyncio.to_thread(lambda: self._gaps.check(self.engine,
                                                                       self._clock()))
            if self._tails_due:
                self._tails_due = False
                try:
                    tails = await asyncio.to_thread(self._tails)
                except BaseException:
                    self._tails_due = True
                    raise
                asked = {table for table, _ in resends}
                resends.extend(t for t in tails if t[0] not in asked)
                _log.info("ingest_tail_check", tables=len(tails))
        await self._request_resends(resends)
        return resends

    async def start_workers(self) -> None:
        """Start the verification worker processes now, if there are to be any."""
        if self.verify_workers:
            await asyncio.to_thread(self._pool.start)

    async def drain(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) for the resend requests still going out."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout_s)

    def close(self) -> None:
        """Stop the verification worker processes, if any (run() does it when it ends)."""
        self._pool.close()
        if event.contains(self.engine, "invalidate", self._dropped):
            event.remove(self.engine, "invalidate", self._dropped)

    def counters(self) -> IngestCounters:
        """A snapshot of the counters."""
        return self._tally.snapshot()

    async def run(
        self,
        settings: MqttSettings,
        *,
        shared_group: str | None = None,
        client_id: str | None = None,
        stop: asyncio.Event | None = None,
        ready: asyncio.Event | None = None,
        gap_check_s: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        """Subscribe to every table of the venue and ingest until ``stop`` is set.

        The loop is IngestLink's (the service's is the same one, see leaderboard.app).
        ``shared_group`` subscribes as ``$share/{group}/...`` so that several instances share
        the load (the broker must support shared subscriptions: Mosquitto does, the embedded
        amqtt 0.12.1 broker grants them but delivers nothing). ``client_id`` makes the session
        persistent (the broker queues while this instance is away); without it a clean session
        with a random id is used, and gaps are filled by resend requests. Reconnects with
        jittered exponential backoff; ``ready`` is set while subscribed.
        """
        link = IngestLink(self, settings, shared_group=shared_group, client_id=client_id,
                          gap_check_s=gap_check_s, rng=rng, subscribed=ready)
        await link.run(stop if stop is not None else asyncio.Event())

    # --- in a thread, one batch at a time --------------------------------------------------------

    def _connection_dropped(self, _dbapi_connection: object, _record: object,
                            _exception: object) -> None:
        self._tails_due = True

    def _tails(self) -> list[tuple[str, int]]:
        """(table, highest stored seq + 1) for every enrolled, active table of the venue that
        has sent something: what the tail check asks for."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(TableProgress.table_id, TableProgress.highest_seq)
                .join(TableRecord, TableRecord.table_id == TableProgress.table_id)
                .where(TableRecord.venue == self.venue, TableRecord.active,
                       TableProgress.highest_seq > 0)
                .order_by(TableProgress.table_id)).all()
        return [(row.table_id, int(row.highest_seq) + 1) for row in rows]

    def _process(self, messages: Sequence[tuple[str, bytes]]) -> Batch:
        return self._store.store_screened(self._screen_all(messages))

    def _screen_all(self, messages: Sequence[tuple[str, bytes]]) -> list[Item]:
        """Verification and every check that needs no database (the first stage)."""
        screener = self._screener
        if screener.keys_loaded_at is None:
            screener.load_keys()
        items = [Item(index=i, topic=topic, payload=payload,
                      sha256=hashlib.sha256(payload).hexdigest())
                 for i, (topic, payload) in enumerate(messages)]
        verified = self._pool.verify([i.payload for i in items], screener.keys,
                                     screener.keys_version)
        for item, checked in zip(items, verified, strict=True):
            screener.screen(item, checked)
        return items

    # --- after a commit --------------------------------------------------------------------------

    def _batch_failed(self, size: int) -> None:
        self._tally.counts["received"] += size
        self._tally.counts["failed"] += size
        _log.exception("ingest_batch_failed", size=size)

    def _account(self, batch: Batch) -> None:
        counts, reasons = self._tally.counts, self._tally.reasons
        counts["batches"] += 1
        for result in batch.results:
            counts["received"] += 1
            counts[result.outcome] += 1
            if result.outcome == "rejected" and result.reason is not None:
                reasons[result.reason] += 1
            _log_result(result)
        for item, refused in batch.refused:
            reasons[refused.reason] += 1
            _log.warning("ingest_projection_refused", reason=refused.reason, table=refused.table,
                         seq=refused.seq, type=refused.type, detail=refused.detail,
                         topic=item.topic)
        for item, note in batch.notes:
            _log.info("ingest_note", note=note, topic=item.topic)
        if self._on_change is not None:
            for kind in batch.changes:
                try:
                    self._on_change(kind)
                except Exception as exc:  # the page's problem must not stop ingest
                    _log.error("ingest_on_change_failed", kind=kind, error=repr(exc))

    async def _request_resends(self, resends: Iterable[tuple[str, int]]) -> None:
        await asyncio.gather(*(self._request_resend(t, s) for t, s in resends))

    async def _request_resend(self, table: str, from_seq: int) -> None:
        if self._resend is None:
            _log.warning("ingest_gap_no_resender", table=table, from_seq=from_seq)
            return
        self._tally.counts["resend_requests"] += 1
        _log.info("ingest_resend_requested", table=table, from_seq=from_seq)
        try:
            await self._resend(table, from_seq)
        except Exception as exc:  # asked again after resend_interval_s
            self._tally.counts["resend_failures"] += 1
            _log.error("ingest_resend_failed", table=table, from_seq=from_seq, error=repr(exc))


def _log_result(result: IngestResult) -> None:
    if result.outcome == "rejected":
        _log.warning("ingest_rejected", reason=result.reason, table=result.table,
                     seq=result.seq, type=result.type, detail=result.detail)
    elif result.outcome == "failed":
        _log.error("ingest_store_failed", table=result.table, seq=result.seq,
                   detail=result.detail)
    elif result.outcome == "duplicate":
        _log.debug("ingest_duplicate", table=result.table, seq=result.seq)
    elif result.outcome == "notice" and result.type == CommandRejected.TYPE:
        _log.warning("ingest_table_rejected_a_command", table=result.table,
                     detail=result.detail)
