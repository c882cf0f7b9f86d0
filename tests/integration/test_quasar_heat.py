"""A whole heat on Metratec QuasarMX simulators (issue 30): the daemon reads its 42 spots
through the real QuasarMX driver from three simulated readers with multiplexers (two on a pty,
one on TCP), while the virtual dealer issues the stacks, takes wagers, pays and takes every
chip back; every payout is verified by the readers, and a cloned chip and a pooled chip are
alerted. The table is wired here by hand (`ConfiguredDevices._rfid`); the config's
``[rfid] driver = "metratec-quasarmx"`` is the main session's wiring."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from controller.app import TableDaemon
from controller.journal import Journal
from controller.wiring import ConfiguredDevices, WiredTable
from drivers.protocols import ChipReader
from drivers.quasar import QuasarChipReader
from drivers.quasar_settings import QuasarSettings, port_of
from drivers.readings import SPOTS, SpotId
from game.chips.registry import ChipRegistry
from simulators.quasar_table import QuasarTable, ReaderPlan
from simulators.table_play import VirtualTable
from tests.integration.daemon_support import free_port, make_table, running

WRONG = ("chips_missing", "chip_issue_wrong")  # alerts a clean heat never raises


def plans() -> list[ReaderPlan]:
    """Three readers, two seats each: antennas 1-2 one seat's 7 spots, 3-4 the other's."""
    out = []
    for first, transport in ((1, "pty"), (3, "pty"), (5, "tcp")):
        ports = {}
        for k, seat in enumerate((first, first + 1)):
            for n, spot in enumerate(SPOTS):
                ports[port_of(2 * k + n // 4 + 1, n % 4 + 1)] = SpotId(seat, spot)
        out.append(ReaderPlan(ports=ports, transport=transport))  # type: ignore[arg-type]
    return out


class QuasarDevices(ConfiguredDevices):
    """The config's simulated devices, with the chips on QuasarMX simulators."""

    quasar: QuasarTable | None = None

    def _rfid(self, registry: ChipRegistry) -> ChipReader:
        table = self.quasar = QuasarTable(plans(), registry=registry, seat_entries={},
                                          speed=20.0).start()
        self.rfid_sim = table  # type: ignore[assignment]  # the dealer's ChipTable
        return QuasarChipReader(QuasarSettings(readers=table.links(), stall_seconds=1.0),
                                name="rfid")

    def open(self, stack: AsyncExitStack, registry: ChipRegistry) -> Any:
        devices = super().open(stack, registry)
        assert self.quasar is not None
        stack.callback(self.quasar.stop)
        return devices


def wire(tmp_path: Path, short_dir: Path) -> WiredTable:
    config = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}").config
    devices = QuasarDevices(config)
    return WiredTable(daemon=TableDaemon(config, devices=devices), devices=devices)


def messages(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    with Journal.open(path, read_only=True) as journal:
        return [(m.type, m.body) for m in journal.messages(1)]


async def test_a_heat_on_quasarmx_readers_pays_and_alerts_a_clone_and_a_pooled_chip(
        tmp_path: Path, short_dir: Path) -> None:
    wired = wire(tmp_path, short_dir)
    faults: list[str] = []

    async def clone_and_pool(hands: int) -> None:
        sim = vt.chips
        if hands == 1:  # a player's chip laid on another seat's spot: pooling
            lying = {u for uids in sim.table().values() for u in uids}
            mine = sorted(c.uid for c in sim.registry
                          if sim.owner_of(c.uid) == "E1" and c.uid not in lying)
            before = int(vt.table.status()["alerts"])
            sim.place(2, "ante", uids=mine[:1])
            await vt.until("the pooling alert", lambda s: int(s["alerts"]) > before)
            sim.remove(2, "ante")
            await vt.until("seat 2 clear", lambda s: not (s.get("spots") or {}).get("2"))
            faults.append("pooled")
        if hands == 2:  # a copy of a chip on the table, on another spot: a clone
            mine = sorted(c.uid for c in sim.registry if sim.owner_of(c.uid) == "E1")
            sim.place(1, "ante", uids=mine[:1])
            await vt.until("seat 1 ante read", lambda s: bool((s.get("spots") or {}).get("1")))
            before = int(vt.table.status()["alerts"])
            sim.place(1, "odds", uids=mine[:1], clone=True)
            await vt.until("the clone alert", lambda s: int(s["alerts"]) > before)
            sim.remove(1, "odds")
            sim.remove(1, "ante")
            await vt.until("seat 1 clear", lambda s: not (s.get("spots") or {}).get("1"))
            faults.append("cloned")

    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=5, players=2, heats=1)
        assert isinstance(vt, VirtualTable) and isinstance(vt.chips, QuasarTable)
        await vt.ensure_roster()
        await vt.send_desk("open_heat", stage="qualifying", heat_id="Q-1")
        for seat in (1, 2):
            await vt.send_desk("seat", entry_id=f"E{seat}", seat=seat)
        await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == 2)
        await vt.play_heat({1: "E1", 2: "E2"}, between_hands=clone_and_pool)
        assert await stop() == 0
    assert faults == ["pooled", "cloned"]
    found = messages(wired.daemon.config.journal)
    kinds = [b["kind"] for t, b in found if t == "alert"]
    assert kinds.count("chip_pooling") == 1 and kinds.count("chip_clone") == 1
    assert not set(WRONG) & set(kinds)
    reports = [b for t, b in found if t == "chips.reconciled"]
    assert len(reports) == 2 and all(r["missing"] == [] for r in reports)
    checked = [b for t, b in found if t == "payout.checked"]
    settled = [b for t, b in found if t == "hand.settled"]
    assert len(checked) == len(settled) >= 3
    assert all(c["outcome"] == "verified" and not c["mismatches"] and not c["unverifiable"]
               for c in checked)
    readers = {b["device"] for t, b in found if t == "device" and b["state"] == "connected"
               and str(b["detail"]).startswith("QUASAR_MX")}
    assert readers == {"QMX-SIM-0001", "QMX-SIM-0002", "QMX-SIM-0003"}
