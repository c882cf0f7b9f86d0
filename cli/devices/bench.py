"""What every suite of the conformance kit shares: the `Bench` (the driver under watch, its
simulator, the time limits), the alert kinds each check allows, and calls to the simulator's
controls that say which one it lacks instead of failing.

The alert vocabulary a conforming driver uses (docs/protocols/writing-an-adapter.md): it says
"connected" when it first reaches the device and "reconnected" when it is back; "disconnected"
(or "lost") when the device goes away, "stalled" when the device is there but silent; noise on
the line is at most "bad_frame" (or "bad_read" for a reader of text lines, "unreliable_read"
for a spot left out of a sweep), never a reading.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cli.devices.observe import Observer, alert_kinds
from cli.devices.report import Row, fail, ok, skip
from drivers.readings import DeviceAlert

__all__ = ["DOWN", "NOISE", "OUTAGE", "UP", "Bench", "Figures", "Unsupported", "connected",
           "control", "guard", "kinds_since", "lacks", "median", "seconds", "unexpected"]

UP: Final = frozenset({"connected", "reconnected"})
DOWN: Final = frozenset({"disconnected", "lost", "not_found", "stalled"})
# What a driver may add about an outage: reads the device may have made meanwhile, lost (a
# device that keeps nothing while it is away says so).
OUTAGE: Final = frozenset({"reads_lost"})
# Noise said aloud: a frame refused, a line that is no card, a spot whose answer the noise
# spoiled and that is left out of this sweep (the QuasarMX's "unreliable_read").
NOISE: Final = frozenset({"bad_frame", "bad_read", "unreliable_read"})


@dataclass(slots=True)
class Figures:
    """Measurements the checks gather for the timing rows."""

    sweep_periods: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Bench:
    """A driver running on its simulator, watched by the kit."""

    seen: Observer
    simulator: Any
    timeout: float = 5.0  # the longest the kit waits for any one thing to happen
    spots: int | None = None  # chip readers: check only the first N spots
    figures: Figures = field(default_factory=Figures)

    async def do(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the simulator's control ``name`` off the event loop (a simulator may block
        for a moment while its device thread takes the call)."""
        fn: Callable[..., Any] = getattr(self.simulator, name)
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def attempt(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """`do`, for a control the simulator may have but refuse (a line that cannot go
        silent, a fault it does not know): its refusal makes the check SKIP."""
        try:
            return await self.do(name, *args, **kwargs)
        except (NotImplementedError, ValueError) as exc:
            words = " ".join(str(a) for a in args)
            raise Unsupported(f"the simulator refused {name} {words}: {exc}") from exc


class Unsupported(Exception):
    """A simulator refused a control the check needs: the check is SKIP, not FAIL."""


def lacks(simulator: Any, *controls: str) -> list[str]:
    """The controls among ``controls`` the simulator does not have."""
    return [c for c in controls if not callable(getattr(simulator, c, None))]


def control(check: str, simulator: Any, *controls: str) -> Row | None:
    """A SKIP row for ``check`` if the simulator lacks one of ``controls``, else None."""
    missing = lacks(simulator, *controls)
    if not missing:
        return None
    return skip(check, f"the simulator has no {', '.join(missing)} control")


def unexpected(kinds: Sequence[str], allowed: frozenset[str]) -> str:
    """The alert kinds outside ``allowed``, as words ("" when there are none)."""
    extra = sorted({k for k in kinds if k not in allowed})
    return "" if not extra else "unexpected alerts: " + ", ".join(
        f"{k} x{kinds.count(k)}" for k in extra)


def kinds_since(bench: Bench, mark: int) -> list[str]:
    """The alert kinds the driver yielded since ``mark``."""
    return alert_kinds(bench.seen.since(mark))


def median(values: Sequence[float]) -> float:
    """The median (0.0 of nothing)."""
    return statistics.median(values) if values else 0.0


def seconds(value: float) -> str:
    """A duration as the table prints it: "0.21 s", "12 ms"."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


async def guard(check: str, step: Awaitable[Row]) -> Row:
    """Run one check; a check that breaks (a simulator control raising, a driver error
    escaping) is a FAIL row saying how, and the suite goes on."""
    try:
        return await step
    except Unsupported as exc:
        return skip(check, str(exc))
    except Exception as exc:
        return fail(check, f"the check broke: {type(exc).__name__}: {exc}")


async def connected(bench: Bench) -> Row:
    """The "connect" row: the driver says the device is connected, and nothing else is
    wrong (a chip reader's row also waits for its first inventory)."""
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, 0)),
                                  bench.timeout):
        kinds = kinds_since(bench, 0)
        return fail("connect", f"no connected alert in {seconds(bench.timeout)}"
                    + (f" (alerts: {', '.join(kinds)})" if kinds else "")
                    + (f"; {bench.seen.ended}" if bench.seen.ended else ""))
    at = next(s.at for s in bench.seen.since(0, DeviceAlert) if s.item.kind in UP)
    bad = unexpected(kinds_since(bench, 0), UP)
    if bad:
        return fail("connect", bad)
    return ok("connect", f"connected after {seconds(at - bench.seen.started)}")
