"""Ingest: every table's signed messages, verified, stored once, projected (docs/ingest.md).

    ingestor = Ingestor(engine, venue="casino-1", resend=MqttResender(settings, key,
                        venue="casino-1"), on_change=page.changed)
    await ingestor.run(settings, shared_group="leaderboard", stop=stop)   # MQTT
    await ingestor.handle(topic, payload)                                 # or one message

A message is verified against the keys of the tables enrolled in the database
(``TableRecord``; the keyring is reloaded by ``refresh_keys()`` and, at most every
``key_refresh_s``, when an unknown sender appears), then stored in ``messages`` with
``INSERT ... ON CONFLICT DO NOTHING`` on its ``(table, seq)`` key, and applied to the scores,
hands and entries (leaderboard.projections) in the SAME transaction. A copy of a stored
message is a harmless duplicate; a different message under a stored ``(table, seq)`` is a
replay and is refused. Each table's progress (contiguous seq, highest seen, gaps) is kept in
``table_progress``; a gap that stays open for ``resend_after_s`` makes the ingest ask the
table, through the injected ``resend(table, from_seq)``, to publish again from the first
missing seq, at most once per ``resend_interval_s`` per table (across instances: the time of
the last request is in the database). Every refusal is logged, counted by reason and kept as
a ``Rejection`` row. Several instances may share the load on an MQTT shared subscription:
the unique key makes storage exactly-once whoever receives a message.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from typing import Any, Final, Literal

import aiomqtt
import structlog
from sqlalchemy import Connection, Engine, bindparam, select, tuple_, update
from sqlalchemy.exc import SQLAlchemyError

from controller.mqtt_link import MqttSettings, suback_refused
from game.errors import ConfigError
from leaderboard.models import Message, TableProgress, TableRecord
from leaderboard.projections import (
    MESSAGES,
    PROGRESS,
    PROJECTION_REASONS,
    REJECTIONS,
    Projected,
    Refused,
    as_utc,
    body_text,
    insert_new,
    later_messages_query,
    project,
    project_bulk,
    statements,
)
from runtime.backoff import Backoff
from wire.envelope import (
    REJECTION_REASONS,
    Envelope,
    EnvelopeError,
    UnknownSigner,
    canonical_json,
    seal,
    verify_envelope,
)
from wire.signing import KeyFormatError, KeyRing, Signer, parse_public_key
from wire.topics import (
    DEFAULT_ROOT,
    ID_PATTERN,
    SHARED_PREFIX,
    TableTopics,
    parse_table_topic,
)

__all__ = [
    "INGEST_REASONS",
    "INGEST_SUFFIXES",
    "NOTICE_TYPES",
    "OUT_OF_WINDOW",
    "REPLAYED_SEQ",
    "STORE_ERROR",
    "TABLE_INACTIVE",
    "WRONG_TOPIC",
    "WRONG_VENUE",
    "Alongside",
    "IngestCounters",
    "IngestLink",
    "IngestResult",
    "Ingestor",
    "MqttResender",
    "Resend",
    "stopped_within",
    "subscription_filters",
]

Resend = Callable[[str, int], Awaitable[None]]
OnChange = Callable[[str], None]
Clock = Callable[[], datetime]
Outcome = Literal["stored", "duplicate", "rejected", "notice", "ignored", "failed"]

# Rejection reasons of the ingest itself, beyond the envelope's (wire.envelope) and the
# projections' (leaderboard.projections).
WRONG_TOPIC: Final = "wrong_topic"  # a table's message on another table's topic
WRONG_VENUE: Final = "wrong_venue"  # an envelope of another venue
TABLE_INACTIVE: Final = "table_inactive"  # enrolled, but marked inactive
OUT_OF_WINDOW: Final = "out_of_window"  # too far ahead, or seq 0 on a sequenced type
REPLAYED_SEQ: Final = "replayed_seq"  # a stored (table, seq) with different content
STORE_ERROR: Final = "store_error"  # the database refused the message (it is asked again)
INGEST_REASONS: Final = (
    *REJECTION_REASONS, WRONG_TOPIC, WRONG_VENUE, TABLE_INACTIVE, OUT_OF_WINDOW, REPLAYED_SEQ,
    *PROJECTION_REASONS, STORE_ERROR,
)
# seq 0: unsequenced notices (docs/mqtt.md); never stored by seq, never a gap.
NOTICE_TYPES: Final = frozenset({"availability", "command_rejected"})
INGEST_SUFFIXES: Final = ("events", "scores", "status")
_MAX_DETAIL: Final = 2_000
_MAX_TOPIC: Final = 256
_MAX_TOPICS: Final = 4_096  # topics whose parse is remembered (3 per table)
_UNPARSED: Final = object()

_log = structlog.get_logger("leaderboard.ingest")

_LOCK_PROGRESS: Final = (
    select(TableProgress.table_id, TableProgress.contiguous_seq, TableProgress.highest_seq,
           TableProgress.gaps, TableProgress.resend_requested_at)
    .where(TableProgress.table_id.in_(bindparam("tables", expanding=True)))
    .order_by(TableProgress.table_id)
    .with_for_update()
)
_SAVE_PROGRESS: Final = (
    update(PROGRESS).where(PROGRESS.c.table_id == bindparam("table"))
    .values(contiguous_seq=bindparam("contiguous"), highest_seq=bindparam("highest"),
            gaps=bindparam("gaps"), resend_requested_at=bindparam("requested_at"))
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    """What happened to one received message.

    ``outcome``: stored (new), duplicate (a copy of a stored message), rejected (not stored,
    ``reason`` says why), notice (seq 0: availability, command rejections), ignored (not a
    table topic of this venue), failed (the database failed; the table will be asked again).
    A stored message whose projection was refused has ``reason`` set too.
    """

    outcome: Outcome
    table: str | None = None
    seq: int | None = None
    type: str | None = None
    reason: str | None = None
    detail: str = ""
    changes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestCounters:
    """A snapshot of the ingest's counters (since this instance started)."""

    received: int
    stored: int
    duplicates: int
    rejected: int
    notices: int
    ignored: int
    failed: int
    rejections: Mapping[str, int]
    resend_requests: int
    resend_failures: int
    batches: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "received": self.received, "stored": self.stored, "duplicates": self.duplicates,
            "rejected": self.rejected, "notices": self.notices, "ignored": self.ignored,
            "failed": self.failed, "rejections": dict(sorted(self.rejections.items())),
            "resend_requests": self.resend_requests, "resend_failures": self.resend_failures,
            "batches": self.batches,
        }


