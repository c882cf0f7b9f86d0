"""The table's ID reader in software: it owns a pseudo-terminal and writes the reader's lines on
the master side, so the real driver (`drivers.id_reader.SerialIdReader`) opens the slave path
with pyserial exactly as it opens a USB reader in virtual-COM mode.

A real reader only talks, so the simulator needs no thread: `tap` and `send_raw` write to the
pty at once (thread-safe, never blocking; bytes the pty cannot take are lost and counted, as a
reader's are with nobody reading). `unplug` closes the pty, `replug` opens a new one (a new
path, as a USB re-enumeration gives). Lines are encoded by `drivers.id_codec.encode_tap`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import tty
from types import TracebackType
from typing import Self

import structlog

from drivers.id_codec import encode_tap
from drivers.readings import IdForm, masked
from simulators.faults import Faults

__all__ = ["IdReaderSimulator", "IdReaderSimulatorError"]

_log = structlog.get_logger("simulators.id_reader")


class IdReaderSimulatorError(Exception):
    """A request the simulated reader cannot carry out (not running, unplugged)."""


class IdReaderSimulator:
    """A simulated ID reader on a pty; use as a context manager (``with IdReaderSimulator()``).

    ``path`` is the pty's slave path while plugged in (None otherwise); ``ending`` the line end
    it sends (CR, LF or CRLF); ``stats`` counts lines, raw writes, lost bytes and unplugs.
    """

    def __init__(self, *, ending: bytes = b"\r\n", faults: Faults | None = None) -> None:
        if ending not in (b"\r", b"\n", b"\r\n"):
            raise ValueError(f"ending {ending!r} must be CR, LF or CRLF")
        self.ending = ending
        # Line faults: "garbage" noise before a tap, "corrupt", "drop", "duplicate" a tap's
        # line, "silent" a reader that reads nothing (a hung reader).
        self.faults = faults if faults is not None else Faults()
        self.path: str | None = None
        self.stats: dict[str, int] = dict.fromkeys(
            ("taps", "taps_lost", "raw_writes", "lost_bytes", "unplugs"), 0)
        self._master: int | None = None
        self._slave: int | None = None
        self._running = False
        self._lock = threading.Lock()

    # ----------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Plug the reader in: open its pty."""
        with self._lock:
            if self._running:
                raise IdReaderSimulatorError("the simulator is already running")
            self._open_pty()
            self._running = True
        _log.info("id reader simulator on", path=self.path)
        return self

    def stop(self) -> None:
        """Switch off: close the pty."""
        with self._lock:
            self._running = False
            self._close_pty()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- the reader

    def tap(self, number: str, form: IdForm = "track2") -> None:
        """A card read: its number sent as the reader sends this form (a UID in hex);
        ValueError if the number does not fit the form."""
        line = encode_tap(number, form, ending=self.ending)
        chunks = self.faults.outgoing(line, reading=True)
        self._write(b"", "taps" if chunks else "taps_lost")
        for chunk in chunks:
            self._write(chunk, None)
        _log.info("id reader simulator tap", form=form, number=masked(number))

    def send_raw(self, data: bytes) -> None:
        """Any bytes on the line, as they are (noise, a half line, garbage)."""
        self._write(data, "raw_writes")

    def unplug(self) -> None:
        """Pull the USB cable: the pty closes and the driver's port fails."""
        with self._lock:
            self._need_running()
            if self._master is None:
                return
            self._close_pty()
            self.stats["unplugs"] += 1

    def replug(self) -> str:
        """Plug it back in: a new pty (its path may differ); returns the path."""
        with self._lock:
            self._need_running()
            if self._master is None:
                self._open_pty()
            assert self.path is not None
            return self.path

    def plug(self) -> None:
        """Plug it back in (`replug`), a `drivers.adapter.SimulatedDevice` control."""
        self.replug()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a line fault of `simulators.faults.Faults` ("garbage", "silent", ...)."""
        self.faults.set(name, value)

    def inject(self, name: str) -> None:
        """One fault (`simulators.faults.ONE_SHOT`) on the next tap's line."""
        self.faults.inject(name)

    @property
    def plugged(self) -> bool:
        """Whether the reader is plugged in (its pty open)."""
        return self._master is not None

    # ----------------------------------------------------------------------------- the pty

    def _need_running(self) -> None:
        if not self._running:
            raise IdReaderSimulatorError("the simulated ID reader is not running")

    def _write(self, data: bytes, counter: str | None) -> None:
        with self._lock:
            self._need_running()
            if self._master is None:
                raise IdReaderSimulatorError("the simulated ID reader is unplugged")
            if counter is not None:
                self.stats[counter] += 1
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self._master, view):]
                except OSError:  # nobody reading and the pty is full: the bytes are lost
                    self.stats["lost_bytes"] += len(view)
                    break

    def _open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing before the driver sets its own modes
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)

    def _close_pty(self) -> None:
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None
        self.path = None
