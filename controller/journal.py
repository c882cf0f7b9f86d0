"""The table's journal: an append-only, hash-chained record of every input, and the outbox.

The only module that writes the table's SQLite file (docs/journal.md, docs/dev/daemon-design.md).
Every input is appended with `Journal.append` in ONE transaction together with the outgoing
messages it causes; the daemon rebuilds its state after a crash by replaying `records()`.

Durability: WAL mode with ``synchronous=FULL`` (checked on every connection), so a committed
append survives power loss. Integrity: every row carries a SHA-256 checksum over its content
and the previous row's checksum (a hash chain per table), and a head row names the end of both
chains; `verify()` names every row that was changed, removed, reordered or cut off.

Faults (the error state) are journal records too: `record_fault` appends one, `open_faults`
lists those not yet cleared, and only `clear_faults(operator, reason)` clears them, by
appending a record saying who and why. Record kinds starting with ``journal.`` are the
journal's own (creation, faults, clearing); replay skips them (`is_own_kind`).

One process writes a journal at a time (an exclusive lock on ``<file>.lock``); readers, such as
`showdown recall`, open it read-only and need neither the lock nor the daemon.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Protocol, TypeAlias, cast
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event, exc, insert, pool, select, update
from sqlalchemy.engine import Connection, Engine

from controller.clock import ClockReading, ClockSource, system_clock
from controller.journal_models import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    TRIGGERS,
    Base,
    HeadRow,
    JournalRow,
    OutboxRow,
)

__all__ = [
    "CREATED_KIND",
    "FAULTS_CLEARED_KIND",
    "FAULT_KIND",
    "GENESIS",
    "OWN_KIND_PREFIX",
    "TOPIC_SUFFIXES",
    "CheckedMessage",
    "Fault",
    "IntegrityProblem",
    "Journal",
    "JournalBusy",
    "JournalError",
    "JournalRecord",
    "JournalUnreadable",
    "OutboxMessage",
    "Outgoing",
    "OutgoingLike",
    "Replacement",
    "canonical_json",
    "is_own_kind",
    "outbox_checksum",
    "record_checksum",
    "replace_journal",
    "verify_file",
]

_Row: TypeAlias = Mapping[Any, Any]  # a stored row by column name
TopicSuffix: TypeAlias = Literal["events", "scores", "status"]
TOPIC_SUFFIXES: Final = frozenset({"events", "scores", "status"})
GENESIS: Final = "0" * 64  # the "previous checksum" of the first row of each chain
OWN_KIND_PREFIX: Final = "journal."
CREATED_KIND: Final = "journal.created"
FAULT_KIND: Final = "journal.fault"
FAULTS_CLEARED_KIND: Final = "journal.faults_cleared"
_RECORD_DOMAIN: Final = "showdown.journal.v1"
_OUTBOX_DOMAIN: Final = "showdown.outbox.v1"
_BUSY_TIMEOUT_S: Final = 5.0
_BATCH: Final = 500
_MAX_TEXT: Final = 2000  # operator names, reasons, fault details


_SELECT_HEAD: Final = select(HeadRow.journal_seq, HeadRow.journal_checksum, HeadRow.outbox_seq,
                             HeadRow.outbox_checksum).where(HeadRow.id == 1)
_INSERT_RECORD: Final = insert(JournalRow)
_INSERT_MESSAGE: Final = insert(OutboxRow)
_UPDATE_HEAD: Final = update(HeadRow).where(HeadRow.id == 1)


class JournalError(Exception):
    """Root of the journal's errors: misuse, refusals and unreadable data."""


class JournalUnreadable(JournalError):
    """The file is missing, is not a showdown journal, or SQLite cannot read it."""


class JournalBusy(JournalError):
    """Another process has the journal open for writing (the table daemon, usually)."""


def is_own_kind(kind: str) -> bool:
    """True for the journal's own record kinds (creation, faults), which replay skips."""
    return kind.startswith(OWN_KIND_PREFIX)


