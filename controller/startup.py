"""The table daemon's start-up from its journal, in time that does not grow with the journal
(docs/journal.md, Checkpoints and Start-up).

1. Open the journal (an unreadable one is the error state).
2. Check it: after the newest signed verified head when there is one (only the tail is read),
   else all of it; SQLite's whole-file check is left to the background after READY. A clean
   check is recorded as a new signed verified head. Problems are the error state, as before.
3. Load the state: the newest checkpoint that passes every check (record, signature, digest,
   snapshot version, config fingerprint, restore) into a fresh core, falling back to the one
   before it, then to the full replay; then replay only the records after it. Each rejected
   checkpoint is logged with its reason; none raises an alert (the chain is intact).
4. The last shoe read per device (so a read the shoe delivers again is not applied twice):
   from the checkpoint's copy, then the records replayed.

With checkpoints off (``[journal] checkpoints = false``) start-up is the old one: full check,
full replay. Everything here runs before the event loop has anything else to do.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from controller.clock import ClockSource
from controller.journal import Journal, JournalError, JournalRecord, JournalUnreadable, is_own_kind
from controller.journal.checkpoints import Checkpoint, find_checkpoints
from controller.journal.rotation import due, recover_rotation, rotate_journal
from controller.journal.verified_head import record_verified, verify
from controller.table_service import TableService
from game.table.snapshot import (
    SNAPSHOT_VERSION,
    SnapshotError,
    is_safe_point,
    restore_snapshot,
    take_snapshot,
)
from wire.signing import Signer

__all__ = ["CHECKPOINTS_TRIED", "ShoeReads", "Started", "checkpoint_body", "fold_shoe_reads",
           "start_journal"]

CHECKPOINTS_TRIED: Final = 3  # then the full replay
_DAMAGED_RECORD: Final = "its record does not match its checksum"

ShoeReads = dict[str, tuple[int, int]]  # device -> (session, read_index) of its last read


@dataclass(slots=True, kw_only=True)
class Started:
    """What start-up produced: the journal (None if unreadable), the state, the faults."""

    journal: Journal | None
    service: TableService
    faults: list[str]
    shoe_reads: ShoeReads = field(default_factory=dict)
    checkpoint_seq: int | None = None  # the checkpoint the state came from, if any
    replayed: int = 0  # input records replayed after it
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds


def start_journal(path: Path, *, service: TableService, fresh: Callable[[], TableService],
                  signer: Signer, checkpoints: bool, log: Any, clock: ClockSource,
                  rotate: str = "never", tournament_sha256: str = "") -> Started:
    """Open, check and load the table's journal (steps 1-4 above), and rotate it when
    `rotate` says it is due (step 5); never raises for a damaged or unreadable journal
    (that is the error state, in `faults`)."""
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        done = recover_rotation(path)
        if done:
            log.warning("journal rotation completed after a restart", detail=done)
        journal = Journal.open(path, clock=clock,
                               created={"tournament_sha256": tournament_sha256})
    except JournalUnreadable as exc:
        log.critical("journal unreadable; entering the error state", error=str(exc))
        return Started(journal=None, service=service, faults=[f"journal_unreadable: {exc}"])
    marks["open"] = time.perf_counter() - t0
    check = verify(journal, signer.public_key if checkpoints else None, full=not checkpoints)
    marks["verify"] = time.perf_counter() - t0 - sum(marks.values())
    log.info("journal verified", how=check.describe(), problems=len(check.problems))
    open_faults = journal.open_faults()
    if check.problems and not open_faults:
        journal.record_fault("journal_integrity", "; ".join(
            f"{p.code} at {p.seq}: {p.detail}" for p in check.problems))
    started = Started(journal=journal, service=service,
                      faults=[f"{f.kind}: {f.detail}" for f in journal.open_faults()])
    if started.faults:
        return started
    if checkpoints:
        record_verified(journal, check.heads, signer, check.scope)
    after = 0
    if checkpoints:
        # A month's checkpoint is a few MB of state: tens of thousands of objects made at
        # once, which the cyclic collector would walk again and again (D413).
        gc.disable()
        try:
            after = _restore(journal, started, fresh, signer, log)
        finally:
            gc.enable()
    marks["restore"] = time.perf_counter() - t0 - sum(marks.values())
    if not started.faults:
        _replay(journal, started, after)
        log.info("journal replayed", records=started.replayed, after=after,
                 checkpoint=started.checkpoint_seq, last_seq=journal.last_seq())
    marks["replay"] = time.perf_counter() - t0 - sum(marks.values())
    if checkpoints and not started.faults:
        _rotate_if_due(started, path, rotate, signer=signer, log=log, clock=clock,
                       tournament_sha256=tournament_sha256)
    marks["rotate"] = time.perf_counter() - t0 - sum(marks.values())
    started.timings = marks
    log.info("journal loaded", **{f"{k}_ms": round(v * 1000, 1) for k, v in marks.items()})
    return started


def _restore(journal: Journal, started: Started, fresh: Callable[[], TableService],
             signer: Signer, log: Any) -> int:
    """Load the newest usable checkpoint into `started.service`; the record seq it covers
    (0: none usable, replay everything)."""
    service = started.service
    for checkpoint in find_checkpoints(journal, signer.public_key, limit=CHECKPOINTS_TRIED):
        problem = _problem(checkpoint)
        if problem is None:
            assert checkpoint.body is not None
            try:
                restore_snapshot(service.core, checkpoint.body["core"])
            except SnapshotError as exc:
                problem = f"its state cannot be restored: {exc}"
                service = fresh()  # that core is discarded
            else:
                started.service = service
                started.checkpoint_seq = checkpoint.seq
                started.shoe_reads = _shoe_reads(checkpoint.body.get("shoe_reads"))
                log.info("journal checkpoint loaded", checkpoint=checkpoint.seq,
                         covers=checkpoint.covers.journal_seq)
                return checkpoint.covers.journal_seq
        if problem.startswith(_DAMAGED_RECORD):
            # Only possible before the verified head (the part after it was just checked):
            # the chain is damaged there, which is the error state (R3), not a fallback.
            journal.record_fault("journal_integrity", f"checksum_mismatch at {checkpoint.seq}: "
                                 "a checkpoint record before the verified head was changed")
            started.faults = [f"{f.kind}: {f.detail}" for f in journal.open_faults()]
            log.critical("journal damaged before its verified head", seq=checkpoint.seq)
            return 0
        log.warning("journal checkpoint not used; trying an older one", checkpoint=checkpoint.seq,
                    reason=problem)
    started.service = service
    return 0


def _rotate_if_due(started: Started, path: Path, policy: str, *, signer: Signer, log: Any,
                   clock: ClockSource, tournament_sha256: str) -> None:
    """Step 5: a new journal file when the policy says so and the table is at a safe point
    with nothing waiting to be delivered (else it is tried again at the next start)."""
    journal = started.journal
    assert journal is not None
    why = due(journal, policy, now=clock().wall, tournament=tournament_sha256)
    if why is None:
        return
    core = started.service.core
    if not is_safe_point(core) or journal.pending_count():
        log.info("journal rotation due; waiting for a safe point and an empty outbox",
                 reason=why)
        return
    body = checkpoint_body(take_snapshot(core), started.shoe_reads)
    journal.close()
    try:
        done = rotate_journal(path, state=body, snapshot_version=SNAPSHOT_VERSION,
                              signer=signer, reason=why, clock=clock,
                              tournament=tournament_sha256)
    except JournalError as exc:
        log.error("journal rotation failed; the journal stays as it was", error=str(exc))
    else:
        log.info("journal rotated", reason=why, archived=str(done.archived),
                 sha256=done.sha256, last_seq=done.heads.outbox_seq)
    started.journal = Journal.open(path, clock=clock)


def _problem(checkpoint: Checkpoint) -> str | None:
    if checkpoint.problem is not None:
        return checkpoint.problem
    if checkpoint.snapshot_version != SNAPSHOT_VERSION:
        return (f"its snapshot version {checkpoint.snapshot_version} is not this software's "
                f"{SNAPSHOT_VERSION}")
    body = checkpoint.body
    if body is None or not isinstance(body.get("core"), Mapping):
        return "its state holds no core snapshot"
    return None


def _replay(journal: Journal, started: Started, after: int) -> None:
    service, replayed = started.service, 0
    reads = started.shoe_reads
    for record in journal.records(after):
        if not is_own_kind(record.kind):
            service.apply(record.kind, record.payload, record.wall)
            replayed += 1
            fold_shoe_reads(reads, (record,))
    started.replayed = replayed


def checkpoint_body(core_state: dict[str, Any], shoe_reads: ShoeReads) -> dict[str, Any]:
    """What a checkpoint stores: the core's snapshot and the last shoe read per device."""
    return {"core": core_state,
            "shoe_reads": {d: [s, i] for d, (s, i) in sorted(shoe_reads.items())}}


def fold_shoe_reads(reads: ShoeReads, records: Iterable[JournalRecord]) -> ShoeReads:
    """Update `reads` with the card records among `records` that carry a shoe session."""
    for record in records:
        if record.kind != "card":
            continue
        p = record.payload
        device, session, index = p.get("device"), p.get("session"), p.get("read_index")
        if isinstance(device, str) and isinstance(session, int) and isinstance(index, int):
            reads[device] = (session, index)
    return reads


def _shoe_reads(value: object) -> ShoeReads:
    """A checkpoint's copy of the last shoe reads ({} when absent or malformed)."""
    if not isinstance(value, Mapping):
        return {}
    out: ShoeReads = {}
    for device, pair in value.items():
        if isinstance(device, str) and isinstance(pair, list) and len(pair) == 2 \
                and all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
            out[device] = (pair[0], pair[1])
    return out
