"""The table config's optional ``[id_reader]`` section (controller.config) and what
controller.wiring makes of it: none by default, the real driver on a port for "hardware", the
real driver on a simulator it keeps for "sim"; wrong values are refused naming the key."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from adapters.serial_id import SerialIdSettings
from controller.config import TableConfig, parse_table_config
from controller.wiring import ConfiguredDevices
from drivers.id_reader import SerialIdReader
from drivers.readings import DeviceAlert, IdTap
from game.errors import ConfigError
from simulators.id_reader import IdReaderSimulator
from simulators.table_play import play_registry

WAIT = 15.0  # a safety net against hangs, not a measurement


def config(tmp_path: Path, id_reader: object = None) -> TableConfig:
    """A manual table config, with this [id_reader] section if one is given."""
    data: dict[str, object] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}}
    if id_reader is not None:
        data["id_reader"] = id_reader
    return parse_table_config(data, source="table.toml", base=tmp_path)


def test_without_the_section_there_is_no_id_reader(tmp_path: Path) -> None:
    none = config(tmp_path).id_reader
    assert (none.kind, none.settings, none.adapter) == ("none", None, None)
    assert config(tmp_path, {}).id_reader.kind == "none"


def test_each_kind_is_read(tmp_path: Path) -> None:
    hardware = config(tmp_path, {"kind": "hardware", "port": "/dev/serial/by-id/usb-ids",
                                 "baudrate": 115200}).id_reader
    assert (hardware.kind, hardware.driver) == ("hardware", "serial-lines")
    assert hardware.settings == SerialIdSettings(port="/dev/serial/by-id/usb-ids",
                                                 baudrate=115200)
    assert config(tmp_path, {"kind": "sim"}).id_reader.kind == "sim"
    assert config(tmp_path, {"kind": "none"}).id_reader.kind == "none"


def test_a_simulated_id_reader_makes_no_simulated_table(tmp_path: Path) -> None:
    assert config(tmp_path, {"kind": "sim"}).sim is None  # no virtual dealer for a card reader


@pytest.mark.parametrize(("section", "key", "reason"), [
    ({"kind": "nfc"}, "id_reader.kind", "must be one of hardware, sim, none"),
    ({"kind": "hardware"}, "id_reader.port", "needs its serial port"),
    ({"kind": "hardware", "port": ""}, "id_reader.port", "expected non-empty text, got text"),
    ({"kind": "sim", "url": "loop://"}, "id_reader.url",
     "unknown key for the serial-lines driver (known: baudrate, driver, kind, port)"),
    ({"kind": "hardware", "port": 3}, "id_reader.port", "expected non-empty text, got an integer"),
    ({"kind": "hardware", "port": "loop://", "baudrate": 0}, "id_reader.baudrate",
     "must be >= 1"),
    ({"kind": "hardware", "driver": "no-such", "port": "loop://"}, "id_reader.driver",
     "no id_reader driver named 'no-such' is installed (installed: hid-wedge, pcsc,"
     " serial-lines"),
    ({"kind": "none", "port": "loop://"}, "id_reader.port", "kind = \"none\": remove"),
    ("sim", "id_reader", "must be a table"),
])
def test_wrong_values_are_refused_naming_the_key(tmp_path: Path, section: object, key: str,
                                                 reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(tmp_path, section)
    assert (caught.value.source, caught.value.key) == ("table.toml", key)
    assert reason in caught.value.reason


async def test_wiring_gives_no_id_reader_for_none(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
    assert opened.ids is None
    assert devices.id_simulator is None


async def test_wiring_gives_the_real_driver_on_the_configured_port(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, {"kind": "hardware", "port": "loop://"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
    assert isinstance(opened.ids, SerialIdReader)
    assert opened.ids.device == "loop://"
    assert devices.id_simulator is None


async def test_wiring_runs_the_real_driver_on_a_simulator_it_keeps(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, {"kind": "sim"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
        sim, ids = devices.id_simulator, opened.ids
        assert isinstance(sim, IdReaderSimulator)
        assert isinstance(ids, SerialIdReader)
        async with ids, asyncio.timeout(WAIT):
            it = aiter(ids)
            first = await anext(it)
            assert isinstance(first, DeviceAlert)
            assert first.kind == "connected"
            sim.tap("6012345678901234")
            tapped = await anext(it)
        assert isinstance(tapped, IdTap)
        assert (tapped.number, tapped.form, tapped.device) == (
            "6012345678901234", "track2", "sim-id-reader")
    assert sim.path is None  # the stack closed the simulator's pty
