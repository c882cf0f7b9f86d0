"""The byte pipe to one QuasarMX: a serial port (USB virtual COM, pyserial) or a TCP
connection (asyncio streams). Both read with a timeout and map every failure to
`DeviceNotFound` (cannot open) or `DeviceLost` (was open, is gone), so the driver above
(`drivers.quasar`) never sees an OS or pyserial error.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final, Protocol

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from drivers.errors import DeviceLost, DeviceNotFound
from drivers.serial_port import SerialPort, close_opened

__all__ = ["Link", "open_serial", "open_tcp"]

_CHUNK: Final = 4096


class Link(Protocol):
    """An open byte pipe to a reader."""

    async def read(self, timeout: float) -> bytes | None:
        """Bytes received, None if nothing came within ``timeout``; DeviceLost if gone."""
        ...

    async def write(self, data: bytes) -> None:
        """Send bytes; DeviceLost if gone."""
        ...

    async def close(self) -> None:
        """Close it (never raises)."""
        ...


class _SerialLink:
    def __init__(self, port: SerialPort) -> None:
        self._port = port

    async def read(self, timeout: float) -> bytes | None:
        return await self._port.read(timeout)

    async def write(self, data: bytes) -> None:
        await self._port.write(data)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._port.close()


class _TcpLink:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 where: str, write_timeout: float) -> None:
        self._reader, self._writer = reader, writer
        self._where = where
        self._write_timeout = write_timeout

    async def read(self, timeout: float) -> bytes | None:
        try:
            async with asyncio.timeout(timeout):
                data = await self._reader.read(_CHUNK)
        except TimeoutError:
            return None
        except OSError as exc:
            raise DeviceLost(f"{self._where}: {exc}") from exc
        if not data:
            raise DeviceLost(f"{self._where}: the reader closed the connection")
        return data

    async def write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
            async with asyncio.timeout(self._write_timeout):
                await self._writer.drain()
        except TimeoutError as exc:
            raise DeviceLost(f"{self._where}: the reader takes no bytes") from exc
        except OSError as exc:
            raise DeviceLost(f"{self._where}: write failed: {exc}") from exc

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await self._writer.wait_closed()


def _open_port(path: str, baudrate: int, write_timeout: float) -> serial.Serial:
    options: dict[str, object] = {"baudrate": baudrate, "timeout": 0.05,
                                  "write_timeout": write_timeout}
    if "://" not in path:
        options["exclusive"] = True  # a second process on the same reader is refused
    try:
        return serial.serial_for_url(path, **options)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise DeviceNotFound(f"cannot open {path}: {exc}") from exc


async def open_serial(path: str, *, baudrate: int, write_timeout: float) -> Link:
    """Open a serial port (a blocking open, in a thread); DeviceNotFound if it is not there."""
    opening = asyncio.ensure_future(asyncio.to_thread(_open_port, path, baudrate,
                                                      write_timeout))
    try:
        handle = await asyncio.shield(opening)
    except asyncio.CancelledError:  # the thread still finishes: close what it opens
        opening.add_done_callback(close_opened)
        raise
    return _SerialLink(SerialPort(handle, path, asyncio.get_running_loop(), name="quasarmx"))


async def open_tcp(host: str, port: int, *, timeout: float) -> Link:
    """Connect to a reader's TCP port; DeviceNotFound if refused or unreachable in time."""
    where = f"{host}:{port}"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
    except TimeoutError as exc:
        raise DeviceNotFound(f"{where}: no answer within {timeout:g} s") from exc
    except OSError as exc:
        raise DeviceNotFound(f"{where}: {exc.strerror or exc}") from exc
    return _TcpLink(reader, writer, where, timeout)
