"""journald's native protocol: one log event as one datagram of named fields.

Under systemd a service's stdout/stderr is a stream into journald, which stores each line at
the unit's default priority. A service that sends to ``/run/systemd/journal/socket`` instead
gives each entry its own ``PRIORITY`` and structured fields (``TABLE=t01``, ``HAND_ID=...``)
that ``journalctl`` filters on. The protocol (systemd's "Native Journal Protocol"): a datagram
of ``NAME=value\\n`` lines; a value holding a newline is sent as ``NAME\\n``, its length as a
little-endian 64-bit integer, the bytes and ``\\n``. A datagram too large for the socket goes
as a sealed memfd passed with ``SCM_RIGHTS``.

`stream_is_journal` says whether stderr/stdout is journald's stream (``JOURNAL_STREAM``,
sd_journal_stream_fd(3)); `JournalSocket` sends and, when the socket cannot be used, writes
the message to stderr with an ``<N>`` priority prefix (sd-daemon(3)) so priority survives.
"""

from __future__ import annotations

import array
import errno
import fcntl
import os
import re
import socket
import struct
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "JOURNAL_SOCKET",
    "JOURNAL_SOCKET_ENV",
    "JournalSocket",
    "encode",
    "field_name",
    "stream_is_journal",
]

JOURNAL_SOCKET = "/run/systemd/journal/socket"
# Another socket path (tests, or a diagnosis with a socket of one's own); unset in production.
JOURNAL_SOCKET_ENV = "SHOWDOWN_JOURNAL_SOCKET"
_STREAM_ENV = "JOURNAL_STREAM"
_NAME_MAX = 64  # journald drops longer field names
_NOT_A_NAME = re.compile(r"[^A-Z0-9_]")
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL
_TOO_BIG = (errno.EMSGSIZE, errno.ENOBUFS)


def stream_is_journal(environ: Mapping[str, str] | None = None,
                      fds: Iterable[int] = (2, 1)) -> bool:
    """True when ``JOURNAL_STREAM`` ("device:inode") names the file behind stderr or stdout.

    systemd sets it for a unit whose output goes to the journal; a child whose output was
    redirected elsewhere inherits the variable but not the stream, and gets False.
    """
    env = os.environ if environ is None else environ
    device, _, inode = env.get(_STREAM_ENV, "").partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    for fd in fds:
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if st.st_dev == int(device) and st.st_ino == int(inode):
            return True
    return False


def field_name(key: str) -> str:
    """A structlog key as a journal field name: upper case, ``[A-Z0-9_]``, 64 at most.

    journald refuses names that start with ``_`` (its own trusted fields) or a digit; those
    get an ``F`` in front (``_seq`` -> ``F_SEQ``), and an empty name becomes ``F``.
    """
    name = _NOT_A_NAME.sub("_", key.upper())
    if not name or not name[0].isalpha():
        name = "F" + name
    return name[:_NAME_MAX]


def encode(fields: Iterable[tuple[str, str]]) -> bytes:
    """One datagram of the native protocol from (NAME, value) pairs, in the order given."""
    out = bytearray()
    for name, value in fields:
        data = value.encode("utf-8", "replace")
        out += name.encode("ascii")
        if b"\n" in data:
            out += b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
        else:
            out += b"=" + data + b"\n"
    return bytes(out)


class JournalSocket:
    """Sends datagrams to journald; falls back to ``<N>``-prefixed lines on stderr.

    `path` defaults to ``$SHOWDOWN_JOURNAL_SOCKET`` or journald's own socket. A send that
    fails for any reason but size (no socket, refused, no permission) writes the message to
    the stderr of the moment instead, so nothing is lost and the priority is kept.
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get(JOURNAL_SOCKET_ENV) or JOURNAL_SOCKET
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.fallbacks = 0  # events written to stderr because the socket could not be used

    def send(self, datagram: bytes, *, priority: int, message: str) -> bool:
        """Send one entry; True if journald's socket took it, False if it went to stderr."""
        try:
            try:
                self._sock.sendto(datagram, self.path)
            except OSError as exc:
                if exc.errno not in _TOO_BIG:
                    raise
                self._send_memfd(datagram)
        except OSError:
            self.fallbacks += 1
            _prefixed_to_stderr(priority, message)
            return False
        return True

    def _send_memfd(self, datagram: bytes) -> None:
        fd = os.memfd_create("journal-entry", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            view = memoryview(datagram)
            while view:
                view = view[os.write(fd, view):]
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)  # journald accepts only sealed memfds
            self._sock.sendmsg([], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                     array.array("i", [fd]))], 0, self.path)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close the socket (a later send falls back to stderr)."""
        self._sock.close()


def _prefixed_to_stderr(priority: int, message: str) -> None:
    # Every line carries the prefix: a traceback's lines keep the priority of its event.
    stream = sys.stderr
    stream.write("".join(f"<{priority}>{line}\n" for line in message.splitlines() or [""]))
    stream.flush()
