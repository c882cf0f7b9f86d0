"""The adapter of our SR-48 chip spot reader (docs/protocols/chip-rfid.md): `drivers.rfid`'s
`UsbChipReader` over pyusb, or on `simulators.rfid.RfidReaderSimulator`'s pyusb backend.

Config (``[rfid] driver = "sr48"``, the default): ``vid`` and ``pid`` (the reader's USB ids),
``serial`` (one reader by its USB serial number when several share the ids),
``stall_seconds``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from typing import Any

import usb.core  # type: ignore[import-untyped]
import usb.util  # type: ignore[import-untyped]

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from drivers.rfid import UsbChipReader
from drivers.rfid_messages import DEFAULT_PRODUCT_ID, DEFAULT_VENDOR_ID
from drivers.rfid_settings import UsbReaderSettings

__all__ = ["ADAPTER", "Sr48Settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sr48Settings:
    """The reader's USB settings, and a pyusb backend other than libusb (tests, `doctor`'s
    probes: a simulator's)."""

    usb: UsbReaderSettings
    backend: Any = None


class Sr48:
    """The SR-48 over USB (`drivers.adapter.DeviceAdapter`)."""

    role: Role = "rfid"
    name = "sr48"
    summary = "the Showdown SR-48 chip spot reader over USB (docs/protocols/chip-rfid.md)"
    keys: Mapping[str, str] = {
        "vid": "the reader's USB vendor id (the udev rule's idVendor)",
        "pid": "the reader's USB product id (the udev rule's idProduct)",
        "serial": "pick one reader by its USB serial number when several share vid:pid",
        "stall_seconds": "silence after which the reader is reconnected (0.1..60, default 3)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> Sr48Settings:
        """The reader's USB ids, serial number and stall time."""
        opts = Options(options, place)
        return Sr48Settings(usb=UsbReaderSettings(
            vendor_id=opts.integer("vid", DEFAULT_VENDOR_ID, low=0, high=0xFFFF),
            product_id=opts.integer("pid", DEFAULT_PRODUCT_ID, low=0, high=0xFFFF),
            serial=opts.text("serial"),
            stall_timeout=opts.number("stall_seconds", 3.0, low=0.1, high=60)))

    def open(self, settings: Sr48Settings, context: DriverContext) -> UsbChipReader:
        """The driver for the reader on USB (it alerts and retries while it is away)."""
        return UsbChipReader(settings.usb, backend=settings.backend)

    def simulate(self, settings: Sr48Settings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """The driver on a simulated SR-48 holding ``context.registry``'s chips, reporting
        every ``context.sim_sweep_ms`` (by default the reader's own interval, 200 ms,
        ``context.sim_speed`` times faster)."""
        from simulators.rfid import RfidReaderSimulator  # noqa: PLC0415

        interval = context.sim_sweep_ms
        if interval is None:
            interval = max(1, round(settings.usb.report_interval_ms / context.sim_speed))
        usb_settings = replace(settings.usb, report_interval_ms=interval)
        sim = RfidReaderSimulator(registry=context.registry, seat_entries={},
                                  vendor_id=usb_settings.vendor_id,
                                  product_id=usb_settings.product_id)
        sim.sweep_on_change = context.sim_sweep_on_change
        return Simulation(device=UsbChipReader(usb_settings, backend=sim.backend),
                          simulator=sim)

    def probe(self, settings: Sr48Settings) -> Probe:
        """Find the reader on USB and read its serial number string."""
        cfg = settings.usb
        ids = f"{cfg.vendor_id:04x}:{cfg.product_id:04x}"
        match: dict[str, Any] = {"idVendor": cfg.vendor_id, "idProduct": cfg.product_id}
        if settings.backend is not None:
            match["backend"] = settings.backend
        if cfg.serial is not None:
            match["custom_match"] = lambda dev: _serial_of(dev) == cfg.serial
        try:
            dev = usb.core.find(**match)
        except usb.core.NoBackendError:
            return Probe(ok=False, detail="no USB backend (libusb) on this machine",
                         fix="apt-get install libusb-1.0-0")
        except usb.core.USBError as exc:
            return Probe(ok=False, detail=f"USB enumeration failed: {exc}",
                         fix="re-plug the reader; check `lsusb`")
        if dev is None:
            which = f" serial {cfg.serial}" if cfg.serial else ""
            return Probe(ok=False, detail=f"no chip reader {ids}{which} on USB",
                         fix=f"plug the reader in; `lsusb` must list {ids} (the [rfid] vid/pid"
                             " and the udev rule must match the reader)")
        try:
            serial_no = usb.util.get_string(dev, dev.iSerialNumber) or "?"
            product = usb.util.get_string(dev, dev.iProduct) or "?"
        except (usb.core.USBError, ValueError, NotImplementedError) as exc:
            return Probe(ok=False, detail=f"reader {ids} found but not readable: {exc}",
                         fix="install the udev rule (group showdown; `showdown install table`),"
                             " then re-plug the reader")
        finally:
            usb.util.dispose_resources(dev)
        firmware = f"{dev.bcdDevice >> 8}.{dev.bcdDevice & 0xFF:02x}"
        return Probe(ok=True, detail=f"reader {ids} serial {serial_no} found and readable"
                     f" ({product}, device release {firmware})", model=product,
                     firmware=firmware)


def _serial_of(dev: Any) -> str | None:
    try:
        return usb.util.get_string(dev, dev.iSerialNumber)  # type: ignore[no-any-return]
    except (usb.core.USBError, ValueError, NotImplementedError):
        return None


ADAPTER = Sr48()
