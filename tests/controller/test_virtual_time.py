"""controller.virtual_time.FloorClock: readings strictly ordered, moved on only by the floor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from controller.virtual_time import VIRTUAL_BOOT_ID, FloorClock

START = datetime(2026, 7, 3, 13, 0, tzinfo=timezone(timedelta(hours=2)))


def test_readings_step_and_the_wall_clock_does_not() -> None:
    clock = FloorClock(START, step_ns=1_000_000)
    first, second = clock.reading(), clock()
    assert first.wall == datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    assert second.wall - first.wall == timedelta(milliseconds=1)
    assert second.mono_ns - first.mono_ns == 1_000_000
    assert first.boot_id == VIRTUAL_BOOT_ID and first.synced is True
    assert clock.wall() == clock.wall() == first.wall + timedelta(milliseconds=2)


def test_advance_and_advance_to_only_move_forward() -> None:
    clock = FloorClock(START)
    clock.advance(60)
    assert clock.elapsed == timedelta(seconds=60)
    clock.advance_to(START + timedelta(seconds=30))  # already past it: no change
    assert clock.elapsed == timedelta(seconds=60)
    clock.advance_to(START + timedelta(days=1))
    assert clock.wall() == START + timedelta(days=1)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(-1)


def test_a_naive_start_or_a_zero_step_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        FloorClock(datetime(2026, 7, 3, 13, 0))
    with pytest.raises(ValueError, match="at least 1 ns"):
        FloorClock(START, step_ns=0)
