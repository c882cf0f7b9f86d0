"""A simulated ESC/POS receipt printer, on the network as a real one listens (a TCP port, 9100
on a real printer; a free port of 127.0.0.1 here: `start`) or on a serial line (a pseudo-
terminal: `start_serial`): the table's real driver (`controller.receipt_printer.EscposPrinter`,
python-escpos's ``Network`` or ``Serial`` with pyserial) opens it through the same socket or
tty calls it uses for a real printer. On the network a job is what one connection sent; on the
serial line a job ends with its cut (``GS V``).

It answers the real-time status requests (``DLE EOT 1``: online or not; ``DLE EOT 4``: the
paper sensor) as the printer's state says, keeps every job's bytes (`jobs`) and appends them to
``capture`` when given. Faults to rehearse: `paper` ("ok", "low", "out"), `online` False (the
cover open), `answers` False (a printer that never answers a status request), and `close()`
(switched off: the connection is refused).

    printer = SimReceiptPrinter(capture=Path("slips.bin"))
    host, port = printer.start()
    ...
    printer.close()
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import socketserver
import threading
import tty
from pathlib import Path
from typing import Final, Literal

__all__ = ["PrinterModel", "SimReceiptPrinter"]

DLE_EOT: Final = b"\x10\x04"
CUT: Final = b"\x1dV"
# Status bytes (ESC/POS): bits 1 and 4 are always set; bit 3 offline; paper sensor bits 2-3
# near end, bits 5-6 paper end.
_BASE: Final = 0x12
_OFFLINE: Final = 0x08
_PAPER: Final = {"ok": _BASE, "low": _BASE | 0x0C, "out": _BASE | 0x0C | 0x60}

Paper = Literal["ok", "low", "out"]


class PrinterModel:
    """The printer's behaviour without I/O: bytes in, status answers out, jobs kept."""

    def __init__(self) -> None:
        self.paper: Paper = "ok"
        self.online = True
        self.answers = True  # False: never answers a status request
        self.jobs: list[bytes] = []
        self.lock = threading.Lock()
        self.printed = threading.Condition(self.lock)

    def answer(self, data: bytes, start: int) -> tuple[bytes, int]:
        """The answers to the status requests in ``data[start:]`` (a request cut at the end
        waits for more), and where the next scan starts."""
        out = bytearray()
        i = data.find(DLE_EOT, start)
        while i != -1 and i + 2 < len(data):
            n = data[i + 2]
            if self.answers and n == 1:
                out.append(_BASE | (0 if self.online else _OFFLINE))
            elif self.answers and n == 4:
                out.append(_PAPER[self.paper])
            start = i + 3
            i = data.find(DLE_EOT, start)
        if i != -1:
            start = i
        return bytes(out), start

    def finish(self, data: bytes) -> bytes | None:
        """A connection's bytes once it closes: the job, unless it held only status requests
        (None), or the printer could not print (offline, out of paper: nothing comes out)."""
        rest = data
        for n in (1, 2, 3, 4):
            rest = rest.replace(DLE_EOT + bytes([n]), b"")
        if not rest or not self.online or self.paper == "out":
            return None
        with self.printed:
            self.jobs.append(data)
            self.printed.notify_all()
        return data

    def cut_jobs(self, data: bytes) -> tuple[list[bytes], bytes]:
        """The jobs in ``data`` that end with a cut, and the bytes after the last one."""
        jobs: list[bytes] = []
        at = data.find(CUT)
        while at != -1 and at + 2 < len(data):
            end = at + 3 + (1 if data[at + 2] in (65, 66) else 0)
            jobs.append(data[:end])
            data = data[end:]
            at = data.find(CUT)
        return jobs, data

    def wait_for_jobs(self, count: int, timeout: float = 30.0) -> list[bytes]:
        """The jobs once there are ``count`` (fewer if ``timeout`` seconds pass first)."""
        with self.printed:
            self.printed.wait_for(lambda: len(self.jobs) >= count, timeout)
            return list(self.jobs)


class SimReceiptPrinter(PrinterModel):
    """The printer on a TCP port of 127.0.0.1 (`start` gives the address)."""

    def __init__(self, *, capture: Path | None = None) -> None:
        super().__init__()
        self.capture = capture
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._pty: tuple[int, int] | None = None  # master, slave
        self._stop = threading.Event()
        self.path: str | None = None  # the serial line's device, once started

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens (after `start`)."""
        if self._server is None:
            raise RuntimeError("the simulated printer is not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen (``port`` 0: a free one) and serve in a thread; the address."""
        model = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                model.serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer((host, port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="sim-receipt-printer",
                                        daemon=True)
        self._thread.start()
        return self.address

    def start_serial(self) -> str:
        """Wait on a pseudo-terminal as on a serial line (in a thread); its device path."""
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing before the driver sets its own modes
        self._pty = (master, slave)
        self.path = os.ttyname(slave)
        self._thread = threading.Thread(target=self._serial, args=(master,),
                                        name="sim-receipt-printer-serial", daemon=True)
        self._thread.start()
        return self.path

    def _serial(self, master: int) -> None:
        data = b""
        scanned = 0
        while not self._stop.is_set():
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the driver closed the line: wait for the next opening
                self._stop.wait(0.05)
                continue
            data += chunk
            reply, scanned = self.answer(data, scanned)
            if reply:
                os.write(master, reply)
            jobs, rest = self.cut_jobs(data)
            for job in jobs:
                self._keep(self.finish(job))
            if jobs:
                scanned = max(0, scanned - (len(data) - len(rest)))
                data = rest

    def _keep(self, job: bytes | None) -> None:
        if job is not None and self.capture is not None:
            with self.lock, self.capture.open("ab") as out:
                out.write(job)

    def serve(self, conn: socket.socket) -> None:
        """One connection: answer status requests as they come, keep the job at the end."""
        data = bytearray()
        scanned = 0
        conn.settimeout(30.0)
        with contextlib.suppress(OSError):
            while chunk := conn.recv(4096):
                data += chunk
                reply, scanned = self.answer(bytes(data), scanned)
                if reply:
                    conn.sendall(reply)
        self._keep(self.finish(bytes(data)))

    def close(self) -> None:
        """Switch the printer off: no more connections."""
        server, self._server = self._server, None
        self._stop.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        pty, self._pty = self._pty, None
        for fd in pty or ():
            with contextlib.suppress(OSError):
                os.close(fd)
