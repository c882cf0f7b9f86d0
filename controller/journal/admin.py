"""Replacing a damaged journal (docs/journal.md, Recovery): the operator's `replace_journal`
retires the file (renamed, kept) and starts a new one that continues its message seq; and
`verify_file`, the read-only check `showdown journal verify` runs."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import exc

from controller.clock import ClockSource, system_clock
from controller.journal.records import (
    IntegrityProblem,
    JournalError,
    JournalRecord,
    JournalUnreadable,
)
from controller.journal.rows import text
from controller.journal.sqlite import fsync_dir, lock, unlock
from controller.journal.store import Journal

__all__ = ["Replacement", "replace_journal", "verify_file"]


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
    operator = text(operator, "operator")
    reason = text(reason, "reason")
    if not path.exists():
        raise JournalUnreadable(f"no journal at {path}")
    lock_fd = lock(path)
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
        unlock(lock_fd)
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
    fsync_dir(path.parent)
    return retired
