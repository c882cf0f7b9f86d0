"""The text-line shoe's adapter (`drivers.adapter.DeviceAdapter`), registered in this
distribution's pyproject.toml as ``showdown.shoe`` / ``text-line``:

    [shoe]
    kind = "hardware"          # or "sim": the driver on this package's simulator
    driver = "text-line"
    url = "/dev/serial/by-id/usb-Acme_CardReader_A1B2-if00-port0"
    baudrate = 9600            # optional (a USB CDC reader ignores it)
    stall_seconds = 0          # optional; only for a reader that sends an idle line

`probe` (``showdown doctor``) opens the port and closes it: a text-line shoe has nothing to
ask, and reading would take a card line away from a running table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import serial  # type: ignore[import-untyped]  # pyserial ships no type information

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from showdown_textline_shoe.driver import TextLineShoe

__all__ = ["ADAPTER", "TextLineAdapter", "TextLineSettings"]

@dataclass(frozen=True, slots=True, kw_only=True)
class TextLineSettings:
    """Where the shoe is, its speed, and how long a silence is a stall (0: never)."""

    url: str | None
    baudrate: int = 9600
    stall_seconds: float = 0.0


class TextLineAdapter:
    """A shoe that sends one card a line, on a serial port or its simulator."""

    role: Role = "shoe"
    name = "text-line"
    summary = ("a shoe that sends one card a line (AS, 10h): no acknowledgement, no read"
               " counter (the example adapter, examples/textline-shoe)")
    keys: Mapping[str, str] = {
        "url": "the shoe's serial port: a device path (/dev/serial/by-id/...) or a pyserial"
               " URL; required for a real shoe",
        "baudrate": "the port's speed (default 9600; a USB CDC shoe ignores it)",
        "stall_seconds": "for a shoe that sends an idle line: silence after which it is"
                         " stalled (0..60, default 0: never)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> TextLineSettings:
        """The shoe's port, speed and stall time from its keys; a real shoe needs its port."""
        opts = Options(options, place)
        url = opts.path("url")
        if place.real and url is None:
            raise place.error("url", "a hardware shoe needs its serial port (a device path"
                              " or pyserial URL)")
        return TextLineSettings(
            url=url, baudrate=opts.integer("baudrate", 9600, low=50, high=4_000_000),
            stall_seconds=opts.number("stall_seconds", 0.0, low=0, high=60))

    def open(self, settings: TextLineSettings,
             context: DriverContext) -> TextLineShoe:  # noqa: ARG002 (the signature)
        """The driver on the configured port, named by it (a /dev/serial/by-id path names the
        shoe's USB serial number); it alerts and retries while the shoe is away."""
        if settings.url is None:
            raise ValueError("the text-line shoe has no url: configure it with kind ="
                             " \"hardware\" and its url")
        return TextLineShoe(settings.url, name=settings.url, baudrate=settings.baudrate,
                            stall_seconds=settings.stall_seconds)

    def simulate(self, settings: TextLineSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """The driver on a simulated shoe's pty (seeded deck: ``context.seed``; each card in a
        style drawn from those readers write). With ``stall_seconds`` the simulated shoe
        sends an idle line three times as often."""
        from showdown_textline_shoe.simulator import TextLineShoeSimulator  # noqa: PLC0415

        idle = settings.stall_seconds / 3 if settings.stall_seconds else 0.0
        sim = stack.enter_context(TextLineShoeSimulator(seed=context.seed, style="mixed",
                                                        idle_interval=idle))
        device = TextLineShoe(lambda: sim.path or "", name=f"sim-{context.name}",
                              baudrate=settings.baudrate, stall_seconds=settings.stall_seconds)
        return Simulation(device=device, simulator=sim)

    def probe(self, settings: TextLineSettings) -> Probe:
        """Whether the port opens (nothing is read: a running table's card would be lost)."""
        url = settings.url
        if url is None:
            return Probe(ok=False, detail="no url: the shoe is not configured as hardware",
                         fix="set [shoe] kind = \"hardware\" and its url")
        held = False
        try:
            port = serial.serial_for_url(url, baudrate=settings.baudrate, timeout=0,
                                         **({} if "://" in url else {"exclusive": True}))
        except (serial.SerialException, OSError, ValueError) as exc:
            if "exclusively lock" not in str(exc):
                return Probe(ok=False, detail=f"cannot open the shoe's port {url}: {exc}",
                             fix="plug the shoe in; check the path (ls -l /dev/serial/by-id/)"
                                 " and that this user may open it (group dialout)")
            held = True  # the table daemon has it: it is there
        else:
            with contextlib.suppress(Exception):
                port.close()
        detail = f"{url} opens ({settings.baudrate} baud)"
        if held:
            detail = f"{url} is there and held by another process (the table daemon?)"
        return Probe(ok=True, detail=detail + "; a text-line shoe says nothing until a card"
                     " leaves it: deal one and see it on the console")


ADAPTER = TextLineAdapter()
