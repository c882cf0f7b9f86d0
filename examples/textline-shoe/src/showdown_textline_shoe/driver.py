"""The text-line shoe over a serial port: `TextLineShoe`, a `drivers.protocols.CardReader`
around the sans-I/O `showdown_textline_shoe.codec.LineDecoder`.

The shoe only talks: one line a card, nothing when idle (or, if it is set to, a blank line
every few seconds). There is no handshake, no acknowledgement, no read counter and no session,
so what the table is told is what this driver can vouch for, no more (README.md, D303):

- `CardReading` for each card line, ``read_index`` counted here (0, 1, 2... for as long as
  the driver runs, across reconnections), ``session`` None (the shoe has none), quality 100
  (the shoe states no confidence), ``device`` the name given.
- `ShoeStatus` UNREADABLE_CARD and a ``bad_frame`` alert for each line that is no card: it may
  have been a card, which the dealer then keys.
- ``connected`` when the port first opens, ``disconnected`` when it fails (or cannot be
  opened), ``reconnected`` when it opens again, each followed by ``reads_lost``: a card dealt
  while the link was down was never read.
- With ``stall_seconds`` set (only for a shoe that sends idle lines), ``stalled`` after that
  long without a line; ``reconnected`` and ``reads_lost`` when the shoe is heard again.

Blocking port calls run on one worker thread per connection (`runtime.worker_thread`), never
on the event loop; the port is re-opened with jittered backoff (`runtime.backoff`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Final, Self

import serial  # type: ignore[import-untyped]  # pyserial ships no type information
import structlog

from drivers.errors import DeviceLost, DeviceNotFound, DriverError
from drivers.protocols import ShoeReading
from drivers.readings import CardReading, DeviceAlert, DeviceHealth, ShoeState, ShoeStatus
from runtime.backoff import Backoff
from runtime.worker_thread import WorkerThread
from showdown_textline_shoe.codec import BadLine, CardLine, IdleLine, LineDecoder, LineEvent

__all__ = ["COUNTERS", "TextLineShoe"]

_log = structlog.get_logger("showdown_textline_shoe")

# Every counter health() reports, always present (zero until something happens).
COUNTERS: Final = (
    "cards",  # card lines delivered as readings
    "idle_lines",  # blank lines (the shoe's keep-alive)
    "bad_lines",  # lines that are no card (each an unreadable card and a bad_frame alert)
    "bytes",  # bytes received
    "connects",
    "reconnects",
    "disconnects",
    "stalls",
    "link_gaps",  # times the table was told that cards may have been lost (reads_lost)
)
_CLOSED: Final = object()
_CHUNK: Final = 256


class TextLineShoe:
    """A text-line card shoe on a serial port, satisfying `drivers.protocols.CardReader`.

    ``async with TextLineShoe("/dev/serial/by-id/...") as shoe: async for r in shoe: ...``
    yields `CardReading`, `ShoeStatus` and `DeviceAlert` until the block ends. Opening never
    fails because the shoe is absent: the driver alerts once and keeps trying. ``url`` is a
    device path or pyserial URL, or a callable giving the current one at each connection.
    """

    def __init__(
        self,
        url: str | Callable[[], str],
        *,
        name: str = "text-line",
        baudrate: int = 9600,
        stall_seconds: float = 0.0,
        line_timeout: float = 0.5,
        read_timeout: float = 0.1,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if stall_seconds < 0 or line_timeout <= 0 or read_timeout <= 0:
            raise ValueError("stall_seconds must be 0 (off) or positive, line_timeout and"
                             " read_timeout positive")
        self.device = name
        self._url = url
        self._baudrate = baudrate
        self._stall_seconds = stall_seconds
        self._line_timeout = line_timeout
        self._read_timeout = read_timeout
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._clock = clock
        self._decoder = LineDecoder()
        self._counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._readings: asyncio.Queue[ShoeReading | object] | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = False
        self._last_seen: float | None = None
        self._next_read = 0

    # ------------------------------------------------------------------ the CardReader protocol

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError("TextLineShoe is not reentrant")
        self._readings = asyncio.Queue()
        self._task = asyncio.create_task(self._supervise(), name=f"text-line[{self.device}]")
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._readings is not None:
            self._readings.put_nowait(_CLOSED)

    def __aiter__(self) -> AsyncIterator[ShoeReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShoeReading]:
        queue = self._readings
        if queue is None:
            raise RuntimeError("use `async with TextLineShoe(...)` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is a ShoeReading

    def health(self) -> DeviceHealth:
        """Connected or not, when the shoe last sent a line, and the counters (`COUNTERS`)."""
        return DeviceHealth(device=self.device, connected=self._connected,
                            last_seen_mono=self._last_seen, counters=dict(self._counters))

    # ------------------------------------------------------------------ the connection

    def _emit(self, reading: ShoeReading) -> None:
        if isinstance(reading, DeviceAlert):
            getattr(_log, reading.log_level)("shoe alert", device=reading.device,
                                             kind=reading.kind, detail=reading.detail)
        assert self._readings is not None
        self._readings.put_nowait(reading)

    def _alert(self, kind: str, detail: str) -> DeviceAlert:
        return DeviceAlert(device=self.device, kind=kind, detail=detail, at_mono=self._clock())

    def _reads_lost(self, why: str) -> None:
        self._counters["link_gaps"] += 1
        self._emit(self._alert(
            "reads_lost", f"{why}: a card dealt meanwhile was not read (this shoe keeps"
            " nothing for later); compare the cards on the layout with the hand, key any that"
            " is missing, then clear the fault"))

    async def _supervise(self) -> None:
        ever_connected = down_reported = False
        down_since: float | None = None
        while True:
            worker = WorkerThread(f"text-line {self.device}")
            try:
                try:
                    port, path = await self._connect(worker)
                except Exception as exc:
                    if not isinstance(exc, DriverError):  # a bug here must not end the stream
                        _log.exception("text-line shoe error while connecting")
                    if not down_reported:
                        down_reported = True
                        self._emit(self._alert("disconnected", str(exc)))
                    await asyncio.sleep(self._backoff.next_delay())
                    continue
                self._backoff.reset()
                self._connected = True
                self._counters["connects"] += 1
                if ever_connected:
                    self._counters["reconnects"] += 1
                    self._emit(self._alert("reconnected", f"reading on {path} again"))
                    gap = self._clock() - down_since if down_since is not None else 0.0
                    self._reads_lost(f"the link was down {gap:.1f} s")
                else:
                    self._emit(self._alert("connected", f"reading on {path} at"
                                           f" {self._baudrate} baud"))
                ever_connected, down_reported = True, False
                try:
                    await self._serve(worker, port, path)
                except Exception as exc:
                    if not isinstance(exc, DriverError):
                        _log.exception("text-line shoe error while reading")
                    self._counters["disconnects"] += 1
                    down_reported, down_since = True, self._clock()
                    self._emit(self._alert("disconnected", str(exc) or type(exc).__name__))
                finally:
                    self._connected = False
                    self._decoder.reset()  # a line cut by the outage is gone with it
                    with contextlib.suppress(RuntimeError):
                        worker.submit(port.close)  # after the read under way, on its thread
            finally:
                worker.close(wait=False)

    def _resolve(self) -> str:
        if isinstance(self._url, str):
            return self._url
        try:
            path = self._url()
        except Exception as exc:
            raise DeviceNotFound(f"the shoe's path resolver failed: {exc}") from exc
        if not isinstance(path, str) or not path:
            raise DeviceNotFound(f"the shoe's path resolver found no device (got {path!r})")
        return path

    def _open(self, path: str) -> serial.Serial:
        options: dict[str, object] = {"baudrate": self._baudrate, "timeout": self._read_timeout}
        if "://" not in path:
            options["exclusive"] = True  # a second process on the same shoe is refused
        try:
            return serial.serial_for_url(path, **options)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DeviceNotFound(f"cannot open {path}: {exc}") from exc

    async def _connect(self, worker: WorkerThread) -> tuple[serial.Serial, str]:
        path = self._resolve()
        opening = asyncio.ensure_future(worker.call(self._open, path))
        try:
            return await asyncio.shield(opening), path
        except asyncio.CancelledError:  # the thread still finishes: close what it opens
            opening.add_done_callback(_close_opened)
            raise

    @staticmethod
    def _read_some(port: serial.Serial, path: str) -> bytes:
        """On the worker: what the port has, waiting at most its timeout for the first byte."""
        try:
            data: bytes = port.read(1)
            if data and (waiting := port.in_waiting):
                data += port.read(min(waiting, _CHUNK))
        except Exception as exc:  # pyserial raises SerialException, OSError, TypeError...
            raise DeviceLost(f"{path}: {exc}") from exc
        return data

    async def _serve(self, worker: WorkerThread, port: serial.Serial, path: str) -> None:
        stalled_at: float | None = None
        last_byte = heard = self._clock()  # the stall clock starts when the port opens
        while True:
            data = await worker.call(self._read_some, port, path)
            now = self._clock()
            events: list[LineEvent] = []
            if data:
                self._counters["bytes"] += len(data)
                last_byte = now
                events = self._decoder.feed(data)
            elif self._decoder.unfinished and now - last_byte >= self._line_timeout:
                given_up = self._decoder.flush()
                events = [] if given_up is None else [given_up]
            if events:
                if stalled_at is not None:
                    self._emit(self._alert("reconnected", f"heard on {path} again after"
                                           f" {now - stalled_at:.1f} s stalled"))
                    self._reads_lost(f"the shoe was silent {now - heard:.1f} s")
                    stalled_at = None
                self._last_seen = heard = now
            for event in events:
                self._deliver(event, now)
            silent = now - heard
            if self._stall_seconds and stalled_at is None and silent >= self._stall_seconds:
                stalled_at = now
                self._counters["stalls"] += 1
                self._emit(self._alert("stalled", f"{path}: no line for {silent:.1f} s (the"
                                       " shoe's idle line is missing)"))

    def _deliver(self, event: LineEvent, now: float) -> None:
        if isinstance(event, CardLine):
            self._counters["cards"] += 1
            reading = CardReading(card=event.card, read_index=self._next_read, quality=100,
                                  device=self.device, at_mono=now, session=None)
            self._next_read += 1
            self._emit(reading)
        elif isinstance(event, IdleLine):
            self._counters["idle_lines"] += 1
        elif isinstance(event, BadLine):
            self._counters["bad_lines"] += 1
            self._emit(ShoeStatus(state=ShoeState.UNREADABLE_CARD, device=self.device,
                                  detail=f"a line that is no card ({event.detail}): if a card"
                                  " just left the shoe, key it", at_mono=now))
            self._emit(self._alert("bad_frame", f"{event.detail};"
                                   f" {self._counters['bad_lines']} bad lines so far"))


def _close_opened(opening: asyncio.Future[serial.Serial]) -> None:
    """Done-callback for a port opened on the worker after its opener gave up: close it."""
    if not opening.cancelled() and opening.exception() is None:
        with contextlib.suppress(Exception):
            opening.result().close()
