"""A whole heat on Metratec QuasarMX simulators (issue 30): the table config names the
QuasarMX driver (``[rfid] driver = "metratec-quasarmx"``, ``kind = "sim"``) and its three
readers with multiplexers (two on USB serial, one on TCP) for 42 spots; the daemon reads them
through the real QuasarMX driver on simulators in their place (two on a pty, one on TCP) while
the virtual dealer issues the stacks, takes wagers, pays and takes every chip back; every
payout is verified by the readers, and a cloned chip and a pooled chip are alerted."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.journal import Journal
from controller.wiring import SimTiming, WiredTable, wire_table
from drivers.quasar import QuasarChipReader
from drivers.readings import SPOTS
from simulators.quasar_table import QuasarTable
from simulators.table_play import VirtualTable
from tests.integration.daemon_support import free_port, make_table, running

WRONG = ("chips_missing", "chip_issue_wrong")  # alerts a clean heat never raises


def quasar_section() -> str:
    """The [rfid] lines of a table with three QuasarMX readers, two seats each, 7 spots a
    seat on multiplexer channels (antennas 1-2 one seat's spots, 3-4 the other's): two on
    USB serial, one on TCP; as a real table writes them, the simulators in their place."""
    lines = ['driver = "metratec-quasarmx"', "stall_seconds = 1.0"]
    for first, where in ((1, 'url = "/dev/showdown/quasar-a"'),
                         (3, 'url = "/dev/showdown/quasar-b"'), (5, 'host = "10.0.7.23"')):
        antennas = [f'"{2 * k + n // 4 + 1}.{n % 4 + 1}" = "{seat}/{spot}"'
                    for k, seat in enumerate((first, first + 1))
                    for n, spot in enumerate(SPOTS)]
        lines += ["[[rfid.readers]]", where, f"antennas = {{ {', '.join(antennas)} }}"]
    return "\n".join(lines) + "\n"


def wire(tmp_path: Path, short_dir: Path) -> WiredTable:
    config = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}",
                        rfid=quasar_section()).config
    assert (config.rfid.kind, config.rfid.driver) == ("sim", "metratec-quasarmx")
    # The simulated readers keep the QuasarMX's timing, 20 times faster.
    return wire_table(config, timing=SimTiming(speed=20.0))


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
            # read gone (the pooled chip counts nothing, so the amounts show no change)
            await vt.until("seat 2 clear", lambda _s: not vt.table.chips_lying().get((2, "ante")))
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
        assert wired.daemon.devices is not None
        assert isinstance(wired.daemon.devices.rfid, QuasarChipReader)
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
