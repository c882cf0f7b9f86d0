"""controller.clock: readings, the boot id and its fallback, the fake clock (R13)."""

from __future__ import annotations

import sys
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from controller import clock as clock_module
from controller.clock import (
    FALLBACK_BOOT_PREFIX,
    ClockReading,
    FakeClockSource,
    system_clock,
    wall_from_ns,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_clock_accepts_any_utc_tzinfo_and_stores_utc() -> None:
    c = ClockReading(wall=datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC")), mono_ns=5, boot_id="b")
    assert c.wall.tzinfo is UTC
    assert c.wall == datetime(2026, 1, 1, tzinfo=UTC)
    assert c.synced is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"wall": datetime(2026, 1, 1)}, "aware"),  # naive
        ({"wall": datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2)))}, "UTC"),
        ({"mono_ns": -1}, "mono_ns"),
        ({"mono_ns": 1.5}, "mono_ns"),
        ({"mono_ns": True}, "mono_ns"),
        ({"boot_id": ""}, "boot_id"),
        ({"boot_id": "  "}, "boot_id"),
    ],
)
def test_clock_refuses_bad_readings(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"wall": T0, "mono_ns": 1, "boot_id": "b", **kwargs}
    with pytest.raises(ValueError, match=message):
        ClockReading(**fields)  # type: ignore[arg-type]


def test_wall_from_ns_is_exact_to_the_microsecond() -> None:
    # 1_700_000_000 s after the epoch is 2023-11-14 22:13:20 UTC; 123_456_789 ns -> 123_456 us.
    assert wall_from_ns(1_700_000_000_123_456_789) == datetime(
        2023, 11, 14, 22, 13, 20, 123_456, tzinfo=UTC)
    assert wall_from_ns(0) == datetime(1970, 1, 1, tzinfo=UTC)


def test_system_clock_reads_the_machine() -> None:
    before = time.time_ns()
    first = system_clock()
    second = system_clock()
    after = time.time_ns()
    assert wall_from_ns(before) <= first.wall <= second.wall <= wall_from_ns(after)
    assert first.mono_ns <= second.mono_ns
    assert first.boot_id == second.boot_id
    if sys.platform.startswith("linux"):
        assert isinstance(first.synced, bool)


@pytest.mark.skipif(not clock_module.BOOT_ID_PATH.exists(), reason="no kernel boot id here")
def test_boot_id_is_the_kernels() -> None:
    kernel = clock_module.BOOT_ID_PATH.read_text(encoding="ascii").strip()
    reading = system_clock()
    assert reading.boot_id == kernel
    assert not reading.boot_id_fallback


def test_boot_id_fallback_is_flagged_and_stable_in_the_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(clock_module, "BOOT_ID_PATH", tmp_path / "missing")
    clock_module.boot_id.cache_clear()
    try:
        first = system_clock()
        second = system_clock()
    finally:
        clock_module.boot_id.cache_clear()
    assert first.boot_id_fallback
    assert first.boot_id.startswith(FALLBACK_BOOT_PREFIX)
    uuid.UUID(first.boot_id.removeprefix(FALLBACK_BOOT_PREFIX))  # a real uuid after the prefix
    assert second.boot_id == first.boot_id


def test_boot_id_fallback_on_garbage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "boot_id"
    bad.write_text("not a uuid\n")
    monkeypatch.setattr(clock_module, "BOOT_ID_PATH", bad)
    clock_module.boot_id.cache_clear()
    try:
        assert system_clock().boot_id_fallback
    finally:
        clock_module.boot_id.cache_clear()


def test_fake_clock_steps_advances_and_reboots() -> None:
    fake = FakeClockSource(start=T0, boot_id="boot-1", step_ns=2_000_000)
    a, b = fake(), fake()
    assert (a.wall, b.wall) == (T0, T0 + timedelta(milliseconds=2))
    assert b.mono_ns - a.mono_ns == 2_000_000
    assert a.boot_id == b.boot_id == "boot-1"
    assert a.synced is True

    fake.advance(1_000_000_000)
    c = fake.peek()
    assert c == fake.peek()  # peek does not advance
    assert c.wall == T0 + timedelta(milliseconds=4, seconds=1)

    fake.set_wall(datetime(2020, 1, 1, tzinfo=UTC))  # a wall-clock step leaves mono alone
    d = fake()
    assert d.wall == datetime(2020, 1, 1, tzinfo=UTC)
    assert d.mono_ns == c.mono_ns

    fake.reboot("boot-2")
    e = fake()
    assert e.boot_id == "boot-2"
    assert e.mono_ns < d.mono_ns  # the monotonic counter restarts with the boot
    with pytest.raises(ValueError, match="forward"):
        fake.advance(-1)


def test_fake_clock_can_be_unsynced() -> None:
    fake = FakeClockSource(synced=False)
    assert fake().synced is False
    fake.synced = None
    assert fake().synced is None
