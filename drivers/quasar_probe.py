"""Ask one QuasarMX who it is, blocking, for `showdown doctor`: open its serial port or TCP
port, send BRK and EOF, read REV and RSN, close. Never changes a setting the reader keeps
(end-of-frame is volatile and the driver sets it again at connect)."""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from drivers import quasar_codec as qc
from drivers.quasar_settings import QuasarLink

__all__ = ["ReaderProbe", "probe_reader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderProbe:
    """What one reader said: its revision and serial number, or why it said nothing."""

    where: str
    revision: qc.Revision | None = None
    serial: str | None = None
    error: str | None = None


class _Pipe:
    def __init__(self, link: QuasarLink, timeout: float, baudrate: int) -> None:
        self._sock: socket.socket | None = None
        self._port: serial.Serial | None = None
        if link.host is not None:
            self._sock = socket.create_connection((link.host, link.port), timeout=timeout)
            self._sock.settimeout(0.05)
        else:
            self._port = serial.serial_for_url(link.url, baudrate=baudrate, timeout=0.05,
                                               write_timeout=timeout)

    def write(self, data: bytes) -> None:
        if self._sock is not None:
            self._sock.sendall(data)
        elif self._port is not None:
            self._port.write(data)

    def read(self) -> bytes:
        if self._sock is not None:
            try:
                data = self._sock.recv(4096)
            except TimeoutError:
                return b""
            if not data:
                raise ConnectionError("the reader closed the connection")
            return data
        assert self._port is not None
        return bytes(self._port.read(4096))

    def close(self) -> None:
        for thing in (self._sock, self._port):
            if thing is not None:
                with contextlib.suppress(Exception):
                    thing.close()


def _answer(pipe: _Pipe, decoder: qc.FrameDecoder, timeout: float, last: str | None = None
            ) -> qc.Frame:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for item in decoder.feed(pipe.read()):
            if isinstance(item, qc.FrameError):
                raise qc.QuasarProtocolError(item.detail)
            if last is None or item.lines[-1] == last:
                return item
    raise TimeoutError(f"no answer within {timeout:g} s")


def probe_reader(link: QuasarLink, *, timeout: float = 2.0, baudrate: int = 115200
                 ) -> ReaderProbe:
    """Open the reader, read its revision and serial number, close it; never raises."""
    try:
        pipe = _Pipe(link, timeout, baudrate)
    except (OSError, serial.SerialException, ValueError) as exc:
        return ReaderProbe(where=link.where, error=f"cannot open: {exc}")
    decoder = qc.FrameDecoder()
    try:
        pipe.write(qc.break_command() + qc.end_of_frame())
        _answer(pipe, decoder, timeout, last=qc.OK)
        pipe.write(qc.revision())
        rev = qc.parse_revision(_answer(pipe, decoder, timeout))
        pipe.write(qc.serial_number())
        number = qc.parse_serial(_answer(pipe, decoder, timeout))
    except (OSError, serial.SerialException, qc.QuasarProtocolError) as exc:
        return ReaderProbe(where=link.where, error=f"{type(exc).__name__}: {exc}")
    finally:
        pipe.close()
    if isinstance(rev, qc.ReaderError):
        return ReaderProbe(where=link.where, error=f"REV refused: {rev.code} ({rev.meaning})")
    return ReaderProbe(where=link.where, revision=rev,
                       serial=number if isinstance(number, str) else None)
