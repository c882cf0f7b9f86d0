"""floor.clock.FloorClock at the virtual pace: readings strictly ordered, moved on only by
the floor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from floor.clock import VIRTUAL_BOOT_ID, FloorClock

START = datetime(2026, 7, 3, 13, 0, tzinfo=timezone(timedelta(hours=2)))


def test_readings_step_and_the_wall_clock_does_not() -> None:
    clock = FloorClock.virtual(START, step_ns=1_000_000)
    first, second = clock.reading(), clock.reading()
    assert first.wall == datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    assert second.wall - first.wall == timedelta(milliseconds=1)
    assert second.mono_ns - first.mono_ns == 1_000_000
    assert first.boot_id == VIRTUAL_BOOT_ID and first.synced is True
    assert clock.wall() == clock.wall() == first.wall + timedelta(milliseconds=2)


def test_advance_and_advance_to_only_move_forward() -> None:
    clock = FloorClock.virtual(START)
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
        FloorClock.virtual(datetime(2026, 7, 3, 13, 0))
    with pytest.raises(ValueError, match="at least 1 ns"):
        FloorClock.virtual(START, step_ns=0)


def test_a_hand_moves_the_clock_on_by_its_share_among_the_tables_playing() -> None:
    clock = FloorClock.virtual(START)
    clock.hand_played(60)  # nobody counted as playing: the whole hand
    assert clock.elapsed == timedelta(seconds=60)
    clock.playing = 4
    clock.hand_played(60)
    assert clock.playing == 4 and clock.elapsed == timedelta(seconds=75)
    with pytest.raises(ValueError, match="cannot be negative"):
        clock.playing = -1


def _in_another_process(clock: FloorClock, readings: int) -> None:
    for _ in range(readings):
        clock.reading()
    clock.hand_played(60)


def test_a_process_given_the_clock_moves_on_the_same_clock() -> None:
    import multiprocessing

    clock = FloorClock.virtual(START, step_ns=1_000_000)
    clock.playing = 2
    child = multiprocessing.get_context("spawn").Process(target=_in_another_process,
                                                         args=(clock, 5))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    # five readings of a millisecond and half a 60 s hand, all seen here
    assert clock.elapsed == timedelta(seconds=30, milliseconds=5)
    assert clock.reading().wall == START + timedelta(seconds=30, milliseconds=5)
