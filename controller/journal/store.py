"""The journal itself: opening (or creating) the file, appending an input and the messages it
causes in one transaction, replay, the outbox, faults and verification (docs/journal.md)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc, insert, select, update
from sqlalchemy.dialects.sqlite import pysqlite
from sqlalchemy.engine import Connection, Engine

from controller.clock import ClockReading, ClockSource, system_clock
from controller.journal import rows, sqlite
from controller.journal.checksums import GENESIS, record_checksum, stored_json
from controller.journal.deciding import Decider, Decision, Entry, Stored
from controller.journal.integrity import ChainHeads, check_connection
from controller.journal.models import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    TRIGGERS,
    Base,
    HeadRow,
    JournalRow,
    OutboxRow,
)
from controller.journal.pause import pause_at
from controller.journal.records import (
    CREATED_KIND,
    FAULT_KIND,
    FAULTS_CLEARED_KIND,
    OWN_KIND_PREFIX,
    CheckedMessage,
    Fault,
    IntegrityProblem,
    JournalDamaged,
    JournalError,
    JournalRecord,
    JournalUnreadable,
    StoredMessage,
    is_own_kind,
)
from runtime.files import fsync_path
from wire.outbox import OutgoingItem

__all__ = ["CREATE_HOOK_ENV", "Journal"]

CREATE_HOOK_ENV: Final = "SHOWDOWN_TEST_PAUSE_CREATE"  # crash tests only (journal/pause.py)
_SIDE_FILES: Final = ("-wal", "-shm", "-journal")

_Given = TypeVar("_Given")
_Decided = TypeVar("_Decided", bound=Decision)

_BATCH: Final = 500
_HEAD_COLUMNS: Final = ("journal_seq", "journal_checksum", "outbox_seq", "outbox_checksum")
_NAMED: Final = pysqlite.dialect(paramstyle="named")


def _sql(statement: sa.ClauseElement) -> str:
    return str(statement.compile(dialect=_NAMED))


# The append's four statements, compiled once from the schema (models) to SQL text that runs
# on the driver's connection: the hot path, without SQLAlchemy's per-statement work.
_ONLY_ROW: Final = HeadRow.id == sa.literal_column("1")
_SELECT_HEAD: Final = _sql(select(*(getattr(HeadRow, c) for c in _HEAD_COLUMNS))
                           .where(_ONLY_ROW))
_INSERT_RECORD: Final = _sql(insert(JournalRow))
_INSERT_MESSAGE: Final = _sql(insert(OutboxRow))
_UPDATE_HEAD: Final = _sql(update(HeadRow).where(_ONLY_ROW)
                           .values({c: sa.bindparam(c) for c in _HEAD_COLUMNS}))


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
        lock_fd = None if read_only else sqlite.lock(path)
        try:
            return cls._open(path, read_only=read_only, create=create, clock=clock,
                             outbox_seq_base=outbox_seq_base, created=created, lock_fd=lock_fd)
        except BaseException:
            sqlite.unlock(lock_fd)
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
        if new:
            cls._create_file(path, clock=clock, outbox_seq_base=outbox_seq_base,
                             created=dict(created or {}))
        journal = cls(path=path, engine=sqlite.engine(path, read_only=read_only, new=False),
                      read_only=read_only, clock=clock, lock_fd=None)
        try:
            journal._check_schema()
        except BaseException as e:
            journal.close()
            if isinstance(e, (exc.SQLAlchemyError, sqlite3.Error)):
                raise JournalUnreadable(f"{path}: {sqlite.db_error(e)}") from e
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
        sqlite.unlock(self._lock_fd)
        self._lock_fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # writing

    def append(self, *, kind: str, payload: Mapping[str, Any], clock: ClockReading,
               outgoing: Callable[[JournalRecord], Sequence[OutgoingItem]],
               ) -> tuple[JournalRecord, list[StoredMessage]]:
        """Append one input and the messages it causes in ONE transaction (journal first).

        Inserts the record, calls ``outgoing(record)`` (the apply step), inserts what it
        returns into the outbox with consecutive seqs, and commits. If `outgoing` raises,
        everything is rolled back (nothing stored, no seq used) and the exception propagates.
        """
        _check_kind(kind)
        return self._append(kind, payload, clock, outgoing)

    def append_batch(self, entries: Sequence[Entry[_Given]],
                     decider: Decider[_Given, _Decided]) -> list[Stored[_Decided]]:
        """Append several inputs in ONE transaction (one commit, one fsync: group commit),
        each decided on as soon as its record is inserted: in order, for each entry, the
        record, then ``decider.decide(record, entry.given)``, then the decision's messages
        in the outbox (controller/journal/deciding.py). All of them are stored or, if one is
        refused or `decide` raises, none (no seq used) and the exception propagates."""
        for entry in entries:
            _check_kind(entry.kind)
            _check_value(entry.payload, entry.clock)
        forms = [stored_json(entry.payload, what="payload") for entry in entries]
        if not entries:
            return []
        with self._write_driver() as cursor:
            # The head is read once and written once for the whole batch (it is the last
            # record's): the rows and the head commit together or not at all.
            head = _read_head(cursor)
            done: list[Stored[_Decided]] = []
            for entry, form in zip(entries, forms, strict=True):
                record, head = _insert_record(cursor, entry.kind, form, entry.clock,
                                              head=head)
                decision = decider.decide(record, entry.given)
                messages, head = _insert_messages(cursor, record, decision.messages,
                                                  entry.clock, head=head)
                done.append(Stored(record=record, messages=messages, decision=decision))
            _write_head(cursor, head)
            return done

    def mark_delivered(self, seq: int) -> None:
        """Mark an outbox message delivered (after the broker's acknowledgement); idempotent."""
        wall = rows.wall_text(self._clock().wall)
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
        kind = rows.text(kind, "fault kind")
        detail = rows.text(detail, "fault detail")
        record, _ = self._append(FAULT_KIND, {"kind": kind, "detail": detail}, self._clock(),
                                 lambda _r: ())
        return Fault(seq=record.seq, kind=kind, detail=detail, wall=record.wall,
                     boot_id=record.boot_id)

    def clear_faults(self, operator: str, reason: str) -> JournalRecord | None:
        """Clear every open fault, appending a record of who and why; None if none was open.

        Refused (JournalDamaged) while `verify()` finds problems: a damaged journal is not
        cleared but replaced (docs/journal.md, Recovery).
        """
        operator = rows.text(operator, "operator")
        reason = rows.text(reason, "reason")
        problems = self.verify()
        if problems:
            listed = "; ".join(str(p) for p in problems[:3])
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise JournalDamaged(
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
                found = conn.execute(
                    select(JournalRow).where(JournalRow.seq > last)
                    .order_by(JournalRow.seq).limit(_BATCH)
                ).mappings().all()
            if not found:
                return
            for row in found:
                yield rows.record(row)
            last = int(found[-1]["seq"])

    def last_record_seq(self) -> int:
        """The seq of the last journal record (0 when empty)."""
        with self._read() as conn:
            return int(conn.scalar(select(sa.func.coalesce(sa.func.max(JournalRow.seq), 0))) or 0)

    def last_seq(self) -> int:
        """The last outbox seq issued: the table's message seq (its base when none yet)."""
        with self._read() as conn:
            return int(conn.scalar(select(HeadRow.outbox_seq).where(HeadRow.id == 1)) or 0)

    def first_seq(self) -> int:
        """The lowest message seq this file holds (after its base: a rotated file's first is
        the last of the file before + 1); the next one issued when it holds none yet."""
        with self._read() as conn:
            first = conn.scalar(select(sa.func.min(OutboxRow.seq)))
        return int(first) if first is not None else self.last_seq() + 1

    def pending(self, limit: int = 100) -> list[StoredMessage]:
        """Undelivered messages, lowest seq first."""
        with self._read() as conn:
            found = conn.execute(
                select(OutboxRow).where(OutboxRow.delivered == 0)
                .order_by(OutboxRow.seq).limit(limit)
            ).mappings().all()
        return [rows.message(r) for r in found]

    def pending_count(self) -> int:
        """How many messages are undelivered (a count, without reading them)."""
        with self._read() as conn:
            return int(conn.scalar(select(sa.func.count()).select_from(OutboxRow)
                                   .where(OutboxRow.delivered == 0)) or 0)

    def messages(self, from_seq: int, to_seq: int | None = None) -> list[StoredMessage]:
        """Messages with from_seq <= seq <= to_seq (to the end if None), delivered or not."""
        query = select(OutboxRow).where(OutboxRow.seq >= from_seq)
        if to_seq is not None:
            query = query.where(OutboxRow.seq <= to_seq)
        with self._read() as conn:
            found = conn.execute(query.order_by(OutboxRow.seq)).mappings().all()
        return [rows.message(r) for r in found]

    def latest_messages(self, types: Collection[str], limit: int | None,
                        containing: str | None = None) -> list[CheckedMessage]:
        """The last `limit` (None: all) messages of the given types, oldest first, each checked
        on its own; `containing` keeps only bodies whose stored text contains it.

        Tolerant, for recall: a body that is not JSON or a row whose checksum does not match
        is returned with its problems named rather than raising.
        """
        if limit is not None and limit <= 0:
            return []
        query = select(OutboxRow).where(OutboxRow.type.in_(list(types)))
        if containing is not None:
            query = query.where(OutboxRow.body.contains(containing, autoescape=True))
        query = query.order_by(OutboxRow.seq.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._read() as conn:
            found = conn.execute(query).mappings().all()
        return [rows.checked(r) for r in reversed(found)]

    def open_faults(self) -> list[Fault]:
        """Faults recorded and not yet cleared by an operator, oldest first."""
        faults: dict[int, Fault] = {}
        with self._read() as conn:
            found = conn.execute(
                select(JournalRow)
                .where(JournalRow.kind.in_([FAULT_KIND, FAULTS_CLEARED_KIND]))
                .order_by(JournalRow.seq)
            ).mappings().all()
        for row in found:
            record = rows.record(row)
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

    def verify(self, start: ChainHeads | None = None, *,
               whole_file: bool = True) -> list[IntegrityProblem]:
        """Check the whole file: SQLite's own check, schema, both chains, the head, the faults.

        `start` (a verified head) checks both chains only after it; `whole_file=False` skips
        SQLite's own page-by-page check. Returns every problem found (empty = intact); never
        raises for damaged data.
        """
        problems: list[IntegrityProblem] = []
        try:
            with self._read() as conn:
                problems += check_connection(conn, start, whole_file=whole_file)
        except (exc.SQLAlchemyError, sqlite3.Error) as e:
            problems.append(IntegrityProblem(
                area="database", code="unreadable",
                detail=f"SQLite cannot read the file: {sqlite.db_error(e)}"))
        return problems

    def verify_message(self, seq: int) -> list[str]:
        """Check one outbox message's own checksum and JSON (not the chain); [] when intact."""
        with self._read() as conn:
            row = conn.execute(select(OutboxRow).where(OutboxRow.seq == seq)).mappings().first()
        if row is None:
            return [f"no outbox message with seq {seq}"]
        return list(rows.checked(row).problems)

    # ----------------------------------------------------------------------------------------
    # internals

    def _append(self, kind: str, payload: Mapping[str, Any], clock: ClockReading,
                outgoing: Callable[[JournalRecord], Sequence[OutgoingItem]],
                setup: Callable[[Connection], None] | None = None,
                ) -> tuple[JournalRecord, list[StoredMessage]]:
        _check_value(payload, clock)
        form = stored_json(payload, what="payload")
        if setup is None:
            with self._write_driver() as cursor:
                return _append_rows(cursor, kind, form, clock, outgoing)
        with self._write() as conn:  # creating the file: the schema first
            setup(conn)
            cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            return _append_rows(cursor, kind, form, clock, outgoing)

    def _check_writable(self) -> None:
        if self._closed:
            raise JournalError("the journal is closed")
        if self._read_only:
            raise JournalError(f"{self._path} is open read-only")
        if self._writer == threading.get_ident():
            raise JournalError("the journal was written to from inside its own append")

    @contextmanager
    def _write_driver(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction (BEGIN IMMEDIATE) on the driver's connection, serialised
        within the process: the append's hot path."""
        self._check_writable()
        with self._write_lock:
            self._writer = threading.get_ident()
            try:
                pooled = self._engine.raw_connection()
                try:
                    cursor = pooled.driver_connection.cursor()  # type: ignore[union-attr]
                    cursor.execute("BEGIN IMMEDIATE")
                    try:
                        yield cursor
                        cursor.execute("COMMIT")
                    except BaseException:
                        with contextlib.suppress(sqlite3.Error):
                            cursor.execute("ROLLBACK")
                        raise
                finally:
                    pooled.close()  # back to the pool
            finally:
                self._writer = None

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction (BEGIN IMMEDIATE), serialised within the process."""
        self._check_writable()
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

    @classmethod
    def _create_file(cls, path: Path, *, clock: ClockSource, outbox_seq_base: int,
                     created: dict[str, Any]) -> None:
        """Build the new journal at ``<path>.creating`` and rename it into place only once it
        is complete and in its main file: a kill part-way leaves only the staging file
        (removed by the next attempt), never a half-made journal at `path`."""
        staging = path.with_name(f"{path.name}.creating")
        for leftover in (staging, *(Path(f"{staging}{s}") for s in _SIDE_FILES)):
            leftover.unlink(missing_ok=True)
        journal = cls(path=staging, engine=sqlite.engine(staging, read_only=False, new=True),
                      read_only=False, clock=clock, lock_fd=None)
        try:
            journal._create(outbox_seq_base, created)
            with journal._engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except (exc.SQLAlchemyError, sqlite3.Error) as e:
            raise JournalUnreadable(f"{staging}: {sqlite.db_error(e)}") from e
        finally:
            journal.close()
        wal = Path(f"{staging}-wal")
        if wal.exists() and wal.stat().st_size:  # not all in the main file: keep it there
            raise JournalUnreadable(f"{staging}: its write-ahead log was not checkpointed")
        pause_at(CREATE_HOOK_ENV, "created")
        fsync_path(staging)
        staging.rename(path)
        for side in _SIDE_FILES:
            Path(f"{staging}{side}").unlink(missing_ok=True)
        sqlite.fsync_dir(path.parent)

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
            pause_at(CREATE_HOOK_ENV, "in_transaction")

        payload = {**created, "schema": SCHEMA_VERSION, "outbox_seq_base": outbox_seq_base}
        self._append(CREATED_KIND, payload, self._clock(), lambda _r: (), setup=schema)

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


_Head = tuple[int, str, int, str]  # journal seq and checksum, outbox seq and checksum


def _read_head(cursor: sqlite3.Cursor) -> _Head:
    """The head row: the last record's seq and checksum, the last message's."""
    head_seq, head_checksum, head_outbox_seq, head_outbox_checksum = \
        cursor.execute(_SELECT_HEAD).fetchone()
    return int(head_seq), str(head_checksum), int(head_outbox_seq), str(head_outbox_checksum)


def _write_head(cursor: sqlite3.Cursor, head: _Head) -> None:
    cursor.execute(_UPDATE_HEAD, {"journal_seq": head[0], "journal_checksum": head[1],
                                  "outbox_seq": head[2], "outbox_checksum": head[3]})


def _check_kind(kind: object) -> None:
    """A caller's record kind: non-empty text without spaces, not one of the journal's own."""
    if not isinstance(kind, str) or not kind or kind != kind.strip():
        raise JournalError(f"record kind must be non-empty text without spaces, got {kind!r}")
    if is_own_kind(kind):
        raise JournalError(f"record kinds starting with {OWN_KIND_PREFIX!r} are reserved")


def _check_value(payload: object, clock: object) -> None:
    """A record's payload is a mapping and its stamp a `ClockReading`."""
    if not isinstance(payload, Mapping):
        raise JournalError(f"payload must be a mapping, got {type(payload).__name__}")
    if not isinstance(clock, ClockReading):
        raise JournalError(f"clock must be a ClockReading, got {type(clock).__name__}")


def _append_rows(cursor: sqlite3.Cursor, kind: str, form: tuple[str, Any], clock: ClockReading,
                 outgoing: Callable[[JournalRecord], Sequence[OutgoingItem]],
                 ) -> tuple[JournalRecord, list[StoredMessage]]:
    """Inside a write transaction: the record after the head, its messages, the new head."""
    record, head = _insert_record(cursor, kind, form, clock, head=_read_head(cursor))
    messages, head = _insert_messages(cursor, record, outgoing(record), clock, head=head)
    _write_head(cursor, head)
    return record, messages


def _insert_record(cursor: sqlite3.Cursor, kind: str, form: tuple[str, Any],
                   clock: ClockReading, *, head: _Head) -> tuple[JournalRecord, _Head]:
    """Inside a write transaction: the record after ``head`` (its payload's stored text and
    the payload read back from it); the head it makes (not written)."""
    payload_text, payload = form
    wall = rows.wall_text(clock.wall)
    head_seq, head_checksum, head_outbox_seq, head_outbox_checksum = head
    seq = head_seq + 1
    prev = str(head_checksum)
    checksum = record_checksum(seq=seq, kind=kind, payload=payload_text, wall=wall,
                               mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                               synced=clock.synced, prev=prev)
    cursor.execute(_INSERT_RECORD, {
        "seq": seq, "kind": kind, "payload": payload_text, "wall": wall,
        "mono_ns": clock.mono_ns, "boot_id": clock.boot_id,
        "synced": rows.flag(clock.synced), "prev_checksum": prev, "checksum": checksum})
    record = JournalRecord(seq=seq, kind=kind, payload=payload,
                           wall=clock.wall, mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                           checksum=checksum, synced=clock.synced)
    return record, (seq, checksum, head_outbox_seq, head_outbox_checksum)


def _insert_messages(cursor: sqlite3.Cursor, record: JournalRecord,
                     produced: Sequence[OutgoingItem], clock: ClockReading, *, head: _Head,
                     ) -> tuple[list[StoredMessage], _Head]:
    """Inside a write transaction: the messages ``record`` caused, after ``head``'s last
    one, with consecutive seqs; the head they make (not written)."""
    seq, checksum, head_outbox_seq, head_outbox_checksum = head
    outbox, messages = rows.outbox_rows(produced, record=record,
                                        wall=rows.wall_text(clock.wall), clock=clock,
                                        last_seq=int(head_outbox_seq),
                                        prev=str(head_outbox_checksum))
    if outbox:
        cursor.executemany(_INSERT_MESSAGE, outbox)
        return messages, (seq, checksum, int(outbox[-1]["seq"]), str(outbox[-1]["checksum"]))
    return messages, head