# --- per-table progress ----------------------------------------------------------------------


@dataclass(slots=True)
class _Progress:
    """One table's row of table_progress while a transaction holds it."""

    table: str
    contiguous: int
    highest: int
    gaps: list[list[int]]  # [first, last] missing, inclusive, ascending, all above contiguous
    requested_at: datetime | None
    dirty: bool = False

    def add(self, seq: int) -> bool:
        """Record a newly stored seq; False if it was neither new nor in a gap (inconsistent)."""
        self.dirty = True
        consistent = True
        if seq > self.highest:
            if seq > self.highest + 1:
                self.gaps.append([self.highest + 1, seq - 1])
            self.highest = seq
        else:
            index = bisect.bisect_right([first for first, _ in self.gaps], seq) - 1
            if index < 0 or self.gaps[index][1] < seq:
                consistent = False
            else:
                first, last = self.gaps.pop(index)
                pieces = [[a, b] for a, b in ((first, seq - 1), (seq + 1, last)) if a <= b]
                self.gaps[index:index] = pieces
        self.contiguous = self.gaps[0][0] - 1 if self.gaps else self.highest
        return consistent


# --- one batch -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    index: int
    topic: str
    payload: bytes
    sha256: str
    envelope: Envelope | None = None
    body_text: str | None = None  # the body's JSON text, cut from the payload
    claimed: str | None = None  # the table the message names, for rejections
    result: IngestResult | None = None
    projected: Projected | None = None


@dataclass(slots=True)
class _Batch:
    results: list[IngestResult]
    resends: list[tuple[str, int]] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    refused: list[tuple[_Item, Refused]] = field(default_factory=list)
    notes: list[tuple[_Item, str]] = field(default_factory=list)


def _sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def _clean(text: str, limit: int) -> str:
    text = text.replace("\x00", "\\x00")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _claimed_sender(payload: bytes) -> str | None:
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    table = value.get("table") if isinstance(value, dict) else None
    return table if isinstance(table, str) and ID_PATTERN.fullmatch(table) else None


