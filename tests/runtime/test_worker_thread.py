"""runtime.worker_thread: blocking calls on one thread of their own, in order, with their
results (or exceptions) handed back to the event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from runtime.worker_thread import WorkerThread


async def test_calls_run_in_order_on_one_thread_that_is_not_the_loops() -> None:
    worker = WorkerThread("w-test")
    seen: list[tuple[int, str]] = []

    def job(i: int, *, times: int) -> int:
        seen.append((i, threading.current_thread().name))
        return i * times

    try:
        results = await asyncio.gather(*(worker.call(job, i, times=10) for i in range(20)))
    finally:
        worker.close()
    assert results == [i * 10 for i in range(20)]
    assert [i for i, _ in seen] == list(range(20))
    assert {name for _, name in seen} == {"w-test"}


async def test_an_exception_reaches_the_caller_and_the_thread_goes_on() -> None:
    worker = WorkerThread("w-test")

    def fail() -> None:
        raise ValueError("the device said no")

    try:
        with pytest.raises(ValueError, match="the device said no"):
            await worker.call(fail)
        assert await worker.call(lambda: 7) == 7
    finally:
        worker.close()


async def test_submit_returns_a_future_and_keeps_the_order_with_calls() -> None:
    worker = WorkerThread("w-test")
    order: list[str] = []
    first = worker.submit(lambda: order.append("submitted"))
    await worker.call(order.append, "called")
    worker.close()
    assert first.result() is None
    assert order == ["submitted", "called"]


async def test_a_call_cancelled_before_it_starts_is_never_run() -> None:
    worker = WorkerThread("w-test")
    release = threading.Event()
    ran: list[str] = []
    blocking = asyncio.ensure_future(worker.call(release.wait))
    queued = asyncio.ensure_future(worker.call(ran.append, "queued"))
    await asyncio.sleep(0)
    queued.cancel()
    await asyncio.gather(queued, return_exceptions=True)
    release.set()
    assert await blocking is True
    worker.close()
    assert queued.cancelled() and ran == []


async def test_after_close_nothing_more_is_taken() -> None:
    worker = WorkerThread("w-test")
    assert await worker.call(lambda: 1) == 1
    worker.close()
    worker.close()  # idempotent
    assert worker.closed
    with pytest.raises(RuntimeError, match="w-test: the worker thread is closed"):
        await worker.call(lambda: 2)
    with pytest.raises(RuntimeError, match="closed"):
        worker.submit(lambda: 3)


def test_close_without_a_call_starts_no_thread() -> None:
    before = threading.active_count()
    worker = WorkerThread("w-test")
    worker.close()
    assert threading.active_count() == before
