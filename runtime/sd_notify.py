"""A tiny, dependency-free client of systemd's notification protocol (sd_notify(3)).

Under a ``Type=notify`` unit systemd passes ``NOTIFY_SOCKET``: a Unix datagram socket, either
a file path (``/run/systemd/notify``) or an abstract name written with a leading ``@``. A
service sends newline-separated ``KEY=VALUE`` assignments to it: ``READY=1`` when start-up is
complete, ``WATCHDOG=1`` as a keep-alive, ``STOPPING=1`` when shutting down, ``STATUS=...`` as a
one-line status shown by ``systemctl status``.

With ``WatchdogSec=`` set, systemd also passes ``WATCHDOG_USEC`` (and ``WATCHDOG_PID``, the
process it expects the pings from); :func:`watchdog_interval` reads them. Ping at least every
half of that interval, from the event loop after real work, not from a free-running thread.

Outside systemd (no ``NOTIFY_SOCKET``) every call is a no-op that returns False, so the daemon
runs the same way in a terminal, in tests and under systemd. `Notifier` wraps these calls as
the one object both services hold (tests pass a recording stand-in of the same shape).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

__all__ = [
    "NOTIFY_SOCKET_ENV",
    "Notifier",
    "notify",
    "ready",
    "socket_address",
    "status",
    "stopping",
    "watchdog",
    "watchdog_interval",
]

NOTIFY_SOCKET_ENV = "NOTIFY_SOCKET"
_WATCHDOG_USEC_ENV = "WATCHDOG_USEC"
_WATCHDOG_PID_ENV = "WATCHDOG_PID"


def socket_address(environ: Mapping[str, str] | None = None) -> str | None:
    """The address to send notifications to, or None when not running under systemd.

    A path must be absolute; ``@name`` is the abstract socket ``\\0name``. Anything else
    (unset, empty, relative, or a transport this client does not speak, such as systemd
    254's ``vsock:``) yields None.
    """
    env = os.environ if environ is None else environ
    value = env.get(NOTIFY_SOCKET_ENV, "")
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


def notify(state: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send one notification (``KEY=VALUE`` lines); True if it was handed to systemd.

    Returns False, without raising, when there is no notification socket or the send fails:
    a service must never stop working because its supervisor cannot be told about it (a
    missed watchdog ping makes systemd restart it, which is the visible failure).
    """
    address = socket_address(environ)
    if address is None or not state:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)  # a full receiver queue is a failed send, never a stall
            sock.sendto(state.encode("utf-8"), address)
    except OSError:
        return False
    return True


def _one_line(text: str) -> str:
    # A newline would end the STATUS= assignment and start another one.
    return " ".join(text.split())


def ready(status_text: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Tell systemd that start-up is complete (``READY=1``), optionally with a status line."""
    state = "READY=1"
    if status_text:
        state += f"\nSTATUS={_one_line(status_text)}"
    return notify(state, environ)


def watchdog(environ: Mapping[str, str] | None = None) -> bool:
    """Keep-alive ping (``WATCHDOG=1``): send at least every half of watchdog_interval()."""
    return notify("WATCHDOG=1", environ)


def stopping(status_text: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Tell systemd that the service is shutting down (``STOPPING=1``)."""
    state = "STOPPING=1"
    if status_text:
        state += f"\nSTATUS={_one_line(status_text)}"
    return notify(state, environ)


def status(text: str, environ: Mapping[str, str] | None = None) -> bool:
    """Set the one-line status that ``systemctl status`` shows (``STATUS=...``)."""
    return notify(f"STATUS={_one_line(text)}", environ)


def watchdog_interval(
    environ: Mapping[str, str] | None = None, pid: int | None = None
) -> float | None:
    """The watchdog timeout in seconds that systemd expects pings within, or None if none.

    None when ``WATCHDOG_USEC`` is unset, not a positive integer, or when ``WATCHDOG_PID`` is
    set and names another process (the variables were inherited, not meant for us).
    """
    env = os.environ if environ is None else environ
    usec = _positive_int(env.get(_WATCHDOG_USEC_ENV, ""))
    if usec is None:
        return None
    if env.get(_WATCHDOG_PID_ENV, ""):
        watched = _positive_int(env[_WATCHDOG_PID_ENV])
        if watched is None or watched != (os.getpid() if pid is None else pid):
            return None
    return usec / 1_000_000


def _positive_int(text: str) -> int | None:
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value > 0 else None


class Notifier:
    """systemd notifications for one service (no-ops outside systemd).

    `stopping_status`: the STATUS= line sent with STOPPING=1 (None: none).
    """

    def __init__(self, *, stopping_status: str | None = None) -> None:
        self.stopping_status = stopping_status

    def ready(self, status_text: str | None = None) -> None:
        """READY=1: start-up is complete, inputs are being taken."""
        ready(status_text)

    def watchdog(self) -> None:
        """WATCHDOG=1: the loop is alive and working."""
        watchdog()

    def stopping(self) -> None:
        """STOPPING=1: a clean shutdown has begun."""
        stopping(self.stopping_status)

    def status(self, text: str) -> None:
        """STATUS=...: one line for `systemctl status`."""
        status(text)

    def watchdog_interval(self) -> float | None:
        """Seconds systemd allows between pings, or None without a watchdog."""
        return watchdog_interval()
