"""Where a driver's section names its devices (`cli.devices.relay`): a serial path, a
`socket://` URL, a table with host (and port), at the top or in an array of readers; and the
section with stand-ins put in their place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.devices.relay import DeviceAt, devices_in, with_stand_ins
from cli.errors import CommandError
from drivers.adapter import ConfigPlace

PLACE = ConfigPlace(source="table.toml", section="rfid", base=Path("/etc/showdown"))
READERS: dict[str, Any] = {"stall_seconds": 2.0, "readers": [
    {"url": "/dev/showdown/quasarmx-QMX0001", "antennas": {"1.1": "1/ante"}},
    {"host": "10.0.7.23", "antennas": {"1": "5/ante"}},
    {"host": "10.0.7.24", "port": 4001, "antennas": {"1": "6/ante"}},
]}


def test_every_reader_of_an_array_is_found_with_its_place() -> None:
    found = devices_in("metratec-quasarmx", READERS, PLACE)
    assert [(d.name, d.device, d.tcp) for d in found] == [
        ("readers[1].url", "/dev/showdown/quasarmx-QMX0001", False),
        ("readers[2].host", "socket://10.0.7.23:10001", True),  # the QuasarMX's own port
        ("readers[3].host", "socket://10.0.7.24:4001", True),
    ]
    assert [d.name for d in devices_in("x", READERS, PLACE, only="readers[3].host")] == [
        "readers[3].host"]


def test_stand_ins_replace_each_device_and_nothing_else() -> None:
    found = devices_in("metratec-quasarmx", READERS, PLACE)
    out = with_stand_ins(READERS, [(found[0], "/dev/pts/9"),
                                   (found[1], "socket://127.0.0.1:5001"),
                                   (found[2], "socket://127.0.0.1:5002")])
    assert out["readers"][0] == {"url": "/dev/pts/9", "antennas": {"1.1": "1/ante"}}
    assert out["readers"][1] == {"host": "127.0.0.1", "port": 5001, "antennas": {"1": "5/ante"}}
    assert out["readers"][2]["port"] == 5002
    assert READERS["readers"][1] == {"host": "10.0.7.23", "antennas": {"1": "5/ante"}}
    assert out["stall_seconds"] == 2.0


def test_a_top_level_port_or_url_is_found() -> None:
    assert devices_in("serial-lines", {"port": "/dev/ttyUSB0", "baudrate": 9600}, PLACE) == [
        DeviceAt(("port",), "/dev/ttyUSB0")]
    assert devices_in("showdown-shoe", {"url": "socket://shoe.local:7001"}, PLACE)[0].tcp


def test_a_section_naming_no_device_says_why() -> None:
    with pytest.raises(CommandError, match="a USB device driven through pyusb"):
        devices_in("sr48", {"vid": 0x1209, "pid": 1}, PLACE)
    with pytest.raises(CommandError, match=r"names no device at 'url' \(devices at: port\)"):
        devices_in("serial-lines", {"port": "/dev/ttyUSB0"}, PLACE, only="url")


def test_stand_ins_for_a_section_of_another_layout_are_refused() -> None:
    at = DeviceAt(("readers", 3, "url"), "/dev/showdown/quasarmx-4")
    with pytest.raises(CommandError, match=r"no device at readers\[4\]\.url"):
        with_stand_ins(READERS, [(at, "/dev/pts/9")])
    with pytest.raises(CommandError, match="no device at url"):
        with_stand_ins({"port": "/dev/ttyUSB0"}, [(DeviceAt(("url",), "/dev/x"), "/dev/pts/9")])


def test_an_input_device_is_no_byte_stream_to_relay() -> None:
    with pytest.raises(CommandError, match=r"is an input device .* evemu-record"):
        devices_in("hid-wedge", {"device": "/dev/input/by-id/usb-Acme-event-kbd"}, PLACE)
