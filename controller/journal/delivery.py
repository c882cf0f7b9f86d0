"""The outbox as the MQTT link drains it while the daemon runs (docs/journal.md, Delivery).

Each append's messages are handed to the feed in memory, in seq order, right after their
commit (`offer`); the link takes them from there (`pending`) without reading SQLite. The
journal is read only when the feed cannot vouch for its queue: at start, after a gap in the
seqs offered (an append whose messages were never offered), and while a backlog larger than
one read is drained.

The broker's acknowledgements (`mark_delivered`) return at once: the marks are written in
batches, one UPDATE each, on the journal's writer thread, on a connection of their own with
``synchronous=NORMAL``. A mark lost in a power cut only means the message is published again
after the restart; the receiver keeps one message per (table, seq). Nothing is published that
is not committed: `offer` is called after the append's commit returned.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
from collections import deque
from collections.abc import Sequence
from typing import Final

from controller.clock import ClockSource, system_clock
from controller.journal import rows, sqlite
from controller.journal.records import StoredMessage
from controller.journal.store import Journal
from controller.journal.writer import JournalWriter
from runtime.logs import get_logger

__all__ = ["OutboxFeed"]

# One UPDATE per run of consecutive seqs (the link acknowledges in seq order: one run, mostly).
_MARK_RUN: Final = ("UPDATE outbox SET delivered = 1, delivered_wall = ? "
                    "WHERE delivered = 0 AND seq BETWEEN ? AND ?")

_log = get_logger("showdown.journal.delivery")


class OutboxFeed:
    """The link's `OutboxSource` over a journal: new messages in memory, marks in batches."""

    def __init__(self, journal: Journal, writer: JournalWriter, *,
                 clock: ClockSource = system_clock) -> None:
        """Empty until the first `pending` reads the journal's undelivered messages."""
        self._journal = journal
        self._writer = writer
        self._clock = clock
        self._queue: deque[StoredMessage] = deque()
        # The last seq the queue holds (or held): new messages follow it. None: the journal
        # may hold undelivered messages the queue does not, so `pending` reads it next time
        # the queue runs empty.
        self._tail: int | None = None
        self._lock = threading.Lock()  # guards the marks, shared with the writer thread
        self._unwritten: set[int] = set()  # acknowledged, mark not committed yet
        self._flush_queued = False
        self._written = 0
        self._failures = 0
        self._conn: sqlite3.Connection | None = None  # used on the writer thread only
        self._closed = False

    # --- what the daemon calls -------------------------------------------------------------

    def offer(self, messages: Sequence[StoredMessage]) -> None:
        """Messages one append committed, in seq order (call after the commit, in append
        order); a gap from the last one offered makes the feed read the journal again."""
        tail = self._tail
        if tail is None or not messages:
            return
        fresh = [m for m in messages if m.seq > tail]  # already read from the journal
        if not fresh:
            return
        if fresh[0].seq != tail + 1:
            _log.warning("outbox_feed_gap", expected=tail + 1, offered=fresh[0].seq)
            self._tail = None
            return
        self._queue.extend(fresh)
        self._tail = fresh[-1].seq

    @property
    def marks_written(self) -> int:
        """How many delivery marks have been committed (status caches key on it)."""
        return self._written

    @property
    def mark_failures(self) -> int:
        """Batches of marks that could not be written (they are tried again)."""
        return self._failures

    def close(self) -> None:
        """Write the marks still waiting and close their connection (blocks; idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._writer.closed:
            self._close_connection()
            return
        self._writer.submit(self._flush).result()
        self._writer.submit(self._close_connection).result()

    # --- wire.outbox.OutboxSource, for the MQTT link ---------------------------------------

    def pending(self, limit: int = 100) -> list[StoredMessage]:
        """Up to `limit` undelivered messages, lowest seq first (from memory when it can)."""
        if not self._queue and self._tail is None:
            self._read_journal(limit)
        return list(itertools.islice(self._queue, limit))

    def mark_delivered(self, seq: int) -> None:
        """The broker acknowledged `seq`: drop it from the queue and queue its mark."""
        if self._queue and self._queue[0].seq == seq:
            self._queue.popleft()
        elif any(m.seq == seq for m in self._queue):
            self._queue = deque(m for m in self._queue if m.seq != seq)
        with self._lock:
            self._unwritten.add(seq)
            queue_flush = not self._flush_queued and not self._closed
            self._flush_queued = True
        if queue_flush:
            self._writer.submit(self._flush)

    # --- internals -------------------------------------------------------------------------

    def _read_journal(self, limit: int) -> None:
        """Fill the queue from the journal's undelivered messages, leaving out those whose
        marks are not written yet."""
        last = self._journal.last_seq()  # first: a message committed after it is offered
        with self._lock:
            unwritten = set(self._unwritten)
        found = self._journal.pending(limit + len(unwritten))
        undelivered = [m for m in found if m.seq not in unwritten]
        kept = undelivered[:limit]
        self._queue.extend(kept)
        if len(found) < limit + len(unwritten) and len(undelivered) <= limit:
            self._tail = max(last, kept[-1].seq if kept else last)  # the queue holds them all
        else:
            self._tail = None  # more than one read: read again when the queue runs empty

    def _flush(self) -> None:
        """On the writer thread: commit every mark waiting, in one transaction."""
        with self._lock:
            batch = sorted(self._unwritten)
            self._flush_queued = False
        if not batch:
            return
        wall = rows.wall_text(self._clock().wall)
        try:
            conn = self._conn or sqlite.marks_connection(self._journal.path)
            self._conn = conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(_MARK_RUN, [(wall, first, last)
                                             for first, last in _runs(batch)])
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        except (sqlite3.Error, OSError) as exc:
            # Not written: the marks stay queued and go with the next batch; at worst the
            # messages are published again after a restart (the receiver deduplicates).
            self._failures += 1
            _log.warning("delivery_marks_not_written", marks=len(batch), error=str(exc))
            return
        with self._lock:
            self._unwritten.difference_update(batch)
        self._written += len(batch)

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _runs(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted seqs as (first, last) runs of consecutive numbers."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and seq == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs
