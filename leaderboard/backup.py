"""A consistent copy of the leaderboard's SQLite database, taken while the service runs.

    report = backup_sqlite(Path("/var/lib/showdown-leaderboard/leaderboard.sqlite3"),
                           Path("/var/backups/showdown"), keep=14, retain_days=3 * 366)

SQLite's online backup copies the database in one step, as one read transaction: in WAL mode
the service goes on writing meanwhile, and the copy is the database as of one commit. The copy
is written beside its final name, checked (``PRAGMA integrity_check``, the leaderboard's
tables present, their rows counted), made a single file (journal mode DELETE), flushed to
disk and only then renamed into place, so a file with the final name is always a whole,
checked backup. PostgreSQL is backed up with its own tool (``pg_dump``; docs/operations/
deployment.md). Restoring an older backup loses nothing the tables published: the ingest
finds each table's next seq missing and asks the table to resend (docs/ingest.md).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from runtime.files import file_sha256, fsync_path

__all__ = ["BackupError", "BackupReport", "backup_sqlite", "sqlite_file", "taken_at"]

COUNTED: Final = ("messages", "scores", "entries", "patrons", "audit")
_NAME: Final = re.compile(r"leaderboard-\d{8}T\d{6}Z\.sqlite3")


class BackupError(Exception):
    """The backup was not made (the message says why); nothing is left half-written."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupReport:
    """A backup made and checked, and the older ones removed (``keep``)."""

    path: Path
    size_bytes: int
    sha256: str
    schema: str  # the alembic revision
    rows: dict[str, int]
    seconds: float
    removed: tuple[Path, ...]


def sqlite_file(url: str) -> Path:
    """The database file of a ``sqlite:///`` URL; any other database is a BackupError."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise BackupError(f"{url!r} is not a database URL: {exc}") from None
    if parsed.get_backend_name() != "sqlite":
        raise BackupError(
            f"{parsed.get_backend_name()} is backed up with its own tool: pg_dump"
            " --format=custom --file=FILE (docs/operations/deployment.md)")
    if not parsed.database or parsed.database == ":memory:":
        raise BackupError(f"{url!r} names no database file")
    return Path(parsed.database)


def backup_sqlite(source: Path, out: Path, *, keep: int | None = None,
                  now: datetime | None = None, retain_days: int | None = None
                  ) -> BackupReport:
    """Copy `source` to `out` (a file, or a directory for a timestamped name) and check it;
    with `keep`, remove all but the newest `keep` timestamped backups in that directory,
    never one younger than `retain_days` (the records' retention, D381)."""
    if keep is not None and keep < 1:
        raise BackupError(f"--keep must be at least 1, got {keep}")
    if retain_days is not None and retain_days < 0:
        raise BackupError(f"the retention must not be negative, got {retain_days} days")
    if not source.is_file():
        raise BackupError(f"no database file at {source}")
    stamp = (now or datetime.now(UTC)).astimezone(UTC)
    target = out / f"leaderboard-{stamp:%Y%m%dT%H%M%SZ}.sqlite3" if out.is_dir() else out
    if keep is not None and not out.is_dir():
        raise BackupError(f"--keep needs --out to be a directory, not {out}")
    if target.exists():
        raise BackupError(f"{target} exists: a backup is never overwritten")
    if not target.parent.is_dir():
        raise BackupError(f"no directory {target.parent}")
    partial = target.with_name(f".{target.name}.partial")
    started = time.monotonic()
    try:
        schema, rows = _copy(source, partial)
        fsync_path(partial)
        partial.rename(target)
        fsync_path(target.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    seconds = time.monotonic() - started
    retained_after = stamp - timedelta(days=retain_days or 0)
    removed = _prune(target.parent, keep, retained_after) if keep is not None else ()
    return BackupReport(path=target, size_bytes=target.stat().st_size, sha256=file_sha256(target),
                        schema=schema, rows=rows, seconds=seconds, removed=removed)


def _copy(source: Path, partial: Path) -> tuple[str, dict[str, int]]:
    try:
        # Read-write, as the service opens it: a read-only open of a WAL database fails
        # when its -shm file is absent. The backup only reads.
        src = sqlite3.connect(source, timeout=30)
        try:
            dst = sqlite3.connect(partial)
            try:
                src.backup(dst)  # all pages in one step: one consistent snapshot
                dst.execute("PRAGMA journal_mode=DELETE")
                return _check(dst, source)
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise BackupError(f"cannot back up {source}: {exc}") from None


def _check(copy: sqlite3.Connection, source: Path) -> tuple[str, dict[str, int]]:
    found = copy.execute("PRAGMA integrity_check").fetchall()
    if found != [("ok",)]:
        raise BackupError(f"the copy of {source} fails its integrity check:"
                          f" {'; '.join(str(r[0]) for r in found[:3])}")
    tables = {r[0] for r in copy.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in (*COUNTED, "alembic_version") if t not in tables]
    if missing:
        raise BackupError(f"{source} is not a leaderboard database (no {', '.join(missing)})")
    schema = copy.execute("SELECT version_num FROM alembic_version").fetchone()
    rows = {t: int(copy.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # noqa: S608
            for t in COUNTED}
    return (str(schema[0]) if schema else "?"), rows


def taken_at(path: Path) -> datetime:
    """When a timestamped backup (``leaderboard-<UTC time>.sqlite3``) was taken."""
    return datetime.strptime(path.name[len("leaderboard-"):-len(".sqlite3")],
                             "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _prune(directory: Path, keep: int, retained_after: datetime) -> tuple[Path, ...]:
    """Remove all but the newest `keep` timestamped backups, except those taken after
    `retained_after` (still within the retention); other files are left alone."""
    ours = sorted(p for p in directory.iterdir() if _NAME.fullmatch(p.name))
    old = tuple(p for p in ours[:-keep] if taken_at(p) <= retained_after)
    for path in old:
        path.unlink()
    return old
