"""The adapter of our own card shoe (docs/protocols/card-shoe.md): `drivers.shoe`'s
`SerialCardReader` on a serial port, or on `simulators.shoe.ShoeSimulator`'s pty.

Config (``[shoe] driver = "showdown-shoe"``, the default): ``url`` (the port: a device path
such as /dev/showdown/shoe, or any pyserial URL; required for a real shoe), ``baudrate``,
``stall_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import serial  # type: ignore[import-untyped]

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from drivers.shoe import SerialCardReader
from drivers.shoe_codec import Identify, ShoeDecoder, ShoeIdentity, encode

__all__ = ["ADAPTER", "ShoeSettings"]

_PROBE_TIMEOUT_S = 1.5


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeSettings:
    """Where the shoe is and how it is watched."""

    url: str | None
    baudrate: int = 115_200
    stall_seconds: float = 3.0


class ShowdownShoe:
    """Our shoe protocol over a serial line (`drivers.adapter.DeviceAdapter`)."""

    role: Role = "shoe"
    name = "showdown-shoe"
    summary = "the Showdown shoe protocol over a serial port (docs/protocols/card-shoe.md)"
    keys: Mapping[str, str] = {
        "url": "the shoe's serial port: a device path (/dev/showdown/shoe) or a pyserial URL",
        "baudrate": "the port's speed (default 115200)",
        "stall_seconds": "silence after which the shoe is reconnected (0.1..60, default 3)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> ShoeSettings:
        """The shoe's port, speed and stall time; a real shoe needs its port."""
        opts = Options(options, place)
        url = opts.path("url")
        if place.real and url is None:
            raise place.error("url", "a hardware shoe needs its serial port URL")
        return ShoeSettings(url=url, baudrate=opts.integer("baudrate", 115_200, low=1),
                            stall_seconds=opts.number("stall_seconds", 3.0, low=0.1, high=60))

    def open(self, settings: ShoeSettings, context: DriverContext) -> SerialCardReader:
        """The driver on the configured port (it alerts and retries while the shoe is away)."""
        return SerialCardReader(settings.url or "", baudrate=settings.baudrate,
                                stall_timeout=settings.stall_seconds, ack="on_confirm")

    def simulate(self, settings: ShoeSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """The driver on a simulated shoe's pty (seeded decks: ``context.seed``)."""
        from simulators.shoe import ShoeSimulator  # noqa: PLC0415

        sim = stack.enter_context(ShoeSimulator(seed=context.seed))
        device = SerialCardReader(lambda: sim.path or "", name=f"sim-{context.name}",
                                  stall_timeout=settings.stall_seconds, ack="on_confirm")
        return Simulation(device=device, simulator=sim)

    def probe(self, settings: ShoeSettings) -> Probe:
        """Open the port and ask the shoe who it is (IDENTIFY): model, serial, firmware."""
        url = settings.url or ""
        try:
            port = serial.serial_for_url(url, baudrate=settings.baudrate, timeout=0.1)
        except (serial.SerialException, OSError, ValueError) as exc:
            return Probe(ok=False, detail=f"cannot open the shoe's port {url}: {exc}",
                         fix="plug the shoe in and check `ls -l /dev/showdown/` (the udev rule"
                             " names it; docs/operations/doctor.md, shoe)")
        try:
            identity = _identify(port)
        except (serial.SerialException, OSError) as exc:
            return Probe(ok=False, detail=f"{url} opens but fails: {exc}",
                         fix="re-plug the shoe; check its cable")
        finally:
            port.close()
        if identity is None:
            return Probe(ok=False, detail=f"{url} opens ({settings.baudrate} baud) but the shoe"
                         f" does not answer IDENTIFY within {_PROBE_TIMEOUT_S:g} s",
                         fix="check the shoe is switched on and the port is the shoe's"
                             " (not another device), and its baud rate")
        return Probe(ok=True, detail=f"{url} opens ({settings.baudrate} baud): shoe"
                     f" {identity.model} serial {identity.serial} firmware {identity.firmware}",
                     model=identity.model, firmware=identity.firmware)


def _identify(port: Any) -> ShoeIdentity | None:
    """Send IDENTIFY and wait for the shoe's IDENTITY (other frames are skipped)."""
    decoder = ShoeDecoder(sender="device")
    port.reset_input_buffer()
    port.write(encode(Identify(seq=1)))
    deadline = time.monotonic() + _PROBE_TIMEOUT_S
    while time.monotonic() < deadline:
        decoder.feed(port.read(256))
        while (event := decoder.next_event()) is not None:
            if isinstance(event, ShoeIdentity):
                return event
    return None


ADAPTER = ShowdownShoe()
