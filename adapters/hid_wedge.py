"""The keyboard-wedge ID reader as the table chooses it: ``[id_reader] driver = "hid-wedge"``
(`drivers.id_wedge.WedgeIdReader` on the evdev device, `simulators.wedge.SimulatedWedge`
when simulated). Keys::

    [id_reader]
    kind = "hardware"
    driver = "hid-wedge"
    device = "/dev/showdown/id-wedge"   # the wedge's event device (udev's symlink, or
                                        # /dev/input/by-id/usb-...-event-kbd)
    grab = true                         # hold it exclusively (default; see the docs first)
    typed = "card"                      # "card": track 2 / digits; "uid": an NFC wedge's UIDs
    line_timeout = 0.5                  # seconds without a key before a line is given up
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Final

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from drivers.errors import DeviceNotFound, LibraryMissing
from drivers.id_wedge import EvdevSource, GrabRefused, WedgeIdReader
from drivers.wedge_codec import TYPED, Typed

__all__ = ["ADAPTER", "HidWedgeAdapter", "HidWedgeSettings"]

_FIX_DEVICE: Final = ("plug the reader in and check its node: ls -l /dev/showdown/id-wedge"
                      " /dev/input/by-id/ (docs/operations/id-readers.md)")


@dataclass(frozen=True, slots=True, kw_only=True)
class HidWedgeSettings:
    """The wedge's keys, checked."""

    device: str  # "" when simulated without one
    grab: bool = True
    typed: Typed = "card"
    line_timeout: float = 0.5


class HidWedgeAdapter:
    """A USB HID keyboard-wedge reader (magstripe, NFC or keypad) through Linux evdev."""

    role: Role = "id_reader"
    name = "hid-wedge"
    summary = "USB keyboard-wedge ID reader (magstripe, NFC, keypad) via evdev, grabbed"
    keys: Mapping[str, str] = {
        "device": "the wedge's event device: /dev/showdown/id-wedge (udev) or"
                  " /dev/input/by-id/usb-...-event-kbd",
        "grab": "hold the device exclusively so keystrokes never reach the screen (default"
                " true)",
        "typed": "what bare text is: \"card\" (track 2 or digits, default) or \"uid\" (an NFC"
                 " wedge's hex UID)",
        "line_timeout": "seconds without a key before an unfinished line is a bad read"
                        " (default 0.5)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> HidWedgeSettings:
        """The settings from the section's keys (``place.error`` for a bad or missing one);
        a real wedge needs its device."""
        opts = Options(options, place)
        device = opts.path("device", required=place.real)
        typed: Typed = "uid" if opts.text("typed", "card", choices=TYPED) == "uid" else "card"
        return HidWedgeSettings(device=device or "", grab=opts.flag("grab", True),
                                typed=typed,
                                line_timeout=opts.number("line_timeout", 0.5, low=0.05,
                                                         high=10.0))

    def open(self, settings: HidWedgeSettings, context: DriverContext) -> WedgeIdReader:
        """The driver on the real device (LibraryMissing without python-evdev)."""
        return WedgeIdReader(EvdevSource(settings.device, grab=settings.grab),
                             device_name=context.name, typed=settings.typed,
                             line_timeout=settings.line_timeout)

    def simulate(self, settings: HidWedgeSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """The driver on a simulated wedge that types the cards it is tapped with."""
        del stack  # nothing to stop: the simulated wedge has no thread or process
        from simulators.wedge import SimulatedWedge  # noqa: PLC0415  # only when simulating

        wedge = SimulatedWedge(typed=settings.typed, seed=context.seed)
        device = WedgeIdReader(wedge, device_name=context.name, typed=settings.typed,
                               line_timeout=settings.line_timeout)
        return Simulation(device=device, simulator=wedge)

    def probe(self, settings: HidWedgeSettings) -> Probe:
        """The device there, readable, a keyboard, and its grab possible (taken and released
        at once)."""
        try:
            source = EvdevSource(settings.device, grab=settings.grab)
        except LibraryMissing as exc:
            return Probe(ok=False, detail=str(exc), fix="pip install 'showdown[readers]'")
        try:
            source.open()
        except GrabRefused as exc:
            return Probe(ok=False, detail=str(exc),
                         fix="only the table daemon may hold the wedge: if it is running,"
                             " stop it to probe; otherwise stop the process `fuser -v"
                             f" {settings.device}` names")
        except DeviceNotFound as exc:
            return Probe(ok=False, detail=str(exc), fix=_FIX_DEVICE)
        model = source.device_name
        source.close()
        if not settings.grab:
            return Probe(ok=True, warn=True, model=model,
                         detail=f"{model} on {settings.device} is readable, NOT grabbed:"
                                " card numbers are typed into the screen's session too",
                         fix="set grab = true")
        return Probe(ok=True, model=model,
                     detail=f"{model} on {settings.device}: readable, grab possible")


ADAPTER: Final = HidWedgeAdapter()
