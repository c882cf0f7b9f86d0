"""The example vendor adapter (examples/textline-shoe) plugged in through the seam alone: found
by its entry point, selected by a table config (`[shoe] driver = "text-line"`), opened by the
table's wiring on a real port or on its simulator, probed for `showdown doctor`; it imports of
showdown only the seam. The soak test installs it into a folder of its own, as a vendor's
distribution arrives, and shows a new interpreter finds it there and reads cards with it.

The quick tests use the copy `make venv` installs (editable, `--no-deps`).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from showdown_textline_shoe.adapter import ADAPTER, TextLineSettings
from showdown_textline_shoe.driver import TextLineShoe
from showdown_textline_shoe.simulator import TextLineShoeSimulator

from controller.config import TableConfig, parse_table_config
from controller.wiring import ConfiguredDevices
from drivers.adapter import DriverContext, SimulatedShoe
from drivers.readings import CardReading, DeviceAlert
from drivers.registry import find_adapter, installed
from game.errors import ConfigError
from simulators.table_play import play_registry
from tests.services import services_required

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "textline-shoe"
WAIT = 15.0  # a safety net against hangs, not a measurement
# The install command of docs/protocols/writing-an-adapter.md, run by the soak test (into a
# folder of its own: --target).
INSTALL = "python -m pip install --no-deps examples/textline-shoe"
# What a vendor's adapter may import of showdown: the seam and the plain helpers under it.
SEAM = ("drivers.adapter", "drivers.adapter_options", "drivers.protocols", "drivers.readings",
        "drivers.errors", "game.poker.cards", "runtime.backoff", "runtime.worker_thread")
OURS = ("game", "wire", "runtime", "drivers", "simulators", "adapters", "controller",
        "leaderboard", "deploy", "cli", "floor")


def config(tmp_path: Path, shoe: dict[str, Any]) -> TableConfig:
    """A table config with this [shoe] section and manual chips."""
    data = {"table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
            "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
            "shoe": shoe, "rfid": {"kind": "manual"}}
    return parse_table_config(data, source="table.toml", base=tmp_path)


def test_the_example_is_found_by_its_entry_point() -> None:
    assert find_adapter("shoe", "text-line") is ADAPTER
    (listed,) = [d for d in installed("shoe") if d.name == "text-line"]
    assert (listed.target, listed.distribution) == (
        "showdown_textline_shoe.adapter:ADAPTER", "showdown-textline-shoe")


def test_the_example_imports_of_showdown_only_the_seam() -> None:
    imported: set[str] = set()
    for source in (EXAMPLE / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    ours = {m for m in imported if m.split(".")[0] in OURS}
    assert ours  # it does use the seam
    assert sorted(ours - set(SEAM)) == []


def test_a_table_config_selects_it_with_its_keys(tmp_path: Path) -> None:
    hardware = config(tmp_path, {"kind": "hardware", "driver": "text-line",
                                 "url": "/dev/serial/by-id/usb-Acme_Reader_A1-if00",
                                 "baudrate": 19200, "stall_seconds": 6}).shoe
    assert (hardware.kind, hardware.driver, hardware.adapter) == ("hardware", "text-line",
                                                                  ADAPTER)
    assert hardware.settings == TextLineSettings(
        url="/dev/serial/by-id/usb-Acme_Reader_A1-if00", baudrate=19200, stall_seconds=6.0)
    relative = config(tmp_path, {"kind": "hardware", "driver": "text-line", "url": "dev/shoe"})
    assert relative.shoe.settings == TextLineSettings(url=str(tmp_path / "dev" / "shoe"))
    sim = config(tmp_path, {"kind": "sim", "driver": "text-line"})
    assert sim.shoe.settings == TextLineSettings(url=None)
    assert sim.sim is not None  # a simulated shoe makes a simulated table


@pytest.mark.parametrize(("shoe", "key", "reason"), [
    ({"kind": "hardware"}, "shoe.url", "a hardware shoe needs its serial port"),
    ({"kind": "hardware", "url": 5}, "shoe.url", "expected non-empty text, got an integer"),
    ({"kind": "sim", "baudrate": "fast"}, "shoe.baudrate", "expected an integer, got text"),
    ({"kind": "sim", "stall_seconds": 90}, "shoe.stall_seconds", "must be 0..60"),
    ({"kind": "sim", "vid": 0x1209}, "shoe.vid",
     "unknown key for the text-line driver (known: baudrate, driver, kind, stall_seconds,"
     " url)"),
])
def test_wrong_keys_are_refused_naming_the_key(tmp_path: Path, shoe: dict[str, Any], key: str,
                                               reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(tmp_path, {"driver": "text-line", **shoe})
    assert (caught.value.source, caught.value.key) == ("table.toml", key)
    assert reason in caught.value.reason


async def test_the_wiring_opens_it_on_the_configured_port(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, {"kind": "hardware", "driver": "text-line",
                                                  "url": "/dev/ttyUSB7"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
    assert isinstance(opened.shoe, TextLineShoe)
    assert opened.shoe.device == "/dev/ttyUSB7"
    assert devices.shoe_sim is None


async def test_a_simulated_table_deals_through_it(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, {"kind": "sim", "driver": "text-line"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
        sim, shoe = devices.shoe_sim, opened.shoe
        assert isinstance(sim, TextLineShoeSimulator)
        assert isinstance(sim, SimulatedShoe)
        assert isinstance(shoe, TextLineShoe)
        async with shoe, asyncio.timeout(WAIT):
            it = aiter(shoe)
            first = await anext(it)
            assert isinstance(first, DeviceAlert)
            assert first.kind == "connected"
            dealt = [sim.deal_card(c) for c in ("As", "Td", "7h")]
            read = [await anext(it) for _ in dealt]
        assert all(isinstance(r, CardReading) for r in read)
        assert [(r.card, r.read_index, r.device) for r in read] == [  # type: ignore[union-attr]
            (card, i, "sim-shoe") for i, card in enumerate(dealt)]
    assert sim.path is None  # the stack switched the simulator off


def test_probe_says_whether_the_port_opens(tmp_path: Path) -> None:
    missing = ADAPTER.probe(TextLineSettings(url=str(tmp_path / "no-such-tty")))
    assert not missing.ok
    assert missing.detail.startswith(f"cannot open the shoe's port {tmp_path}/no-such-tty")
    assert "ls -l /dev/serial/by-id/" in missing.fix
    assert not ADAPTER.probe(TextLineSettings(url=None)).ok
    with TextLineShoeSimulator() as sim:
        assert sim.path is not None
        there = ADAPTER.probe(TextLineSettings(url=sim.path, baudrate=9600))
        assert there.ok
        assert there.detail.startswith(f"{sim.path} opens (9600 baud); a text-line shoe says"
                                       " nothing until a card leaves it")
        assert (there.model, there.firmware) == (None, None)  # it cannot say


async def test_probe_finds_the_port_held_by_a_running_table() -> None:
    with TextLineShoeSimulator() as sim:
        path = sim.path
        assert path is not None
        shoe = ADAPTER.open(TextLineSettings(url=path), DriverContext(name="shoe"))
        async with shoe, asyncio.timeout(WAIT):
            first = await anext(aiter(shoe))
            assert isinstance(first, DeviceAlert)
            assert first.kind == "connected"
            held = await asyncio.to_thread(ADAPTER.probe, TextLineSettings(url=path))
            sim.deal_card("Qc")
            card = await anext(aiter(shoe))
    assert held.ok
    assert held.detail.startswith(f"{path} is there and held by another process")
    assert isinstance(card, CardReading)  # the probe took nothing off the line
    assert str(card.card) == "Qc"


# The soak test's script, run by a new interpreter with the folder on PYTHONPATH: where the
# adapter comes from, and three cards read through a simulated table's wiring.
_FROM_FOLDER = """
import asyncio, json, sys
from contextlib import AsyncExitStack
from pathlib import Path
from importlib.metadata import entry_points
from controller.config import parse_table_config
from controller.wiring import ConfiguredDevices
from drivers.registry import find_adapter
from simulators.table_play import play_registry

