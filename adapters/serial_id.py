"""The adapter of the serial-lines ID reader (docs/protocols/id-reader.md): `drivers.id_reader`'s
`SerialIdReader` on a serial port (a USB virtual COM port or RS-232), or on
`simulators.id_reader.IdReaderSimulator`'s pty.

Config (``[id_reader] driver = "serial-lines"``, the default): ``port`` (required for a real
reader), ``baudrate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import serial  # type: ignore[import-untyped]

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from drivers.id_reader import SerialIdReader

__all__ = ["ADAPTER", "SerialIdSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SerialIdSettings:
    """Where the reader is."""

    port: str | None
    baudrate: int = 9600


class SerialLines:
    """A card reader that sends one line a card (`drivers.adapter.DeviceAdapter`)."""

    role: Role = "id_reader"
    name = "serial-lines"
    summary = "a card reader sending one line a card on a serial port (docs/protocols/id-reader.md)"
    keys: Mapping[str, str] = {
        "port": "the reader's serial port: /dev/serial/by-id/... or a pyserial URL",
        "baudrate": "an RS-232 reader's speed (default 9600; a USB CDC reader ignores it)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> SerialIdSettings:
        """The reader's port and speed; a real reader needs its port."""
        opts = Options(options, place)
        port = opts.path("port")
        if place.real and port is None:
            raise place.error("port", "a hardware ID reader needs its serial port"
                                      " (pyserial URL or path)")
        return SerialIdSettings(port=port, baudrate=opts.integer("baudrate", 9600, low=1))

    def open(self, settings: SerialIdSettings, context: DriverContext) -> SerialIdReader:
        """The driver on the configured port."""
        return SerialIdReader(settings.port or "", baudrate=settings.baudrate)

    def simulate(self, settings: SerialIdSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """The driver on a simulated reader's pty."""
        from simulators.id_reader import IdReaderSimulator  # noqa: PLC0415

        sim = stack.enter_context(IdReaderSimulator())
        return Simulation(device=SerialIdReader(lambda: sim.path or "",
                                                device_name=f"sim-{context.name}"),
                          simulator=sim)

    def probe(self, settings: SerialIdSettings) -> Probe:
        """Open the port (a line reader says nothing until a card is read)."""
        port_name = settings.port or ""
        try:
            port = serial.serial_for_url(port_name, baudrate=settings.baudrate, timeout=0)
        except (serial.SerialException, OSError, ValueError) as exc:
            return Probe(ok=False, detail=f"cannot open the ID reader's port {port_name}: {exc}",
                         fix="plug the reader in; check `ls -l /dev/serial/by-id/` and the"
                             " table daemon's group (dialout)")
        port.close()
        return Probe(ok=True, detail=f"{port_name} opens ({settings.baudrate} baud); tap a card"
                     " at the console to see it read")


ADAPTER = SerialLines()