class Ingestor:
    """Verifies, stores and projects the tables' messages (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        keyring: KeyRing | None = None,
        *,
        venue: str,
        resend: Resend | None = None,
        clock: Clock = _utc_now,
        on_change: OnChange | None = None,
        topic_root: str = DEFAULT_ROOT,
        window: int = 100_000,
        resend_after_s: float = 2.0,
        resend_interval_s: float = 5.0,
        key_refresh_s: float = 2.0,
        batch_max: int = 500,
        verify_workers: int = 0,
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
        self.resend_after = timedelta(seconds=resend_after_s)
        self.resend_interval = timedelta(seconds=resend_interval_s)
        self.key_refresh = timedelta(seconds=key_refresh_s)
        self.batch_max = batch_max
        self._resend = resend
        self._clock = clock
        self._on_change = on_change
        self._fixed_keys = keyring is not None
        self._keys = keyring if keyring is not None else KeyRing()
        self._inactive: frozenset[str] = frozenset()
        self._keys_loaded_at: datetime | None = None
        self._gap_since: dict[str, tuple[int, datetime]] = {}  # table -> (contiguous, since)
        self._behind: dict[str, int] = {}  # table -> a seq it has published beyond highest
        self._lock = asyncio.Lock()
        self.verify_workers = verify_workers
        self._pool: ProcessPoolExecutor | None = None
        self._keys_version = 0
        self._background: set[asyncio.Task[None]] = set()
        self._counts: Counter[str] = Counter()
        self._reasons: Counter[str] = Counter()
        self._topics: dict[str, Any] = {}  # topic -> parse_table_topic(topic), a few dozen

    # --- keys ----------------------------------------------------------------------------------

    async def refresh_keys(self) -> int:
        """Reload the enrolled tables' keys (call after enrolling a table); returns how many."""
        async with self._lock:
            return await asyncio.to_thread(self._load_keys)

    def _load_keys(self) -> int:
        self._keys_loaded_at = self._clock()
        self._keys_version += 1
        if self._fixed_keys:
            return len(self._keys)
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(TableRecord.table_id, TableRecord.public_key, TableRecord.active)
                .where(TableRecord.venue == self.venue)
            ).all()
        ring, inactive = KeyRing(), set()
        for row in rows:
            if not row.active:
                inactive.add(row.table_id)
                continue
            try:
                ring.add(parse_public_key(row.table_id, row.public_key))
            except KeyFormatError as exc:
                _log.error("ingest_enrolled_key_invalid", table=row.table_id, error=str(exc))
        self._keys, self._inactive = ring, frozenset(inactive)
        return len(ring)

    def _verify(self, payload: bytes) -> Envelope:
        try:
            return verify_envelope(payload, self._keys)
        except UnknownSigner:
            loaded = self._keys_loaded_at
            if loaded is not None and self._clock() - loaded < self.key_refresh:
                raise
        self._load_keys()  # someone new: perhaps enrolled since the keys were loaded
        return verify_envelope(payload, self._keys)

    # --- the public surface --------------------------------------------------------------------

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

    async def _screen_received(self, messages: Sequence[tuple[str, bytes]]
                               ) -> list[_Item] | None:
        """The first stage of handle_batch for the receive loop (IngestLink): verification,
        which may run while the previous batch is being stored. None if it failed (logged
        and counted; the gap is asked for again)."""
        try:
            return await asyncio.to_thread(self._screen_all, messages)
        except Exception:
            self._batch_failed(len(messages))
            return None

    async def _store_received(self, items: list[_Item]) -> None:
        """The second stage: resend requests go out in the background, and a failure (the
        database unreachable, say) is logged and counted, never the end of the loop; what
        was lost then is asked for again once the gap shows."""
        try:
            async with self._lock:
                batch = await asyncio.to_thread(self._store_screened, items)
        except Exception:
            self._batch_failed(len(items))
            return
        self._account(batch)
        if batch.resends:
            task = asyncio.create_task(self._request_resends(batch.resends))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _batch_failed(self, size: int) -> None:
        self._counts["received"] += size
        self._counts["failed"] += size
        _log.exception("ingest_batch_failed", size=size)

    async def check_gaps(self) -> list[tuple[str, int]]:
        """Ask for what is still missing (gaps past ``resend_after_s``); returns the requests."""
        async with self._lock:
            resends = await asyncio.to_thread(self._check_gaps)
        await self._request_resends(resends)
        return resends

    async def _drain(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) for the resend requests still going out."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout_s)

    def close(self) -> None:
        """Stop the verification worker processes, if any (run() does it when it ends)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def counters(self) -> IngestCounters:
        """A snapshot of the counters."""
        c = self._counts
        return IngestCounters(
            received=c["received"], stored=c["stored"], duplicates=c["duplicate"],
            rejected=c["rejected"], notices=c["notice"], ignored=c["ignored"],
            failed=c["failed"], rejections=dict(self._reasons),
            resend_requests=c["resend_requests"], resend_failures=c["resend_failures"],
            batches=c["batches"],
        )

    # --- MQTT ----------------------------------------------------------------------------------

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

    # --- after a commit --------------------------------------------------------------------------

    def _account(self, batch: _Batch) -> None:
        self._counts["batches"] += 1
        for result in batch.results:
            self._counts["received"] += 1
            self._counts[result.outcome] += 1
            if result.outcome == "rejected" and result.reason is not None:
                self._reasons[result.reason] += 1
            self._log_result(result)
        for item, refused in batch.refused:
            self._reasons[refused.reason] += 1
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

    @staticmethod
    def _log_result(result: IngestResult) -> None:
        if result.outcome == "rejected":
            _log.warning("ingest_rejected", reason=result.reason, table=result.table,
                         seq=result.seq, type=result.type, detail=result.detail)
        elif result.outcome == "failed":
            _log.error("ingest_store_failed", table=result.table, seq=result.seq,
                       detail=result.detail)
        elif result.outcome == "duplicate":
            _log.debug("ingest_duplicate", table=result.table, seq=result.seq)
        elif result.outcome == "notice" and result.type == "command_rejected":
            _log.warning("ingest_table_rejected_a_command", table=result.table,
                         detail=result.detail)

    async def _request_resends(self, resends: Iterable[tuple[str, int]]) -> None:
        await asyncio.gather(*(self._request_resend(t, s) for t, s in resends))

    async def _request_resend(self, table: str, from_seq: int) -> None:
        if self._resend is None:
            _log.warning("ingest_gap_no_resender", table=table, from_seq=from_seq)
            return
        self._counts["resend_requests"] += 1
        _log.info("ingest_resend_requested", table=table, from_seq=from_seq)
        try:
            await self._resend(table, from_seq)
        except Exception as exc:  # asked again after resend_interval_s
            self._counts["resend_failures"] += 1
            _log.error("ingest_resend_failed", table=table, from_seq=from_seq, error=repr(exc))

    # --- the worker (runs in a thread, one batch at a time) ------------------------------------

    def _process(self, messages: Sequence[tuple[str, bytes]]) -> _Batch:
        return self._store_screened(self._screen_all(messages))

    def _screen_all(self, messages: Sequence[tuple[str, bytes]]) -> list[_Item]:
        """Verification and every check that needs no database (the first stage)."""
        if self._keys_loaded_at is None:
            self._load_keys()
        items = [_Item(index=i, topic=topic, payload=payload, sha256=_sha256(payload))
                 for i, (topic, payload) in enumerate(messages)]
        verified = self._verify_in_workers([i.payload for i in items])
        for item, checked in zip(items, verified, strict=True):
            self._screen(item, checked)
        return items

    def _store_screened(self, items: list[_Item]) -> _Batch:
        """Store a screened batch in one transaction (the second stage), or, if that fails,
        message by message."""
        screened = [(i.result, i.envelope, i.claimed) for i in items]
        try:
            return self._store(items)
        except Exception as exc:  # deadlock, busy database, a bug: retry each on its own
            _log.warning("ingest_batch_retry_one_by_one", error=repr(exc), size=len(items))
        results: list[IngestResult] = []
        merged = _Batch(results=results)
        for item, (result, envelope, claimed) in zip(items, screened, strict=True):
            single = _Item(index=0, topic=item.topic, payload=item.payload, sha256=item.sha256,
                           envelope=envelope, body_text=item.body_text, claimed=claimed,
                           result=result)
            try:
                batch = self._store([single])
            except Exception as exc:
                _log.exception("ingest_store_error", table=claimed, topic=item.topic)
                results.append(self._store_failed(single, exc))
                continue
            results.extend(batch.results)
            merged.resends.extend(batch.resends)
            merged.changes.extend(c for c in batch.changes if c not in merged.changes)
            merged.refused.extend(batch.refused)
            merged.notes.extend(batch.notes)
        return merged

    def _verify_in_workers(self, payloads: list[bytes]) -> list[_Verified]:
        """Verify in the worker processes (None where it is left to _screen)."""
        workers = self.verify_workers
        if workers == 0 or len(payloads) < 4 * workers:
            return [None] * len(payloads)
        keys = tuple((key.key_id, key.base64) for key in self._keys)
        size = -(-len(payloads) // workers)
        chunks = [payloads[i:i + size] for i in range(0, len(payloads), size)]
        try:
            pool = self._start_pool()
            futures = [pool.submit(verify_chunk, self._keys_version, keys, chunk)
                       for chunk in chunks]
            return [checked for future in futures for checked in future.result()]
        except Exception:  # a worker died: verify here, and start new workers next time
            _log.exception("ingest_verify_workers_failed", workers=workers)
            self.close()
            return [None] * len(payloads)

    def _start_pool(self) -> ProcessPoolExecutor:
        """The verification processes, started (and each made to import its code) once."""
        if self._pool is None:
            pool = ProcessPoolExecutor(self.verify_workers, mp_context=get_context("spawn"))
            for future in [pool.submit(verify_chunk, 0, (), ())
                           for _ in range(self.verify_workers)]:
                future.result()
            self._pool = pool
        return self._pool

    def _screen(self, item: _Item, checked: _Verified = None) -> None:
        """Checks that need no database: topic, envelope, venue, seq 0."""
        where = self._topics.get(item.topic, _UNPARSED)
        if where is _UNPARSED:
            where = parse_table_topic(item.topic, self.topic_root)
            if len(self._topics) >= _MAX_TOPICS:
                self._topics.clear()
            self._topics[item.topic] = where
        if where is None or where.venue != self.venue or where.suffix not in INGEST_SUFFIXES:
            item.result = IngestResult(outcome="ignored", detail=_clean(item.topic, 200))
            return
        item.claimed = where.table
        try:
            if isinstance(checked, Envelope):
                envelope = checked
            elif checked is None or checked[0] == UnknownSigner.reason:
                envelope = self._verify(item.payload)  # here: the keys may need a reload
            else:
                raise _Refusal(*checked)
        except EnvelopeError as exc:
            reason = exc.reason
            if isinstance(exc, UnknownSigner):
                item.claimed = _claimed_sender(item.payload) or item.claimed
                if item.claimed in self._inactive:
                    reason = TABLE_INACTIVE
            item.result = IngestResult(outcome="rejected", table=item.claimed, reason=reason,
                                       detail=_clean(exc.detail, _MAX_DETAIL))
            return
        item.claimed = envelope.table
        base = _Base(envelope)
        if envelope.table != where.table:
            item.result = IngestResult(
                outcome="rejected", reason=WRONG_TOPIC, **base.fields(),
                detail=f"{envelope.table}'s message seq {envelope.seq} arrived on "
                       f"{where.table}'s topic {_clean(item.topic, 200)}")
        elif envelope.venue != self.venue:
            item.result = IngestResult(
                outcome="rejected", reason=WRONG_VENUE, **base.fields(),
                detail=f"venue {envelope.venue!r}, this ingest is {self.venue!r}")
        elif envelope.seq == 0:
            if envelope.type in NOTICE_TYPES:
                item.envelope = envelope
                item.result = IngestResult(outcome="notice", **base.fields(),
                                           detail=_clean(_notice_detail(envelope), 500))
            else:
                item.result = IngestResult(
                    outcome="rejected", reason=OUT_OF_WINDOW, **base.fields(),
                    detail=f"seq 0 is for unsequenced notices, not {envelope.type}")
        else:
            item.envelope = envelope
            item.body_text = body_text(envelope, item.payload)

    def _store(self, items: list[_Item]) -> _Batch:
        """One transaction: progress rows, messages, projections, rejections."""
        now = self._clock()
        batch = _Batch(results=[])
        candidates = [i for i in items if i.result is None and i.envelope is not None]
        notices = [i for i in items if i.result is not None and i.result.outcome == "notice"]
        if not candidates and not notices and not any(
            i.result is not None and i.result.outcome == "rejected" for i in items
        ):
            batch.results = [i.result or IngestResult(outcome="failed") for i in items]
            return batch
        with self.engine.begin() as connection:
            tables = sorted({i.claimed for i in (*candidates, *notices) if i.claimed})
            progress = self._lock_progress(connection, tables)
            for item in notices:
                self._notice(item, progress[item.claimed or ""])
            fresh = self._window(candidates, progress)
            inserted = self._insert_messages(connection, fresh, now)
            self._compare_existing(connection, fresh, inserted)
            self._apply(connection, fresh, progress, batch)
            for state in progress.values():
                resend = self._want_resend(state, now)
                if resend is not None:
                    batch.resends.append((state.table, resend))
            self._save_progress(connection, progress)
            self._save_rejections(connection, items, batch, now)
        batch.results = [i.result or IngestResult(outcome="failed") for i in items]
        return batch

    def _lock_progress(self, connection: Connection, tables: list[str]) -> dict[str, _Progress]:
        if not tables:
            return {}
        # A write first: on SQLite it takes the database's write lock for the whole
        # transaction; on PostgreSQL the rows are then locked in table order (no deadlock).
        connection.execute(
            statements(connection).insert_progress,
            [{"table_id": t, "contiguous_seq": 0, "highest_seq": 0, "gaps": [],
              "resend_requested_at": None} for t in tables],
        )
        rows = connection.execute(_LOCK_PROGRESS, {"tables": tables}).all()
        return {
            r.table_id: _Progress(
                table=r.table_id, contiguous=int(r.contiguous_seq), highest=int(r.highest_seq),
                gaps=[[int(a), int(b)] for a, b in (r.gaps or [])],
                requested_at=None if r.resend_requested_at is None
                else as_utc(r.resend_requested_at),
            )
            for r in rows
        }

    def _notice(self, item: _Item, state: _Progress) -> None:
        envelope = item.envelope
        if envelope is None or envelope.type != "availability":
            return
        link = envelope.body.get("link")
        last = link.get("last_published_seq") if isinstance(link, Mapping) else None
        if isinstance(last, int) and not isinstance(last, bool) and last > state.highest:
            # The table has published more than has arrived: the tail is missing.
            self._behind[state.table] = max(last, self._behind.get(state.table, 0))

    def _window(self, candidates: list[_Item], progress: dict[str, _Progress]) -> list[_Item]:
        highest = {t: p.highest for t, p in progress.items()}
        fresh: list[_Item] = []
        for item in candidates:
            envelope = item.envelope
            assert envelope is not None
            table = envelope.table
            if envelope.seq > highest[table] + self.window:
                item.result = IngestResult(
                    outcome="rejected", reason=OUT_OF_WINDOW, table=table, seq=envelope.seq,
                    type=envelope.type,
                    detail=f"seq {envelope.seq} is more than {self.window} ahead of the "
                           f"highest seen ({highest[table]})")
                self._behind[table] = max(envelope.seq, self._behind.get(table, 0))
                continue
            highest[table] = max(highest[table], envelope.seq)
            fresh.append(item)
        return fresh

    def _insert_messages(self, connection: Connection, fresh: list[_Item],
                         now: datetime) -> set[tuple[str, int]]:
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        for item in fresh:
            envelope = item.envelope
            assert envelope is not None
            rows.setdefault((envelope.table, envelope.seq), {
                "table_id": envelope.table, "seq": envelope.seq, "type": envelope.type,
                "ts": envelope.ts, "body": item.body_text, "received_at": now,
                # The evidence (revision 0002). The verified payload is canonical UTF-8 JSON.
                "payload_sha256": item.sha256, "envelope": item.payload.decode("utf-8"),
            })
        inserted = insert_new(connection, MESSAGES, list(rows.values()),
                              key=("table_id", "seq"), json_text=("body",))
        return {(table, int(seq)) for table, seq in inserted}

    def _compare_existing(self, connection: Connection, fresh: list[_Item],
                          inserted: set[tuple[str, int]]) -> None:
        """Copies of a stored (table, seq): duplicates if identical, else replays."""
        stored: dict[tuple[str, int], bytes] = {}
        first_of: dict[tuple[str, int], _Item] = {}
        for item in fresh:
            envelope = item.envelope
            assert envelope is not None
            key = (envelope.table, envelope.seq)
            if key in inserted and key not in first_of:
                first_of[key] = item
            elif key in first_of and key not in stored:  # a copy within this batch
                first = first_of[key].envelope
                assert first is not None
                stored[key] = _content(first.type, first.ts, first.body)
        missing = {(i.envelope.table, i.envelope.seq) for i in fresh
                   if i.envelope is not None} - inserted
        if missing:
            for row in connection.execute(
                select(Message.table_id, Message.seq, Message.type, Message.ts, Message.body)
                .where(tuple_(Message.table_id, Message.seq).in_(sorted(missing)))
            ):
                stored[(row.table_id, int(row.seq))] = _content(row.type, row.ts, row.body)
        for item in fresh:
            envelope = item.envelope
            assert envelope is not None
            key = (envelope.table, envelope.seq)
            if first_of.get(key) is item:
                continue
            base = _Base(envelope)
            held = stored.get(key)
            if held == _content(envelope.type, envelope.ts, envelope.body):
                item.result = IngestResult(outcome="duplicate", **base.fields())
            elif held is None:  # cannot happen: the insert conflicted, so a row exists
                raise _Vanished(f"{key} conflicted but is not stored")
            else:
                item.result = IngestResult(
                    outcome="rejected", reason=REPLAYED_SEQ, **base.fields(),
                    detail=f"{envelope.table} seq {envelope.seq} is stored with other "
                           f"content; this {envelope.type} is not")

    def _apply(self, connection: Connection, fresh: list[_Item],
               progress: dict[str, _Progress], batch: _Batch) -> None:
        new = [i for i in fresh if i.result is None]
        pending = {_key(i) for i in new}
        later = later_messages_query(connection, pending)
        highest = {table: state.highest for table, state in progress.items()}
        late = []  # in arrival order: below its table's highest seq so far (out of order)
        for item in new:
            envelope = item.envelope
            assert envelope is not None
            late.append(envelope.seq < highest[envelope.table])
            highest[envelope.table] = max(highest[envelope.table], envelope.seq)
        # What does not depend on the order goes in a few statements first; the rest one by
        # one, in arrival order (projections.project_bulk says why the result is the same).
        done = project_bulk(connection, [(i.envelope, i.body_text, out_of_order)
                                         for i, out_of_order in zip(new, late, strict=True)
                                         if i.envelope is not None])
        for index, item in enumerate(new):
            envelope = item.envelope
            assert envelope is not None
            state = progress[envelope.table]
            if not state.add(envelope.seq):
                batch.notes.append((item, f"progress of {envelope.table} did not expect seq "
                                          f"{envelope.seq} (stored anew)"))
            pending.discard(_key(item))
            projected = done.get(index)
            if projected is None:
                projected = project(connection, envelope, text=item.body_text,
                                    later=later if late[index] else None)
            item.projected = projected
        for item in new:
            envelope, projected = item.envelope, item.projected
            assert envelope is not None
            assert projected is not None
            for change in (envelope.type, *projected.changes):
                if change not in batch.changes:
                    batch.changes.append(change)
            batch.refused.extend((item, refused) for refused in projected.refused)
            batch.notes.extend((item, note) for note in projected.notes)
            own = next((r for r in projected.refused if r.seq == envelope.seq), None)
            item.result = IngestResult(
                outcome="stored", table=envelope.table, seq=envelope.seq, type=envelope.type,
                reason=own.reason if own else None, detail=own.detail if own else "",
                changes=projected.changes)

    def _want_resend(self, state: _Progress, now: datetime) -> int | None:
        """The seq to ask the table to resend from, if a gap has waited long enough."""
        behind = self._behind.get(state.table, 0)
        if behind <= state.highest:
            self._behind.pop(state.table, None)
            behind = 0
        if state.contiguous >= max(state.highest, behind):
            self._gap_since.pop(state.table, None)
            return None
        since = self._gap_since.get(state.table)
        if since is None or since[0] != state.contiguous:
            since = (state.contiguous, now)
            self._gap_since[state.table] = since
        if now - since[1] < self.resend_after:
            return None
        if state.requested_at is not None and now - state.requested_at < self.resend_interval:
            return None
        state.requested_at = now
        state.dirty = True
        return state.contiguous + 1

    def _save_progress(self, connection: Connection, progress: dict[str, _Progress]) -> None:
        rows = [{"table": state.table, "contiguous": state.contiguous, "highest": state.highest,
                 "gaps": state.gaps, "requested_at": state.requested_at}
                for state in progress.values() if state.dirty]
        if rows:  # one executemany (psycopg pipelines it: one round trip)
            connection.execute(_SAVE_PROGRESS, rows)

    def _save_rejections(self, connection: Connection, items: list[_Item], batch: _Batch,
                         now: datetime) -> None:
        rows = [
            _rejection_row(i.result.reason or "", i.result.table, i.topic,
                           i.result.detail, sha256=i.sha256, now=now)
            for i in items if i.result is not None and i.result.outcome == "rejected"
        ]
        rows.extend(
            _rejection_row(r.reason, r.table, item.topic,
                           f"{r.type} seq {r.seq} stored, not applied: {r.detail}",
                           sha256=item.sha256, now=now)
            for item, r in batch.refused
        )
        if rows:
            connection.execute(REJECTIONS.insert(), rows)

    def _store_failed(self, item: _Item, exc: Exception) -> IngestResult:
        envelope = item.envelope
        table = envelope.table if envelope else item.claimed
        detail = _clean(f"database error: {exc}", _MAX_DETAIL)
        with contextlib.suppress(SQLAlchemyError), self.engine.begin() as connection:
            connection.execute(REJECTIONS.insert(), [
                _rejection_row(STORE_ERROR, table, item.topic, detail, sha256=item.sha256,
                               now=self._clock())])
        self._reasons[STORE_ERROR] += 1  # counted here: no batch result carries it
        return IngestResult(outcome="failed", table=table,
                            seq=envelope.seq if envelope else None,
                            type=envelope.type if envelope else None, reason=STORE_ERROR,
                            detail=detail)

    def _check_gaps(self) -> list[tuple[str, int]]:
        now = self._clock()
        with self.engine.begin() as connection:
            open_gaps = connection.execute(
                select(TableProgress.table_id)
                .where(TableProgress.contiguous_seq < TableProgress.highest_seq)
            ).scalars().all()
            tables = sorted({*open_gaps, *self._behind})
            if not tables:
                self._gap_since.clear()
                return []
            progress = self._lock_progress(connection, tables)
            resends = []
            for state in progress.values():
                resend = self._want_resend(state, now)
                if resend is not None:
                    resends.append((state.table, resend))
            self._save_progress(connection, progress)
        return resends


_Verified = Envelope | tuple[str, str] | None  # a worker's answer: the envelope, or why not

_WORKER_KEYS: dict[int, KeyRing] = {}


def verify_chunk(version: int, keys: tuple[tuple[str, str], ...],
                 payloads: Sequence[bytes]) -> list[Envelope | tuple[str, str]]:
    """Verify payloads in a worker process: each envelope, or (reason, detail)."""
    ring = _WORKER_KEYS.get(version)
    if ring is None:
        ring = KeyRing.from_mapping(dict(keys))
        _WORKER_KEYS.clear()
        _WORKER_KEYS[version] = ring
    out: list[Envelope | tuple[str, str]] = []
    for payload in payloads:
        try:
            out.append(verify_envelope(payload, ring))
        except EnvelopeError as exc:
            out.append((exc.reason, exc.detail))
    return out


class _Refusal(EnvelopeError):
    """An envelope refused in a worker process, with the reason it gave."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason  # type: ignore[misc]


