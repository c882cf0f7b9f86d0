"""controller.wiring, the table's composition root: which devices each config kind gets, the
chip registry it picks, and a simulated table whose broker is away when its virtual desk
first sends.

That last one is produced for real: the table points at a port where nothing listens yet; an
embedded broker starts there a little later. The virtual desk keeps trying, and the heat is
played in full.
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from controller.app import TableDaemon
from controller.config import TableConfig, parse_table_config
from controller.devices import Resume
from controller.embedded_broker import EmbeddedBroker
from controller.wiring import (
    ConfiguredDevices,
    shoe_seed,
    virtual_table_task,
    wire_table,
)
from drivers.manual import ManualCardReader
from drivers.manual_chips import ManualChipReader
from drivers.rfid import UsbChipReader
from drivers.shoe import SerialCardReader
from game.errors import ConfigError
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator
from simulators.table_play import TableStuck, play_registry
from tests.integration.daemon_support import make_table, short_dir  # noqa: F401
from wire.messages import ScoreRecorded

SUBSCRIBED_WAIT_S = 0.3  # the desk's wait for the table's subscription (3 s in production)
GUARD_S = 120.0  # against hangs only


def config(tmp_path: Path, *, shoe: dict[str, object], rfid: dict[str, object],
           files: dict[str, object] | None = None) -> TableConfig:
    """A table config with these [shoe] and [rfid] sections (nothing is opened by parsing)."""
    data: dict[str, object] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": shoe, "rfid": rfid}
    if files is not None:
        data["files"] = files
    return parse_table_config(data, source="table.toml", base=tmp_path)


async def test_manual_kinds_get_the_dealers_keypad_readers(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, shoe={"kind": "manual"},
                                       rfid={"kind": "manual"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
    assert isinstance(opened.shoe, ManualCardReader)
    assert isinstance(opened.rfid, ManualChipReader)
    assert (devices.shoe_sim, devices.rfid_sim) == (None, None)


async def test_hardware_kinds_get_the_real_drivers_and_no_simulator(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, shoe={"kind": "hardware", "url": "loop://"},
                                       rfid={"kind": "hardware"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, play_registry())
    assert isinstance(opened.shoe, SerialCardReader)
    assert opened.shoe.ack == "on_confirm"
    assert isinstance(opened.rfid, UsbChipReader)
    assert (devices.shoe_sim, devices.rfid_sim) == (None, None)


async def test_sim_kinds_run_the_real_drivers_on_simulators_it_keeps(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, shoe={"kind": "sim"}, rfid={"kind": "sim"}))
    async with AsyncExitStack() as stack:
        opened = devices.open(stack, devices.chip_registry())
        assert isinstance(devices.shoe_sim, ShoeSimulator)
        assert devices.shoe_sim.path  # the pty the real serial driver opens
        assert isinstance(opened.shoe, SerialCardReader)
        assert isinstance(devices.rfid_sim, RfidReaderSimulator)
        assert isinstance(opened.rfid, UsbChipReader)


async def test_restarted_simulators_start_where_the_journal_left_off(tmp_path: Path) -> None:
    """D405, D406: the simulated felt holds what the table last read before the
    reader's first sweep (a restart moves no chip), and the shoe's seed is the configured one
    on a new journal, another (the same again for the same journal) after a restart."""
    one, two = (chip.uid for chip, _ in zip(play_registry(), range(2), strict=False))
    lying = {(1, "ante"): frozenset({one}), (2, "odds"): frozenset({two})}
    new = ConfiguredDevices(config(tmp_path, shoe={"kind": "sim"}, rfid={"kind": "sim"}))
    restarted = ConfiguredDevices(config(tmp_path, shoe={"kind": "sim"}, rfid={"kind": "sim"}))
    async with AsyncExitStack() as stack:
        new.open(stack, new.chip_registry())
        restarted.open(stack, restarted.chip_registry(),
                       resume=Resume(position=812, chips_lying=lying))
        assert new.rfid_sim.table() == {}
        assert {(w.seat, w.spot): uids for w, uids in restarted.rfid_sim.table().items()} \
            == lying
        seed = new.config.sim.seed if new.config.sim is not None else 0
        assert new.shoe_sim.seed == seed == shoe_seed(seed, 0)  # a new journal: as configured
        assert restarted.shoe_sim.seed == shoe_seed(seed, 812) != seed
    assert shoe_seed(7, 812) == shoe_seed(7, 812) != shoe_seed(7, 813)
    assert len({shoe_seed(7, n) for n in range(1, 1_000)}) == 999
    assert restarted.dealer_seed(7) == shoe_seed(7, 812) and new.dealer_seed(7) == 7


def test_real_chip_readers_need_a_registry_file(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, shoe={"kind": "manual"},
                                       rfid={"kind": "hardware"}))
    with pytest.raises(ConfigError, match=r"files\.chips"):
        devices.chip_registry()


def test_a_simulated_table_without_a_registry_plays_the_built_in_chips(tmp_path: Path) -> None:
    devices = ConfiguredDevices(config(tmp_path, shoe={"kind": "sim"}, rfid={"kind": "sim"}))
    assert list(devices.chip_registry()) == list(play_registry())


def test_a_virtual_table_needs_simulated_devices(tmp_path: Path) -> None:
    wired = wire_table(config(tmp_path, shoe={"kind": "manual"}, rfid={"kind": "manual"}))
    with pytest.raises(TableStuck, match="not simulators"):
        wired.virtual_table()


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_the_virtual_desk_waits_for_an_unreachable_broker(tmp_path: Path,
                                                                short_dir: Path  # noqa: F811
                                                                ) -> None:
    port = _unused_port()
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{port}")
    desk = table.desk  # the desk key the test enrolled in the config
    wired = wire_table(table.config)
    daemon = wired.daemon
    dealer = virtual_table_task(wired, desk, subscribed_wait_s=SUBSCRIBED_WAIT_S)
    finished = asyncio.Event()

    async def play(d: TableDaemon) -> None:
        try:
            await dealer(d)
        finally:
            finished.set()

    stop = asyncio.Event()
    async with asyncio.timeout(GUARD_S):
        runner = asyncio.create_task(daemon.run(stop, extra=play))
        await daemon.ready.wait()
        await asyncio.sleep(2 * SUBSCRIBED_WAIT_S)  # the desk has tried, and waited, twice
        assert not finished.is_set(), "the virtual dealer gave up"
        assert daemon.status()["hands_opened"] == 0
        async with EmbeddedBroker(port=port):
            await finished.wait()
            status = daemon.status()
            journal = daemon.journal
            assert journal is not None
            scores = [m.body for m in journal.messages(1) if m.type == ScoreRecorded.TYPE]
            stop.set()
            await runner
    assert status.get("heat") is None  # opened, played and closed
    assert status["hands_opened"] >= 10  # 10 hands per qualifying entry (tournament.md)
    assert not status["unacknowledged_scores"]
    assert len(scores) == 3, scores  # every seated entry (3 players) was scored
