"""drivers.serial_port on a real pseudo-terminal: a local device is served by the event loop
(no reader or writer thread), in order, waiting for room when the line is full, and a lost
device or a line that takes nothing is DeviceLost."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import threading
from collections.abc import Iterator

import pytest
import serial  # type: ignore[import-untyped]

from drivers.errors import DeviceLost
from drivers.serial_port import SerialPort


@pytest.fixture
def line() -> Iterator[tuple[int, str]]:
    """A pty: the device's end (master fd) and the path the driver opens."""
    master, slave = pty.openpty()
    path = os.ttyname(slave)
    os.close(slave)
    yield master, path
    with contextlib.suppress(OSError):  # a test closed it already
        os.close(master)


def _open(path: str, write_timeout: float | None = 2.0) -> serial.Serial:
    return serial.serial_for_url(path, baudrate=115200, timeout=0.1,
                                 write_timeout=write_timeout)


async def _read(port: SerialPort, want: int) -> bytes:
    """`want` bytes through the driver, each chunk within 2 s."""
    got = b""
    while len(got) < want:
        chunk = await port.read(2.0)
        assert chunk is not None
        got += chunk
    return got


def _drain(master: int, want: int) -> bytes:
    got = bytearray()
    while len(got) < want:
        got += os.read(master, 65536)
    return bytes(got)


async def test_a_local_device_needs_no_thread_and_reads_in_order(line: tuple[int, str]) -> None:
    master, path = line
    before = threading.active_count()
    port = SerialPort(_open(path), path, asyncio.get_running_loop(), name="test")
    try:
        assert threading.active_count() == before  # no reader, no writer thread
        os.write(master, b"abc")
        os.write(master, b"def")
        assert await _read(port, 6) == b"abcdef"
        assert await port.read(0.05) is None  # nothing more: a timeout, not an error
    finally:
        await port.close()


async def test_a_full_line_waits_for_room_and_keeps_the_order(line: tuple[int, str]) -> None:
    master, path = line
    port = SerialPort(_open(path), path, asyncio.get_running_loop(), name="test")
    blocks = [bytes([n]) * 50_000 for n in range(1, 5)]  # far more than a pty buffers
    try:
        writes = asyncio.gather(*(port.write(b) for b in blocks))
        await asyncio.sleep(0.05)
        assert not writes.done()  # the line is full and nobody reads the device's end
        received = await asyncio.to_thread(_drain, master, sum(map(len, blocks)))
        await asyncio.wait_for(writes, 5.0)
        assert received == b"".join(blocks)
    finally:
        await port.close()


async def test_a_line_that_takes_nothing_is_lost_after_the_write_timeout(
        line: tuple[int, str]) -> None:
    _master, path = line
    port = SerialPort(_open(path, write_timeout=0.2), path, asyncio.get_running_loop(),
                      name="test")
    try:
        with pytest.raises(DeviceLost, match=r"write failed: the line took nothing for 0.2 s"):
            await port.write(b"x" * 1_000_000)
    finally:
        await port.close()


async def test_an_unplugged_device_is_lost_for_the_reader(line: tuple[int, str]) -> None:
    master, path = line
    port = SerialPort(_open(path), path, asyncio.get_running_loop(), name="test")
    try:
        os.close(master)  # the device's end goes away (a pty's master closed)
        with pytest.raises(DeviceLost, match=path):
            await port.read(2.0)
    finally:
        await port.close()


async def test_a_closed_port_refuses_writes(line: tuple[int, str]) -> None:
    _master, path = line
    port = SerialPort(_open(path), path, asyncio.get_running_loop(), name="test")
    await port.close()
    with pytest.raises(DeviceLost, match="write failed"):
        await port.write(b"late")


async def test_a_url_port_keeps_its_threads() -> None:
    """A pyserial URL (here loop://, its echo) has no descriptor the loop can watch."""
    before = threading.active_count()
    port = SerialPort(serial.serial_for_url("loop://", timeout=0.1), "loop://",
                      asyncio.get_running_loop(), name="test")
    try:
        assert threading.active_count() == before + 1  # the reader (the writer at first use)
        await port.write(b"echo")
        assert await _read(port, 4) == b"echo"
    finally:
        await port.close()
