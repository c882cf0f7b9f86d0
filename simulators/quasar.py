"""A Metratec QuasarMX HF reader in software, speaking its plain-text protocol on a
pseudo-terminal (its USB virtual COM port) or on TCP (its Ethernet port, 10001 on a real one)
(docs/protocols/metratec-quasarmx.md).

It reads a shared `simulators.felt.Felt` through its antenna -> spot mapping: an inventory on
a port answers the UIDs lying on that port's spot, one line each, most significant byte
first. Faithful enough that Metratec's own SDK (``metratec_rfid.QuasarMX``) connects to it
(BRK, EOF, HWR refused, REV, SRI; its model and firmware check passes) and reads inventories
on several antennas (SAP MAN n, SAP AUT n, SAP ARP ON, INV) - tests/simulators/
test_quasar_sdk.py proves it, independently of our driver.

Answers take the time the protocol's timing model says (`QuasarTiming`: the serial line, an
antenna switch, an inventory round and each tag), divided by ``speed`` (1.0: faithful). The
line faults of `simulators.faults.Faults` apply to whole answers (corrupt, drop, duplicate,
garbage, delay, silent, drop_incoming, repeat); `antenna_fault` breaks one port, `unplug` /
`plug` take the device away and bring it back (the pty closes and a new one appears behind
the same link path; TCP refuses connections), with a fresh power-up state.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
import tty
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Self

from drivers.readings import SpotId
from simulators.faults import Faults
from simulators.felt import Felt

__all__ = ["QuasarSimulator", "QuasarTiming"]

Transport = Literal["pty", "tcp"]
_MAX_COMMAND: Final = 128  # a longer line is refused (a real UART buffer overflows: BOF)


@dataclass(frozen=True, slots=True, kw_only=True)
class QuasarTiming:
    """How long the reader takes (seconds), per docs/protocols/metratec-quasarmx.md."""

    baud: int = 115200  # the USB virtual COM port's speed (Metratec's SDKs open it so)
    command_s: float = 0.0005  # the firmware's turn-around for any command (assumed)
    switch_s: float = 0.005  # SAP: the field moves to another port, tags power up (assumed)
    inventory_s: float = 0.012  # INV with no tag: one 16-slot ISO 15693 round (computed)
    tag_s: float = 0.010  # each tag read: "up to 100 tag IDs/sec" (Metratec, QuasarMX)

    def line_time(self, nbytes: int) -> float:
        """Seconds ``nbytes`` take on the serial line (10 bits a byte)."""
        return nbytes * 10 / self.baud

    def inventory_time(self, tags: int) -> float:
        """Seconds one INV takes with this many tags in the field (the line not counted)."""
        return self.inventory_s + tags * self.tag_s


@dataclass(slots=True)
class _Firmware:
    """The reader's volatile state: what a power cycle resets."""

    eof: bool = False  # end-of-frame: an LF after each answer
    arp: bool = False  # antenna report in inventory answers
    rf: bool = False  # the RF interface (SRI)
    port: int = 1  # the selected antenna port
    auto: int = 0  # SAP AUT n: INV steps through ports 1..n (0: manual)
    auto_next: int = 1
    busy_until: float = 0.0  # the firmware works through commands one at a time


