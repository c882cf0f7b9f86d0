"""The journal's one writer thread: every append and every batch of delivery marks runs on it,
in the order submitted, so the event loop never waits on SQLite or an fsync and no two writes
of the daemon contend for the journal's lock (docs/performance.md).

    writer = JournalWriter("journal-t01")
    record, messages = await writer.call(journal.append, kind=..., payload=..., ...)
    writer.submit(flush)          # fire and forget (the delivery marks)
    writer.close()                # waits for what was submitted
"""

from __future__ import annotations

from runtime.worker_thread import WorkerThread

__all__ = ["JournalWriter"]


class JournalWriter(WorkerThread):
    """One dedicated thread for the journal's writes (`runtime.worker_thread`: FIFO order;
    a caller cancelled while waiting does not stop its write)."""

    def __init__(self, name: str = "journal-writer") -> None:
        """Start nothing yet: the thread is made at the first call."""
        super().__init__(name)
