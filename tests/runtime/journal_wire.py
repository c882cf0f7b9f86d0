"""journald's side of the native protocol, written independently of runtime/journald.py: a
bound datagram socket that receives entries (inline or as a passed memfd) and a parser of
the ``NAME=value`` / binary-length encoding, for the tests to check what a process sent."""

from __future__ import annotations

import array
import fcntl
import os
import socket
import struct
import threading
import time
from pathlib import Path

__all__ = ["JournalReceiver", "parse_entry"]

_MAX = 1 << 20  # one inline datagram; larger entries come as a memfd


def parse_entry(data: bytes) -> list[tuple[str, bytes]]:
    """The (NAME, value) pairs of one native-protocol entry, in order."""
    fields: list[tuple[str, bytes]] = []
    pos = 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        line = data[pos:end]
        if b"=" in line:
            name, _, value = line.partition(b"=")
            pos = end + 1
        else:  # NAME\n, 64-bit little-endian length, bytes, \n
            name = line
            (size,) = struct.unpack_from("<Q", data, end + 1)
            start = end + 9
            value = data[start:start + size]
            assert data[start + size:start + size + 1] == b"\n", "binary field not ended by \\n"
            pos = start + size + 1
        fields.append((name.decode("ascii"), value))
    return fields


class JournalReceiver:
    """A datagram socket at `path` standing in for /run/systemd/journal/socket.

    `start()` receives in a thread (a sender blocks when nobody reads); `entries` holds each
    entry's bytes with the wall and monotonic microseconds of its arrival.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.entries: list[tuple[bytes, int, int]] = []
        self.memfds = 0
        self.memfd_seals: list[int] = []  # F_GET_SEALS of each memfd received
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> JournalReceiver:
        """Begin receiving."""
        self._thread.start()
        return self

    def receive_one(self) -> bytes | None:
        """One entry's bytes (None when nothing came within 0.1 s)."""
        fds = array.array("i")
        try:
            data, ancillary, _, _ = self.sock.recvmsg(_MAX, socket.CMSG_SPACE(fds.itemsize))
        except TimeoutError:
            return None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        for fd in fds:
            self.memfd_seals.append(fcntl.fcntl(fd, fcntl.F_GET_SEALS))
            with os.fdopen(fd, "rb") as memfd:  # journald maps it whole: read from 0
                data = os.pread(memfd.fileno(), os.fstat(fd).st_size, 0)
            self.memfds += 1
        return data

    def _run(self) -> None:
        while not self._stop.is_set():
            data = self.receive_one()
            if data is not None:
                self.entries.append((data, _now_us(), _monotonic_us()))

    def stop(self) -> None:
        """Drain what is queued, stop the thread and close the socket."""
        self._stop.set()
        self._thread.join()
        while (data := self.receive_one()) is not None:
            self.entries.append((data, _now_us(), _monotonic_us()))
        self.sock.close()

    def parsed(self) -> list[dict[str, str]]:
        """Every entry received so far as a dict of text fields."""
        return [{name: value.decode() for name, value in parse_entry(data)}
                for data, _, _ in list(self.entries)]


def _now_us() -> int:
    return time.time_ns() // 1000


def _monotonic_us() -> int:
    return time.monotonic_ns() // 1000
