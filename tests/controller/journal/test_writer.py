"""The journal's writer thread (controller.journal.writer): one thread, in order; a write
whose caller is cancelled runs whole or not at all (the daemon's feed then sees the gap)."""

from __future__ import annotations

import asyncio
import threading

from controller.clock import FakeClockSource
from controller.journal import Journal
from controller.journal.writer import JournalWriter
from tests.controller.journal.support import events


async def test_every_call_runs_on_one_thread_in_the_order_submitted() -> None:
    writer = JournalWriter()
    seen: list[tuple[int, str]] = []

    def note(i: int) -> int:
        seen.append((i, threading.current_thread().name))
        return i * 10

    try:
        results = await asyncio.gather(*(writer.call(note, i) for i in range(20)))
    finally:
        writer.close()
    assert results == [i * 10 for i in range(20)]
    assert [i for i, _ in seen] == list(range(20))
    assert len({name for _, name in seen}) == 1
    assert seen[0][1] != threading.current_thread().name


async def test_a_cancelled_append_is_either_never_started_or_committed_whole(
        journal: Journal, fake: FakeClockSource) -> None:
    writer = JournalWriter()
    release, started = threading.Event(), threading.Event()

    def outgoing(record: object) -> object:
        started.set()
        release.wait()
        return events("card.read")(record)  # type: ignore[operator]

    running = asyncio.ensure_future(writer.call(
        journal.append, kind="card", payload={"n": 1}, clock=fake(), outgoing=outgoing))
    queued = asyncio.ensure_future(writer.call(
        journal.append, kind="card", payload={"n": 2}, clock=fake(),
        outgoing=events("card.read")))
    await asyncio.to_thread(started.wait)
    running.cancel()
    queued.cancel()
    await asyncio.gather(running, queued, return_exceptions=True)
    release.set()
    writer.close()
    assert running.cancelled() and queued.cancelled()
    assert [(m.seq, m.body["record"]) for m in journal.pending()] == [(1, 2)]
    assert journal.last_record_seq() == 2  # the creation record and the one that started
