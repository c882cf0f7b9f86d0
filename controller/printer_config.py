"""The ``[printer]`` section of the table config: the table's receipt printer for score slips
(docs/table-config.md, "[printer]"; decision D350). No printer unless the section names one.

    kind = "none"            no receipt printer (the default): slips print through a browser
    kind = "escpos-serial"   device = "/dev/ttyUSB1", baudrate = 9600
    kind = "escpos-usb"      vendor_id = 0x04b8, product_id = 0x0e28
    kind = "escpos-network"  host = "10.1.4.20", port = 9100
    kind = "sim"             a simulated printer in the daemon (capture = "slips.bin")

Every kind but "none" needs python-escpos, the optional extra ``printer``; a table without it
is a ConfigError naming ``printer.kind``. Each error names the key.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from controller.listen_config import SectionReader
from runtime.config_paths import config_path

__all__ = ["KINDS", "PrinterConfig", "PrinterKind", "parse_printer"]

PrinterKind = Literal["none", "escpos-serial", "escpos-usb", "escpos-network", "sim"]
KINDS: Final[tuple[PrinterKind, ...]] = ("none", "escpos-serial", "escpos-usb",
                                         "escpos-network", "sim")
# The keys of one kind only (the others are any kind's but "none").
_OWN: Final[dict[str, frozenset[str]]] = {
    "escpos-serial": frozenset({"device", "baudrate"}),
    "escpos-usb": frozenset({"vendor_id", "product_id"}),
    "escpos-network": frozenset({"host", "port"}),
    "sim": frozenset({"capture"}),
}
_COMMON: Final = frozenset({"kind", "timeout", "columns", "check_status",
                            "print_on_acknowledge"})
_KEYS: Final = _COMMON | frozenset().union(*_OWN.values())
_BAUDRATES: Final = (2400, 4800, 9600, 19200, 38400, 57600, 115200)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrinterConfig:
    """The receipt printer's settings (the defaults: none)."""

    kind: PrinterKind = "none"
    device: str = ""  # escpos-serial: the serial port
    baudrate: int = 9600
    vendor_id: int = 0  # escpos-usb
    product_id: int = 0
    host: str = ""  # escpos-network
    port: int = 9100
    capture: Path | None = None  # sim: each job's bytes appended to this file
    timeout: float = 5.0  # seconds the printer has to answer; then the slip is not printed
    columns: int = 42  # characters a line (80 mm paper, font A: 42 to 48; 58 mm: 32)
    check_status: bool = True  # ask the printer (DLE EOT) whether it is online and has paper
    print_on_acknowledge: bool = False  # print a slip by itself when a score is acknowledged

    @property
    def enabled(self) -> bool:
        """True when the table has a receipt printer."""
        return self.kind != "none"

    def describe(self) -> str:
        """The printer as a person reads it in a refusal or the status."""
        where = {"escpos-serial": self.device, "escpos-network": f"{self.host}:{self.port}",
                 "escpos-usb": f"USB {self.vendor_id:04x}:{self.product_id:04x}",
                 "sim": "simulated"}.get(self.kind, "")
        return f"{self.kind} ({where})" if where else self.kind


def _escpos_installed() -> bool:
    try:
        return importlib.util.find_spec("escpos") is not None
    except (ImportError, ValueError):  # present but cannot be imported
        return False


def parse_printer(data: Any, *, source: str, base: Path) -> PrinterConfig:
    """Read a ``[printer]`` table (absent: no printer); ConfigError names the key."""
    if data is None:
        return PrinterConfig()
    r = SectionReader(data, source=source, section="printer", known=_KEYS)
    d = PrinterConfig()
    kind = r.get("kind", str, d.kind)
    if kind not in KINDS:
        raise r.error("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    given = set(data) - {"kind"}
    if kind == "none":
        if given:
            raise r.error(sorted(given)[0], 'the section says kind = "none": remove the'
                          " printer's keys or set its kind")
        return PrinterConfig()
    for key in sorted(given - _COMMON - _OWN[kind]):
        owner = next(k for k, keys in _OWN.items() if key in keys)
        raise r.error(key, f'is for kind = "{owner}", not "{kind}"')
    if not _escpos_installed():
        raise r.error("kind", f'kind = "{kind}" needs the optional extra \'printer\''
                      " (python-escpos is not installed): pip install 'showdown[printer]',"
                      ' or kind = "none"')
    timeout = r.get("timeout", float, d.timeout)
    if not 0.5 <= timeout <= 60:
        raise r.error("timeout", "must be 0.5..60 seconds")
    columns = r.get("columns", int, d.columns)
    if not 24 <= columns <= 64:
        raise r.error("columns", "must be 24..64 characters")
    own: dict[str, Any] = {}
    if kind == "escpos-serial":
        device = r.get("device", str, "")
        if not device:
            raise r.error("device", 'missing: the printer\'s serial port ("/dev/ttyUSB1")')
        # a path relative to the config file's folder (D334); a pyserial URL as it is
        own["device"] = device if "://" in device else str(config_path(device, base))
        own["baudrate"] = r.get("baudrate", int, d.baudrate)
        if own["baudrate"] not in _BAUDRATES:
            raise r.error("baudrate", f"must be one of {', '.join(map(str, _BAUDRATES))}")
    elif kind == "escpos-usb":
        for key in ("vendor_id", "product_id"):
            if key not in data:
                raise r.error(key, "missing: the printer's USB id (lsusb shows it, 0x04b8)")
            own[key] = r.get(key, int, 0)
            if not 0 < own[key] <= 0xFFFF:
                raise r.error(key, "must be 0x0001..0xffff")
    elif kind == "escpos-network":
        own["host"] = r.get("host", str, "")
        if not own["host"] or any(c.isspace() for c in own["host"]):
            raise r.error("host", 'missing: the printer\'s address ("10.1.4.20")')
        own["port"] = r.get("port", int, d.port)
        if not 1 <= own["port"] <= 65535:
            raise r.error("port", "must be 1..65535")
    elif "capture" in data:
        own["capture"] = config_path(r.get("capture", str, ""), base)
    return PrinterConfig(
        kind=kind, timeout=timeout, columns=columns,
        check_status=r.get("check_status", bool, d.check_status),
        print_on_acknowledge=r.get("print_on_acknowledge", bool, d.print_on_acknowledge),
        **own)
