"""UsbChipReader: the SR-48 chip spot reader over pyusb (docs/protocols/chip-rfid.md).

A thin transport around `drivers.rfid_codec`. Every pyusb call (find, configure, bulk write,
interrupt/bulk read, dispose) runs on one worker thread owned by the reader, so the event loop
never blocks and USB calls never overlap. The reader is an async context manager and an async
iterator of `ChipInventory | DeviceAlert`; it satisfies `drivers.protocols.ChipReader`.

Unplug, power loss, re-enumeration (any USB error but a timeout) and a stalled reader (no
verified frame for ``stall_timeout``) are alerted once per outage; the handle is dropped, the
device is looked up again with ``usb.core.find`` under jittered backoff, and "reconnected" is
alerted when it answers. The daemon never has to restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, TypeVar

import usb.core  # type: ignore[import-untyped]
import usb.util  # type: ignore[import-untyped]

from drivers.errors import DeviceLost, DeviceNotFound, DeviceProtocolError, DriverError
from drivers.protocols import ChipReading
from drivers.readings import (
    ChipInventory,
    DeviceAlert,
    DeviceHealth,
    DeviceIdentity,
)
from drivers.rfid_codec import FrameDecoder, encode_frame
from drivers.rfid_messages import (
    MAX_FRAME_LEN,
    Ack,
    AckStatus,
    AntennaFault,
    AntennaFaultCode,
    Frame,
    FrameError,
    Heartbeat,
    HostMessage,
    Identify,
    Identity,
    Inventory,
    Message,
    Ping,
    SetAntennaMap,
    StartInventory,
    StopInventory,
    seq_delta,
)
from drivers.rfid_settings import UsbReaderSettings
from runtime.backoff import Backoff
from runtime.worker_thread import WorkerThread

__all__ = ["UsbChipReader"]

STALE_WINDOW = 64  # a frame up to 63 numbers behind the last one is a duplicate/stale copy
_T = TypeVar("_T")


class _Stalled(DeviceLost):
    """The reader is on the bus but sends no verified frames (or answers no command)."""


@dataclass(slots=True)
class _Session:
    """One connection to one enumeration of the device; dead after any USB error."""

    dev: Any
    ep_in: int
    ep_out: int
    read_size: int
    last_rx: float
    host_seq: int = 0
    last_dev_seq: int | None = None
    started: bool = False
    restart_needed: bool = False
    next_ping: float = 0.0
    ping_token: int = 0
    awaiting: Callable[[Message, set[int]], bool] | None = None
    answer: Message | None = None
    sent: set[int] = field(default_factory=set)  # sequence numbers of the command awaited


@dataclass(slots=True)
class _Limited:
    last: float = float("-inf")
    suppressed: int = 0


_CLOSED = object()


class UsbChipReader:
    """The table's chip spot reader over USB; reusable, not reentrant."""

    def __init__(
        self,
        settings: UsbReaderSettings | None = None,
        *,
        backend: Any = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings if settings is not None else UsbReaderSettings()
        self._backend = backend
        self._rng = rng if rng is not None else random.Random()
        self._clock = clock
        self._decoder = FrameDecoder()
        self._queue: asyncio.Queue[object] = asyncio.Queue(self.settings.queue_size)
        self._task: asyncio.Task[None] | None = None
        self._executor: WorkerThread | None = None
        self._identity: DeviceIdentity | None = None
        self._up = False
        self._ever_up = False
        self._outage_alerted = False
        self._down_since: float | None = None
        self._last_seen: float | None = None
        self._last_yielded: dict[int, frozenset[bytes]] = {}
        self._limited: dict[str, _Limited] = {}
        self._counts: dict[str, int] = dict.fromkeys(
            (
                "inventories", "duplicates", "gaps", "gap_events", "seq_restarts", "connects",
                "reconnects", "disconnects", "stalls", "connect_failures", "map_mismatches",
                "antenna_faults", "inventory_restarts", "protocol_errors", "errors",
            ),
            0,
        )
        s = self.settings
        self.device = s.serial or f"usb:{s.vendor_id:04x}:{s.product_id:04x}"

    # ------------------------------------------------------------------ public API

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError("UsbChipReader is already open (it is not reentrant)")
        self._queue = asyncio.Queue(self.settings.queue_size)
        self._executor = WorkerThread(f"rfid[{self.device}]")
        self._task = asyncio.create_task(self._run(), name=f"rfid[{self.device}].pump")
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the pump, release the device and end every iterator."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.close(wait=False)
        self._up = False
        while True:
            try:
                self._queue.put_nowait(_CLOSED)
                break
            except asyncio.QueueFull:
                self._queue.get_nowait()

    def __aiter__(self) -> AsyncIterator[ChipReading]:
        return self._readings()

    async def _readings(self) -> AsyncIterator[ChipReading]:
        if self._task is None and self._queue.empty():
            raise RuntimeError("use `async with UsbChipReader(...)` before iterating")
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)  # let other iterators end too
                return
            assert isinstance(item, ChipInventory | DeviceAlert)
            yield item

    def health(self) -> DeviceHealth:
        """Connected or not, identity, when a verified frame last arrived, every counter."""
        counters = dict(self._counts)
        counters.update(self._decoder.counters())
        return DeviceHealth(
            device=self.device,
            connected=self._up,
            identity=self._identity,
            last_seen_mono=self._last_seen,
            counters=counters,
        )

    # ------------------------------------------------------------------ the pump

    async def _run(self) -> None:
        s = self.settings
        backoff = Backoff(initial=s.backoff_initial, maximum=s.backoff_max, rng=self._rng)
        while True:
            session: _Session | None = None
            try:
                session = await self._call(self._open)
                await self._start(session)
                backoff.reset()
                await self._pump(session)
            except DriverError as exc:
                await self._down(exc)
            except Exception as exc:  # never let a surprise kill the table's reader
                self._counts["errors"] += 1
                await self._down(DriverError(f"{type(exc).__name__}: {exc}"))
            finally:
                if session is not None:
                    await asyncio.shield(self._call(_dispose, session.dev))
            await asyncio.sleep(backoff.next_delay())

    async def _start(self, session: _Session) -> None:
        self._decoder.reset()
        self._last_yielded.clear()
        answer = await self._command(session, Identify(), lambda m, _: isinstance(m, Identity))
        assert isinstance(answer, Identity)
        if max(self.settings.antenna_map) > answer.antenna_count:
            raise DeviceProtocolError(
                f"the antenna map uses antenna {max(self.settings.antenna_map)} but reader "
                f"{answer.serial} has {answer.antenna_count}"
            )
        await self._ack(session, StopInventory())
        await self._ack(session, SetAntennaMap.from_mapping(self.settings.antenna_map))
        await self._ack(session, self.settings.timing())
        await self._ack(session, StartInventory())
        session.started = True
        await self._up_again(answer)

    async def _pump(self, session: _Session) -> None:
        s = self.settings
        while True:
            now = self._clock()
            if now - session.last_rx > s.stall_timeout:
                raise _Stalled(f"no verified frame for {s.stall_timeout:g} s")
            if session.restart_needed:
                session.restart_needed = False
                self._counts["inventory_restarts"] += 1
                await self._ack(session, StartInventory())
            if now >= session.next_ping:
                session.ping_token = (session.ping_token + 1) & 0xFFFFFFFF
                await self._send(session, Ping(session.ping_token))
                session.next_ping = now + s.keepalive_interval
            await self._receive(session)

    async def _receive(self, session: _Session) -> None:
        data = await self._call(self._read, session)
        if data:
            for item in self._decoder.feed(data):
                await self._handle(session, item)

    async def _handle(self, session: _Session, item: Frame | FrameError) -> None:
        if isinstance(item, FrameError):
            await self._alert_limited("bad_frame", f"{item.kind}: {item.detail}")
            return
        if not await self._in_sequence(session, item.seq):
            return
        now = self._clock()
        session.last_rx = now
        self._last_seen = now
        msg = item.message
        if session.awaiting is not None and session.awaiting(msg, session.sent):
            session.awaiting, session.answer = None, msg
        if isinstance(msg, Inventory):
            await self._inventory(session, item.seq, msg, now)
        elif isinstance(msg, Heartbeat):
            if session.started and not msg.inventory_running:
                session.restart_needed = True
        elif isinstance(msg, AntennaFault):
            await self._antenna_fault(msg)

    async def _in_sequence(self, session: _Session, seq: int) -> bool:
        """Apply the sequence rules (protocol 2.4); False for a duplicate or stale frame."""
        last, session.last_dev_seq = session.last_dev_seq, seq
        if last is None:
            return True
        d = seq_delta(seq, last)
        if d == 1:
            return True
        if d > 1:
            self._counts["gaps"] += d - 1
            self._counts["gap_events"] += 1
            await self._alert_limited("sequence_gap", f"{d - 1} frame(s) missing before {seq}")
            return True
        if d > -STALE_WINDOW:
            session.last_dev_seq = last
            self._counts["duplicates"] += 1
            return False
        self._counts["seq_restarts"] += 1
        await self._alert("sequence_restart", f"sequence jumped from {last} to {seq}")
        return True

    async def _inventory(self, session: _Session, seq: int, msg: Inventory, now: float) -> None:
        if not session.started:
            return  # a report from before our START: it may use another host's map
        expected = self.settings.antenna_map.get(msg.antenna)
        if msg.spot is None or msg.spot != expected:
            self._counts["map_mismatches"] += 1
            await self._alert_limited(
                "antenna_map_mismatch",
                f"antenna {msg.antenna} reported {msg.spot}, the map says {expected}",
            )
            return
        uids = frozenset(msg.uids)
        if self.settings.changes_only and self._last_yielded.get(msg.antenna) == uids:
            return
        self._last_yielded[msg.antenna] = uids
        self._counts["inventories"] += 1
        await self._queue.put(
            ChipInventory(
                reader=self.device, antenna=msg.antenna, spot=expected, uids=uids,
                report_seq=seq, at_mono=now,
            )
        )

    async def _antenna_fault(self, msg: AntennaFault) -> None:
        if msg.code is AntennaFaultCode.CLEARED:
            await self._alert("antenna_fault_cleared", f"antenna {msg.antenna} works again")
            return
        self._counts["antenna_faults"] += 1
        spot = self.settings.antenna_map.get(msg.antenna)
        where = f" (seat {spot.seat} {spot.spot})" if spot else ""
        await self._alert(
            "antenna_fault", f"antenna {msg.antenna}{where}: {msg.code.name.lower()}"
        )

    # ------------------------------------------------------------------ commands

    async def _send(self, session: _Session, message: HostMessage) -> int:
        seq = session.host_seq
        session.host_seq = (seq + 1) & 0xFFFF
        await self._call(self._write, session, encode_frame(seq, message))
        return seq

    async def _command(
        self,
        session: _Session,
        message: HostMessage,
        answers: Callable[[Message, set[int]], bool],
    ) -> Message:
        """Send ``message`` until an answer ``answers`` accepts arrives; _Stalled if none."""
        session.sent = set()
        session.answer = None
        session.awaiting = answers
        for _ in range(self.settings.command_attempts):
            session.sent.add(await self._send(session, message))
            deadline = self._clock() + self.settings.command_timeout
            while self._clock() < deadline:
                await self._receive(session)
                answer = _answer_of(session)
                if answer is not None:
                    return answer
        session.awaiting = None
        name = type(message).__name__
        raise _Stalled(f"no answer to {name} after {self.settings.command_attempts} attempts")

    async def _ack(self, session: _Session, message: HostMessage) -> None:
        """Send a command answered by ACK; DeviceProtocolError if the reader refuses it."""
        answer = await self._command(
            session, message, lambda m, sent: isinstance(m, Ack) and m.cmd_seq in sent
        )
        assert isinstance(answer, Ack)
        if answer.status is not AckStatus.OK:
            self._counts["protocol_errors"] += 1
            raise DeviceProtocolError(
                f"the reader refused {type(message).__name__}: {answer.status.name}"
            )

    # ------------------------------------------------------------------ state and alerts

    async def _up_again(self, identity: Identity) -> None:
        before = self._identity
        self._identity = DeviceIdentity(
            kind="rfid", model=identity.model, serial=identity.serial, firmware=identity.firmware
        )
        old_name, self.device = self.device, identity.serial
        detail = f"{identity.model} serial {identity.serial} firmware {identity.firmware}"
        self._counts["connects"] += 1
        if self._ever_up:
            self._counts["reconnects"] += 1
            down = self._clock() - (self._down_since or self._clock())
            await self._alert("reconnected", f"{detail}, after {down:.1f} s")
        else:
            await self._alert("connected", detail)
        if before is not None and before.serial != identity.serial:
            await self._alert(
                "identity_changed", f"reader {before.serial} was replaced by {identity.serial}"
            )
        elif before is None and old_name != identity.serial and self.settings.serial:
            await self._alert("identity_changed", f"expected {old_name}, got {identity.serial}")
        self._up = self._ever_up = True
        self._outage_alerted = False
        self._down_since = None

    async def _down(self, exc: DriverError) -> None:
        kind = (
            "stalled" if isinstance(exc, _Stalled)
            else "disconnected" if isinstance(exc, DeviceLost)
            else "not_found" if isinstance(exc, DeviceNotFound)
            else "protocol_error" if isinstance(exc, DeviceProtocolError)
            else "driver_error"
        )
        if self._up:
            self._up = False
            self._down_since = self._clock()
            self._counts["stalls" if kind == "stalled" else "disconnects"] += 1
            if kind == "not_found":
                kind = "disconnected"
            await self._alert(kind, str(exc))
            self._outage_alerted = True
            return
        self._counts["connect_failures"] += 1
        if self._down_since is None:
            self._down_since = self._clock()
        if not self._outage_alerted:
            self._outage_alerted = True
            await self._alert(kind, str(exc))

    async def _alert(self, kind: str, detail: str) -> None:
        await self._queue.put(
            DeviceAlert(device=self.device, kind=kind, detail=detail, at_mono=self._clock())
        )

    async def _alert_limited(self, kind: str, detail: str) -> None:
        state = self._limited.setdefault(kind, _Limited())
        now = self._clock()
        if now - state.last < self.settings.alert_interval:
            state.suppressed += 1
            return
        more = f" (+{state.suppressed} more since the last alert)" if state.suppressed else ""
        state.last, state.suppressed = now, 0
        await self._alert(kind, detail + more)

    # ------------------------------------------------------------------ worker-thread side

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._executor is None:
            raise DeviceLost("the reader is closed")
        return await self._executor.call(fn, *args)

    def _open(self) -> _Session:
        s = self.settings
        match: dict[str, Any] = {"idVendor": s.vendor_id, "idProduct": s.product_id}
        if s.serial is not None:
            match["custom_match"] = lambda d: _serial_of(d) == s.serial
        if self._backend is not None:
            match["backend"] = self._backend
        try:
            dev = usb.core.find(**match)
        except usb.core.NoBackendError as exc:
            raise DeviceNotFound("no USB backend (libusb) is available") from exc
        except usb.core.USBError as exc:
            raise DeviceNotFound(f"USB enumeration failed: {exc}") from exc
        if dev is None:
            which = f" serial {s.serial}" if s.serial else ""
            raise DeviceNotFound(f"no reader {s.vendor_id:04x}:{s.product_id:04x}{which} on USB")
        try:
            return self._claim(dev)
        except BaseException:
            _dispose(dev)
            raise

    def _claim(self, dev: Any) -> _Session:
        try:
            try:
                if dev.is_kernel_driver_active(0):
                    dev.detach_kernel_driver(0)
            except (NotImplementedError, usb.core.USBError):
                pass
            dev.set_configuration()
            intf = usb.util.find_descriptor(dev.get_active_configuration(), bInterfaceClass=0xFF)
            if intf is None:
                raise DeviceProtocolError("the device has no vendor-specific (0xFF) interface")
            usb.util.claim_interface(dev, intf)
            ep_out = _endpoint(intf, usb.util.ENDPOINT_OUT)
            ep_in = _endpoint(intf, usb.util.ENDPOINT_IN)
        except usb.core.USBError as exc:
            raise _lost(exc) from exc
        packet = max(int(ep_in.wMaxPacketSize), 8)
        read_size = -(-MAX_FRAME_LEN // packet) * packet
        return _Session(
            dev=dev, ep_in=ep_in.bEndpointAddress, ep_out=ep_out.bEndpointAddress,
            read_size=read_size, last_rx=self._clock(),
        )

    def _read(self, session: _Session) -> bytes:
        try:
            data = session.dev.read(
                session.ep_in, session.read_size, timeout=self.settings.read_timeout_ms
            )
        except usb.core.USBTimeoutError:
            return b""
        except usb.core.USBError as exc:
            if exc.errno == errno.ETIMEDOUT:
                return b""
            raise _lost(exc) from exc
        return bytes(data)

    def _write(self, session: _Session, frame: bytes) -> None:
        timeout = int(self.settings.command_timeout * 1000)
        try:
            session.dev.write(session.ep_out, frame, timeout=timeout)
        except usb.core.USBTimeoutError as exc:
            raise _Stalled("the reader does not accept commands") from exc
        except usb.core.USBError as exc:
            if exc.errno == errno.ETIMEDOUT:
                raise _Stalled("the reader does not accept commands") from exc
            raise _lost(exc) from exc


def _answer_of(session: _Session) -> Message | None:
    return session.answer


def _endpoint(intf: Any, direction: int) -> Any:
    ep = usb.util.find_descriptor(
        intf, custom_match=lambda e: usb.util.endpoint_direction(e.bEndpointAddress) == direction
    )
    if ep is None:
        which = "IN" if direction == usb.util.ENDPOINT_IN else "OUT"
        raise DeviceProtocolError(f"the reader's interface has no {which} endpoint")
    return ep


def _lost(exc: usb.core.USBError) -> DeviceLost:
    code = f"errno {exc.errno}" if exc.errno is not None else "no errno"
    return DeviceLost(f"USB error ({code}): {exc.strerror or exc}")


def _serial_of(dev: Any) -> str | None:
    try:
        serial = dev.serial_number
    except (ValueError, usb.core.USBError, NotImplementedError):
        return None
    return serial if isinstance(serial, str) else None


def _dispose(dev: Any) -> None:
    """Release the interface and close the handle; a dead device may refuse, that is fine."""
    with contextlib.suppress(usb.core.USBError, ValueError, NotImplementedError):
        usb.util.dispose_resources(dev)