class QuasarSimulator:
    """One simulated QuasarMX; use as a context manager (``with QuasarSimulator(...) as q``)."""

    def __init__(
        self,
        *,
        felt: Felt,
        ports: Mapping[int, SpotId],
        transport: Transport = "pty",
        serial: str = "QMX-SIM-0001",
        model: str = "QUASAR_MX",
        hardware: str = "0200",
        firmware: str = "0307",
        multiplexers: bool = False,
        speed: float = 1.0,
        timing: QuasarTiming | None = None,
        faults: Faults | None = None,
        seed: int = 0,
        link_path: str | Path | None = None,
        host: str = "127.0.0.1",
        tcp_port: int = 0,
    ) -> None:
        if transport not in ("pty", "tcp"):
            raise ValueError(f"transport is 'pty' or 'tcp', got {transport!r}")
        if not speed > 0:
            raise ValueError(f"speed must be positive, got {speed}")
        if len(hardware) != 4 or len(firmware) != 4 or not (hardware + firmware).isdigit():
            raise ValueError("hardware and firmware revisions are 4 digits each (0200, 0307)")
        self.max_port = 16 if multiplexers else 4
        bad = [p for p in ports if not 1 <= p <= self.max_port]
        if bad:
            raise ValueError(f"port {bad[0]} is not 1..{self.max_port}")
        self.felt = felt
        self.ports = dict(ports)
        self.transport: Transport = transport
        self.serial, self.model = serial, model
        self.hardware, self.firmware = hardware, firmware
        self.speed = speed
        self.timing = timing if timing is not None else QuasarTiming()
        self.faults = faults if faults is not None else Faults(seed=seed)
        self.link_path = Path(link_path) if link_path is not None else None
        self.host = host
        self.tcp_port = tcp_port
        self.plugged = True
        self.faulted: set[int] = set()
        self.stats: dict[str, int] = dict.fromkeys(
            ("commands", "inventories", "tags_reported", "answers", "lost_incoming",
             "unplugs", "connections"), 0)
        self._fw = _Firmware()
        self._resetting = False
        self._lock = threading.RLock()
        self._out: deque[tuple[float, bytes]] = deque()
        self._line = bytearray()
        self.path: str | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._listener: socket.socket | None = None
        # While unplugged, the TCP port stays bound but not listening: a connection is refused
        # (as by an unplugged reader's address), and no other program takes the port meanwhile.
        self._holder: socket.socket | None = None
        self._client: socket.socket | None = None
        self._wake_r = self._wake_w = -1
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Power on: open the pty or the TCP port, start the reader's thread."""
        if self._thread is not None:
            raise RuntimeError("the simulator is already running")
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        with self._lock:
            self._open()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"quasarmx-sim {self.serial}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Power off for good: stop the thread, close the port."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping = True
        self._wake()
        thread.join(timeout=5.0)
        with self._lock:
            self._close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of the TCP port (after `start`)."""
        return self.host, self.tcp_port

    @property
    def url(self) -> str:
        """Where a driver finds it: the link path or pty path, or ``host:port``."""
        if self.transport == "tcp":
            return f"{self.host}:{self.tcp_port}"
        return str(self.link_path) if self.link_path is not None else self.path or ""

    # ------------------------------------------------------------------ controls

    def unplug(self) -> None:
        """The reader goes away: the pty closes (its link path vanishes), TCP refuses."""
        with self._lock:
            if not self.plugged:
                return
            self.plugged = False
            self.stats["unplugs"] += 1
            self._close(hold_port=True)
        self._wake()

    def plug(self) -> None:
        """The reader comes back, freshly powered up (a new pty behind the same link path)."""
        with self._lock:
            if self.plugged:
                return
            self.plugged = True
            self._fw = _Firmware()
            if self._thread is not None:
                self._open()
        self._wake()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a line fault (`simulators.faults.FAULT_NAMES`)."""
        self.faults.set(name, value)
        self._wake()

    def inject(self, name: str) -> None:
        """One fault on the next answer (`simulators.faults.ONE_SHOT`)."""
        self.faults.inject(name, readings_only=False)
        self._wake()

    def send_raw(self, data: bytes) -> None:
        """Any bytes on the line now, between answers (noise, a stray line end)."""
        with self._lock:
            self._out.append((time.monotonic(), bytes(data)))
        self._wake()

    def antenna_fault(self, port: int, broken: bool = True) -> None:
        """Break a port's antenna (its inventories answer ARH) or mend it."""
        with self._lock:
            (self.faulted.add if broken else self.faulted.discard)(port)

    # ------------------------------------------------------------------ the reader's thread

    def _wake(self) -> None:
        if self._wake_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")

    def _run(self) -> None:
        while not self._stopping:
            with self._lock:
                watched: list[int | socket.socket] = [self._wake_r]
                watched += [fd for fd in (self._master,) if fd is not None]
                watched += [s for s in (self._listener, self._client) if s is not None]
                due = self._out[0][0] if self._out else None
            timeout = 0.5 if due is None else max(0.0, due - time.monotonic())
            try:
                ready, _, _ = select.select(watched, [], [], min(timeout, 0.5))
            except (OSError, ValueError):  # a descriptor closed under us: look again
                continue
            with self._lock:
                if self._wake_r in ready:
                    with contextlib.suppress(OSError):
                        os.read(self._wake_r, 4096)
                for item in ready:
                    if item is self._listener and self._listener is not None:
                        self._accept()
                    elif item is self._client and self._client is not None:
                        self._receive_tcp()
                    elif item == self._master and self._master is not None:
                        self._receive_pty()
                self._flush()

    def _receive_pty(self) -> None:
        assert self._master is not None
        try:
            data = os.read(self._master, 4096)
        except OSError:  # nobody has the port open: nothing to read
            return
        self._feed(data)

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        if self._client is not None:  # the reader serves its latest connection
            with contextlib.suppress(OSError):
                self._client.close()
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = client
        self._out.clear()
        self._line.clear()
        self.stats["connections"] += 1

    def _receive_tcp(self) -> None:
        assert self._client is not None
        try:
            data = self._client.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the host closed the connection
            with contextlib.suppress(OSError):
                self._client.close()
            self._client = None
            self._out.clear()
            self._line.clear()
            return
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        for byte in data:
            if byte in (0x0D, 0x0A):
                if self._line:
                    line, self._line = bytes(self._line), bytearray()
                    self._command(line)
            elif len(self._line) <= _MAX_COMMAND:
                self._line.append(byte)

    def _flush(self) -> None:
        now = time.monotonic()
        while self._out and self._out[0][0] <= now:
            _, chunk = self._out.popleft()
            try:
                if self._master is not None:
                    os.write(self._master, chunk)
                elif self._client is not None:
                    self._client.sendall(chunk)
            except OSError:  # nobody reading and the buffer is full: the bytes are lost
                continue

    # ------------------------------------------------------------------ the firmware

    def _command(self, raw: bytes) -> None:
        now = time.monotonic()
        self.stats["commands"] += 1
        if self.faults.lose_incoming():
            self.stats["lost_incoming"] += 1
            return
        fw = self._fw
        text = raw.decode("ascii", "replace").strip().upper()
        words = text.split()
        work = self.timing.command_s + self.timing.line_time(len(raw) + 1)
        lines: list[str]
        reading = False
        if len(raw) > _MAX_COMMAND:
            lines = ["BOF"]
        elif not words:
            return
        else:
            name, args = words[0], words[1:]
            handler = self._handlers().get(name)
            if handler is None:
                lines = ["UCO"]
            else:
                lines, extra, reading = handler(args)
                work += extra
        answer = "".join(f"{line}\r" for line in lines) + ("\n" if fw.eof else "")
        data = answer.encode("ascii")
        work += self.timing.line_time(len(data))
        start = max(now, fw.busy_until)
        fw.busy_until = start + work / self.speed
        ready = fw.busy_until + self.faults.delay
        chunks = self.faults.outgoing(data, reading=reading)
        if reading and self.faults.repeat_reading():
            chunks = [*chunks, data]
        self.stats["answers"] += 1
        for chunk in chunks:
            self._out.append((ready, chunk))
        if self._resetting:
            self._resetting = False
            self._fw = _Firmware(busy_until=fw.busy_until)

    def _handlers(self) -> dict[str, Callable[[list[str]], tuple[list[str], float, bool]]]:
        return {
            "REV": self._rev, "RSN": self._rsn, "HWR": _unknown, "RFW": _unknown,
            "BRK": lambda _: (["NCM"], 0.0, False), "WAK": lambda _: (["DNS"], 0.0, False),
            "EOF": self._eof, "SRI": self._sri, "MOD": self._mod, "SAP": self._sap,
            "INV": self._inv, "RST": self._rst, "SET": _ok, "HBT": _ok, "STB": _ok,
        }

    def _rev(self, _: list[str]) -> tuple[list[str], float, bool]:
        return [f"{self.model:<15}{self.hardware}{self.firmware}"], 0.0, False

    def _rsn(self, _: list[str]) -> tuple[list[str], float, bool]:
        return [self.serial], 0.0, False

    def _eof(self, args: list[str]) -> tuple[list[str], float, bool]:
        if args:
            return ["UPA"], 0.0, False
        self._fw.eof = True  # this answer already ends with its LF
        return ["OK!"], 0.0, False

    def _sri(self, args: list[str]) -> tuple[list[str], float, bool]:
        if args == ["OFF"]:
            self._fw.rf = False
            return ["OK!"], 0.0, False
        if len(args) != 2 or args[0] not in ("SS", "DS"):
            return ["UPA"], 0.0, False
        if args[1] not in ("10", "100"):
            return ["NOR"], 0.0, False
        self._fw.rf = True
        return ["OK!"], 0.0, False

    def _mod(self, args: list[str]) -> tuple[list[str], float, bool]:
        return (["OK!"] if args == ["156"] else ["NOS"]), 0.0, False

    def _rst(self, _: list[str]) -> tuple[list[str], float, bool]:
        self._resetting = True  # the OK! goes out as the reader stands; then it restarts
        return ["OK!"], 0.0, False

    def _sap(self, args: list[str]) -> tuple[list[str], float, bool]:
        fw = self._fw
        match args:
            case ["ARP", ("ON" | "OFF") as on]:
                fw.arp = on == "ON"
                return ["OK!"], 0.0, False
            case ["AUT", "OFF"]:
                fw.auto = 0
                return ["OK!"], 0.0, False
            case ["AUT", count, *rest] if count.isdigit() and len(rest) <= 1:
                if not 1 <= int(count) <= self.max_port:
                    return ["NOR"], 0.0, False
                fw.auto, fw.auto_next = int(count), 1
                return ["OK!"], 0.0, False
            case ["PIN", count] if count.isdigit():
                return ["OK!"], 0.0, False
            case ["MAN", port] | [port] if port.isdigit():
                if not 1 <= int(port) <= self.max_port:
                    return ["NOR"], 0.0, False
                fw.port, fw.auto = int(port), 0
                return ["OK!"], self.timing.switch_s, False
            case [port] if not port.isdigit():
                return ["EDX"], 0.0, False
        return ["UPA"], 0.0, False

    def _inv(self, _: list[str]) -> tuple[list[str], float, bool]:
        fw = self._fw
        extra = 0.0
        if fw.auto:
            fw.port = fw.auto_next
            fw.auto_next = fw.auto_next % fw.auto + 1
            extra += self.timing.switch_s
        if not fw.rf:
            return ["NRF"], extra, False
        if fw.port in self.faulted:
            return ["ARH"], extra + self.timing.inventory_s, False
        spot = self.ports.get(fw.port)
        uids = list(dict.fromkeys(self.felt.lying(spot))) if spot is not None else []
        self.stats["inventories"] += 1
        self.stats["tags_reported"] += len(uids)
        lines = [uid.hex().upper() for uid in uids]
        if fw.arp:
            lines.append(f"ARP {fw.port:02d}")
        lines.append(f"IVF {len(uids):02d}")
        return lines, extra + self.timing.inventory_time(len(uids)), True

    # ------------------------------------------------------------------ the port (lock held)

    def _open(self) -> None:
        self._line.clear()
        self._out.clear()
        if self.transport == "tcp":
            listener, self._holder = self._holder, None
            if listener is None:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind((self.host, self.tcp_port))
            listener.listen(4)
            listener.setblocking(False)
            self.tcp_port = listener.getsockname()[1]
            self._listener = listener
            return
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)
        if self.link_path is not None:
            tmp = self.link_path.with_name(f".{self.link_path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(self.path)
            tmp.replace(self.link_path)  # atomic re-point, like udev's by-id links

    def _close(self, *, hold_port: bool = False) -> None:
        """Close the port; ``hold_port``: keep a TCP port bound, not listening (unplugged)."""
        if self._listener is not None:
            # Stop listening now: the serving thread's select() still holds the socket, and
            # a close alone would leave it accepting until that select returns.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
        for sock in (self._client, self._listener, self._holder):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self._client = self._listener = self._holder = None
        if hold_port and self.transport == "tcp" and self.tcp_port:
            holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                holder.bind((self.host, self.tcp_port))
            except OSError:  # taken in between: plug binds again (and says so if it cannot)
                holder.close()
            else:
                self._holder = holder
        if self.link_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link_path.unlink()
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None
        self.path = None
        self._out.clear()
        self._line.clear()


def _unknown(_: list[str]) -> tuple[list[str], float, bool]:
    return ["UCO"], 0.0, False


def _ok(_: list[str]) -> tuple[list[str], float, bool]:
    return ["OK!"], 0.0, False
