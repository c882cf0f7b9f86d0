"""`showdown devices record`: the driver runs on the real device through a transparent relay
that writes both directions of the traffic, timestamped, to a capture file
(`cli.devices.capture`), followed by what the driver read.

A serial device: the relay opens the device with pyserial and a pty whose path the driver is
given in the device's place; each chunk that crosses is logged and passed on unchanged. A
TCP device (``socket://host:port``): the relay listens on 127.0.0.1 and the driver connects
there; the relay connects on to the device. Nothing is changed on the way (D307).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from cli.devices.capture import CaptureWriter
from cli.devices.kit import Chosen, settings_of
from cli.devices.observe import Observer
from cli.devices.relay import (
    DEFAULT_TCP_PORT,
    DeviceAt,
    Pty,
    devices_in,
    split_tcp,
    with_stand_ins,
)
from cli.errors import CommandError
from drivers.adapter import DriverContext

__all__ = ["record"]

DEFAULT_BAUDRATE = 115200
_GRACE = 0.3  # seconds the driver has, once the relay stops, to read what crossed


async def record(chosen: Chosen, *, out: Path, seconds: float, port_key: str | None = None,
                 baudrate: int | None = None, tcp_port: int = DEFAULT_TCP_PORT) -> str:
    """Record ``seconds`` of the devices' traffic to ``out``; a one-line summary."""
    devices = devices_in(chosen.adapter.name, chosen.options, chosen.place, only=port_key,
                         tcp_port=tcp_port)
    baud = baudrate or int(chosen.options.get("baudrate", DEFAULT_BAUDRATE))
    counts = {"rx": 0, "tx": 0}
    try:  # owner-only: an ID reader's capture holds card numbers (D309)
        fh = os.fdopen(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                       encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
    with fh:
        started = time.monotonic()
        writer = CaptureWriter(fh, started)
        writer.header(driver=chosen.adapter.name, role=chosen.role,
                      options=dict(chosen.options), devices=devices,
                      recorded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))

        relaying = [True]

        def logger(dev: int) -> Callable[[str, bytes], bool]:
            def log(direction: str, data: bytes) -> bool:
                if not relaying[0]:
                    return False  # the recording ended: nothing crosses any more
                counts[direction] += len(data)
                writer.chunk(time.monotonic(), dev, "rx" if direction == "rx" else "tx", data)
                return True
            return log

        async with AsyncExitStack() as stack:
            stand_ins: list[tuple[DeviceAt, str]] = []
            for i, at in enumerate(devices):
                if at.tcp:
                    stand_in = await _tcp_relay(at.device, logger(i), stack)
                else:
                    stand_in = _serial_relay(at.device, baud, logger(i), stack)
                stand_ins.append((at, stand_in))
            options = with_stand_ins(chosen.options, stand_ins)
            settings = settings_of(chosen.adapter, options, chosen.place)
            driver = chosen.adapter.open(settings, DriverContext(name=chosen.role))
            async with Observer(driver) as seen:
                took = await _until_done(seconds)
                # The relay stops first, then the driver is given a moment to read what
                # crossed: the capture holds exactly the bytes behind the readings it lists.
                relaying[0] = False
                await seen.pause(_GRACE)
            for item in seen.seen:
                writer.reading(item.at, item.item)
        writer.end(time.monotonic())
    kinds: dict[str, int] = {}
    for s in seen.seen:
        kind = type(s.item).__name__
        kinds[kind] = kinds.get(kind, 0) + 1
    what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "nothing"
    where = ", ".join(d.device for d in devices)
    return (f"recorded {took:.1f} s of {where}: {counts['rx']} bytes from the device,"
            f" {counts['tx']} from the driver; the driver read {what}; written to {out}")


async def _until_done(seconds: float) -> float:
    """Wait ``seconds``, or until Ctrl-C (SIGINT), which ends the recording as its time
    would: the capture is finished and closed, nothing lost. How long it waited."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    stop = asyncio.Event()
    try:
        loop.add_signal_handler(signal.SIGINT, stop.set)
    except (RuntimeError, ValueError):  # not the main thread (tests): the time alone
        await asyncio.sleep(seconds)
        return seconds
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    return loop.time() - started


def _serial_relay(device: str, baudrate: int, log: Callable[[str, bytes], bool],
                  stack: AsyncExitStack) -> str:
    """Relay between the real serial device and a pty; the pty's path."""
    try:
        port = serial.serial_for_url(device, baudrate=baudrate, timeout=0)
    except (OSError, serial.SerialException, ValueError) as exc:
        raise CommandError(f"cannot open the device {device}: {exc}") from None
    stack.callback(port.close)
    pty = Pty()
    stack.callback(pty.close)
    loop = asyncio.get_running_loop()

    def from_host() -> None:
        try:
            data = os.read(pty.master, 4096)
        except OSError:  # no driver holds the pty just now
            return
        if data and log("tx", data):
            with contextlib.suppress(OSError, serial.SerialException):
                port.write(data)

    def from_device() -> None:
        try:
            data = port.read(4096)
        except (OSError, serial.SerialException):  # the device went away: stop relaying it
            loop.remove_reader(port.fileno())
            return
        if data and log("rx", data):
            with contextlib.suppress(OSError):
                os.write(pty.master, data)

    loop.add_reader(pty.master, from_host)
    loop.add_reader(port.fileno(), from_device)
    stack.callback(loop.remove_reader, pty.master)
    stack.callback(_remove_reader, loop, port)
    return pty.path


def _remove_reader(loop: asyncio.AbstractEventLoop, port: Any) -> None:
    with contextlib.suppress(Exception):
        loop.remove_reader(port.fileno())


async def _tcp_relay(device: str, log: Callable[[str, bytes], bool],
                     stack: AsyncExitStack) -> str:
    """Relay between the real TCP device and a local port; the local URL."""
    host, port = split_tcp(device)
    tasks: set[asyncio.Task[None]] = set()

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   direction: str) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(4096):
                if log(direction, data):
                    writer.write(data)
                    await writer.drain()
        writer.close()

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        for args in ((reader, up_writer, "tx"), (up_reader, writer, "rx")):
            task = asyncio.create_task(pump(*args))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    try:  # the device must answer before the driver is pointed at the relay
        _, probe = await asyncio.open_connection(host, port)
        probe.close()
    except OSError as exc:
        raise CommandError(f"cannot reach the device {device}: {exc.strerror or exc}") from None
    server = await asyncio.start_server(client, "127.0.0.1", 0)
    stack.push_async_callback(_stop, server, tasks)
    local = server.sockets[0].getsockname()[1]
    return f"socket://127.0.0.1:{local}"


async def _stop(server: asyncio.Server, tasks: set[asyncio.Task[None]]) -> None:
    server.close()
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
