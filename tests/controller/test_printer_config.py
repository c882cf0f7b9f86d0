"""The table config's optional ``[printer]`` section (controller.printer_config) and what
controller.wiring makes of it: no printer by default; each kind read with its own keys; a key
of another kind, a wrong value or a missing python-escpos (the ``printer`` extra) refused with
an error naming the key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from controller.config import TableConfig, parse_table_config
from controller.printer_config import PrinterConfig
from controller.receipt_printer import EscposPrinter
from controller.wiring import ConfiguredDevices
from game.errors import ConfigError


def config(tmp_path: Path, printer: object = None) -> TableConfig:
    """A manual table config, with this [printer] section if one is given."""
    data: dict[str, object] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}}
    if printer is not None:
        data["printer"] = printer
    return parse_table_config(data, source="table.toml", base=tmp_path)


def test_without_the_section_there_is_no_printer(tmp_path: Path) -> None:
    assert config(tmp_path).printer == PrinterConfig()
    assert config(tmp_path, {}).printer.kind == "none"
    assert config(tmp_path, {"kind": "none"}).printer.enabled is False
    assert ConfiguredDevices(config(tmp_path)).printer() is None


def test_each_kind_is_read_with_its_keys(tmp_path: Path) -> None:
    serial = config(tmp_path, {"kind": "escpos-serial", "device": "/dev/ttyUSB1",
                               "baudrate": 19200}).printer
    assert (serial.kind, serial.device, serial.baudrate) == ("escpos-serial", "/dev/ttyUSB1",
                                                              19200)
    usb = config(tmp_path, {"kind": "escpos-usb", "vendor_id": 0x04B8,
                            "product_id": 0x0E28}).printer
    assert (usb.vendor_id, usb.product_id) == (0x04B8, 0x0E28)
    assert usb.describe() == "escpos-usb (USB 04b8:0e28)"
    net = config(tmp_path, {"kind": "escpos-network", "host": "10.1.4.20", "timeout": 3,
                            "columns": 48, "print_on_acknowledge": True}).printer
    assert (net.host, net.port, net.timeout, net.columns, net.print_on_acknowledge) == (
        "10.1.4.20", 9100, 3.0, 48, True)
    assert net.check_status is True and net.describe() == "escpos-network (10.1.4.20:9100)"
    relative = config(tmp_path, {"kind": "escpos-serial", "device": "dev/printer"}).printer
    assert relative.device == str(tmp_path.absolute() / "dev" / "printer")  # D334
    sim = config(tmp_path, {"kind": "sim", "capture": "slips.bin"}).printer
    assert sim.capture == tmp_path.absolute() / "slips.bin"
    assert sim.print_on_acknowledge is False  # nothing prints by itself unless configured


def test_wiring_opens_the_driver_and_for_sim_a_simulated_printer(tmp_path: Path) -> None:
    net = ConfiguredDevices(config(tmp_path, {"kind": "escpos-network", "host": "10.1.4.20"}))
    opened = net.printer()
    assert isinstance(opened, EscposPrinter) and (opened.host, opened.port) == ("10.1.4.20",
                                                                                9100)
    assert net.printer_sim is None
    sim = ConfiguredDevices(config(tmp_path, {"kind": "sim"}))
    printer = sim.printer()
    assert isinstance(printer, EscposPrinter) and sim.printer_sim is not None
    assert (printer.host, printer.port) == sim.printer_sim.address
    printer.close()


@pytest.mark.parametrize(("section", "key", "reason"), [
    ({"kind": "laser"}, "printer.kind", "must be one of none, escpos-serial, escpos-usb,"
     " escpos-network, sim, got 'laser'"),
    ({"kind": 1}, "printer.kind", "expected str, got int"),
    ({"kind": "none", "host": "10.1.4.20"}, "printer.host", 'the section says kind = "none"'),
    ({"kind": "escpos-serial"}, "printer.device", "missing: the printer's serial port"),
    ({"kind": "escpos-serial", "device": "/dev/ttyUSB1", "baudrate": 1234},
     "printer.baudrate", "must be one of 2400, 4800, 9600"),
    ({"kind": "escpos-serial", "device": "/dev/ttyUSB1", "host": "10.1.4.20"},
     "printer.host", 'is for kind = "escpos-network", not "escpos-serial"'),
    ({"kind": "escpos-usb", "vendor_id": 0x04B8}, "printer.product_id", "missing: the"
     " printer's USB id"),
    ({"kind": "escpos-usb", "vendor_id": 0x10000, "product_id": 1}, "printer.vendor_id",
     "must be 0x0001..0xffff"),
    ({"kind": "escpos-usb", "vendor_id": "04b8", "product_id": 1}, "printer.vendor_id",
     "expected int, got str"),
    ({"kind": "escpos-network"}, "printer.host", "missing: the printer's address"),
    ({"kind": "escpos-network", "host": "10.1.4.20", "port": 0}, "printer.port",
     "must be 1..65535"),
    ({"kind": "escpos-network", "host": "10.1.4.20", "timeout": 0.1}, "printer.timeout",
     "must be 0.5..60 seconds"),
    ({"kind": "escpos-network", "host": "10.1.4.20", "columns": 100}, "printer.columns",
     "must be 24..64 characters"),
    ({"kind": "escpos-network", "host": "10.1.4.20", "print_on_acknowledge": "yes"},
     "printer.print_on_acknowledge", "expected bool, got str"),
    ({"kind": "sim", "capture": 5}, "printer.capture", "expected str, got int"),
    ({"kind": "sim", "paper": "A4"}, "printer.paper", "unknown key (known: baudrate,"),
])
def test_a_wrong_printer_key_is_refused_naming_it(tmp_path: Path, section: dict[str, object],
                                                   key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        config(tmp_path, section)
    assert refused.value.key == key
    assert refused.value.reason.startswith(reason), refused.value.reason


def test_a_printer_without_the_printer_extra_is_a_config_error_naming_the_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "escpos", None)  # python-escpos cannot be imported
    with pytest.raises(ConfigError) as refused:
        config(tmp_path, {"kind": "escpos-network", "host": "10.1.4.20"})
    assert refused.value.key == "printer.kind"
    assert refused.value.reason == (
        "kind = \"escpos-network\" needs the optional extra 'printer' (python-escpos is not"
        " installed): pip install 'showdown[printer]', or kind = \"none\"")
    assert config(tmp_path, {"kind": "none"}).printer.kind == "none"  # none needs nothing
