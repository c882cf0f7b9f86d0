"""Rotating the journal file: the current file is kept read-only under a dated name and a new
one continues both chains and starts with a checkpoint, so start-up never reads the old file
(docs/journal.md, Rotation).

The new file's creation record (seq 1) names the previous file (``continues``: its name, its
SHA-256, both chains' heads and why it was rotated); its message seq continues after the old
one's (`Journal.open(outbox_seq_base=...)`). Its second record is a checkpoint of the table's
state at that moment (a safe point, given by the caller), its third a signed verified head.

Crash safety: the new file is made complete beside the current one (``<journal>.next``),
closed and fsynced; then the current file is renamed to its archive name and ``.next`` to the
journal's name. `recover_rotation` (run before every open for writing) finishes a rotation a
crash interrupted between the two renames, and removes a ``.next`` left before the first
one, so there is always one usable current journal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from controller.clock import ClockSource, system_clock
from controller.journal import sqlite
from controller.journal.checkpoints import heads_json, read_heads, write_checkpoint
from controller.journal.integrity import ChainHeads
from controller.journal.pause import pause_at
from controller.journal.records import JournalError, JournalUnreadable
from controller.journal.store import Journal
from controller.journal.verified_head import record_verified
from runtime.files import file_sha256, fsync_path
from wire.signing import Signer

__all__ = ["HOOK_ENV", "Rotation", "due", "journal_files", "previous_file", "recover_rotation",
           "rotate_journal"]

# Test builds only: the name of a rotation step to stop at (the crash test kills the process
# there); read nowhere else. Steps: "next_written" (the new file complete beside the current
# one), "archived" (the current file renamed, the new one not yet in place).
HOOK_ENV: Final = "SHOWDOWN_TEST_PAUSE_ROTATION"
_NEXT: Final = ".next"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rotation:
    """What a rotation did: where the old file went and how the new one continues it."""

    archived: Path
    sha256: str
    heads: ChainHeads  # the old file's heads, which the new one continues


def _next(path: Path) -> Path:
    return path.with_name(path.name + _NEXT)


def _companions(path: Path) -> Iterator[Path]:
    for suffix in ("", "-wal", "-shm"):
        yield Path(f"{path}{suffix}")


def previous_file(journal: Journal) -> Path | None:
    """The file this journal continues (from its creation record), or None."""
    first = next(journal.records(), None)
    if first is None:
        return None
    continues = first.payload.get("continues")
    name = continues.get("file") if isinstance(continues, Mapping) else None
    return journal.path.with_name(name) if isinstance(name, str) and "/" not in name else None


def journal_files(path: Path, *, limit: int = 24) -> Iterator[Path]:
    """The journal and the files it continues, newest first (each opened read-only)."""
    current: Path | None = path  # the first is always given (opening it names its error)
    for _ in range(limit):
        if current is None or (current != path and not current.exists()):
            return
        yield current
        with Journal.open(current, read_only=True) as journal:
            current = previous_file(journal)


def due(journal: Journal, policy: str, *, now: datetime, tournament: str) -> str | None:
    """Why the journal should be rotated now under `policy` ("month", "tournament",
    "never"), or None: a new month since its creation record, or another tournament file
    digest than its last start record names."""
    if policy == "never":
        return None
    first = next(journal.records(), None)
    if first is None:
        return None
    if policy == "month":
        if (first.wall.year, first.wall.month) != (now.year, now.month):
            return f"a new month ({now:%Y-%m}; the journal began {first.wall:%Y-%m})"
        return None
    started = first.payload.get("tournament_sha256")
    if isinstance(started, str) and started and tournament and started != tournament:
        return "another tournament (the tournament settings file changed)"
    return None


def recover_rotation(path: Path) -> str | None:
    """Finish or undo a rotation a crash interrupted; what was done (None: nothing)."""
    pending = _next(path)
    if not pending.exists():
        return None
    if path.exists():  # the swap had not begun: the current file is whole
        for part in _companions(pending):
            part.unlink(missing_ok=True)
        sqlite.fsync_dir(path.parent)
        return f"removed the unfinished new journal {pending.name}"
    with Journal.open(pending, read_only=True) as journal:
        previous = previous_file(journal)
    if previous is None or not previous.exists():
        raise JournalUnreadable(f"{path} is missing and {pending.name} does not continue a "
                                "file that exists: restore the journal (docs/journal.md)")
    pending.rename(path)
    sqlite.fsync_dir(path.parent)
    return f"finished the rotation to {path.name} (the previous file is {previous.name})"


def rotate_journal(path: Path | str, *, state: Mapping[str, Any], snapshot_version: int,
                   signer: Signer, reason: str, clock: ClockSource = system_clock,
                   tournament: str = "") -> Rotation:
    """Rotate the journal at `path` (closed: this takes its lock) whose table is at a safe
    point in `state` (a checkpoint body). Refused while messages wait to be delivered."""
    path = Path(path)
    lock_fd = sqlite.lock(path)
    try:
        return _rotate(path, state, snapshot_version=snapshot_version, signer=signer,
                       reason=reason, clock=clock, tournament=tournament)
    finally:
        sqlite.unlock(lock_fd)


def _rotate(path: Path, state: Mapping[str, Any], *, snapshot_version: int, signer: Signer,
            reason: str, clock: ClockSource, tournament: str) -> Rotation:
    old = Journal._open(path, read_only=False, create=False, clock=clock, outbox_seq_base=0,
                        created=None, lock_fd=None)
    try:
        heads, pending = read_heads(old), old.pending_count()
    finally:
        old.close()  # the last connection: SQLite folds the WAL into the file
    if pending:
        raise JournalError(f"{pending} message(s) are not yet delivered: rotate once the "
                           "outbox is empty")
    digest = file_sha256(path)
    stamp = clock().wall.strftime("%Y%m%dT%H%M%SZ")
    archived = path.with_name(f"{path.name}.{stamp}")
    n = 1
    while any(p.exists() for p in _companions(archived)):
        n += 1
        archived = path.with_name(f"{path.name}.{stamp}-{n}")
    pending_path = _next(path)
    for part in _companions(pending_path):
        part.unlink(missing_ok=True)
    continues = {"file": archived.name, "sha256": digest, **heads_json(heads),
                 "reason": reason}
    created = {"continues": continues, "tournament_sha256": tournament}
    new = Journal._open(pending_path, read_only=False, create=True, clock=clock,
                        outbox_seq_base=heads.outbox_seq, created=created, lock_fd=None)
    try:
        write_checkpoint(new, state, covers=read_heads(new), snapshot_version=snapshot_version,
                         signer=signer)
        record_verified(new, read_heads(new), signer, "rotation")
    finally:
        new.close()
    fsync_path(pending_path)
    _pause("next_written")
    for part, target in zip(_companions(path), _companions(archived), strict=True):
        if part.exists():
            part.rename(target)
    sqlite.fsync_dir(path.parent)
    _pause("archived")
    pending_path.rename(path)
    sqlite.fsync_dir(path.parent)
    archived.chmod(0o444)
    return Rotation(archived=archived, sha256=digest, heads=heads)


def _pause(step: str) -> None:
    pause_at(HOOK_ENV, step)
