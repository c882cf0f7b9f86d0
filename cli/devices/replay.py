"""`showdown devices check --capture FILE`: a recorded device played back to the driver, as
Network UPS Tools' dummy-ups replays a device through the same interface as its driver.

The device's bytes go out on their recorded timing through a pty (a serial device) or a
port on 127.0.0.1 (a TCP device) that the driver is given in the device's place. Where the
recording has the host writing (a request, an acknowledgement), the player waits until the
driver has written as many bytes, then plays the device's recorded answer on the recording's
timing from that moment: a request/response protocol gets each answer after its request.
The kit then checks that the driver read what was read at the time, with no alert beyond
those recorded (D307).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.devices.capture import Capture, Chunk, describe, read_capture
from cli.devices.kit import Chosen, settings_of
from cli.devices.observe import Observer
from cli.devices.relay import DeviceAt, Pty, with_stand_ins
from cli.devices.report import Report, Row, fail, ok
from drivers.adapter import DriverContext

__all__ = ["Played", "check_capture", "read_capture"]

_GRACE = 0.3  # seconds the driver is given after the last byte


@dataclass(slots=True)
class Played:
    """How the playback went."""

    device_bytes: int = 0
    host_bytes: int = 0
    recorded_host_bytes: int = 0
    unanswered: int = 0  # host writes of the recording the driver never made
    host_data: bytes = b""


class _Player:
    """Plays a capture's device side; counts what the host writes."""

    def __init__(self, wait_cap: float) -> None:
        self.wait_cap = wait_cap
        self.host = bytearray()
        self._heard = asyncio.Event()

    def heard(self, data: bytes) -> None:
        self.host += data
        self._heard.set()

    async def send(self, data: bytes) -> None:  # overridden per transport
        raise NotImplementedError

    async def play(self, chunks: Sequence[Chunk]) -> Played:
        loop = asyncio.get_running_loop()
        played = Played()
        base = loop.time()
        expected = 0
        for chunk in chunks:
            if chunk.dir == "rx":
                delay = base + chunk.t - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self.send(chunk.data)
                played.device_bytes += len(chunk.data)
                continue
            expected += len(chunk.data)
            played.recorded_host_bytes += len(chunk.data)
            deadline = loop.time() + self.wait_cap
            while len(self.host) < expected and loop.time() < deadline:
                self._heard.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._heard.wait(), deadline - loop.time())
            if len(self.host) >= expected:
                base = loop.time() - chunk.t  # the device answers from the request on
            else:
                played.unanswered += 1
        played.host_bytes = len(self.host)
        played.host_data = bytes(self.host)
        return played


class _PtyPlayer(_Player):
    def __init__(self, wait_cap: float, stack: AsyncExitStack) -> None:
        super().__init__(wait_cap)
        self.pty = Pty()
        stack.callback(self.pty.close)
        loop = asyncio.get_running_loop()
        loop.add_reader(self.pty.master, self._read)
        stack.callback(loop.remove_reader, self.pty.master)

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            data = os.read(self.pty.master, 4096)
            if data:
                self.heard(data)

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.pty.master, view):]
            except BlockingIOError:
                await asyncio.sleep(0.005)
            except OSError:
                return  # nobody holds the pty: the bytes are lost, as on a real line


class _TcpPlayer(_Player):
    def __init__(self, wait_cap: float) -> None:
        super().__init__(wait_cap)
        self.writer: asyncio.StreamWriter | None = None
        self.connected = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, stack: AsyncExitStack) -> str:
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)

        async def stop() -> None:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        stack.push_async_callback(stop)
        return f"socket://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.connected.set()
        with contextlib.suppress(OSError):
            while data := await reader.read(4096):
                self.heard(data)

    async def send(self, data: bytes) -> None:
        if self.writer is None:
            return
        with contextlib.suppress(OSError):
            self.writer.write(data)
            await self.writer.drain()


async def check_capture(chosen: Chosen, capture: Capture, *, source: Path,
                        timeout: float) -> Report:
    """Replay ``capture`` through the driver and check what it reads."""
    adapter = chosen.adapter
    against = f"the capture {source}"
    wait_cap = min(timeout, 1.0)
    async with AsyncExitStack() as stack:
        players: list[_Player] = []
        stand_ins: list[tuple[DeviceAt, str]] = []
        for at in capture.devices:
            if at.tcp:
                tcp = _TcpPlayer(wait_cap)
                stand_ins.append((at, await tcp.start(stack)))
                players.append(tcp)
            else:
                pty = _PtyPlayer(wait_cap, stack)
                stand_ins.append((at, pty.pty.path))
                players.append(pty)
        settings = settings_of(adapter, with_stand_ins(chosen.options, stand_ins), chosen.place)
        driver = adapter.open(settings, DriverContext(name=adapter.role))
        try:
            async with Observer(driver) as seen:
                played = await asyncio.gather(*(
                    _play(player, [c for c in capture.chunks if c.dev == i], timeout)
                    for i, player in enumerate(players)))
                await seen.pause(_GRACE)
        except Exception as exc:
            return Report(adapter.name, adapter.role, against, [fail(
                "driver", f"the driver broke: {type(exc).__name__}: {exc}")])
    got = [d for d in (describe(s.item) for s in seen.seen) if d is not None]
    return Report(adapter.name, adapter.role, against, _rows(capture, _total(played), got))