class _Base:
    """The table, seq and type of a result about ``envelope``."""

    __slots__ = ("envelope",)

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope

    def fields(self) -> dict[str, Any]:
        e = self.envelope
        return {"table": e.table, "seq": e.seq, "type": e.type}


class _Vanished(SQLAlchemyError):
    """A conflicting row that cannot be read back (the batch is retried one by one)."""


def _key(item: _Item) -> tuple[str, int]:
    envelope = item.envelope
    assert envelope is not None
    return envelope.table, envelope.seq


def _content(kind: str, ts: str, body: Any) -> bytes:
    """What must match for a copy to be a duplicate: type, time and body."""
    return canonical_json({"type": kind, "ts": ts, "body": body})


def _notice_detail(envelope: Envelope) -> str:
    body = envelope.body
    if envelope.type == "command_rejected":
        return (f"reason {body.get('reason')!r}: {body.get('detail')!r} "
                f"(claimed sender {body.get('claimed_sender')!r}, "
                f"seq {body.get('claimed_seq')!r})")
    return f"state {body.get('state')!r}"


def _rejection_row(reason: str, table: str | None, topic: str, detail: str, *, sha256: str,
                   now: datetime) -> dict[str, Any]:
    return {
        "reason": reason,
        "table_id": table if table is not None and ID_PATTERN.fullmatch(table) else None,
        "topic": _clean(topic, _MAX_TOPIC), "detail": _clean(detail, _MAX_DETAIL),
        "payload_sha256": sha256, "received_at": now,
    }


