"""One thread that runs blocking calls for an event loop, in the order they are given: the
journal's writes, a USB reader's transfers, a serial port's writes.

    worker = WorkerThread("journal-t01")
    result = await worker.call(journal.append, kind=..., payload=...)
    worker.submit(flush)          # fire and forget; a concurrent Future
    worker.close()                # waits for what was given (wait=False: does not)

It does what a one-worker `ThreadPoolExecutor` with `run_in_executor` does, with less work for
each call: the caller's asyncio future is resolved straight from the thread with one
`call_soon_threadsafe`, where the executor's path builds a concurrent future, takes a
semaphore, and chains the two futures through callbacks on both sides (bench/floor_rate.py: a
table makes about 130 such calls a hand).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["WorkerThread"]

_T = TypeVar("_T")
_STOP = object()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """On the loop: give the caller its result, unless it stopped waiting."""
    if future.cancelled():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class WorkerThread:
    """A dedicated daemon thread for blocking calls, made at the first call, FIFO."""

    def __init__(self, name: str) -> None:
        """Start nothing yet: the thread is made at the first call."""
        self.name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    def _put(self, job: Any) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name}: the worker thread is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name,
                                                daemon=True)
                self._thread.start()
            self._jobs.put(job)

    async def call(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` on the thread and return (or raise) its result.

        A caller cancelled before the call starts leaves it out; once started, it completes
        on the thread. RuntimeError once closed.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._put((loop, future, functools.partial(fn, *args, **kwargs)))
        return await future

    def submit(self, fn: Callable[[], object]) -> Future[object]:
        """Queue ``fn()`` without waiting for it (RuntimeError once closed)."""
        done: Future[object] = Future()
        self._put((None, done, fn))
        return done

    def close(self, *, wait: bool = True) -> None:
        """Finish everything given so far, then end the thread (idempotent); ``wait=False``
        returns at once (a call that blocks ends the thread when it returns)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._jobs.put(_STOP)
        if thread is not None and wait and thread is not threading.current_thread():
            thread.join()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not _STOP:
            loop, future, call = job
            if loop is None:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(call())
                    except BaseException as exc:  # the submitter reads it
                        future.set_exception(exc)
                continue
            if future.cancelled():  # the caller stopped waiting before it started
                continue
            try:
                value = call()
                ok = True
            except BaseException as exc:  # the caller gets it
                value, ok = exc, False
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, future, ok, value)
            del job, future, call, value
