"""What the keyboard-wedge and PC/SC ID readers share: `IdStream`, an `IdReader`'s async
context manager and iterator over one queue of `IdTap` and `DeviceAlert`, the counters of its
health, and the logging of each reading (card numbers masked). A subclass runs its own
connection loop (`_run`) and calls `_emit`, `_alert`, `_tap` and `_bad_read`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Final, Self

import structlog

from drivers.protocols import IdReading
from drivers.readings import DeviceAlert, DeviceHealth, IdTap, masked

__all__ = ["COUNTERS", "IdStream"]

_CLOSED: Final = object()
COUNTERS: Final = ("taps", "bad_reads", "connects", "reconnects", "disconnects")


class IdStream:
    """The `drivers.protocols.IdReader` surface over a subclass's `_run` loop."""

    _kind = "id reader"  # how its logs and errors name the reader

    def __init__(self, device: str, clock: Callable[[], float]) -> None:
        self.device = device
        self._clock = clock
        self._readings: asyncio.Queue[IdReading | object] | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = False
        self._last_seen: float | None = None
        self._counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._log = structlog.get_logger(type(self).__module__)

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError(f"{type(self).__name__} is not reentrant")
        self._readings = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name=f"id_reader[{self.device}]")
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._closed()
        if self._readings is not None:
            self._readings.put_nowait(_CLOSED)

    def __aiter__(self) -> AsyncIterator[IdReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[IdReading]:
        queue = self._readings
        if queue is None:
            raise RuntimeError(f"use `async with {type(self).__name__}(...)` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is an IdReading

    def health(self) -> DeviceHealth:
        """Connected or not, when the reader last gave anything, and the counters (taps,
        bad_reads, connects, reconnects, disconnects)."""
        return DeviceHealth(device=self.device, connected=self._connected,
                            last_seen_mono=self._last_seen, counters=dict(self._counters))

    # ------------------------------------------------------------------ for subclasses

    async def _run(self) -> None:
        raise NotImplementedError

    async def _closed(self) -> None:
        """After the loop ended: release what it held (a subclass's hook)."""

    def _emit(self, reading: IdReading) -> None:
        if isinstance(reading, DeviceAlert):
            getattr(self._log, reading.log_level)(f"{self._kind} alert", device=reading.device,
                                                  kind=reading.kind, detail=reading.detail)
        else:
            self._log.info("id card read", device=reading.device, form=reading.form,
                           number=masked(reading.number))
        if self._readings is not None:
            self._readings.put_nowait(reading)

    def _alert(self, kind: str, detail: str) -> None:
        self._emit(DeviceAlert(device=self.device, kind=kind, detail=detail,
                               at_mono=self._clock()))

    def _tap(self, tap: IdTap) -> None:
        self._counters["taps"] += 1
        self._emit(tap)

    def _bad_read(self, detail: str, at_mono: float | None = None) -> None:
        self._counters["bad_reads"] += 1
        self._emit(DeviceAlert(device=self.device, kind="bad_read", detail=detail,
                               at_mono=self._clock() if at_mono is None else at_mono))

    def _up(self, ever: bool, detail: str) -> None:
        """The device is connected (again, when ``ever``)."""
        self._connected = True
        self._counters["connects"] += 1
        if ever:
            self._counters["reconnects"] += 1
        self._alert("reconnected" if ever else "connected", detail)

    def _down(self) -> None:
        """The device was lost while connected."""
        self._connected = False
        self._counters["disconnects"] += 1
