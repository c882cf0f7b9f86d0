"""The floor's one clock: the venue's time that the desk, the central service and every table
daemon read, in one of two paces.

- ``FloorClock.calendar(start)`` (`showdown demo`): the machine's clock plus an offset that
  only grows. Within a simulated day time runs at the real pace (hands take seconds); between
  the tournament's stages the floor jumps it forward (`advance_to`) to the next heat day, the
  semi-finals, the Final, the prize days. Journal readings carry the kernel's monotonic time
  and boot id.
- ``FloorClock.virtual(start)`` (`showdown simulate floor`): it never follows the machine's
  clock. Each journal reading moves it on by a small step (so records stay strictly ordered)
  and each hand played moves it on by the hand's simulated length shared among the tables
  playing (`hand_played`), so the records' times look like a real floor's however fast the
  run goes. Real timeouts (device stalls, broker keep-alives) stay on the machine's clock.

Either way `wall()` is a `runtime.clocks.WallClock` (the central service, the desk) and
`reading()` a `controller.clock.ClockSource` (the journals): a command's record at the desk,
the table's answer and the score's acknowledgement are stamped in the same floor time.

The clock's state lives in shared memory (a `multiprocessing` array and lock), so the table
processes of one floor (floor.process) and its parent read and move on one clock: pass the
clock to a process as an argument when it starts.
"""

from __future__ import annotations

import multiprocessing
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controller.clock import ClockReading, boot_id
from runtime.clocks import utc_now

__all__ = ["VIRTUAL_BOOT_ID", "FloorClock"]

# The boot id of every virtual reading: the monotonic values count from the run's start.
VIRTUAL_BOOT_ID: Final = "virtual-floor"
_MONO_START_NS: Final = 1_000_000_000
_AHEAD: Final = 0  # slots of the shared array: ns the clock has been moved on by
_PLAYING: Final = 1  # the tables playing (each hand's length is shared among them)
_US: Final = timedelta(microseconds=1)


class FloorClock:
    """One clock for the whole floor (see the module docstring); build it with `calendar()`
    or `virtual()`."""

    def __init__(self, start: datetime, *, virtual: bool, step_ns: int = 1_000_000,
                 boot_id: str = VIRTUAL_BOOT_ID) -> None:
        if start.utcoffset() is None:
            raise ValueError("the floor clock starts at an aware datetime")
        if step_ns < 1:
            raise ValueError(f"a reading's step is at least 1 ns, got {step_ns}")
        self._start = start.astimezone(UTC)
        self._virtual = virtual
        # the calendar's origin: the machine's time when the clock showed `start`
        self._origin = utc_now()
        self._step_ns = step_ns
        self._boot_id = boot_id
        context = multiprocessing.get_context("spawn")
        self._state: Any = context.RawArray("q", 2)  # [ns moved on, tables playing]
        self._lock: Any = context.Lock()

    @classmethod
    def calendar(cls, start: datetime) -> FloorClock:
        """A clock at `start` that runs at the machine's pace and jumps forward."""
        return cls(start, virtual=False)

    @classmethod
    def virtual(cls, start: datetime, *, step_ns: int = 1_000_000,
                boot_id: str = VIRTUAL_BOOT_ID) -> FloorClock:
        """A clock at `start` moved on only by readings, hands and the floor."""
        return cls(start, virtual=True, step_ns=step_ns, boot_id=boot_id)

    @property
    def start(self) -> datetime:
        """The floor time the run began (aware UTC)."""
        return self._start

    @property
    def elapsed(self) -> timedelta:
        """Floor time since the start."""
        return self.wall() - self._start

    def _at(self, ahead_ns: int) -> datetime:
        moved = self._start + timedelta(microseconds=ahead_ns // 1000)
        return moved + (utc_now() - self._origin) if not self._virtual else moved

    def wall(self) -> datetime:
        """The floor's time now (aware UTC; a `WallClock`); a virtual clock does not move."""
        with self._lock:
            ahead = self._state[_AHEAD]
        return self._at(ahead)

    def reading(self) -> ClockReading:
        """A journal reading (a `ClockSource`); a virtual clock then moves on one step."""
        if not self._virtual:
            return ClockReading(wall=self.wall(), mono_ns=time.monotonic_ns(),
                                boot_id=boot_id(), synced=True)
        with self._lock:
            ns = self._state[_AHEAD]
            self._state[_AHEAD] = ns + self._step_ns
        return ClockReading(wall=self._at(ns), mono_ns=_MONO_START_NS + ns,
                            boot_id=self._boot_id, synced=True)

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds` of floor time (a hand's length, a night)."""
        if seconds < 0:
            raise ValueError("the floor's time only moves forward")
        with self._lock:
            self._state[_AHEAD] += round(seconds * 1e9)

    def advance_to(self, moment: datetime) -> None:
        """Move the clock on to `moment` (nothing if it is already past it)."""
        with self._lock:
            now = self._at(self._state[_AHEAD])
            if moment > now:
                self._state[_AHEAD] += (moment - now) // _US * 1000

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
            raise ValueError("the floor's time only moves forward")
        with self._lock:
            share = max(1, self._state[_PLAYING])
            self._state[_AHEAD] += round(hand_seconds * 1e9 / share)
