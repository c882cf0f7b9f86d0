"""Time stamps for the journal (R13): UTC wall time, a monotonic counter and the boot id.

A `ClockReading` is one reading, taken once per input and stored with everything that input
causes.
The wall clock can jump (NTP, an operator), so every reading also carries the kernel's
monotonic nanoseconds and the id of the boot they count from: within one boot id the
monotonic values order events exactly. `synced` says whether the kernel considered the wall
clock synchronised (NTP) when it was read, so events stamped before time sync are marked.

`system_clock()` reads the machine; `FakeClockSource` produces deterministic readings for tests.
Both are `ClockSource`s: callables that return a fresh `ClockReading`.
"""

from __future__ import annotations

import ctypes
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Final, TypeAlias

__all__ = [
    "BOOT_ID_PATH",
    "FALLBACK_BOOT_PREFIX",
    "ClockReading",
    "ClockSource",
    "FakeClockSource",
    "boot_id",
    "system_clock",
    "wall_from_ns",
]

BOOT_ID_PATH: Final = Path("/proc/sys/kernel/random/boot_id")
# A boot id this process made up because the kernel's could not be read; it is unique per
# process, so monotonic values are only comparable within one process.
FALLBACK_BOOT_PREFIX: Final = "process:"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_TIME_ERROR: Final = 5  # adjtimex(2): "clock not synchronized"
_TIMEX_BYTES: Final = 512  # larger than struct timex on every Linux ABI


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockReading:
    """One time reading: aware UTC wall time, monotonic ns, boot id, and whether NTP-synced."""

    wall: datetime
    mono_ns: int
    boot_id: str
    synced: bool | None = None  # None: the platform cannot tell

    def __post_init__(self) -> None:
        if not isinstance(self.wall, datetime) or self.wall.utcoffset() is None:
            raise ValueError(f"ClockReading.wall must be an aware datetime, got {self.wall!r}")
        if self.wall.utcoffset() != timedelta(0):
            raise ValueError(f"ClockReading.wall must be UTC, got offset {self.wall.utcoffset()}")
        if self.wall.tzinfo is not UTC:
            object.__setattr__(self, "wall", self.wall.replace(tzinfo=UTC))
        if isinstance(self.mono_ns, bool) or not isinstance(self.mono_ns, int) or self.mono_ns < 0:
            raise ValueError("ClockReading.mono_ns must be a non-negative int,"
                             f" got {self.mono_ns!r}")
        if not isinstance(self.boot_id, str) or not self.boot_id.strip():
            raise ValueError(f"ClockReading.boot_id must be non-empty text, got {self.boot_id!r}")

    @property
    def boot_id_fallback(self) -> bool:
        """True when the boot id was made up by the process (the kernel's was unreadable)."""
        return self.boot_id.startswith(FALLBACK_BOOT_PREFIX)


ClockSource: TypeAlias = Callable[[], ClockReading]


def wall_from_ns(ns: int) -> datetime:
    """Aware UTC datetime from nanoseconds since the epoch (exact to the microsecond, no float)."""
    return _EPOCH + timedelta(microseconds=ns // 1000)


@cache
def boot_id() -> str:
    """The kernel's boot id, or a per-process fallback starting with FALLBACK_BOOT_PREFIX."""
    try:
        text = BOOT_ID_PATH.read_text(encoding="ascii").strip()
        return str(uuid.UUID(text))
    except (OSError, ValueError, UnicodeDecodeError):
        return FALLBACK_BOOT_PREFIX + str(uuid.uuid4())


def _kernel_synced() -> bool | None:
    """Ask the kernel (adjtimex, read-only) whether the wall clock is NTP-synchronised."""
    libc = _libc()
    if libc is None:
        return None
    buf = ctypes.create_string_buffer(_TIMEX_BYTES)  # modes = 0: read only
    state = int(libc.adjtimex(buf))
    if state < 0:
        return None
    return state != _TIME_ERROR


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.adjtimex.argtypes = [ctypes.c_void_p]
        libc.adjtimex.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def system_clock() -> ClockReading:
    """Read the machine's clocks now."""
    mono = time.monotonic_ns()
    wall = wall_from_ns(time.time_ns())
    return ClockReading(wall=wall, mono_ns=mono, boot_id=boot_id(), synced=_kernel_synced())


class FakeClockSource:
    """A deterministic ClockSource for tests: each call advances by `step_ns` (wall and mono)."""

    def __init__(
        self,
        *,
        start: datetime = datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
        boot_id: str = "00000000-0000-4000-8000-000000000001",
        step_ns: int = 1_000_000,
        synced: bool | None = True,
    ) -> None:
        self._wall = ClockReading(wall=start, mono_ns=0, boot_id=boot_id).wall
        self._mono_ns = 1_000_000_000
        self._boot_id = boot_id
        self._step_ns = step_ns
        self.synced = synced

    def __call__(self) -> ClockReading:
        """The current reading; then time moves on by one step."""
        now = self.peek()
        self.advance(self._step_ns)
        return now

    def peek(self) -> ClockReading:
        """The current reading, without advancing."""
        return ClockReading(wall=self._wall, mono_ns=self._mono_ns, boot_id=self._boot_id,
                     synced=self.synced)

    def advance(self, ns: int) -> None:
        """Move both clocks forward by `ns` nanoseconds."""
        if ns < 0:
            raise ValueError("time only moves forward")
        self._wall += timedelta(microseconds=ns // 1000)
        self._mono_ns += ns

    def set_wall(self, wall: datetime) -> None:
        """Step the wall clock (as NTP or an operator might), leaving the monotonic one alone."""
        self._wall = ClockReading(wall=wall, mono_ns=0, boot_id=self._boot_id).wall

    def reboot(self, boot_id: str) -> None:
        """Simulate a reboot: a new boot id and the monotonic counter starting again."""
        self._boot_id = boot_id
        self._mono_ns = 1_000_000_000
