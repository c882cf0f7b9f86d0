"""The metratec-quasarmx adapter: found by its entry point, its keys validated with errors
that name the key, its simulation (one simulated reader per configured reader, on one felt)
read by the real driver, and its probe for `showdown doctor`."""

from __future__ import annotations

import asyncio
import tomllib
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from drivers.adapter import ConfigPlace, DriverContext, SimulatedChips
from drivers.quasar import QuasarChipReader
from drivers.quasar_settings import QuasarLink, QuasarSettings
from drivers.readings import SPOTS, ChipInventory, SpotId
from drivers.registry import find_adapter
from game.errors import ConfigError
from simulators.quasar_table import QuasarTable, ReaderPlan

PLACE = ConfigPlace(source="table.toml", section="rfid", base=Path("/etc/showdown"))
ADAPTER = find_adapter("rfid", "metratec-quasarmx")


def good() -> dict[str, Any]:
    return {
        "stall_seconds": 1.5,
        "readers": [
            {"url": "by-id/quasar-1", "antennas": {"1": "1/ante", "2": "1/odds"}},
            {"host": "10.0.7.21", "antennas": {"1.1": "2/ante", "1.2": "2/odds",
                                               "4.4": "6/marker"}},
        ],
    }


def test_it_is_registered_as_an_rfid_driver() -> None:
    assert ADAPTER.role == "rfid" and ADAPTER.name == "metratec-quasarmx"
    assert set(ADAPTER.keys) == {"readers", "stall_seconds", "sweep_pause"}


def test_a_good_section_becomes_settings() -> None:
    settings = ADAPTER.configure(good(), PLACE)
    assert isinstance(settings, QuasarSettings)
    first, second = settings.readers
    assert first.url == "/etc/showdown/by-id/quasar-1"
    assert dict(first.antennas) == {1: SpotId(1, "ante"), 2: SpotId(1, "odds")}
    assert (second.host, second.port) == ("10.0.7.21", 10001)
    assert dict(second.antennas) == {1: SpotId(2, "ante"), 5: SpotId(2, "odds"),
                                     16: SpotId(6, "marker")}
    assert settings.stall_seconds == 1.5 and settings.sweep_pause == 0.0


def edit(path: str, value: object) -> dict[str, Any]:
    options = good()
    target: Any = options
    *parents, last = path.split("|")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return options


@pytest.mark.parametrize(("options", "key", "words"), [
    (edit("colour", "red"), "rfid.colour", "not a key"),
    (edit("readers", []), "rfid.readers", "at least one reader"),
    (edit("readers|0|antennas|2", "1/flop"), "rfid.readers[1].antennas.2", "unknown spot"),
    (edit("readers|0|antennas|2", "9/ante"), "rfid.readers[1].antennas.2", "seat 9"),
    (edit("readers|0|antennas|2", "ante"), "rfid.readers[1].antennas.2", "seat/spot"),
    (edit("readers|1|antennas|1.2", "1/ante"), "rfid.readers[2].antennas.1.2", "mapped twice"),
    (edit("readers|0|antennas|5", "3/ante"), "rfid.readers[1].antennas.5", "antenna 5"),
    (edit("readers|0|antennas|1.5", "3/ante"), "rfid.readers[1].antennas.1.5", "channel 5"),
    (edit("readers|0|antennas|x", "3/ante"), "rfid.readers[1].antennas.x", "an antenna is"),
    (edit("readers|1|antennas|1", "3/ante"), "rfid.readers[2].antennas.1",
     "same antenna port as \"1\""),
    (edit("readers|0|host", "10.0.0.1"), "rfid.readers[1]", "one of them"),
    (edit("readers|0|port", 10001), "rfid.readers[1].port", "goes with host"),
    (edit("readers|1|port", 70000), "rfid.readers[2].port", "1..65535"),
    (edit("readers|1|antennas", {}), "rfid.readers[2].antennas", "at least one antenna"),
    (edit("readers|1|spare", 1), "rfid.readers[2].spare", "not a reader key"),
    (edit("stall_seconds", 0), "rfid.stall_seconds", "0.1..60"),
    (edit("sweep_pause", "fast"), "rfid.sweep_pause", "number of seconds"),
])
def test_a_bad_section_is_an_error_naming_its_key(options: dict[str, Any], key: str,
                                                  words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ADAPTER.configure(options, PLACE)
    assert caught.value.key == key
    assert words in caught.value.reason


async def test_simulate_runs_the_driver_on_one_simulated_reader_per_configured_one() -> None:
    settings = ADAPTER.configure(good(), PLACE)
    async with AsyncExitStack() as stack:
        sim = ADAPTER.simulate(settings, DriverContext(name="rfid", seed=3), stack)
        assert sim is not None
        table = sim.simulator
        assert isinstance(table, SimulatedChips) and isinstance(table, QuasarTable)
        assert [r.transport for r in table.readers] == ["pty", "tcp"]
        assert isinstance(sim.device, QuasarChipReader)
        laid = table.place(6, "marker", 2500)
        wanted = set(settings.spots)
        seen: dict[SpotId, frozenset[bytes]] = {}
        async with sim.device as reader, asyncio.timeout(10):
            async for item in reader:
                if isinstance(item, ChipInventory):
                    seen[item.spot] = item.uids
                    if set(seen) == wanted:
                        break
    assert seen[SpotId(6, "marker")] == frozenset(laid)
    assert all(not uids for spot, uids in seen.items() if spot != SpotId(6, "marker"))


def test_probe_reports_each_readers_model_and_firmware() -> None:
    plans = [ReaderPlan(ports={1: SpotId(1, "ante")}),
             ReaderPlan(ports={1: SpotId(2, "ante")}, transport="tcp")]
    with QuasarTable(plans, speed=20.0) as table:
        settings = QuasarSettings(readers=table.links(), stall_seconds=1.0)
        probe = ADAPTER.probe(settings)
        assert probe.ok, probe.detail
        assert (probe.model, probe.firmware) == ("QUASAR_MX", "3.07")
        assert "QMX-SIM-0001" in probe.detail and "QMX-SIM-0002" in probe.detail
        table.readers[1].firmware = "0210"
        old = ADAPTER.probe(settings)
        table.unplug(reader=0)
        gone = ADAPTER.probe(settings)
    assert not old.ok and "firmware 2.10 is too old" in old.detail
    assert not gone.ok and "cannot open" in gone.detail and gone.fix


def test_probe_of_a_reader_that_is_not_there() -> None:
    settings = QuasarSettings(readers=(QuasarLink(host="127.0.0.1", port=9,
                                                  antennas={1: SpotId(1, "ante")}),),
                              stall_seconds=0.5)
    probe = ADAPTER.probe(settings)
    assert not probe.ok and "127.0.0.1:9" in probe.detail


def test_the_documented_42_spot_table_configures() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "metratec-quasarmx.md"
    block = doc.read_text().split("```toml\n", 1)[1].split("```", 1)[0]
    section = dict(tomllib.loads(block)["rfid"])
    assert (section.pop("kind"), section.pop("driver")) == ("hardware", ADAPTER.name)
    settings = ADAPTER.configure(section, PLACE)
    assert len(settings.readers) == 3
    assert sorted(settings.spots, key=lambda s: (s.seat, s.spot)) == sorted(
        (SpotId(seat, spot) for seat in range(1, 7) for spot in SPOTS),
        key=lambda s: (s.seat, s.spot))
    assert max(settings.readers[0].antennas) == 15  # "4.3": antenna 4, channel 3