async def main():
    (point,) = [p for p in entry_points(group="showdown.shoe") if p.name == "text-line"]
    adapter = find_adapter("shoe", "text-line")
    data = {"table": {"venue": "v", "id": "t1", "journal": "j.sqlite"},
            "keys": {"table_key": "k"}, "api": {"socket": "s"}, "rfid": {"kind": "manual"},
            "shoe": {"kind": "sim", "driver": "text-line"}}
    cfg = parse_table_config(data, source="table.toml", base=Path("."))
    devices = ConfiguredDevices(cfg)
    async with AsyncExitStack() as stack:
        shoe = devices.open(stack, play_registry()).shoe
        async with shoe, asyncio.timeout(15):
            it = aiter(shoe)
            first = await anext(it)
            dealt = [str(devices.shoe_sim.deal_card(c)) for c in ("Ks", "2d", "Th")]
            read = [await anext(it) for _ in dealt]
    print(json.dumps({
        "module": sys.modules[type(adapter).__module__].__file__,
        "distribution": str(point.dist._path), "adapter": type(adapter).__name__,
        "first": first.kind, "dealt": dealt,
        "read": [[str(r.card), r.read_index] for r in read]}))

asyncio.run(main())
"""


@pytest.mark.soak
def test_installed_into_a_folder_of_its_own_it_is_found_there_and_reads_cards(
        tmp_path: Path) -> None:
    target = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # pip builds in the source folder (build/): a copy, so the checkout stays as it is
    checkout = tmp_path / "checkout"
    shutil.copytree(EXAMPLE, checkout / EXAMPLE.relative_to(REPO), ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    build = subprocess.run([sys.executable, *INSTALL.split()[1:], "--target", str(target)],
                           capture_output=True, text=True, check=False, env=env, cwd=checkout,
                           timeout=300)
    if build.returncode != 0 and "setuptools" in build.stderr and not services_required():
        pytest.skip(f"pip cannot build it here (no package index for setuptools?):"
                    f" {build.stderr.strip().splitlines()[-1]}")
    assert build.returncode == 0, build.stderr
    assert sorted(p.name for p in target.iterdir()) == [
        "showdown_textline_shoe", "showdown_textline_shoe-0.1.0.dist-info"]
    run = subprocess.run([sys.executable, "-c", _FROM_FOLDER], capture_output=True, text=True,
                         check=False, cwd=tmp_path, env={**env, "PYTHONPATH": str(target)},
                         timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])  # after the log lines (structlog)
    assert Path(found["module"]).is_relative_to(target)  # not the checkout's editable copy
    assert Path(found["distribution"]).is_relative_to(target)
    assert (found["adapter"], found["first"]) == ("TextLineAdapter", "connected")
    assert found["read"] == [[card, i] for i, card in enumerate(found["dealt"])]
    assert found["dealt"] == ["Ks", "2d", "Th"]
