"""One open pyserial port as the asyncio drivers use it, and a close that never blocks the
loop. Shared by the card shoe (`drivers.shoe`) and the ID-card reader (`drivers.id_reader`).

A local serial device (a tty or pty opened by pyserial's POSIX port, always non-blocking) is
served by the event loop itself: it reads when the descriptor is readable and writes straight
to it, waiting for room only when the line is full, so a card's reading and its ACK cross no
thread. Any other port (a pyserial URL such as ``socket://`` or ``rfc2217://``) keeps a
reader thread and a writer thread, whose blocking calls honour its timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
from typing import Final

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from drivers.errors import DeviceLost
from runtime.worker_thread import WorkerThread

__all__ = ["SerialPort", "close_opened"]

_CHUNK: Final = 4096
_AGAIN: Final = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR})
_POSIX: Final = getattr(serial, "serialposix", None)  # None where pyserial is not POSIX


def close_opened(opening: asyncio.Future[serial.Serial]) -> None:
    """Done-callback for a port opened in a thread whose opener gave up: close it."""
    if not opening.cancelled() and opening.exception() is None:
        with contextlib.suppress(Exception):
            opening.result().close()


class SerialPort:
    """One open serial port: its bytes in an asyncio queue, writes in order (on the loop for
    a local device, else on a writer thread of its own)."""

    def __init__(self, port: serial.Serial, path: str, loop: asyncio.AbstractEventLoop, *,
                 name: str) -> None:
        self.port = port
        self.path = path
        self._loop = loop
        self._chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue()
        self._stop = threading.Event()
        self._fd: int | None = None
        self._thread: threading.Thread | None = None
        self._writer: WorkerThread | None = None
        self._writing = asyncio.Lock()
        self._closed = False
        if _POSIX is not None and isinstance(port, _POSIX.Serial) and port.fd is not None:
            self._fd = port.fd
            loop.add_reader(self._fd, self._readable)
        else:
            self._thread = threading.Thread(target=self._pump, name=f"{name} {path}",
                                            daemon=True)
            self._thread.start()
            self._writer = WorkerThread(f"{name}-write {path}")

    # ---- reading ----------------------------------------------------------------------

    def _readable(self) -> None:
        """On the loop: the descriptor has bytes (or has gone)."""
        assert self._fd is not None
        try:
            data = os.read(self._fd, _CHUNK)
        except OSError as exc:
            if exc.errno in _AGAIN:
                return
            self._lost(exc)
            return
        if data:
            self._chunks.put_nowait(data)
        else:  # readable with nothing to read: a disconnected device, as pyserial says
            self._lost(OSError("device reports readiness to read but returned no data"
                               " (device disconnected?)"))

    def _lost(self, exc: BaseException) -> None:
        self._stop_reading()
        self._chunks.put_nowait(exc)

    def _stop_reading(self) -> None:
        if self._fd is not None and not self._stop.is_set():
            self._stop.set()
            with contextlib.suppress(Exception):  # the loop may be closing
                self._loop.remove_reader(self._fd)

    def _pump(self) -> None:
        while not self._stop.is_set():
            try:
                data: bytes = self.port.read(max(1, self.port.in_waiting))
            except Exception as exc:  # pyserial raises SerialException, OSError, TypeError...
                self._push(exc)
                return
            if data:
                self._push(data)

    def _push(self, item: bytes | BaseException) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closing; nobody listens
            self._loop.call_soon_threadsafe(self._chunks.put_nowait, item)

    async def read(self, timeout: float | None) -> bytes | None:
        """Bytes received, or None if nothing came within ``timeout``; DeviceLost if it broke."""
        try:
            # Not asyncio.wait_for: on 3.11 it swallows a cancellation that arrives as the
            # item does, and the reader's task then never ends (close() would hang).
            async with asyncio.timeout(timeout):
                item = await self._chunks.get()
        except TimeoutError:
            return None
        if isinstance(item, BaseException):
            raise DeviceLost(f"{self.path}: {item}") from item
        return item

    # ---- writing ----------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        """Send bytes, in the order given; DeviceLost if the port is gone (or, for a local
        device, if the line takes nothing for the port's write timeout)."""
        if self._writer is not None:
            try:
                await self._writer.call(self.port.write, data)
            except Exception as exc:
                raise DeviceLost(f"{self.path}: write failed: {exc}") from exc
            return
        async with self._writing:
            try:
                async with asyncio.timeout(self.port.write_timeout):
                    await self._write_all(memoryview(data))
            except TimeoutError as exc:
                raise DeviceLost(f"{self.path}: write failed: the line took nothing for"
                                 f" {self.port.write_timeout:g} s") from exc

    async def _write_all(self, view: memoryview) -> None:
        assert self._fd is not None
        while view:
            if self._closed:
                raise DeviceLost(f"{self.path}: write failed: the port is closed")
            try:
                view = view[os.write(self._fd, view):]
                continue
            except OSError as exc:
                if exc.errno not in _AGAIN:
                    raise DeviceLost(f"{self.path}: write failed: {exc}") from exc
            room: asyncio.Future[None] = self._loop.create_future()
            self._loop.add_writer(self._fd, _set_once, room)
            try:
                await room
            finally:
                self._loop.remove_writer(self._fd)

    # ---- closing ----------------------------------------------------------------------

    async def close(self) -> None:
        """Stop reading and close the port (in a worker thread)."""
        self._closed = True
        self._stop_reading()
        self._stop.set()
        if self._writer is not None:
            self._writer.close(wait=False)
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with contextlib.suppress(Exception):
            self.port.close()


def _set_once(room: asyncio.Future[None]) -> None:
    if not room.done():
        room.set_result(None)