def canonical_json(value: Any, *, what: str = "value") -> str:
    """Sorted keys, no spaces, UTF-8 text, no NaN: the one text a JSON value is stored as."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except (TypeError, ValueError) as e:
        raise JournalError(f"{what} is not plain JSON data: {e}") from e


def _digest(material: Sequence[object]) -> str:
    text = json.dumps(list(material), separators=(",", ":"), ensure_ascii=False,
                      default=_foreign)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _foreign(value: object) -> object:
    """A stored value no valid row holds (a BLOB, say): hashed as its repr, so it mismatches."""
    return {"foreign": repr(value)}


def record_checksum(*, seq: int, kind: str, payload: str, wall: str, mono_ns: int, boot_id: str,
                    synced: bool | None, prev: str) -> str:
    """SHA-256 (hex) of a journal record's stored content and the previous record's checksum."""
    return _digest([_RECORD_DOMAIN, seq, kind, payload, wall, mono_ns, boot_id, synced, prev])


def outbox_checksum(*, seq: int, record_seq: int, topic_suffix: str, type: str, body: str,
                    retain: bool, wall: str, mono_ns: int, boot_id: str, synced: bool | None,
                    prev: str) -> str:
    """SHA-256 (hex) of an outbox message's stored content and the previous message's checksum."""
    return _digest([_OUTBOX_DOMAIN, seq, record_seq, topic_suffix, type, body, retain, wall,
                    mono_ns, boot_id, synced, prev])


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalRecord:
    """One journal record: an input (or the journal's own event) with its time and checksum."""

    seq: int
    kind: str
    payload: Mapping[str, Any]
    wall: datetime
    mono_ns: int
    boot_id: str
    checksum: str
    synced: bool | None = None


class OutgoingLike(Protocol):
    """What `append` reads from each message `outgoing` returns (e.g. `Outgoing`)."""

    @property
    def topic_suffix(self) -> str:
        """One of TOPIC_SUFFIXES."""

    @property
    def type(self) -> str:
        """The message type, e.g. "hand.settled"."""

    @property
    def body(self) -> Mapping[str, Any]:
        """The JSON body."""

    @property
    def retain(self) -> bool:
        """Publish retained."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """A message an input causes; the journal gives it the next per-table seq."""

    topic_suffix: TopicSuffix
    type: str
    body: Mapping[str, Any]
    retain: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxMessage:
    """A stored outgoing message: its per-table seq, the record that caused it, delivery state."""

    seq: int
    record_seq: int
    topic_suffix: TopicSuffix
    type: str
    body: Mapping[str, Any]
    retain: bool
    wall: datetime
    mono_ns: int
    boot_id: str
    delivered: bool
    synced: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedMessage:
    """An outbox message read for display: whatever could be decoded, and what is wrong with it."""

    seq: int
    type: str
    topic_suffix: str
    wall: str
    boot_id: str
    delivered: bool
    body: Mapping[str, Any] | None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """A recorded error condition; open until an operator clears it (its id is its record seq)."""

    seq: int
    kind: str
    detail: str
    wall: datetime
    boot_id: str


ProblemArea: TypeAlias = Literal["database", "journal", "outbox", "head", "faults"]


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityProblem:
    """One thing `verify()` found wrong: where (area and seq), a stable code, and the detail."""

    area: ProblemArea
    code: str
    detail: str
    seq: int | None = None

    def __str__(self) -> str:
        where = self.area if self.seq is None else f"{self.area} seq {self.seq}"
        return f"{where}: {self.detail} [{self.code}]"


@dataclass(slots=True)
class _ChainState:
    """What verify() carries along one chain."""

    area: Literal["journal", "outbox"]
    expected_seq: int
    prev_checksum: str = GENESIS
    last_seq: int = 0
    rows: int = 0
    problems: list[IntegrityProblem] = field(default_factory=list)

    def problem(self, code: str, detail: str, seq: int | None) -> None:
        self.problems.append(IntegrityProblem(area=self.area, code=code, detail=detail, seq=seq))


def verify_file(path: Path | str) -> list[IntegrityProblem]:
    """Verify a journal file read-only; never raises: an unreadable file is itself a problem."""
    try:
        journal = Journal.open(path, read_only=True)
    except JournalError as e:
        return [IntegrityProblem(area="database", code="unreadable", detail=str(e))]
    with journal:
        return journal.verify()


@dataclass(frozen=True, slots=True, kw_only=True)
class Replacement:
    """What `replace_journal` did: where the damaged file went, and how the new one starts."""

    retired: Path
    sha256: str
    problems: tuple[IntegrityProblem, ...]
    last_seq: int
    record: JournalRecord


def replace_journal(path: Path | str, *, operator: str, reason: str,
                    last_seq: int | None = None, clock: ClockSource = system_clock,
                    ) -> Replacement:
    """Retire a damaged journal (renamed, kept) and start a new one continuing its message seq.

    Refused while another process writes the journal, when it verifies clean, and when the
    last message seq is unknown (unreadable file) and not given, or given lower than stored.
    The new journal's creation record names the retired file, its SHA-256, the problems,
    the faults that were open, the operator and the reason.
    """
    path = Path(path)
    operator = _text(operator, "operator")
    reason = _text(reason, "reason")
    if not path.exists():
        raise JournalUnreadable(f"no journal at {path}")
    lock_fd = _lock(path)
    try:
        problems = verify_file(path)
        if not problems:
            raise JournalError(f"{path} verifies clean: there is nothing to replace")
        stored, faults = _salvage(path)
        if last_seq is None and stored is None:
            raise JournalError("the last message seq cannot be read from the damaged journal; "
                               "give it (the last seq the leaderboard holds for this table)")
        if last_seq is not None and stored is not None and last_seq < stored:
            raise JournalError(f"the damaged journal holds messages up to seq {stored}; "
                               f"continuing after {last_seq} would reuse seqs")
        base = max(x for x in (last_seq, stored) if x is not None)
        digest = _file_sha256(path)
        retired = _retire(path, clock().wall.strftime("%Y%m%dT%H%M%SZ"))
        created = {"replaces": {
            "file": retired.name, "sha256": digest, "last_seq": base,
            "problems": [str(p) for p in problems], "open_faults": faults,
            "operator": operator, "reason": reason}}
        journal = Journal._open(path, read_only=False, create=True, clock=clock,
                                outbox_seq_base=base, created=created, lock_fd=lock_fd)
    except BaseException:
        _unlock(lock_fd)
        raise
    with journal:
        record = next(journal.records())
    return Replacement(retired=retired, sha256=digest, problems=tuple(problems),
                       last_seq=base, record=record)


def _salvage(path: Path) -> tuple[int | None, list[str]]:
    """Best effort on a damaged journal: the highest message seq used, and the open faults."""
    try:
        journal = Journal.open(path, read_only=True)
    except JournalError:
        return None, []
    with journal:
        try:
            with journal._read() as conn:
                seqs = [conn.exec_driver_sql(sql).scalar() for sql in (
                    "SELECT max(seq) FROM outbox", "SELECT max(outbox_seq) FROM head")]
        except (exc.SQLAlchemyError, sqlite3.Error):
            return None, []
        try:
            faults = [f"fault seq {f.seq} ({f.kind}): {f.detail}" for f in journal.open_faults()]
        except (JournalError, exc.SQLAlchemyError, sqlite3.Error):
            faults = ["(the open faults could not be read)"]
    found = [int(s) for s in seqs if isinstance(s, int)]
    return (max(found) if found else None), faults


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    for part in (path, Path(f"{path}-wal")):
        if part.exists():
            with part.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def _retire(path: Path, stamp: str) -> Path:
    """Rename the file and its -wal/-shm companions aside (never overwriting anything)."""
    retired = path.with_name(f"{path.name}.retired-{stamp}")
    n = 1
    while any(Path(f"{retired}{s}").exists() for s in ("", "-wal", "-shm")):
        n += 1
        retired = path.with_name(f"{path.name}.retired-{stamp}-{n}")
    # The main file first: if this stops half-way, the -wal left behind without its main file
    # makes the next open refuse (never a silent older state without its log).
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(f"{retired}{suffix}")
    _fsync_dir(path.parent)
    return retired


class Journal:
    """The table's journal file: append, replay, outbox, faults and verification."""

    def __init__(self, *, path: Path, engine: Engine, read_only: bool, clock: ClockSource,
                 lock_fd: int | None) -> None:
        """Use `Journal.open`; this only stores what it prepared."""
        self._path = path
        self._engine = engine
        self._read_only = read_only
        self._clock = clock
        self._lock_fd = lock_fd
        self._write_lock = threading.Lock()
        self._writer: int | None = None  # thread ident inside a write transaction
        self._closed = False

    # ----------------------------------------------------------------------------------------
    # opening and closing

    @classmethod
    def open(cls, path: Path | str, *, read_only: bool = False, create: bool = True,
             clock: ClockSource = system_clock, outbox_seq_base: int = 0,
             created: Mapping[str, Any] | None = None) -> Journal:
        """Open (or create) a journal file; raises JournalUnreadable / JournalBusy.

        A file is created only where none exists (never over an empty or damaged one).
        `outbox_seq_base` makes a new journal's first message seq ``base + 1`` (a journal that
        replaces a damaged one continues its seq); `created` adds fields to its first record.
        """
        path = Path(path)
        lock_fd = None if read_only else _lock(path)
        try:
            return cls._open(path, read_only=read_only, create=create, clock=clock,
                             outbox_seq_base=outbox_seq_base, created=created, lock_fd=lock_fd)
        except BaseException:
            _unlock(lock_fd)
            raise

    @classmethod
    def _open(cls, path: Path, *, read_only: bool, create: bool, clock: ClockSource,
              outbox_seq_base: int, created: Mapping[str, Any] | None,
              lock_fd: int | None) -> Journal:
        new = not path.exists()
        if new and (read_only or not create):
            raise JournalUnreadable(f"no journal at {path}")
        if new and Path(f"{path}-wal").exists():
            raise JournalUnreadable(
                f"{path} is missing but its write-ahead log {path}-wal exists: "
                "the journal file was removed; restore it (docs/journal.md, Recovery)")
        if not new and path.is_dir():
            raise JournalUnreadable(f"{path} is a directory, not a journal")
        if isinstance(outbox_seq_base, bool) or not isinstance(outbox_seq_base, int) \
                or outbox_seq_base < 0:
            raise JournalError(f"outbox_seq_base must be an int >= 0, got {outbox_seq_base!r}")
        journal = cls(path=path, engine=_engine(path, read_only=read_only, new=new),
                      read_only=read_only, clock=clock, lock_fd=None)
        try:
            if new:
                journal._create(outbox_seq_base, dict(created or {}))
            else:
                journal._check_schema()
        except BaseException as e:
            journal.close()
            if isinstance(e, (exc.SQLAlchemyError, sqlite3.Error)):
                raise JournalUnreadable(f"{path}: {_db_error(e)}") from e
            raise
        journal._lock_fd = lock_fd  # only now: a failed open leaves the lock to the caller
        return journal

    @property
    def path(self) -> Path:
        """The journal's database file."""
        return self._path

    @property
    def read_only(self) -> bool:
        """True when opened read-only (no writes possible)."""
        return self._read_only

    def close(self) -> None:
        """Close every connection (SQLite then checkpoints the WAL) and release the lock."""
        if self._closed:
            return
        self._closed = True
        self._engine.dispose()
        _unlock(self._lock_fd)
        self._lock_fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # writing

    def append(self, *, kind: str, payload: Mapping[str, Any], clock: ClockReading,
               outgoing: Callable[[JournalRecord], Sequence[OutgoingLike]],
               ) -> tuple[JournalRecord, list[OutboxMessage]]:
        """Append one input and the messages it causes in ONE transaction (journal first).

        Inserts the record, calls ``outgoing(record)`` (the apply step), inserts what it
        returns into the outbox with consecutive seqs, and commits. If `outgoing` raises,
        everything is rolled back (nothing stored, no seq used) and the exception propagates.
        """
        if not isinstance(kind, str) or not kind or kind != kind.strip():
            raise JournalError(f"record kind must be non-empty text without spaces, got {kind!r}")
        if is_own_kind(kind):
            raise JournalError(f"record kinds starting with {OWN_KIND_PREFIX!r} are reserved")
        return self._append(kind, payload, clock, outgoing)

    def mark_delivered(self, seq: int) -> None:
        """Mark an outbox message delivered (after the broker's acknowledgement); idempotent."""
        wall = _wall_text(self._clock().wall)
        with self._write() as conn:
            done = conn.execute(
                update(OutboxRow)
                .where(OutboxRow.seq == seq, OutboxRow.delivered == 0)
                .values(delivered=1, delivered_wall=wall)
            ).rowcount
            if not done and conn.scalar(select(OutboxRow.seq).where(OutboxRow.seq == seq)) is None:
                raise JournalError(f"no outbox message with seq {seq}")

    def record_fault(self, kind: str, detail: str) -> Fault:
        """Record an error condition (persists across restarts until an operator clears it)."""
        kind = _text(kind, "fault kind")
        detail = _text(detail, "fault detail")
        record, _ = self._append(FAULT_KIND, {"kind": kind, "detail": detail}, self._clock(),
                                 lambda _r: ())
        return Fault(seq=record.seq, kind=kind, detail=detail, wall=record.wall,
                     boot_id=record.boot_id)

    def clear_faults(self, operator: str, reason: str) -> JournalRecord | None:
        """Clear every open fault, appending a record of who and why; None if none was open.

        Refused (JournalError) while `verify()` finds problems: a damaged journal is not
        cleared but replaced (docs/journal.md, Recovery).
        """
        operator = _text(operator, "operator")
        reason = _text(reason, "reason")
        problems = self.verify()
        if problems:
            listed = "; ".join(str(p) for p in problems[:3])
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise JournalError(
                f"the journal fails verification with {len(problems)} problem(s): {listed}{more}; "
                "faults are not cleared on a damaged journal: replace it "
                "(docs/journal.md, Recovery)")
        faults = self.open_faults()
        if not faults:
            return None
        payload = {"operator": operator, "reason": reason,
                   "faults": [{"seq": f.seq, "kind": f.kind, "detail": f.detail} for f in faults]}
        record, _ = self._append(FAULTS_CLEARED_KIND, payload, self._clock(), lambda _r: ())
        return record

    # ----------------------------------------------------------------------------------------
    # reading

    def records(self, after: int = 0) -> Iterator[JournalRecord]:
        """Every record with seq > `after`, in order (for replay); JournalError on bad JSON."""
        last = after
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    select(JournalRow).where(JournalRow.seq > last)
                    .order_by(JournalRow.seq).limit(_BATCH)
                ).mappings().all()
            if not rows:
                return
            for row in rows:
                yield _record(row)
            last = int(rows[-1]["seq"])

    def last_record_seq(self) -> int:
        """The seq of the last journal record (0 when empty)."""
        with self._read() as conn:
            return int(conn.scalar(select(sa.func.coalesce(sa.func.max(JournalRow.seq), 0))) or 0)

    def last_seq(self) -> int:
        """The last outbox seq issued: the table's message seq (its base when none yet)."""
        with self._read() as conn:
            return int(conn.scalar(select(HeadRow.outbox_seq).where(HeadRow.id == 1)) or 0)

    def pending(self, limit: int = 100) -> list[OutboxMessage]:
        """Undelivered messages, lowest seq first."""
        with self._read() as conn:
            rows = conn.execute(
                select(OutboxRow).where(OutboxRow.delivered == 0)
                .order_by(OutboxRow.seq).limit(limit)
            ).mappings().all()
        return [_message(r) for r in rows]

    def messages(self, from_seq: int, to_seq: int | None = None) -> list[OutboxMessage]:
        """Messages with from_seq <= seq <= to_seq (to the end if None), delivered or not."""
        query = select(OutboxRow).where(OutboxRow.seq >= from_seq)
        if to_seq is not None:
            query = query.where(OutboxRow.seq <= to_seq)
        with self._read() as conn:
            rows = conn.execute(query.order_by(OutboxRow.seq)).mappings().all()
        return [_message(r) for r in rows]

    def latest_messages(self, types: Collection[str], limit: int) -> list[CheckedMessage]:
        """The last `limit` messages of the given types, oldest first, each checked on its own.

        Tolerant, for recall: a body that is not JSON or a row whose checksum does not match
        is returned with its problems named rather than raising.
        """
        if limit <= 0:
            return []
        with self._read() as conn:
            rows = conn.execute(
                select(OutboxRow).where(OutboxRow.type.in_(list(types)))
                .order_by(OutboxRow.seq.desc()).limit(limit)
            ).mappings().all()
        return [_checked(r) for r in reversed(rows)]

    def open_faults(self) -> list[Fault]:
        """Faults recorded and not yet cleared by an operator, oldest first."""
        faults: dict[int, Fault] = {}
        with self._read() as conn:
            rows = conn.execute(
                select(JournalRow)
                .where(JournalRow.kind.in_([FAULT_KIND, FAULTS_CLEARED_KIND]))
                .order_by(JournalRow.seq)
            ).mappings().all()
        for row in rows:
            record = _record(row)
            if record.kind == FAULT_KIND:
                faults[record.seq] = Fault(
                    seq=record.seq, kind=str(record.payload.get("kind", "")),
                    detail=str(record.payload.get("detail", "")), wall=record.wall,
                    boot_id=record.boot_id)
            else:
                for cleared in record.payload.get("faults", ()):
                    if isinstance(cleared, Mapping):
                        faults.pop(cleared.get("seq"), None)  # type: ignore[arg-type]
        return list(faults.values())

    def counts(self) -> dict[str, int]:
        """How many records, messages and undelivered messages the journal holds."""
        with self._read() as conn:
            return {
                "records": int(conn.scalar(select(sa.func.count()).select_from(JournalRow)) or 0),
                "messages": int(conn.scalar(select(sa.func.count()).select_from(OutboxRow)) or 0),
                "pending": int(conn.scalar(
                    select(sa.func.count()).select_from(OutboxRow)
                    .where(OutboxRow.delivered == 0)) or 0),
            }

    # ----------------------------------------------------------------------------------------
    # verification

    def verify(self) -> list[IntegrityProblem]:
        """Check the whole file: SQLite's own check, schema, both chains, the head, the faults.

        Returns every problem found (empty = intact); never raises for damaged data.
        """
        problems: list[IntegrityProblem] = []
        try:
            with self._read() as conn:
                problems += _check_sqlite(conn)
                journal, genesis_base, cleared = _check_journal_chain(conn)
                problems += journal.problems
                outbox = _check_outbox_chain(conn, genesis_base)
                problems += outbox.problems
                problems += _check_links(conn)
                problems += _check_head(conn, journal, outbox, genesis_base or 0)
                problems += _check_cleared(conn, cleared)
        except (exc.SQLAlchemyError, sqlite3.Error) as e:
            problems.append(IntegrityProblem(area="database", code="unreadable",
                                             detail=f"SQLite cannot read the file: {_db_error(e)}"))
        return problems

    def verify_message(self, seq: int) -> list[str]:
        """Check one outbox message's own checksum and JSON (not the chain); [] when intact."""
        with self._read() as conn:
            row = conn.execute(select(OutboxRow).where(OutboxRow.seq == seq)).mappings().first()
        if row is None:
            return [f"no outbox message with seq {seq}"]
        return list(_checked(row).problems)

    # ----------------------------------------------------------------------------------------
    # internals

    def _append(self, kind: str, payload: Mapping[str, Any], clock: ClockReading,
                outgoing: Callable[[JournalRecord], Sequence[OutgoingLike]],
                setup: Callable[[Connection], None] | None = None,
                ) -> tuple[JournalRecord, list[OutboxMessage]]:
        if not isinstance(payload, Mapping):
            raise JournalError(f"payload must be a mapping, got {type(payload).__name__}")
        if not isinstance(clock, ClockReading):
            raise JournalError(f"clock must be a ClockReading, got {type(clock).__name__}")
        payload_text = canonical_json(payload, what="payload")
        wall = _wall_text(clock.wall)
        with self._write() as conn:
            if setup is not None:
                setup(conn)
            head = conn.execute(_SELECT_HEAD).one()
            seq = int(head.journal_seq) + 1
            prev = str(head.journal_checksum)
            checksum = record_checksum(seq=seq, kind=kind, payload=payload_text, wall=wall,
                                       mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                                       synced=clock.synced, prev=prev)
            conn.execute(_INSERT_RECORD, {
                "seq": seq, "kind": kind, "payload": payload_text, "wall": wall,
                "mono_ns": clock.mono_ns, "boot_id": clock.boot_id,
                "synced": _flag(clock.synced), "prev_checksum": prev, "checksum": checksum})
            record = JournalRecord(seq=seq, kind=kind, payload=json.loads(payload_text),
                                   wall=clock.wall, mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                                   checksum=checksum, synced=clock.synced)
            produced = outgoing(record)
            rows, messages = _outbox_rows(produced, record=record, wall=wall, clock=clock,
                                          last_seq=int(head.outbox_seq),
                                          prev=str(head.outbox_checksum))
            if rows:
                conn.execute(_INSERT_MESSAGE, rows)
            conn.execute(_UPDATE_HEAD, {
                "journal_seq": seq, "journal_checksum": checksum,
                "outbox_seq": rows[-1]["seq"] if rows else head.outbox_seq,
                "outbox_checksum": rows[-1]["checksum"] if rows else head.outbox_checksum})
        return record, messages

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction (BEGIN IMMEDIATE), serialised within the process."""
        if self._closed:
            raise JournalError("the journal is closed")
        if self._read_only:
            raise JournalError(f"{self._path} is open read-only")
        if self._writer == threading.get_ident():
            raise JournalError("the journal was written to from inside its own append")
        with self._write_lock:
            self._writer = threading.get_ident()
            try:
                with self._engine.connect() as conn:
                    conn.execution_options(journal_write=True)
                    with conn.begin():
                        yield conn
            finally:
                self._writer = None

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """One read transaction: a consistent snapshot of the file."""
        if self._closed:
            raise JournalError("the journal is closed")
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def _create(self, outbox_seq_base: int, created: dict[str, Any]) -> None:
        """Schema, head row and the creation record (seq 1), all in one transaction."""

        def schema(conn: Connection) -> None:
            Base.metadata.create_all(conn)
            for sql in TRIGGERS.values():
                conn.exec_driver_sql(sql)
            conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.exec_driver_sql(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute(insert(HeadRow).values(id=1, journal_seq=0, journal_checksum=GENESIS,
                                                outbox_seq=outbox_seq_base,
                                                outbox_checksum=GENESIS))

        payload = {**created, "schema": SCHEMA_VERSION, "outbox_seq_base": outbox_seq_base}
        self._append(CREATED_KIND, payload, self._clock(), lambda _r: (), setup=schema)
        _fsync_dir(self._path.parent)

    def _check_schema(self) -> None:
        with self._read() as conn:
            app_id = conn.exec_driver_sql("PRAGMA application_id").scalar()
            version = conn.exec_driver_sql("PRAGMA user_version").scalar()
        if app_id != APPLICATION_ID:
            raise JournalUnreadable(f"{self._path} is not a showdown journal "
                                    f"(application_id {app_id}, expected {APPLICATION_ID})")
        if version != SCHEMA_VERSION:
            raise JournalUnreadable(f"{self._path} has journal schema version {version}; "
                                    f"this software reads version {SCHEMA_VERSION}")


# --------------------------------------------------------------------------------------------
# engine, connections, lock


def _engine(path: Path, *, read_only: bool, new: bool) -> Engine:
    mode = "ro" if read_only else ("rwc" if new else "rw")
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)

    engine = sa.create_engine("sqlite+pysqlite://", creator=connect, poolclass=pool.QueuePool,
                              pool_size=2, max_overflow=8)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        _configure(dbapi_conn, read_only=read_only)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("journal_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _configure(conn: sqlite3.Connection, *, read_only: bool) -> None:
    """Per-connection settings, each read back: a durability setting not in force is an error."""
    conn.isolation_level = None  # SQLAlchemy's begin event emits BEGIN
    settings = [("busy_timeout", int(_BUSY_TIMEOUT_S * 1000), int(_BUSY_TIMEOUT_S * 1000)),
                ("foreign_keys", "ON", 1), ("synchronous", "FULL", 2), ("cell_size_check", "ON", 1)]
    if read_only:
        settings.append(("query_only", "ON", 1))
    else:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise JournalUnreadable(f"SQLite refused WAL mode (journal_mode is {mode!r}); "
                                    "the journal must live on a local disk")
    for name, value, expected in settings:
        conn.execute(f"PRAGMA {name} = {value}")
        got = conn.execute(f"PRAGMA {name}").fetchone()
        if got is None or got[0] != expected:
            raise JournalUnreadable(f"PRAGMA {name} is {got!r} after setting it to {value}")


def _lock(path: Path) -> int:
    lock_path = Path(f"{path}.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError as e:
        raise JournalUnreadable(f"cannot create the lock file {lock_path}: {e.strerror}") from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        os.close(fd)
        raise JournalBusy(f"{path} is open for writing by another process (the table daemon?); "
                          "stop it first, or use a read-only command") from e
    return fd


def _unlock(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _db_error(e: BaseException) -> str:
    original = getattr(e, "orig", None)
    return " ".join(str(original if original is not None else e).split())


# --------------------------------------------------------------------------------------------
# encoding rows


def _wall_text(wall: datetime) -> str:
    return wall.isoformat(timespec="microseconds")


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _unflag(value: object) -> bool | None:
    return None if value is None else bool(value)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise JournalError(f"{what} must be non-empty text")
    value = " ".join(value.split())
    if len(value) > _MAX_TEXT:
        raise JournalError(f"{what} is longer than {_MAX_TEXT} characters")
    return value


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as e:
        raise JournalError(f"{what} is not JSON: {e}") from e
    if not isinstance(value, dict):
        raise JournalError(f"{what} is not a JSON object")
    return value


def _record(row: _Row) -> JournalRecord:
    seq = int(row["seq"])
    try:
        return JournalRecord(
            seq=seq, kind=row["kind"],
            payload=_json_object(row["payload"], f"journal seq {seq}: payload"),
            wall=datetime.fromisoformat(row["wall"]), mono_ns=int(row["mono_ns"]),
            boot_id=row["boot_id"], checksum=row["checksum"], synced=_unflag(row["synced"]))
    except (TypeError, ValueError) as e:
        raise JournalError(f"journal seq {seq} cannot be read: {e} (run showdown journal "
                           "verify)") from e


def _message(row: _Row) -> OutboxMessage:
    seq = int(row["seq"])
    try:
        return OutboxMessage(
            seq=seq, record_seq=int(row["record_seq"]),
            topic_suffix=cast(TopicSuffix, row["topic_suffix"]), type=row["type"],
            body=_json_object(row["body"], f"outbox seq {seq}: body"),
            retain=bool(row["retain"]), wall=datetime.fromisoformat(row["wall"]),
            mono_ns=int(row["mono_ns"]), boot_id=row["boot_id"],
            delivered=bool(row["delivered"]), synced=_unflag(row["synced"]))
    except (TypeError, ValueError) as e:
        raise JournalError(f"outbox seq {seq} cannot be read: {e} (run showdown journal "
                           "verify)") from e


def _checked(row: _Row) -> CheckedMessage:
    problems: list[str] = []
    body: dict[str, Any] | None = None
    try:
        body = _json_object(row["body"], "body")
    except JournalError as e:
        problems.append(str(e))
    if _outbox_row_checksum(row, row["prev_checksum"]) != row["checksum"]:
        problems.append("checksum mismatch: the stored message was changed")
    return CheckedMessage(seq=int(row["seq"]), type=str(row["type"]),
                          topic_suffix=str(row["topic_suffix"]), wall=str(row["wall"]),
                          boot_id=str(row["boot_id"]), delivered=bool(row["delivered"]),
                          body=body, problems=tuple(problems))


def _outbox_rows(produced: Sequence[OutgoingLike], *, record: JournalRecord, wall: str,
                 clock: ClockReading, last_seq: int, prev: str,
                 ) -> tuple[list[dict[str, Any]], list[OutboxMessage]]:
    if isinstance(produced, (str, bytes, Mapping)) or not isinstance(produced, Sequence):
        raise JournalError(f"outgoing must return a sequence of messages, got "
                           f"{type(produced).__name__}")
    rows: list[dict[str, Any]] = []
    messages: list[OutboxMessage] = []
    for i, item in enumerate(produced):
        if not all(hasattr(item, a) for a in ("topic_suffix", "type", "body", "retain")):
            raise JournalError(f"outgoing item {i} is a {type(item).__name__}, not a message "
                               "(topic_suffix, type, body, retain)")
        if item.topic_suffix not in TOPIC_SUFFIXES:
            raise JournalError(f"outgoing item {i}: topic_suffix {item.topic_suffix!r} is not "
                               f"one of {sorted(TOPIC_SUFFIXES)}")
        if not isinstance(item.type, str) or not item.type.strip():
            raise JournalError(f"outgoing item {i}: type must be non-empty text")
        if not isinstance(item.body, Mapping):
            raise JournalError(f"outgoing item {i}: body must be a mapping")
        if not isinstance(item.retain, bool):
            raise JournalError(f"outgoing item {i}: retain must be true or false")
        topic = cast(TopicSuffix, item.topic_suffix)
        body = canonical_json(item.body, what=f"outgoing item {i} body")
        seq = last_seq + 1 + i
        checksum = outbox_checksum(seq=seq, record_seq=record.seq, topic_suffix=item.topic_suffix,
                                   type=item.type, body=body, retain=bool(item.retain), wall=wall,
                                   mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                                   synced=clock.synced, prev=prev)
        rows.append({"seq": seq, "record_seq": record.seq, "topic_suffix": item.topic_suffix,
                     "type": item.type, "body": body, "retain": int(bool(item.retain)),
                     "wall": wall, "mono_ns": clock.mono_ns, "boot_id": clock.boot_id,
                     "synced": _flag(clock.synced), "prev_checksum": prev, "checksum": checksum,
                     "delivered": 0, "delivered_wall": None})
        messages.append(OutboxMessage(
            seq=seq, record_seq=record.seq, topic_suffix=topic, type=item.type,
            body=json.loads(body), retain=bool(item.retain), wall=clock.wall,
            mono_ns=clock.mono_ns, boot_id=clock.boot_id, delivered=False, synced=clock.synced))
        prev = checksum
    return rows, messages


# --------------------------------------------------------------------------------------------
# verification (raw rows: no type processing, so damaged values are reported, not raised)


def _stored_flag(value: object) -> object:
    """A stored 0/1/NULL flag as the checksum saw it; anything else as itself (a mismatch)."""
    if value is None or (isinstance(value, int) and value in (0, 1)):
        return _unflag(value)
    return value


def _record_row_checksum(row: Mapping[str, Any], prev: object) -> str:
    return _digest([_RECORD_DOMAIN, row["seq"], row["kind"], row["payload"], row["wall"],
                    row["mono_ns"], row["boot_id"], _stored_flag(row["synced"]), prev])


def _outbox_row_checksum(row: Mapping[str, Any], prev: object) -> str:
    return _digest([_OUTBOX_DOMAIN, row["seq"], row["record_seq"], row["topic_suffix"],
                    row["type"], row["body"], _stored_flag(row["retain"]), row["wall"],
                    row["mono_ns"], row["boot_id"], _stored_flag(row["synced"]), prev])


def _raw_rows(conn: Connection, sql: str) -> Iterator[Mapping[str, Any]]:
    result = conn.exec_driver_sql(sql)
    keys = list(result.keys())
    for values in result:
        yield dict(zip(keys, tuple(values), strict=True))


def _printable(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_sqlite(conn: Connection) -> list[IntegrityProblem]:
    problems: list[IntegrityProblem] = []
    for (line,) in conn.exec_driver_sql("PRAGMA integrity_check"):
        if line != "ok":
            problems.append(IntegrityProblem(area="database", code="sqlite_integrity",
                                             detail=f"SQLite integrity check: {line}"))
    app_id = conn.exec_driver_sql("PRAGMA application_id").scalar()
    if app_id != APPLICATION_ID:
        problems.append(IntegrityProblem(area="database", code="not_a_journal",
                                         detail=f"application_id is {app_id}, "
                                                f"expected {APPLICATION_ID}"))
    present = {str(name) for (name,) in conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for name in TRIGGERS:
        if name not in present:
            problems.append(IntegrityProblem(
                area="database", code="trigger_missing",
                detail=f"the append-only trigger {name} was removed"))
    return problems


def _chain_step(state: _ChainState, row: Mapping[str, Any], computed: str) -> None:
    """The checks shared by both chains: seq order, content checksum, link to the previous row."""
    seq = row["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        state.problem("row_unreadable", f"seq is {_printable(seq)}, not an integer", None)
        return
    if seq > state.expected_seq:
        missing = (f"seq {state.expected_seq}" if seq == state.expected_seq + 1
                   else f"seqs {state.expected_seq} to {seq - 1}")
        state.problem("seq_gap", f"{missing} missing (removed?)", state.expected_seq)
    elif seq < state.expected_seq:
        state.problem("seq_order", f"seq {seq} is out of order", seq)
    if computed != row["checksum"]:
        state.problem("checksum_mismatch",
                      "content does not match its checksum (the row was changed)", seq)
    if row["prev_checksum"] != state.prev_checksum:
        state.problem("chain_broken",
                      "does not follow the previous row (a row before it was removed, "
                      "changed or reordered)", seq)
    state.expected_seq = max(state.expected_seq, seq + 1)
    state.prev_checksum = row["checksum"]
    state.last_seq = seq
    state.rows += 1


def _check_journal_chain(conn: Connection,
                         ) -> tuple[_ChainState, int | None, list[tuple[int, Any]]]:
    """The journal chain; also returns the genesis outbox base and the fault-clearing payloads."""
    state = _ChainState(area="journal", expected_seq=1)
    genesis_base: int | None = None
    cleared: list[tuple[int, Any]] = []
    for row in _raw_rows(conn, "SELECT * FROM journal ORDER BY seq"):
        _chain_step(state, row, _record_row_checksum(row, row["prev_checksum"]))
        seq = row["seq"]
        try:
            payload = _json_object(row["payload"], "payload")
        except JournalError as e:
            state.problem("not_json", str(e), seq)
            continue
        try:
            datetime.fromisoformat(row["wall"])
        except (TypeError, ValueError):
            state.problem("row_unreadable", f"wall is {_printable(row['wall'])}", seq)
        if seq == 1:
            base = payload.get("outbox_seq_base")
            if row["kind"] != CREATED_KIND or not isinstance(base, int) or base < 0:
                state.problem("genesis", "the first record is not the journal's creation record",
                              seq)
            else:
                genesis_base = base
        if row["kind"] == FAULTS_CLEARED_KIND:
            cleared.append((seq, payload.get("faults")))
    if state.rows == 0:
        state.problem("genesis", "the journal has no records (not even its creation record)",
                      None)
    return state, genesis_base, cleared


def _check_outbox_chain(conn: Connection, base: int | None) -> _ChainState:
    state = _ChainState(area="outbox", expected_seq=(base or 0) + 1)
    last_record = 0
    for row in _raw_rows(conn, "SELECT * FROM outbox ORDER BY seq"):
        _chain_step(state, row, _outbox_row_checksum(row, row["prev_checksum"]))
        seq = row["seq"]
        try:
            _json_object(row["body"], "body")
        except JournalError as e:
            state.problem("not_json", str(e), seq)
        record_seq = row["record_seq"]
        if isinstance(record_seq, int) and record_seq < last_record:
            state.problem("record_order", f"caused by journal seq {record_seq}, before the "
                          f"previous message's {last_record}", seq)
        if isinstance(record_seq, int):
            last_record = max(last_record, record_seq)
    return state


def _check_links(conn: Connection) -> list[IntegrityProblem]:
    return [
        IntegrityProblem(area="outbox", code="orphan", seq=int(seq),
                         detail=f"caused by journal seq {_printable(rseq)}, which is missing")
        for seq, rseq in conn.exec_driver_sql(
            "SELECT o.seq, o.record_seq FROM outbox o LEFT JOIN journal j "
            "ON j.seq = o.record_seq WHERE j.seq IS NULL ORDER BY o.seq")
    ]


def _check_head(conn: Connection, journal: _ChainState, outbox: _ChainState,
                outbox_base: int) -> list[IntegrityProblem]:
    rows = list(_raw_rows(conn, "SELECT * FROM head"))
    if len(rows) != 1 or rows[0].get("id") != 1:
        return [IntegrityProblem(area="head", code="head_missing",
                                 detail=f"expected one head row, found {len(rows)}")]
    head = rows[0]
    problems: list[IntegrityProblem] = []
    for area, chain, empty, seq_key, sum_key in (
        ("journal", journal, 0, "journal_seq", "journal_checksum"),
        ("outbox", outbox, outbox_base, "outbox_seq", "outbox_checksum"),
    ):
        last_seq = chain.last_seq if chain.rows else empty
        if head[seq_key] != last_seq or head[sum_key] != chain.prev_checksum:
            problems.append(IntegrityProblem(
                area="head", code="head_mismatch", seq=last_seq,
                detail=f"the {area} ends at seq {last_seq} but the head row says seq "
                       f"{_printable(head[seq_key])} (rows at the end were removed, or the "
                       "head was changed)"))
    return problems


def _check_cleared(conn: Connection, cleared: list[tuple[int, Any]]) -> list[IntegrityProblem]:
    faults = {int(seq) for (seq,) in conn.exec_driver_sql(
        "SELECT seq FROM journal WHERE kind = ?", (FAULT_KIND,))}
    problems: list[IntegrityProblem] = []
    for seq, listed in cleared:
        items = listed if isinstance(listed, list) else None
        if items is None or not all(isinstance(i, dict) and i.get("seq") in faults
                                    for i in items):
            problems.append(IntegrityProblem(
                area="faults", code="bad_clearing", seq=seq,
                detail="the clearing record names faults that were never recorded"))
    return problems

