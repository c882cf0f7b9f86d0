"""What the recorder and the replayer share: where in the driver's section its devices are
named (a serial path, a ``socket://`` URL, or a table with ``host`` and ``port``; one or
several, as a table with several chip readers), a copy of the section with stand-ins put in
their place, and the pseudo-terminal a driver opens in a serial device's place.

The recorder and the replayer stand between the driver and each device at the byte-stream
level: a serial device is replaced by a pty whose path the driver is given instead of the
device's, a TCP device by a port on 127.0.0.1. A driver that talks to its device another way
(the SR-48 through pyusb) names no such device, and the kit says so (D308).
"""

from __future__ import annotations

import contextlib
import copy
import os
import stat
import tty
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cli.errors import CommandError
from drivers.adapter import ConfigPlace

__all__ = ["DEFAULT_TCP_PORT", "TCP_SCHEMES", "DeviceAt", "Pty", "devices_in", "split_tcp",
           "with_stand_ins"]

TCP_SCHEMES: Final = ("socket://", "tcp://")
DEFAULT_TCP_PORT: Final = 10001  # a ``host`` without ``port``: the QuasarMX's own
_INPUT_MAJOR: Final = 13  # Linux's input devices (/dev/input/event*)

Where = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class DeviceAt:
    """One device the section names: where (keys and list indices into the section), and the
    device (a serial path, or ``socket://host:port``)."""

    where: Where
    device: str

    @property
    def tcp(self) -> bool:
        """Whether the device is reached over TCP."""
        return self.device.startswith(TCP_SCHEMES)

    @property
    def name(self) -> str:
        """Where, as the config's errors say it: ``url``, ``readers[2].host``."""
        out = ""
        for part in self.where:
            out += f"[{part + 1}]" if isinstance(part, int) else f".{part}" if out else part
        return out


def _is_device(value: Any, place: ConfigPlace) -> bool:
    if not isinstance(value, str) or not value:
        return False
    if value.startswith(("/dev/", *TCP_SCHEMES)):
        return True
    try:
        return stat.S_ISCHR(os.stat(place.path(value)).st_mode)
    except OSError:
        return False


def _walk(value: Any, where: Where, place: ConfigPlace, tcp_port: int,
          found: list[DeviceAt]) -> None:
    if isinstance(value, Mapping):
        host = value.get("host")
        if isinstance(host, str) and host:
            port = value.get("port", tcp_port)
            found.append(DeviceAt((*where, "host"), f"socket://{host}:{port}"))
        for key, item in value.items():
            if key != "host":
                _walk(item, (*where, key), place, tcp_port, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, (*where, i), place, tcp_port, found)
    elif where and _is_device(value, place):
        found.append(DeviceAt(where, place.path(value)))


def _input_device(path: str) -> bool:
    """Whether ``path`` is a Linux input device (evdev: a keyboard wedge), whose key events
    are no byte stream."""
    if os.path.realpath(path).startswith("/dev/input/"):
        return True
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == _INPUT_MAJOR


def devices_in(driver: str, options: Mapping[str, Any], place: ConfigPlace, *,
               only: str | None = None, tcp_port: int = DEFAULT_TCP_PORT) -> list[DeviceAt]:
    """The devices the section names (``only``: the one at that key); CommandError if none,
    or if one is an input device."""
    found: list[DeviceAt] = []
    _walk(options, (), place, tcp_port, found)
    for at in found:
        if not at.tcp and _input_device(at.device):
            raise CommandError(
                f"{place.section}.{at.name} = {at.device} is an input device (a keyboard"
                f" wedge): its key events are no byte stream to relay; record them for the"
                " vendor with evemu-record (Debian's evemu-tools)")
    if only is not None:
        chosen = [d for d in found if only in (d.name, d.where[0])]
        if not chosen:
            named = ", ".join(d.name for d in found) or "none"
            raise CommandError(f"{place.source}: [{place.section}] names no device at {only!r}"
                               f" (devices at: {named})")
        return chosen
    if not found:
        raise CommandError(
            f"nothing to record through: no key of [{place.section}] in {place.source} names"
            f" a serial device, a socket:// URL or a host; the {driver} driver talks to its"
            " device another way, which a relay cannot stand in for (a USB device driven"
            " through pyusb, such as the SR-48, or a PC/SC reader through pcscd): capture its"
            " USB traffic with usbmon and Wireshark (D308)")
    return found


def with_stand_ins(options: Mapping[str, Any], stand_ins: Sequence[tuple[DeviceAt, str]]
                   ) -> dict[str, Any]:
    """A copy of the section with each device replaced by its stand-in (a pty's path, or
    ``socket://127.0.0.1:PORT``: a ``host`` key gets the host, its ``port`` the port)."""
    out: dict[str, Any] = copy.deepcopy(dict(options))
    for at, stand_in in stand_ins:
        parent: Any = out
        try:
            for part in at.where[:-1]:
                parent = parent[part]
        except (KeyError, IndexError, TypeError):
            raise CommandError(f"the driver's keys have no device at {at.name}, where the"
                               " capture's device was: replay with the capture's own keys"
                               " (no --config) or a config of the same layout") from None
        last = at.where[-1]
        if not isinstance(parent, dict) or (last != "host" and last not in parent):
            raise CommandError(f"the driver's keys have no device at {at.name}, where the"
                               " capture's device was")
        if last == "host":
            host, port = split_tcp(stand_in)
            parent["host"], parent["port"] = host, port
        else:
            parent[last] = stand_in
    return out


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
