"""What the recorder and the replayer share: which key of the driver's section names the
device (its serial path or its TCP URL), and the pseudo-terminal a driver opens in the real
device's place.

The recorder and the replayer stand between the driver and the device at the byte-stream
level: a serial device is replaced by a pty whose path the driver is given instead of the
device's, a TCP device (``socket://host:port``, pyserial's URL) by a port on 127.0.0.1. A
driver that talks to its device another way (the SR-48 through pyusb) names no such key, and
the kit says so (D312).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tty
from collections.abc import Mapping
from typing import Any, Final

from cli.errors import CommandError
from drivers.adapter import ConfigPlace

__all__ = ["TCP_SCHEMES", "Pty", "port_key_of", "split_tcp"]

TCP_SCHEMES: Final = ("socket://", "tcp://")


def _is_device(value: Any, place: ConfigPlace) -> bool:
    if not isinstance(value, str) or not value:
        return False
    if value.startswith(("/dev/", *TCP_SCHEMES)):
        return True
    try:
        return stat.S_ISCHR(os.stat(place.path(value)).st_mode)
    except OSError:
        return False


def port_key_of(driver: str, options: Mapping[str, Any], place: ConfigPlace,
                port_key: str | None) -> str:
    """The key of the section that names the device the relay stands in for."""
    if port_key is not None:
        if port_key not in options:
            raise CommandError(f"{place.source}: [{place.section}] has no key {port_key!r}")
        if not _is_device(options[port_key], place):
            raise CommandError(f"{place.source}: {place.section}.{port_key} = "
                               f"{options[port_key]!r} is no serial device or socket:// URL")
        return port_key
    keys = [k for k, v in options.items() if _is_device(v, place)]
    if not keys:
        raise CommandError(
            f"nothing to record through: no key of [{place.section}] in {place.source} names"
            f" a serial device or a socket:// URL; the {driver} driver talks to its device"
            " another way (a USB device driven through pyusb, such as the SR-48, cannot be"
            " relayed: capture its USB traffic with usbmon and Wireshark, D312)")
    if len(keys) > 1:
        raise CommandError(f"several keys of [{place.section}] name a device"
                           f" ({', '.join(keys)}): say which with --port-key")
    return keys[0]


def split_tcp(url: str) -> tuple[str, int]:
    """(host, port) of ``socket://host:port``; CommandError if it is not one."""
    rest = url.split("://", 1)[1].split("?", 1)[0].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise CommandError(f"{url!r} is no socket://HOST:PORT URL")
    return host.strip("[]"), int(port)


class Pty:
    """A pseudo-terminal: the driver opens ``path``; the kit reads and writes ``master``."""

    def __init__(self) -> None:
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line editing before the driver sets its modes
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self._slave)

    def close(self) -> None:
        """Close both ends."""
        for fd in (self.master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
