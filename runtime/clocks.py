"""The clock types both services take as parameters, defined once: a wall clock returns an
aware UTC datetime; a stamp clock returns that and the monotonic nanoseconds read with it.

Tests pass fakes of these shapes instead of reading the machine's clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeAlias

__all__ = ["StampClock", "WallClock", "utc_now", "utc_stamp"]

WallClock: TypeAlias = Callable[[], datetime]
StampClock: TypeAlias = Callable[[], tuple[datetime, int]]


def utc_now() -> datetime:
    """The machine's wall clock, aware UTC (the default `WallClock`)."""
    return datetime.now(UTC)


def utc_stamp() -> tuple[datetime, int]:
    """The wall clock (aware UTC) and `time.monotonic_ns()` (the default `StampClock`)."""
    return datetime.now(UTC), time.monotonic_ns()
