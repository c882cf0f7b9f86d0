"""The two ID reader adapters through the seam: found by entry point ("hid-wedge", "pcsc"),
their keys checked with errors naming ``id_reader.<key>``, `open` giving the real driver,
`simulate` giving the real driver on its simulator (which satisfies `SimulatedIds`, and a tap
on it is read), and `probe` saying what `showdown doctor` shows: the device missing, pcscd
down, a reader named that is not there, and the reader found with its name.

The PC/SC parts use the process's private pcscd (tests/drivers/id_support.py): they skip
without pcscd and vsmartcard-vpcd locally and fail under CI.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from adapters.hid_wedge import HidWedgeSettings
from adapters.pcsc import PcscAdapter, PcscSettings
from controller.config import TableConfig, parse_table_config
from controller.wiring import ConfiguredDevices
from drivers.adapter import ConfigPlace, DriverContext, SimulatedIds
from drivers.id_pcsc import PcscIdReader
from drivers.id_wedge import WedgeIdReader
from drivers.registry import find_adapter
from game.errors import ConfigError
from simulators.table_play import play_registry
from simulators.wedge import SimulatedWedge
from tests.drivers.id_support import Seen, numbers, pcsc_reader, ready_pcsc

PLACE = ConfigPlace(source="table.toml", section="id_reader", base=Path("/etc/showdown"))
CONTEXT = DriverContext(name="ids", seed=4)


def test_both_adapters_are_found_by_their_entry_point_names() -> None:
    wedge = find_adapter("id_reader", "hid-wedge")
    pcsc = find_adapter("id_reader", "pcsc")
    assert (wedge.name, wedge.role) == ("hid-wedge", "id_reader")
    assert (pcsc.name, pcsc.role) == ("pcsc", "id_reader")
    assert set(wedge.keys) == {"device", "grab", "typed", "line_timeout"}
    assert set(pcsc.keys) == {"reader"}


def test_the_wedge_keys_are_checked_and_named_in_errors() -> None:
    adapter = find_adapter("id_reader", "hid-wedge")
    settings = adapter.configure({"device": "/dev/showdown/id-wedge", "typed": "uid"}, PLACE)
    assert settings == HidWedgeSettings(device="/dev/showdown/id-wedge", grab=True,
                                        typed="uid", line_timeout=0.5)
    relative = adapter.configure({"device": "captures/wedge", "grab": False}, PLACE)
    assert relative.device == "/etc/showdown/captures/wedge"
    for options, message in [
        ({}, "table.toml: id_reader.device: missing"),
        ({"device": "/dev/x", "grab": "yes"}, "id_reader.grab: expected true or false"),
        ({"device": "/dev/x", "typed": "nfc"}, "id_reader.typed: must be one of card, uid"),
        ({"device": "/dev/x", "line_timeout": 0}, "id_reader.line_timeout: must be 0.05..10"),
    ]:
        with pytest.raises(ConfigError) as caught:
            adapter.configure(options, PLACE)
        assert message in str(caught.value)
    simulated = ConfigPlace(source="table.toml", section="id_reader", kind="sim")
    assert adapter.configure({}, simulated).device == ""  # a simulated wedge needs none


def test_the_pcsc_keys_are_checked() -> None:
    adapter = find_adapter("id_reader", "pcsc")
    assert adapter.configure({}, PLACE) == PcscSettings(reader="")
    assert adapter.configure({"reader": " ACR122 "}, PLACE) == PcscSettings(reader="ACR122")
    with pytest.raises(ConfigError, match=r"id_reader\.reader: expected non-empty text"):
        adapter.configure({"reader": 3}, PLACE)


def test_open_gives_each_real_driver_named_as_the_table_names_it() -> None:
    wedge = find_adapter("id_reader", "hid-wedge").open(
        HidWedgeSettings(device="/dev/showdown/id-wedge"), CONTEXT)
    assert isinstance(wedge, WedgeIdReader)
    assert wedge.device == "ids"
    pcsc = find_adapter("id_reader", "pcsc").open(PcscSettings(reader="ACR"), CONTEXT)
    assert isinstance(pcsc, PcscIdReader)
    assert (pcsc.device, pcsc.reader) == ("ids", "ACR")


async def test_the_wedge_simulation_is_the_real_driver_on_a_wedge_that_types_taps() -> None:
    adapter = find_adapter("id_reader", "hid-wedge")
    async with AsyncExitStack() as stack:
        simulation = adapter.simulate(HidWedgeSettings(device="/dev/null"), CONTEXT, stack)
        assert simulation is not None
        assert isinstance(simulation.simulator, SimulatedIds)
        async with simulation.device as reader:
            seen = Seen(reader)
            await seen.alert("connected")
            simulation.simulator.tap("6012345678901234")
            simulation.simulator.unplug()
            await seen.alert("lost")
            simulation.simulator.plug()
            await seen.alert("reconnected")
            simulation.simulator.tap("6012345678901234")
            taps = await seen.taps_n(1)
    assert numbers(taps) == [("6012345678901234", "track2")]


def test_the_wedge_probe_says_the_device_is_missing_and_how_to_look() -> None:
    adapter = find_adapter("id_reader", "hid-wedge")
    probe = adapter.probe(HidWedgeSettings(device="/dev/input/by-id/usb-nothing-event-kbd"))
    assert not probe.ok
    assert probe.detail == ("no input device at /dev/input/by-id/usb-nothing-event-kbd"
                            " (unplugged, or another path: ls /dev/input/by-id/)")
    assert "ls -l /dev/showdown/id-wedge" in probe.fix


async def test_the_pcsc_simulation_is_the_real_driver_on_pcscd_and_a_virtual_card() -> None:
    shared = pcsc_reader()  # one lab per process: the adapter's own takes its place
    shared.unplug()
    adapter = PcscAdapter()
    assert adapter.simulation_unavailable() is None
    try:
        async with AsyncExitStack() as stack:
            simulation = adapter.simulate(PcscSettings(), CONTEXT, stack)
            assert simulation is not None
            assert isinstance(simulation.simulator, SimulatedIds)
            async with simulation.device as reader:
                seen = Seen(reader)
                await seen.alert("connected")
                simulation.simulator.tap("DEADBEEF", "uid")
                taps = await seen.taps_n(1)
            with pytest.raises(ValueError, match="reads a card's UID, not a track2 number"):
                simulation.simulator.tap("6012345678901234", "track2")
    finally:
        ready_pcsc()
    assert numbers(taps) == [("DEADBEEF", "uid")]


def test_the_pcsc_probe_names_the_reader_and_says_when_pcscd_or_the_reader_is_missing(
) -> None:
    simulator = ready_pcsc()
    adapter = find_adapter("id_reader", "pcsc")
    found = adapter.probe(PcscSettings(reader="pcd 00 01"))
    assert found.ok
    assert found.model == "Virtual PCD 00 01"
    assert found.detail == "pcscd is running; reader 'Virtual PCD 00 01'"
    assert found.firmware is None  # vpcd reports no firmware (a CCID reader does)
    nobody = adapter.probe(PcscSettings(reader="Omnikey"))
    assert not nobody.ok
    assert nobody.detail == ("no PC/SC reader's name contains 'Omnikey'; readers: Virtual PCD"
                             " 00 00, Virtual PCD 00 01")
    simulator.unplug()
    try:
        down = adapter.probe(PcscSettings())
    finally:
        simulator.plug()
    assert not down.ok
    assert down.detail.startswith("pcscd is not running")
    assert down.fix == "apt-get install pcscd; systemctl enable --now pcscd.socket"


def table(tmp_path: Path, id_reader: dict[str, object]) -> TableConfig:
    """A manual table whose [id_reader] section is this one."""
    return parse_table_config({
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}, "id_reader": id_reader,
    }, source="table.toml", base=tmp_path)


async def test_a_table_config_selects_each_reader_by_its_driver_name(tmp_path: Path) -> None:
    wedge = table(tmp_path, {"kind": "hardware", "driver": "hid-wedge",
                             "device": "/dev/showdown/id-wedge", "typed": "uid"})
    pcsc = table(tmp_path, {"kind": "hardware", "driver": "pcsc", "reader": "ACR122"})
    async with AsyncExitStack() as stack:
        assert isinstance(ConfiguredDevices(wedge).open(stack, play_registry()).ids,
                          WedgeIdReader)
        opened = ConfiguredDevices(pcsc).open(stack, play_registry()).ids
        assert isinstance(opened, PcscIdReader)
        assert opened.reader == "ACR122"
    with pytest.raises(ConfigError, match="unknown key for the pcsc driver"):
        table(tmp_path, {"kind": "hardware", "driver": "pcsc", "port": "/dev/ttyACM0"})


async def test_a_simulated_table_runs_the_wedge_driver_on_the_simulated_wedge(
        tmp_path: Path) -> None:
    devices = ConfiguredDevices(table(tmp_path, {"kind": "sim", "driver": "hid-wedge"}))
    async with AsyncExitStack() as stack:
        ids = devices.open(stack, play_registry()).ids
        wedge = devices.id_simulator
        assert isinstance(ids, WedgeIdReader)
        assert isinstance(wedge, SimulatedWedge)
        async with ids:
            seen = Seen(ids)
            await seen.alert("connected")
            wedge.tap("6012345678901234")
            taps = await seen.taps_n(1)
    assert numbers(taps) == [("6012345678901234", "track2")]
