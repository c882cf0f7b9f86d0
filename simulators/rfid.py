"""The SR-48 chip spot reader in software: the device's behaviour (docs/protocols/chip-rfid.md).

``usb.core.find(idVendor=..., idProduct=..., backend=sim.backend)`` finds it through its pyusb
backend (simulators.rfid_usb), and the real driver (`drivers.rfid.UsbChipReader`) then runs its
normal code against it: descriptors, configuration, interface claim, bulk OUT commands,
interrupt (or bulk) IN reports, string descriptors. The firmware is emulated lazily: heartbeats
and inventory sweeps that fall due are produced when the host reads, so there is no thread of
its own.

Wagers are placed and removed by seat and spot (``place(1, "ante", 2500)``) with chips minted
from a registry (`build_sim_registry`, or one given). Faults switch at run time: the line faults
of `simulators.faults.Faults` (corrupt, drop, duplicate, garbage, delay, silent ...), plus
unplug / plug / re-enumeration (the device leaves enumeration and old handles raise
``USBError`` errno 19), unknown chips, chips of another chip set and antenna faults.
"""

from __future__ import annotations

import array
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from drivers.readings import SpotId
from drivers.rfid_codec import encode_frame
from drivers.rfid_messages import (
    DEFAULT_PRODUCT_ID,
    DEFAULT_VENDOR_ID,
    MAX_CHIPS_PER_REPORT,
    Ack,
    AckStatus,
    AntennaFault,
    AntennaFaultCode,
    Frame,
    FrameError,
    Heartbeat,
    Identify,
    Identity,
    Inventory,
    Message,
    MsgType,
    Ping,
    Pong,
    SetAntennaMap,
    SetTiming,
    StartInventory,
    StopInventory,
)
from game.chips.registry import ChipRegistry
from simulators.faults import Faults
from simulators.felt import Felt, OnFelt
from simulators.rfid_firmware import ReaderFirmware
from simulators.rfid_usb import (
    EP_IN,
    EP_OUT,
    PACKET,
    RfidSimBackend,
    no_device,
    overflow_error,
    pipe_error,
    usb_timeout,
)
from simulators.sim_chips import (
    SIM_CHIP_SET,
    SIM_FOREIGN_SET,
    build_sim_registry,
    sim_seat_entries,
)

__all__ = [
    "DEFAULT_PRODUCT_ID",
    "DEFAULT_VENDOR_ID",
    "SIM_CHIP_SET",
    "SIM_FOREIGN_SET",
    "RfidReaderSimulator",
    "build_sim_registry",
    "sim_seat_entries",
]

