"""What the conformance kit sees of a driver: every reading and alert it yields, with the
moment the kit received it, and a way to wait until what was seen meets a condition.

    async with Observer(driver) as seen:
        mark = seen.mark()
        ...act on the simulator...
        ok = await seen.until(lambda: any(is_card(s) for s in seen.since(mark)), timeout=5)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from drivers.readings import DeviceAlert

__all__ = ["Observer", "Seen", "alert_kinds", "alerts"]


@dataclass(frozen=True, slots=True)
class Seen:
    """One item the driver yielded and when the kit got it (``time.monotonic()``)."""

    at: float
    item: Any


class Observer:
    """Runs a driver (an async context manager and iterator) and keeps what it yields."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.seen: list[Seen] = []
        self.started = 0.0
        self.ended: str | None = None  # why the driver's stream ended early, if it did
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self.started = time.monotonic()
        await self.device.__aenter__()
        self._task = asyncio.create_task(self._pump(), name="devices-check.observer")
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.device.__aexit__(None, None, None)

    async def _pump(self) -> None:
        # A driver that acknowledges only what its consumer has stored (the shoe's
        # ack="on_confirm") is told each reading is kept, as the table daemon does.
        confirm = getattr(self.device, "confirm", None)
        try:
            async for item in self.device:
                self.seen.append(Seen(time.monotonic(), item))
                self._changed.set()
                if callable(confirm):
                    await confirm(item)
            self.ended = "the driver's stream of readings ended"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the driver broke: the checks see it and say so
            self.ended = f"the driver raised {type(exc).__name__}: {exc}"
        self._changed.set()

    def mark(self) -> int:
        """A place in what was seen, for `since`."""
        return len(self.seen)

    def since(self, mark: int, kind: type | tuple[type, ...] | None = None) -> list[Seen]:
        """What was seen from ``mark`` on (only items of ``kind`` if given)."""
        items = self.seen[mark:]
        return items if kind is None else [s for s in items if isinstance(s.item, kind)]

    async def until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``done()`` holds (checked on each new item); False after ``timeout``
        seconds or when the driver's stream ended without it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if done():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0 or (self.ended is not None and self._task is not None
                                  and self._task.done()):
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))

    async def pause(self, seconds: float) -> None:
        """Let the driver run for a while (readings keep arriving)."""
        await asyncio.sleep(seconds)


def alerts(items: Iterable[Seen]) -> list[tuple[float, DeviceAlert]]:
    """The alerts among ``items`` with when they came."""
    return [(s.at, s.item) for s in items if isinstance(s.item, DeviceAlert)]


def alert_kinds(items: Iterable[Seen]) -> list[str]:
    """The kinds of the alerts among ``items``, in order."""
    return [a.kind for _, a in alerts(items)]
