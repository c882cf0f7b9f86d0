"""One open pyserial port as the asyncio drivers use it: a reader thread handing its bytes to
the event loop, writes in a worker thread, and a close that never blocks the loop. Shared by
the card shoe (`drivers.shoe`) and the ID-card reader (`drivers.id_reader`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from drivers.errors import DeviceLost
from runtime.worker_thread import WorkerThread

__all__ = ["SerialPort", "close_opened"]


def close_opened(opening: asyncio.Future[serial.Serial]) -> None:
    """Done-callback for a port opened in a thread whose opener gave up: close it."""
    if not opening.cancelled() and opening.exception() is None:
        with contextlib.suppress(Exception):
            opening.result().close()


class SerialPort:
    """One open serial port: a reader thread feeding an asyncio queue, writes on a writer
    thread of its own (in order)."""

    def __init__(self, port: serial.Serial, path: str, loop: asyncio.AbstractEventLoop, *,
                 name: str) -> None:
        self.port = port
        self.path = path
        self._loop = loop
        self._chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"{name} {path}", daemon=True)
        self._thread.start()
        self._writer = WorkerThread(f"{name}-write {path}")

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

    async def write(self, data: bytes) -> None:
        """Send bytes (on the writer thread); DeviceLost if the port is gone."""
        try:
            await self._writer.call(self.port.write, data)
        except Exception as exc:
            raise DeviceLost(f"{self.path}: write failed: {exc}") from exc

    async def close(self) -> None:
        """Stop the reader thread and close the port (in a worker thread)."""
        self._stop.set()
        self._writer.close(wait=False)
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._thread.join(timeout=2.0)
        with contextlib.suppress(Exception):
            self.port.close()
