"""Virtual time for a simulated floor run at full speed (`showdown simulate floor`).

One `FloorClock` stands for the venue's time during the run: every table daemon reads it as
its journal clock (a `ClockSource`) and the central service and the desk read its wall time
(a `WallClock`). It never follows the machine's clock: each reading moves it on by a small
step (so records stay strictly ordered) and each hand played moves it on by the hand's
simulated length shared among the tables playing, so the records' times look like a real
floor's (hands per hour) however fast the run goes. Real timeouts (device stalls, broker
keep-alives) stay on the machine's clock: nothing here fast-forwards the event loop.

The clock's state lives in shared memory (a `multiprocessing` array and lock), so the table
processes of one floor and its parent read and move on one clock: pass the clock to a
process as an argument when it starts.
"""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controller.clock import ClockReading

__all__ = ["VIRTUAL_BOOT_ID", "FloorClock"]

# The boot id of every reading: the monotonic values count from the run's start, not a boot.
VIRTUAL_BOOT_ID: Final = "virtual-floor"
_MONO_START_NS: Final = 1_000_000_000
_ELAPSED: Final = 0  # slots of the shared array: virtual ns since the start
_PLAYING: Final = 1  # the tables playing (each hand's length is shared among them)


class FloorClock:
    """A virtual clock shared by threads and processes: `reading()` for journals, `wall()`
    for the central side, `hand_played()` for the tables."""

    def __init__(self, start: datetime, *, step_ns: int = 1_000_000,
                 boot_id: str = VIRTUAL_BOOT_ID) -> None:
        if start.utcoffset() is None:
            raise ValueError("the floor clock starts at an aware datetime")
        if step_ns < 1:
            raise ValueError(f"a reading's step is at least 1 ns, got {step_ns}")
        self._start = start.astimezone(UTC)
        self._step_ns = step_ns
        self._boot_id = boot_id
        context = multiprocessing.get_context("spawn")
        self._state: Any = context.RawArray("q", 2)  # [elapsed ns, tables playing]
        self._lock: Any = context.Lock()

    @property
    def start(self) -> datetime:
        """The virtual moment the run began (aware UTC)."""
        return self._start

    @property
    def elapsed(self) -> timedelta:
        """Virtual time since the start."""
        with self._lock:
            return timedelta(microseconds=self._state[_ELAPSED] // 1000)

    def reading(self) -> ClockReading:
        """A journal reading (a `ClockSource`); then the clock moves on by one step."""
        with self._lock:
            ns = self._state[_ELAPSED]
            self._state[_ELAPSED] = ns + self._step_ns
        return ClockReading(wall=self._start + timedelta(microseconds=ns // 1000),
                            mono_ns=_MONO_START_NS + ns, boot_id=self._boot_id, synced=True)

    def __call__(self) -> ClockReading:
        """The same as `reading()`, so the clock itself is a `ClockSource`."""
        return self.reading()

    def wall(self) -> datetime:
        """The virtual wall time now, without moving on (a `WallClock`)."""
        with self._lock:
            ns = self._state[_ELAPSED]
        return self._start + timedelta(microseconds=ns // 1000)

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds` of virtual time (a hand's length, a night)."""
        if seconds < 0:
            raise ValueError("virtual time only moves forward")
        with self._lock:
            self._state[_ELAPSED] += round(seconds * 1e9)

    def advance_to(self, moment: datetime) -> None:
        """Move the clock on to `moment` (nothing if it is already past it)."""
        target = (moment.astimezone(UTC) - self._start) // timedelta(microseconds=1) * 1000
        with self._lock:
            self._state[_ELAPSED] = max(self._state[_ELAPSED], target)

    @property
    def playing(self) -> int:
        """How many tables are playing (set by the floor as tables start and finish)."""
        with self._lock:
            return int(self._state[_PLAYING])

    @playing.setter
    def playing(self, tables: int) -> None:
        if tables < 0:
            raise ValueError(f"tables playing cannot be negative, got {tables}")
        with self._lock:
            self._state[_PLAYING] = tables

    def hand_played(self, hand_seconds: float) -> None:
        """A hand is over at one table: move on by its share of `hand_seconds` (the hand's
        length divided by the tables playing, so each table shows one hand a hand's length)."""
        if hand_seconds < 0:
            raise ValueError("virtual time only moves forward")
        with self._lock:
            share = max(1, self._state[_PLAYING])
            self._state[_ELAPSED] += round(hand_seconds * 1e9 / share)