async def _play(player: _Player, chunks: list[Chunk], timeout: float) -> Played:
    if isinstance(player, _TcpPlayer):  # a TCP device plays once the driver connects
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(player.connected.wait(), timeout)
    return await player.play(chunks)


def _total(played: Sequence[Played]) -> Played:
    return Played(device_bytes=sum(p.device_bytes for p in played),
                  host_bytes=sum(p.host_bytes for p in played),
                  recorded_host_bytes=sum(p.recorded_host_bytes for p in played),
                  unanswered=sum(p.unanswered for p in played),
                  host_data=b"".join(p.host_data for p in played))


def _rows(capture: Capture, played: Played, got: list[dict[str, Any]]) -> list[Row]:
    devices = f" from {len(capture.devices)} devices" if len(capture.devices) > 1 else ""
    rows = [ok("replay", f"{played.device_bytes} device bytes{devices} in"
                         f" {sum(c.dir == 'rx' for c in capture.chunks)} chunks over"
                         f" {capture.seconds:.1f} s, as recorded")]
    recorded_host = b"".join(c.data for dev in range(len(capture.devices))
                             for c in capture.chunks if c.dir == "tx" and c.dev == dev)
    if played.recorded_host_bytes and not played.host_bytes:
        rows.append(fail("host requests", f"the recording has the driver writing"
                                          f" {played.recorded_host_bytes} bytes; it wrote"
                                          " none"))
    else:
        same = "exactly as recorded" if played.host_data == recorded_host else (
            f"{played.host_bytes} bytes, {played.recorded_host_bytes} recorded")
        waits = f"; {played.unanswered} recorded request(s) never made" \
            if played.unanswered else ""
        rows.append(ok("host requests", f"the driver wrote {same}{waits}"))
    want = [r for _, r in capture.readings if r["kind"] != "alert"]
    read = [r for r in got if r["kind"] != "alert"]
    rows.append(_compare_readings(want, read))
    recorded = Counter(r["alert"] for _, r in capture.readings if r["kind"] == "alert")
    replayed = Counter(r["alert"] for r in got if r["kind"] == "alert")
    beyond = replayed - recorded
    if beyond:
        rows.append(fail("alerts", "beyond those recorded: " + ", ".join(
            f"{k} x{n}" for k, n in sorted(beyond.items()))))
    else:
        said = ", ".join(f"{k} x{n}" for k, n in sorted(replayed.items())) or "none"
        rows.append(ok("alerts", f"none beyond those recorded ({said})"))
    return rows


def _stream(reading: dict[str, Any]) -> str:
    """The sequence a reading belongs to: a spot's inventories keep their order, but two
    readers' inventories interleave as their timing falls; cards and taps are one sequence."""
    if reading["kind"] == "inventory":
        return f"seat {reading['seat']} {reading['spot']}"
    return "the device"


def _compare_readings(want: list[dict[str, Any]], read: list[dict[str, Any]]) -> Row:
    name = "readings"
    streams: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, readings in ((0, want), (1, read)):
        for r in readings:
            streams.setdefault(_stream(r), ([], []))[side].append(r)
    for stream, (wanted, got) in streams.items():
        wrong = _first_difference(wanted, got)
        if wrong:
            return fail(name, wrong if stream == "the device" else f"{stream}: {wrong}")
    kinds = Counter(r["kind"] for r in read)
    what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "nothing"
    return ok(name, f"the driver read what was read when recorded: {what}")


def _first_difference(want: list[dict[str, Any]], read: list[dict[str, Any]]) -> str | None:
    if read == want:
        return None
    for i, (a, b) in enumerate(zip(want, read, strict=False)):
        if a != b:
            return f"reading {i + 1}: recorded {_word(a)}, read {_word(b)}"
    if len(read) < len(want):
        return (f"{len(want) - len(read)} of {len(want)} recorded readings were not read"
                f" (the first: {_word(want[len(read)])})")
    return (f"{len(read) - len(want)} readings beyond the {len(want)} recorded (the first:"
            f" {_word(read[len(want)])})")


def _word(reading: dict[str, Any]) -> str:
    kind = reading["kind"]
    if kind == "card":
        return f"card {reading['card']} (read {reading['read_index']})"
    if kind == "inventory":
        return f"seat {reading['seat']} {reading['spot']} with {len(reading['uids'])} chips"
    if kind == "tap":
        return f"a {reading['form']} tap"
    if kind == "shoe_state":
        return f"shoe {reading['state']}"
    return str(kind)
