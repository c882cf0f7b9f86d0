"""The card shoe over serial: `SerialCardReader` (pyserial transport, reconnects, health), a
`CardReader` around `drivers.shoe_link.ShoeLink` (the host side of the protocol, sans-I/O).

`SerialCardReader` opens any pyserial URL (a /dev/serial/by-id path, a pty, ``socket://``) or
asks a resolver callable for the current path each time it connects, so a shoe that comes back
under another name after a USB re-enumeration is found again. Blocking port calls run in a
reader thread and ``asyncio.to_thread``, never on the event loop. Protocol:
docs/protocols/card-shoe.md.

With ``ack="on_confirm"`` the shoe's events are acknowledged only when the consumer calls
``await reader.confirm(reading)`` after storing the reading, so a host that dies in between
loses nothing: the shoe still holds the event and delivers it to the next reader (§5.5).
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
from drivers.protocols import ShoeReading
from drivers.readings import DeviceAlert, DeviceHealth, DeviceIdentity
from drivers.serial_port import SerialPort, close_opened
from drivers.shoe_codec import (
    BadFrame,
    ShoeDecoder,
    ShoeIdentity,
    ShoeMessage,
)
from drivers.shoe_link import ACK_MODES, AckMode, ShoeLink
from runtime.backoff import Backoff

__all__ = ["SerialCardReader"]

_log = structlog.get_logger("drivers.shoe")

_CLOSED: Final = object()


class _Stalled(DriverError):
    """No frame from the shoe within the stall timeout."""


class _Port(SerialPort):
    """The shoe's port: the shared serial port and the frame decoder of this connection."""

    def __init__(self, port: serial.Serial, path: str, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(port, path, loop, name="shoe-reader")
        self.decoder = ShoeDecoder(sender="device")


class SerialCardReader:
    """A card shoe on a serial line, satisfying `drivers.protocols.CardReader`.

    ``async with SerialCardReader("/dev/serial/by-id/...") as shoe: async for r in shoe: ...``
    yields `CardReading`, `ShoeStatus` and `DeviceAlert` (connected, disconnected, stalled,
    reconnected, session_changed, ...) until the block ends. Opening never fails because the
    shoe is absent: the reader alerts and keeps trying with jittered backoff.

    ``ack="on_receipt"`` (the default) acknowledges each event as soon as it is decoded.
    ``ack="on_confirm"`` acknowledges a `CardReading` or `ShoeStatus` only after the consumer
    ``await reader.confirm(reading)``: every one of them must be confirmed, in any order, once
    stored; the shoe keeps (and resends) what is not, for this reader or the next one.
    """

    def __init__(
        self,
        url: str | Callable[[], str],
        *,
        name: str | None = None,
        baudrate: int = 115200,
        stall_timeout: float = 3.0,
        identify_timeout: float = 1.0,
        identify_attempts: int = 3,
        backoff: Backoff | None = None,
        read_timeout: float = 0.05,
        write_timeout: float = 1.0,
        nak_holdoff: float = 0.2,
        idle_resync: float = 0.1,
        bad_frame_alert_interval: float = 30.0,
        ack: AckMode = "on_receipt",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if stall_timeout <= 0 or identify_timeout <= 0 or identify_attempts < 1:
            raise ValueError("stall_timeout and identify_timeout must be positive, "
                             "identify_attempts at least 1")
        if ack not in ACK_MODES:
            raise ValueError(f"ack {ack!r} must be one of {', '.join(ACK_MODES)}")
        self._url = url
        label = name if name is not None else (url if isinstance(url, str) else "shoe")
        self._link = ShoeLink(label, nak_holdoff=nak_holdoff,
                              bad_frame_alert_interval=bad_frame_alert_interval,
                              ack_on_confirm=ack == "on_confirm")
        self.ack: AckMode = ack
        self._baudrate = baudrate
        self._stall_timeout = stall_timeout
        self._identify_timeout = identify_timeout
        self._identify_attempts = identify_attempts
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._read_timeout = read_timeout
        self._write_timeout = write_timeout
        self._idle_resync = idle_resync
        self._clock = clock
        self._readings: asyncio.Queue[ShoeReading | object] | None = None
        self._task: asyncio.Task[None] | None = None
        self._port: _Port | None = None
        self._connected = False
        self._last_seen: float | None = None
        self._skipped_done = 0  # skipped bytes of closed connections
        self._writing = asyncio.Lock()  # frames go out in the order of their link SEQ

    # ------------------------------------------------------------------ the CardReader protocol

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError("SerialCardReader is not reentrant")
        self._readings = asyncio.Queue()
        self._task = asyncio.create_task(self._supervise(), name=f"shoe[{self._link.name}]")
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
            raise RuntimeError("use `async with SerialCardReader(...)` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is a ShoeReading

    async def confirm(self, reading: ShoeReading) -> None:
        """The consumer has stored ``reading`` (ack="on_confirm"): acknowledge its event once
        every earlier one is confirmed too. A no-op for alerts and in ack="on_receipt" mode.
        Never raises for the line: if the ACK cannot go out now, the shoe resends the event
        after reconnecting and is acknowledged then."""
        async with self._writing:
            if not self._link.confirm(reading):
                return
            port = self._port
            if port is None or not self._connected:
                return
            try:
                await port.write(self._link.ack_frame())
            except DriverError as exc:
                _log.warning("shoe ACK not sent; the shoe will resend", device=self._link.device,
                             error=str(exc))

    def health(self) -> DeviceHealth:
        """Connected or not, the shoe's identity, when it was last heard, and the counters."""
        ident = self._link.identity
        counters = dict(self._link.counters)
        port = self._port
        counters["skipped_bytes"] = self._skipped_done + (
            port.decoder.stats.skipped_bytes if port is not None else 0)
        counters["unconfirmed"] = self._link.unconfirmed
        return DeviceHealth(
            device=self._link.device,
            connected=self._connected,
            identity=None if ident is None else DeviceIdentity(
                kind="shoe", model=ident.model, serial=ident.serial, firmware=ident.firmware),
            last_seen_mono=self._last_seen,
            counters=counters,
        )

    # ------------------------------------------------------------------ connection management

    def _emit(self, reading: ShoeReading) -> None:
        if isinstance(reading, DeviceAlert):
            getattr(_log, reading.log_level)("shoe alert", device=reading.device,
                                             kind=reading.kind, detail=reading.detail)
        assert self._readings is not None
        self._readings.put_nowait(reading)

    async def _supervise(self) -> None:
        counters = self._link.counters
        ever_connected = down_reported = False
        while True:
            try:
                alerts = await self._connect()
            except Exception as exc:
                if not isinstance(exc, DriverError):  # a bug here must not end the stream
                    _log.exception("shoe driver error while connecting")
                if not down_reported:
                    down_reported = True
                    self._emit(self._alert("disconnected", str(exc)))
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._backoff.reset()
            assert self._port is not None
            counters["connects"] += 1
            if ever_connected:
                counters["reconnects"] += 1
            ident = self._link.identity
            assert ident is not None
            self._emit(self._alert(
                "reconnected" if ever_connected else "connected",
                f"{ident.model} serial {ident.serial} firmware {ident.firmware} on "
                f"{self._port.path}, session {ident.session_id:08x}, {ident.reads} cards read"))
            ever_connected, down_reported = True, False
            for alert in alerts:
                self._emit(alert)
            try:
                await self._serve(self._port)
            except _Stalled as exc:
                counters["stalls"] += 1
                self._emit(self._alert("stalled", str(exc)))
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    _log.exception("shoe driver error while serving")
                counters["disconnects"] += 1
                self._emit(self._alert("disconnected", str(exc) or type(exc).__name__))
            finally:
                self._connected = False
                await self._drop_port()
            down_reported = True

    def _alert(self, kind: str, detail: str) -> DeviceAlert:
        return DeviceAlert(device=self._link.device, kind=kind, detail=detail,
                           at_mono=self._clock())

    async def _drop_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            self._skipped_done += port.decoder.stats.skipped_bytes
            await port.close()

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
        options: dict[str, object] = {"baudrate": self._baudrate, "timeout": self._read_timeout,
                                      "write_timeout": self._write_timeout}
        if "://" not in path:
            options["exclusive"] = True  # a second process on the same shoe is refused
        try:
            return serial.serial_for_url(path, **options)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DeviceNotFound(f"cannot open {path}: {exc}") from exc

    async def _connect(self) -> list[ShoeReading]:
        path = self._resolve()
        opening = asyncio.ensure_future(asyncio.to_thread(self._open, path))
        try:
            handle = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the thread still finishes: close what it opens
            opening.add_done_callback(close_opened)
            raise
        port = _Port(handle, path, asyncio.get_running_loop())
        self._port = port
        try:
            return await self._handshake(port)
        except BaseException:
            await self._drop_port()
            raise

    async def _handshake(self, port: _Port) -> list[ShoeReading]:
        link = self._link
        link.new_connection()
        for _ in range(self._identify_attempts):
            await port.write(link.identify_frame())
            deadline = self._clock() + self._identify_timeout
            while (remaining := deadline - self._clock()) > 0:
                data = await port.read(remaining)
                if data is not None:
                    port.decoder.feed(data)
                elif port.decoder.flush_partial() is None:  # idle: give up a false start
                    break
                while (event := port.decoder.next_event()) is not None:
                    if isinstance(event, BadFrame):
                        link.count_bad_frame(event)
                    elif isinstance(event, ShoeIdentity):
                        now = self._clock()
                        self._last_seen = now
                        self._connected = True
                        alerts, _ = link.handle(event, now)  # no replies before the first ACK
                        return alerts
        stats = port.decoder.stats
        raise DeviceNotFound(
            f"{port.path}: no identity after {self._identify_attempts} IDENTIFY"
            f" ({stats.frames} good frames, {stats.bad_frames} bad frames)")

    async def _serve(self, port: _Port) -> None:
        await self._drain(port)
        while True:
            assert self._last_seen is not None
            silent_for = self._clock() - self._last_seen
            if silent_for >= self._stall_timeout:
                raise _Stalled(f"{port.path}: nothing heard for {silent_for:.1f} s")
            wait = self._stall_timeout - silent_for
            if port.decoder.buffered:
                wait = min(wait, self._idle_resync)
            data = await port.read(wait)
            if data is not None:
                port.decoder.feed(data)
            elif port.decoder.buffered:  # idle with a frame unfinished: a false start in noise
                gave_up = port.decoder.flush_partial()
                if gave_up is not None:
                    await self._handle(port, gave_up)
            await self._drain(port)

    async def _drain(self, port: _Port) -> None:
        while (event := port.decoder.next_event()) is not None:
            await self._handle(port, event)

    async def _handle(self, port: _Port, event: ShoeMessage | BadFrame) -> None:
        now = self._clock()
        if not isinstance(event, BadFrame):
            self._last_seen = now
        async with self._writing:
            readings, replies = self._link.handle(event, now)
            for reading in readings:
                self._emit(reading)
            for frame in replies:
                await port.write(frame)