OUT_QUEUE_BYTES = 16 * 1024
class RfidReaderSimulator(OnFelt):
    """One simulated reader: a table of betting spots, its firmware and its USB presence."""

    def __init__(
        self,
        *,
        registry: ChipRegistry | None = None,
        seat_entries: Mapping[int, str] | None = None,
        serial: str = "SIM-SR48-0001",
        model: str = "SR-48-SIM",
        firmware: str = "1.0.0-sim",
        antenna_count: int = 48,
        vendor_id: int = DEFAULT_VENDOR_ID,
        product_id: int = DEFAULT_PRODUCT_ID,
        in_transfer: str = "interrupt",
        faults: Faults | None = None,
        seed: int = 0,
        felt: Felt | None = None,
    ) -> None:
        if in_transfer not in ("interrupt", "bulk"):
            raise ValueError(f"in_transfer is 'interrupt' or 'bulk', got {in_transfer!r}")
        # The chips on the spots (shared with any other reader on the same table) and the one
        # lock that guards them and this reader's firmware.
        self.felt = felt if felt is not None else Felt(
            registry=registry, seat_entries=seat_entries, seed=seed)
        self._cond = self.felt.lock
        # Report the antennas of spots whose chips moved at once (as well as sweeping on the
        # report interval), so a run at full speed never waits for the next sweep; the host
        # sees the same changes either way. Off, as a real reader, by default.
        self.sweep_on_change = False
        self.serial = serial
        self.model = model
        self.firmware_version = firmware
        self.antenna_count = antenna_count
        self.vendor_id = vendor_id
        self.product_id = product_id
        self.in_transfer = in_transfer
        self.faults = faults if faults is not None else Faults(seed=seed)
        self.bus = 1
        self.address = 5
        self.plugged = True
        self.generation = 0
        self.dropped_on_overflow = 0
        self.frames_sent = 0
        self._faulted: dict[int, AntennaFaultCode] = {}
        self._changed: set[SpotId] = set()  # spots whose chips moved since the last sweep
        self._fw = ReaderFirmware(booted_at=time.monotonic())
        self.backend = RfidSimBackend(self)
        self.felt.listen(self._moved, self._settled)

    def _pick(self, seat: int, cents: int, *, exclude: set[bytes],
              float_only: bool = False) -> list[bytes]:
        return self.felt._pick(seat, cents, exclude=exclude, float_only=float_only)

    def antenna_fault(self, antenna: int, code: AntennaFaultCode) -> None:
        """Raise (or with CLEARED, end) a fault on an antenna port; reported at once."""
        with self._cond:
            if code is AntennaFaultCode.CLEARED:
                self._faulted.pop(antenna, None)
            else:
                self._faulted[antenna] = code
            self._fw.pending_faults.append(AntennaFault(antenna=antenna, code=code))
            self._cond.notify_all()

    # ------------------------------------------------------------------ device life

    def unplug(self) -> None:
        """The reader leaves the bus (cable pulled, power lost): old handles are dead."""
        with self._cond:
            self.plugged = False
            self.generation += 1
            self._cond.notify_all()

    def plug(self) -> None:
        """The reader comes back: a new address and a fresh power-up state."""
        with self._cond:
            if self.plugged:
                return
            self.address = self.address % 127 + 1
            self._fw = ReaderFirmware(booted_at=time.monotonic())
            self.plugged = True
            self._cond.notify_all()

    def reenumerate(self) -> None:
        """A firmware reset: the device drops off the bus and enumerates again at once."""
        with self._cond:
            self.unplug()
            self.plug()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a fault of `simulators.faults.Faults` ("silent", "garbage", ...)."""
        self.faults.set(name, value)

    def inject(self, name: str) -> None:
        """One fault (`simulators.faults.ONE_SHOT`) on the next frame carrying a reading."""
        self.faults.inject(name)

    def spots(self) -> list[SpotId]:
        """The spots the antennas cover now, in antenna order."""
        with self._cond:
            return [spot for _, spot in sorted(self._fw.antenna_map.items())]

    @property
    def inventory_running(self) -> bool:
        """Whether the emulated firmware is sweeping its antennas."""
        with self._cond:
            return self._fw.running

    @property
    def antenna_map(self) -> dict[int, SpotId]:
        """The antenna map the emulated firmware uses now."""
        with self._cond:
            return dict(self._fw.antenna_map)

    # ------------------------------------------------------------------ firmware (lock held)

    @contextmanager
    def moving(self) -> Iterator[None]:
        """Several moves made in one go (players laying their wagers): with
        `sweep_on_change`, the antennas report them together when the block ends, as one
        sweep of a real reader would (its own sweeps, every report interval, go on)."""
        with self.felt.moving():
            yield

    def _settled(self) -> None:
        if self._changed:
            self._cond.notify_all()

    def _moved(self, spots: Iterable[SpotId]) -> None:
        """Chips moved on these spots: with `sweep_on_change`, their antennas report now
        (or when the `moving()` block they are in ends)."""
        if self.sweep_on_change and self._fw.running:
            self._changed.update(spots)
            if not self.felt.moving_blocks:
                self._cond.notify_all()

    def _alive(self, generation: int) -> None:
        if not self.plugged or generation != self.generation:
            raise no_device()

    def _emit(self, message: Message, now: float, *, reading: bool = False) -> None:
        fw = self._fw
        frame = encode_frame(fw.seq, message)
        fw.seq = (fw.seq + 1) & 0xFFFF
        self.frames_sent += 1
        ready = now + self.faults.delay
        for chunk in self.faults.outgoing(frame, reading=reading):
            if fw.out_bytes + len(chunk) > OUT_QUEUE_BYTES:
                self.dropped_on_overflow += 1
                continue
            fw.out.append((ready, chunk))
            fw.out_bytes += len(chunk)

    def _tick(self, now: float) -> None:
        fw = self._fw
        if not fw.configured:
            return
        for fault in fw.pending_faults:
            self._emit(fault, now)
        fw.pending_faults.clear()
        if fw.watchdog and fw.running and now - fw.last_host_frame > fw.watchdog:
            fw.running = False
        if now >= fw.next_heartbeat:
            uptime = int((now - fw.booted_at) * 1000) & 0xFFFFFFFF
            self._emit(Heartbeat(uptime_ms=uptime, inventory_running=fw.running,
                                 mapped_antennas=len(fw.antenna_map)), now)
            fw.next_heartbeat += fw.heartbeat_interval
            if fw.next_heartbeat <= now:
                fw.next_heartbeat = now + fw.heartbeat_interval
        if fw.running and self._changed and not self.felt.moving_blocks and now < fw.next_sweep:
            # What a sweep would add: the host's driver passes on only reports that changed.
            self._sweep(now, only=self._changed)
        if fw.running and now >= fw.next_sweep:
            self._sweep(now)
            fw.next_sweep += fw.report_interval
            if fw.next_sweep <= now:
                fw.next_sweep = now + fw.report_interval

    def _sweep(self, now: float, only: set[SpotId] | None = None) -> None:
        """One sweep of the mapped antennas (``only``: of those on these spots)."""
        fw = self._fw
        for antenna, where in sorted(fw.antenna_map.items()):
            if only is not None and where not in only:
                continue
            code = self._faulted.get(antenna)
            if code is not None and code is not AntennaFaultCode.OVERFLOW:
                continue
            uids = self.felt.lying(where)[:MAX_CHIPS_PER_REPORT]
            report = Inventory(antenna=antenna, spot=where, cycle=fw.cycle, uids=uids)
            self._emit(report, now, reading=True)
            if self.faults.repeat_reading():
                self._emit(report, now, reading=True)
        self._changed.clear()
        fw.cycle = (fw.cycle + 1) & 0xFFFF

    def _next_event(self, now: float) -> float:
        fw = self._fw
        times = [fw.next_heartbeat] if fw.configured else []
        if fw.configured and fw.running:
            times.append(now if self._changed and not self.felt.moving_blocks else fw.next_sweep)
        if fw.out:
            times.append(fw.out[0][0])
        return min(times, default=now + 0.05)

    def _take(self, size: int, now: float) -> bytes:
        fw = self._fw
        cap = PACKET if size < PACKET else size - size % PACKET
        data = bytearray()
        while fw.out and fw.out[0][0] <= now and len(data) < cap:
            ready, chunk = fw.out.popleft()
            room = cap - len(data)
            if len(chunk) > room:
                fw.out.appendleft((ready, chunk[room:]))
                chunk = chunk[:room]
            fw.out_bytes -= len(chunk)
            data += chunk
        return bytes(data)

    # ------------------------------------------------------------------ USB side (UsbSimDevice)

    def present(self) -> tuple[int, int] | None:
        """(generation, address) while plugged in, else None."""
        with self._cond:
            return (self.generation, self.address) if self.plugged else None

    def check_alive(self, generation: int) -> None:
        """Raise libusb's "no device" unless plugged in at that generation."""
        with self._cond:
            self._alive(generation)

    def configure(self, generation: int, value: int) -> None:
        """SET_CONFIGURATION: 1 starts the firmware (heartbeats); 0 unconfigures it."""
        with self._cond:
            self._alive(generation)
            if value not in (0, 1):
                raise pipe_error()
            fw = self._fw
            fw.configured = value == 1
            fw.running = fw.running and fw.configured
            now = time.monotonic()
            fw.next_heartbeat = now
            fw.last_host_frame = now

    def configuration(self, generation: int) -> int:
        """The active configuration value (0: unconfigured)."""
        with self._cond:
            self._alive(generation)
            return 1 if self._fw.configured else 0

    def claim(self, generation: int, *, claimed: bool) -> None:
        """Claim or release interface 0."""
        with self._cond:
            self._alive(generation)
            self._fw.claimed = claimed

    def endpoint_read(self, generation: int, ep: int, buff: array.array[int],
                      timeout_ms: int) -> int:
        """Reader bytes from the IN endpoint, waiting up to `timeout_ms` for some."""
        deadline = time.monotonic() + (timeout_ms / 1000 if timeout_ms > 0 else 3600.0)
        with self._cond:
            while True:
                self._alive(generation)
                if ep != EP_IN or not self._fw.configured:
                    raise pipe_error()
                now = time.monotonic()
                self._tick(now)
                data = self._take(len(buff), now)
                if len(data) > len(buff):  # a packet larger than the buffer: libusb's overflow
                    raise overflow_error()
                if data:
                    buff[: len(data)] = array.array("B", data)
                    return len(data)
                if now >= deadline:
                    raise usb_timeout()
                wait = min(deadline, self._next_event(now)) - now
                self._cond.wait(max(wait, 0.0005))

    def endpoint_write(self, generation: int, ep: int, data: array.array[int]) -> int:
        """Host command bytes into the emulated firmware."""
        with self._cond:
            self._alive(generation)
            if ep != EP_OUT or not self._fw.configured:
                raise pipe_error()
            now = time.monotonic()
            for item in self._fw.decoder.feed(data.tobytes()):
                if self.faults.lose_incoming():
                    continue
                self._fw.last_host_frame = now
                if isinstance(item, FrameError):
                    if item.kind == "malformed" and item.seq is not None:
                        known = item.msg_type in {int(t) for t in MsgType if t < 0x80}
                        status = AckStatus.BAD_VALUE if known else AckStatus.UNKNOWN_COMMAND
                        self._emit(Ack(cmd_seq=item.seq, cmd_type=item.msg_type or 0,
                                       status=status), now)
                    continue
                self._command(item, now)
            self._cond.notify_all()
            return len(data)

    def _command(self, frame: Frame, now: float) -> None:
        fw = self._fw
        msg = frame.message
        status = AckStatus.OK
        match msg:
            case Identify():
                self._emit(Identity(model=self.model, serial=self.serial,
                                    firmware=self.firmware_version,
                                    antenna_count=self.antenna_count), now)
                return
            case Ping(token):
                self._emit(Pong(token), now)
                return
            case StartInventory():
                if not fw.running:
                    fw.running = True
                    fw.next_sweep = now
            case StopInventory():
                fw.running = False
            case SetAntennaMap(assignments):
                spots = [s for _, s in assignments]
                if fw.running:
                    status = AckStatus.BUSY
                elif len(set(spots)) != len(spots) or any(
                    a > self.antenna_count for a, _ in assignments
                ):
                    status = AckStatus.BAD_VALUE
                else:
                    fw.antenna_map = dict(assignments)
            case SetTiming():
                fw.report_interval = msg.report_interval_ms / 1000
                fw.heartbeat_interval = msg.heartbeat_interval_ms / 1000
                fw.watchdog = msg.watchdog_ms / 1000
                fw.next_heartbeat = min(fw.next_heartbeat, now + fw.heartbeat_interval)
            case _:
                status = AckStatus.UNKNOWN_COMMAND
        cmd_type = _host_type(msg)
        self._emit(Ack(cmd_seq=frame.seq, cmd_type=cmd_type, status=status), now)

def _host_type(message: Message) -> int:
    types: dict[type, MsgType] = {
        StartInventory: MsgType.START_INVENTORY, StopInventory: MsgType.STOP_INVENTORY,
        SetAntennaMap: MsgType.SET_ANTENNA_MAP, SetTiming: MsgType.SET_TIMING,
    }
    return int(types.get(type(message), 0))