def _inbox_type(made: list[asyncio.Queue[aiomqtt.Message]]
                ) -> type[asyncio.Queue[aiomqtt.Message]]:
    """A queue class for aiomqtt.Client(queue_type=...) that hands its instance to ``made``,
    so that the receive loop can take a batch of what has arrived at once."""

    class Inbox(asyncio.Queue[aiomqtt.Message]):
        def __init__(self, maxsize: int = 0) -> None:
            super().__init__(maxsize)
            made.append(self)

    return Inbox


def _payload_bytes(payload: object) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return b"" if payload is None else str(payload).encode("ascii")


async def _next_or_stop(messages: Any, stop: asyncio.Event) -> aiomqtt.Message | None:
    """The next message, or None once ``stop`` is set (waiting for whichever comes first)."""
    if stop.is_set():
        return None
    receive = asyncio.ensure_future(anext(messages))
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
    message: aiomqtt.Message = receive.result()
    return message


async def stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait until ``stop`` is set or ``seconds`` pass; True if ``stop`` is set.

    ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` can swallow a
    cancellation that arrives as the inner wait completes.
    """
    if not stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await stop.wait()
    return stop.is_set()


# --- the receive loop ----------------------------------------------------------------------------

Alongside = Callable[[aiomqtt.Client, asyncio.Event], Coroutine[Any, Any, None]]


class SubscriptionRefused(ConfigError):
    """The broker refused one of the ingest's subscriptions; reconnecting cannot help.

    Receiving nothing would look like a quiet floor, so the ingest stops with this error.
    """

    def __init__(self, topic_filter: str, host: str, port: int) -> None:
        self.topic_filter = topic_filter
        if topic_filter.startswith(SHARED_PREFIX):
            super().__init__(
                "mqtt", "shared_group",
                f"the broker at {host}:{port} refused the shared subscription {topic_filter}:"
                " it does not deliver shared subscriptions (the embedded amqtt broker does"
                " not); use Mosquitto, or remove shared_group")
        else:
            super().__init__(
                "mqtt", "username",
                f"the broker at {host}:{port} refused the subscription {topic_filter}:"
                " check this client's read rights in the broker's ACL")


class IngestLink:
    """The ingest's connection to the broker: THE receive loop of the leaderboard.

    Connects, subscribes at QoS 1 to every table's events, scores and status (``$share/...``
    with ``shared_group``), feeds what the broker delivers to the Ingestor in batches (all
    that has arrived while the previous batch was stored, up to ``batch_max``), checks gaps
    every ``gap_check_s``, and reconnects with jittered exponential backoff until ``stop``.
    ``client_id`` makes the session persistent (the broker queues while we are away); without
    it a clean session with a random id is used. ``Ingestor.run`` runs one on its own; the
    service (leaderboard.app.ServiceLink) runs one with its standings publisher ``alongside``
    (started with each connection, cancelled when it ends) and publishes its commands
    through ``client``, so that it has one connection to the broker.
    """

    def __init__(self, ingestor: Ingestor, settings: MqttSettings, *,
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
        self.client: aiomqtt.Client | None = None  # while connected and subscribed
        self._alongside = alongside
        self._backoff = Backoff(initial=settings.backoff_initial_s,
                                maximum=settings.backoff_max_s, rng=rng)

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, subscribe and ingest until ``stop`` is set, reconnecting after a loss."""
        ingestor, s = self.ingestor, self.settings
        if ingestor.verify_workers:
            await asyncio.to_thread(ingestor._start_pool)
        try:
            while not stop.is_set():
                try:
                    await self._connection(stop)
                except* aiomqtt.MqttError as group:
                    _log.warning("ingest_mqtt_disconnected", host=s.host, port=s.port,
                                 error="; ".join(str(e) for e in group.exceptions))
                finally:
                    self.client = None
                    self.subscribed.clear()
                if await stopped_within(stop, self._backoff.next_delay()):
                    break
        finally:
            await ingestor._drain(s.timeout_s)
            await asyncio.to_thread(ingestor.close)

    async def _connection(self, stop: asyncio.Event) -> None:
        s = self.settings
        inboxes: list[asyncio.Queue[aiomqtt.Message]] = []
        async with aiomqtt.Client(
            s.host, s.port, identifier=self.client_id, clean_session=not self.persistent,
            keepalive=s.keepalive_s, timeout=s.timeout_s, username=s.username,
            password=s.password, tls_context=s.ssl_context(), queue_type=_inbox_type(inboxes),
        ) as client:
            for topic_filter in self.filters:
                granted = await client.subscribe(topic_filter, qos=1)
                if any(suback_refused(code) for code in granted):
                    _log.error("ingest_subscription_refused", filter=topic_filter,
                               host=s.host, port=s.port)
                    raise SubscriptionRefused(topic_filter, s.host, s.port)
            self._backoff.reset()
            self.client = client
            self.subscribed.set()
            _log.info("ingest_subscribed", host=s.host, port=s.port, filters=list(self.filters),
                      client_id=self.client_id, persistent=self.persistent)
            async with asyncio.TaskGroup() as tasks:
                beside = [tasks.create_task(self._gaps(stop), name="ingest.gap_check")]
                if self._alongside is not None:
                    beside.append(tasks.create_task(self._alongside(client, stop),
                                                    name="ingest.alongside"))
                await self._receive(client, inboxes[0], stop)
                for task in beside:
                    task.cancel()

    async def _receive(self, client: aiomqtt.Client, inbox: asyncio.Queue[aiomqtt.Message],
                       stop: asyncio.Event) -> None:
        """Batches of what has arrived, stored one at a time in arrival order.

        A batch's first message is awaited through the client (which notices a lost
        connection); the rest are taken from its queue (``inbox``) as they are, not through
        a task and a wait per message as the client's iterator does.

        With PostgreSQL, or verification in worker processes, in a pipeline of two: a batch
        is verified while the one before it is stored (its transaction then mostly waits: for
        the database server, or for the other instance's lock on a table's progress). With
        SQLite and verification here, one after the other: SQLite works in this process, and
        two busy threads only slow each other down (measured: bench/README.md).
        """
        messages = client.messages
        ingestor = self.ingestor
        pipelined = ingestor.verify_workers > 0 or ingestor.engine.dialect.name != "sqlite"
        storing: asyncio.Task[None] | None = None
        try:
            while True:
                first = await _next_or_stop(messages, stop)
                if first is None:
                    return
                received = [first]
                while len(received) < ingestor.batch_max:
                    try:
                        received.append(inbox.get_nowait())
                    except asyncio.QueueEmpty:
                        break
                items = await ingestor._screen_received(
                    [(m.topic.value, _payload_bytes(m.payload)) for m in received])
                if storing is not None:
                    await asyncio.shield(storing)
                    storing = None
                if items is None:
                    continue
                # A task, shielded: a transaction under way is finished (its thread cannot
                # be stopped) and accounted for even if this loop is cancelled meanwhile.
                storing = asyncio.create_task(ingestor._store_received(items),
                                              name="ingest.store")
                if not pipelined:
                    await asyncio.shield(storing)
                    storing = None
        finally:
            if storing is not None:  # what was received is stored before the loop ends
                await storing

    async def _gaps(self, stop: asyncio.Event) -> None:
        while not await stopped_within(stop, self.gap_check_s):
            try:
                await self.ingestor.check_gaps()
            except Exception as exc:  # the database away: try again at the next tick
                _log.error("ingest_gap_check_failed", error=repr(exc))


# --- asking a table to resend ------------------------------------------------------------------


class MqttResender:
    """Sends a signed ``resend`` command to a table's ``cmd`` topic (a desk-style command).

    The leaderboard's key (``signer``) must be enrolled among the table's command keys. Each
    command has its own rising ``seq`` (microseconds since the epoch, at least the last + 1),
    so the table, which ignores a command ``(signer, seq)`` it has applied, never mistakes a
    new request for an old one, across restarts too.
    """

    def __init__(self, settings: MqttSettings, signer: Signer, *, venue: str,
                 clock: Clock = _utc_now, boot_id: str | None = None) -> None:
        TableTopics(venue, "x", settings.topic_root)  # validates venue and root
        self.settings = settings
        self.signer = signer
        self.venue = venue
        self._clock = clock
        self._boot = boot_id or f"leaderboard-{random.getrandbits(48):012x}"
        self._seq = 0
        self.sent: list[tuple[str, int, int]] = []  # (table, from_seq, command seq)

    def command(self, table: str, from_seq: int) -> tuple[str, bytes]:
        """The topic and signed payload of one resend request (a new seq each call)."""
        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 1:
            raise ValueError(f"from_seq must be a whole number >= 1, got {from_seq!r}")
        wall = self._clock()
        self._seq = max(self._seq + 1, time.time_ns() // 1_000)
        envelope = seal(
            venue=self.venue, table=self.signer.key_id, seq=self._seq, wall=wall,
            type="resend",
            body={"table": table, "command": "resend", "from_seq": from_seq,
                  "command_id": f"{self.signer.key_id}-{self._seq}"},
            boot=self._boot, mono=time.monotonic_ns(), signer=self.signer,
        )
        return TableTopics(self.venue, table, self.settings.topic_root).cmd, envelope.encode()

    async def __call__(self, table: str, from_seq: int) -> None:
        """Publish the request at QoS 1 (a short connection of its own; requests are rare)."""
        topic, payload = self.command(table, from_seq)
        s = self.settings
        async with aiomqtt.Client(
            s.host, s.port, identifier=f"{self.signer.key_id}-resend-{self._seq}",
            keepalive=s.keepalive_s, timeout=s.timeout_s, username=s.username,
            password=s.password, tls_context=s.ssl_context(),
        ) as client:
            await client.publish(topic, payload, qos=1)
        self.sent.append((table, from_seq, self._seq))
