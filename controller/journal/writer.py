"""The journal's one writer thread: every append and every batch of delivery marks runs on it,
in the order submitted, so the event loop never waits on SQLite or an fsync and no two writes
of the daemon contend for the journal's lock (docs/performance.md).

    writer = JournalWriter()
    record, messages = await writer.call(journal.append, kind=..., payload=..., ...)
    writer.submit(flush)          # fire and forget (the delivery marks)
    writer.close()                # waits for what was submitted
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["JournalWriter"]

_T = TypeVar("_T")


class JournalWriter:
    """One dedicated thread for the journal's writes (a single-worker pool: FIFO order)."""

    def __init__(self, name: str = "journal-writer") -> None:
        """Start nothing yet: the thread is made at the first call."""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._closed = False

    async def call(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` on the writer thread and return (or raise) its result.

        A caller cancelled while waiting does not stop the write: it completes on the thread.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    def submit(self, fn: Callable[[], object]) -> Future[object]:
        """Queue ``fn()`` on the writer thread without waiting for it (RuntimeError once
        closed)."""
        return self._pool.submit(fn)

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    def close(self) -> None:
        """Finish everything submitted, then stop the thread (idempotent)."""
        self._closed = True
        self._pool.shutdown(wait=True)
