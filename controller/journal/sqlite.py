"""The journal's SQLite connections: the engine with its per-connection durability settings
(WAL, synchronous=FULL, each read back), the delivery marks' own connection
(synchronous=NORMAL), the writer's exclusive lock file, directory fsync."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path
from typing import Final
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event, pool
from sqlalchemy.engine import Connection, Engine

from controller.journal.records import JournalBusy, JournalUnreadable

__all__ = ["db_error", "engine", "fsync_dir", "lock", "marks_connection", "unlock"]

_BUSY_TIMEOUT_S: Final = 5.0
_SYNCHRONOUS: Final = {"FULL": 2, "NORMAL": 1}


def engine(path: Path, *, read_only: bool, new: bool) -> Engine:
    """A pooled engine on the file: read-only, read-write, or creating it (`new`)."""
    mode = "ro" if read_only else ("rwc" if new else "rw")
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)

    made = sa.create_engine("sqlite+pysqlite://", creator=connect, poolclass=pool.QueuePool,
                            pool_size=2, max_overflow=8)

    @event.listens_for(made, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        _configure(dbapi_conn, read_only=read_only)

    @event.listens_for(made, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("journal_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return made


def marks_connection(path: Path) -> sqlite3.Connection:
    """A read-write connection for the outbox's delivery marks only: WAL with
    ``synchronous=NORMAL`` (its commits are made durable by the next append's fsync or by a
    checkpoint; a mark lost in a power cut only means the message is sent again)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=rw"
    conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                           check_same_thread=False)
    try:
        _configure(conn, read_only=False, synchronous="NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _configure(conn: sqlite3.Connection, *, read_only: bool, synchronous: str = "FULL") -> None:
    """Per-connection settings, each read back: a durability setting not in force is an error."""
    conn.isolation_level = None  # SQLAlchemy's begin event emits BEGIN
    settings = [("busy_timeout", int(_BUSY_TIMEOUT_S * 1000), int(_BUSY_TIMEOUT_S * 1000)),
                ("foreign_keys", "ON", 1), ("synchronous", synchronous, _SYNCHRONOUS[synchronous]),
                ("cell_size_check", "ON", 1)]
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


def lock(path: Path) -> int:
    """Take the writer's exclusive lock on ``<file>.lock``; JournalBusy when another has it."""
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


def unlock(fd: int | None) -> None:
    """Release a lock taken by `lock` (None: nothing to release)."""
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def fsync_dir(directory: Path) -> None:
    """Make a created or renamed file's directory entry durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def db_error(e: BaseException) -> str:
    """A database error on one line (SQLite's own message where there is one)."""
    original = getattr(e, "orig", None)
    return " ".join(str(original if original is not None else e).split())
