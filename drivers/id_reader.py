"""The table's ID reader over serial: `SerialIdReader`, a pyserial transport around the sans-I/O
`drivers.id_codec.IdLineDecoder`, yielding `IdTap` (a rewards or employee card read) and
`DeviceAlert` (connected, lost, reconnected, not_found, bad_read).

The reader is a USB NFC or magstripe reader in "virtual COM" mode (docs/protocols/id-reader.md):
it only talks, one line per read, and says nothing when idle, so there is no handshake and no
stall timeout; the device is "lost" when the port fails (unplugged, re-enumerated). The driver
opens any pyserial URL or asks a resolver callable for the current path each time it connects,
and reconnects with jittered backoff. Blocking port calls run in a reader thread and
``asyncio.to_thread``, never on the event loop. Logs show card numbers masked only.
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

from drivers.errors import DeviceNotFound, DriverError
from drivers.id_codec import BadIdRead, IdLineDecoder
from drivers.protocols import IdReading
from drivers.readings import DeviceAlert, DeviceHealth, IdTap, masked
from drivers.serial_port import SerialPort, close_opened
from runtime.backoff import Backoff

__all__ = ["SerialIdReader"]

_log = structlog.get_logger("drivers.id_reader")

_CLOSED: Final = object()
_COUNTERS: Final = ("taps", "bad_reads", "connects", "reconnects", "disconnects")



class SerialIdReader:
    """The table's ID reader on a serial line, satisfying `drivers.protocols.IdReader`.

    ``async with SerialIdReader("/dev/serial/by-id/...") as ids: async for r in ids: ...``
    yields `IdTap` and `DeviceAlert` until the block ends. Opening never fails because the
    reader is absent: the driver alerts ("not_found", once per outage) and keeps trying.
    A line that is no card read is a ``bad_read`` alert, and reading goes on. A line left
    unfinished for ``line_timeout`` seconds is given up as a bad read, so noise without a line
    end never swallows the next card.
    """

    def __init__(
        self,
        url: str | Callable[[], str],
        *,
        device_name: str | None = None,
        baudrate: int = 9600,
        backoff: Backoff | None = None,
        read_timeout: float = 0.05,
        line_timeout: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if read_timeout <= 0 or line_timeout <= 0:
            raise ValueError("read_timeout and line_timeout must be positive")
        self._url = url
        self.device = device_name if device_name is not None else (
            url if isinstance(url, str) else "id-reader")
        self._decoder = IdLineDecoder(self.device)
        self._baudrate = baudrate
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._read_timeout = read_timeout
        self._line_timeout = line_timeout
        self._clock = clock
        self._readings: asyncio.Queue[IdReading | object] | None = None
        self._task: asyncio.Task[None] | None = None
        self._port: SerialPort | None = None
        self._connected = False
        self._last_seen: float | None = None
        self._counters: dict[str, int] = dict.fromkeys(_COUNTERS, 0)

    # ------------------------------------------------------------------ the IdReader protocol

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError("SerialIdReader is not reentrant")
        self._readings = asyncio.Queue()
        self._task = asyncio.create_task(self._supervise(), name=f"id_reader[{self.device}]")
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

    def __aiter__(self) -> AsyncIterator[IdReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[IdReading]:
        queue = self._readings
        if queue is None:
            raise RuntimeError("use `async with SerialIdReader(...)` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is an IdReading

    def health(self) -> DeviceHealth:
        """Connected or not, when the reader last sent a byte, and the counters (taps,
        bad_reads, connects, reconnects, disconnects)."""
        return DeviceHealth(device=self.device, connected=self._connected,
                            last_seen_mono=self._last_seen, counters=dict(self._counters))

    # ------------------------------------------------------------------ connection management

    def _emit(self, reading: IdReading) -> None:
        if isinstance(reading, DeviceAlert):
            getattr(_log, reading.log_level)("id reader alert", device=reading.device,
                                             kind=reading.kind, detail=reading.detail)
        else:
            _log.info("id card read", device=reading.device, form=reading.form,
                      number=masked(reading.number))
        assert self._readings is not None
        self._readings.put_nowait(reading)

    def _alert(self, kind: str, detail: str) -> DeviceAlert:
        return DeviceAlert(device=self.device, kind=kind, detail=detail, at_mono=self._clock())

    async def _supervise(self) -> None:
        ever_connected = outage_reported = False
        while True:
            try:
                port = await self._connect()
            except Exception as exc:
                if not isinstance(exc, DriverError):  # a bug here must not end the stream
                    _log.exception("id reader driver error while connecting")
                if not outage_reported:
                    outage_reported = True
                    self._emit(self._alert("lost" if ever_connected else "not_found",
                                           str(exc)))
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._backoff.reset()
            self._connected = True
            self._counters["connects"] += 1
            if ever_connected:
                self._counters["reconnects"] += 1
            self._emit(self._alert("reconnected" if ever_connected else "connected",
                                   f"reading on {port.path}"))
            ever_connected, outage_reported = True, False
            try:
                await self._serve(port)
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    _log.exception("id reader driver error while reading")
                self._counters["disconnects"] += 1
                outage_reported = True
                self._emit(self._alert("lost", str(exc) or type(exc).__name__))
            finally:
                self._connected = False
                self._decoder.reset()  # a line cut by the outage is gone with it
                await self._drop_port()

    async def _drop_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            await port.close()

    def _resolve(self) -> str:
        if isinstance(self._url, str):
            return self._url
        try:
            path = self._url()
        except Exception as exc:
            raise DeviceNotFound(f"the ID reader's path resolver failed: {exc}") from exc
        if not isinstance(path, str) or not path:
            raise DeviceNotFound(f"the ID reader's path resolver found no device (got {path!r})")
        return path

    def _open(self, path: str) -> serial.Serial:
        options: dict[str, object] = {"baudrate": self._baudrate, "timeout": self._read_timeout}
        if "://" not in path:
            options["exclusive"] = True  # a second process on the same reader is refused
        try:
            return serial.serial_for_url(path, **options)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DeviceNotFound(f"cannot open {path}: {exc}") from exc

    async def _connect(self) -> SerialPort:
        path = self._resolve()
        opening = asyncio.ensure_future(asyncio.to_thread(self._open, path))
        try:
            handle = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the thread still finishes: close what it opens
            opening.add_done_callback(close_opened)
            raise
        self._port = SerialPort(handle, path, asyncio.get_running_loop(), name="id-reader")
        return self._port

    async def _serve(self, port: SerialPort) -> None:
        decoder = self._decoder
        while True:
            data = await port.read(self._line_timeout if decoder.unfinished else None)
            now = self._clock()
            if data is None:  # a line begun and never ended
                given_up = decoder.flush(at_mono=now)
                reads: list[IdTap | BadIdRead] = [] if given_up is None else [given_up]
            else:
                self._last_seen = now
                reads = decoder.feed(data, at_mono=now)
            for read in reads:
                if isinstance(read, IdTap):
                    self._counters["taps"] += 1
                    self._emit(read)
                else:
                    self._counters["bad_reads"] += 1
                    self._emit(DeviceAlert(device=read.device, kind="bad_read",
                                           detail=read.detail, at_mono=read.at_mono))
