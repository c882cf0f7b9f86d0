"""The latency benchmark's settings and figures: percentiles, series, /proc/PID/status."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOURNAMENT = REPO / "config" / "tournament.toml"
PAYTABLES = REPO / "config" / "paytables.toml"
GOAL_MS = 10.0
MACHINE_MOSQUITTO = ("127.0.0.1", 1883)
PLAYERS = 3
SEED = 2026
GUARD_S = 120.0  # against hangs only


class BenchError(RuntimeError):
    """A wrong result (not a slow one): the run exits 1."""


def percentile(values: list[int], q: float) -> int:
    """Nearest-rank percentile: the smallest value with at least q% of the values at or below."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(slots=True)
class Series:
    """One measure's samples in nanoseconds."""

    name: str
    values: list[int] = field(default_factory=list)

    def cells(self) -> str:
        """n, p50, p99, max in ms (or dashes when empty)."""
        if not self.values:
            return f"{'-':>5} {'-':>7} {'-':>7} {'-':>7}"
        p50, p99 = percentile(self.values, 50), percentile(self.values, 99)
        return (f"{len(self.values):>5} {fmt_ms(p50):>7} {fmt_ms(p99):>7} "
                f"{fmt_ms(max(self.values)):>7}")

    @property
    def p99_ms(self) -> float | None:
        """p99 in ms, None without samples."""
        return percentile(self.values, 99) / 1e6 if self.values else None


def fmt_ms(ns: int) -> str:
    return f"{ns / 1e6:.2f}"


def fmt_mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.1f} MiB"


def proc_status(pid: int | str, *keys: str) -> dict[str, int | None]:
    """kB values (VmRSS, VmHWM, ...) from /proc/PID/status; None where absent."""
    out: dict[str, int | None] = dict.fromkeys(keys)
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in out:
                out[name] = int(value.split()[0])
    return out
