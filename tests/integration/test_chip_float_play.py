"""The table's chip float at a running daemon (issue 13, rule 19), through the real USB driver
on the simulated chip reader: the virtual dealer places each starting stack at seating and
the table issues it as the reader reads it (no button, D346), the players get change on the
spot, and the dealer takes every entry's chips back at the end of the heat; the journal shows one
``chips.reconciled`` per entry with nothing missing. A chip a player keeps is reported
missing (and alerted); a player's chip put on another seat's spot is a pooling alert."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from controller.config import read_table_config
from controller.journal import Journal
from controller.wiring import wire_table
from game.messages.desk import CloseHeat
from simulators.chip_steps import return_chips
from simulators.table_play import VirtualTable
from tests.integration.daemon_support import TOURNAMENT, free_port, make_table, running

CHIP_ALERTS = ("chip_clone", "chip_pooling", "chips_missing", "chip_issue_wrong")


def _messages(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    with Journal.open(path, read_only=True) as journal:
        return [(m.type, m.body) for m in journal.messages(1)]


def _presses(path: Path) -> list[str]:
    with Journal.open(path, read_only=True) as journal:
        return [str(r.payload.get("action")) for r in journal.records() if r.kind == "dealer"]


async def _heat(vt: VirtualTable, between: Any = None) -> None:
    await vt.ensure_roster()
    await vt.send_desk("open_heat", stage="qualifying", heat_id="Q-1")
    for seat in (1, 2):
        await vt.send_desk("seat", entry_id=f"E{seat}", seat=seat)
    await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == 2)
    await vt.play_heat({1: "E1", 2: "E2"}, between_hands=between)


async def test_a_heat_issues_every_stack_and_gets_every_chip_back(
        tmp_path: Path, short_dir: Path) -> None:
    wired = wire_table(make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}").config)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=5, players=2, heats=1)
        await vt.run()
        assert await stop() == 0
    path = wired.daemon.config.journal
    messages = _messages(path)
    reports = [b for t, b in messages if t == "chips.reconciled"]
    assert len(reports) == 2 and vt.stacks_issued == 2
    for report in reports:
        assert len(report["issued"]) > 0 and report["issued_cents"] == 200_000
        assert report["missing"] == [] and report["returned"] == report["held"]
    assert not [b for t, b in messages if t == "alert" and b["kind"] in CHIP_ALERTS]
    presses = _presses(path)
    assert presses.count("issue_chips") == 0 and presses.count("return_chips") == 2
    assert not [b for t, b in messages if t == "alert" and b["kind"] == "not_issued"]
    assert wired.daemon.service is not None
    assert wired.daemon.service.core.chips.chip_float.require_issued  # the default
    assert vt.reconciled == {r["entry_id"]: 0 for r in reports}


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_a_chip_a_player_keeps_is_reported_missing(tmp_path: Path,
                                                         short_dir: Path) -> None:
    wired = wire_table(make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}").config)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=6, players=2, heats=1)
        vt.pocket_chips = 1
        await _heat(vt)
        assert await stop() == 0
    messages = _messages(wired.daemon.config.journal)
    reports = {b["entry_id"]: b for t, b in messages if t == "chips.reconciled"}
    assert [len(r["missing"]) for _, r in sorted(reports.items())] == [1, 0]
    [missing] = reports["E1"]["missing"]
    alerts = [b for t, b in messages if t == "alert" and b["kind"] == "chips_missing"]
    assert len(alerts) == 1 and missing in alerts[0]["message"]
    assert reports["E1"]["missing_cents"] > 0


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_a_players_chip_on_another_seats_spot_is_a_pooling_alert(
        tmp_path: Path, short_dir: Path) -> None:
    wired = wire_table(make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}").config)
    moved: list[bytes] = []

    async def pass_a_chip(hands: int) -> None:
        if hands != 1:
            return
        sim = vt.chips
        lying = {u for uids in sim.table().values() for u in uids}
        mine = sorted(c.uid for c in sim.registry
                      if sim.owner_of(c.uid) == "E1" and c.uid not in lying)
        before = int(vt.table.status()["alerts"])
        sim.place(2, "ante", uids=mine[:1])
        moved.extend(mine[:1])
        await vt.until("the pooling alert", lambda s: int(s["alerts"]) > before)
        sim.remove(2, "ante")  # the supervisor gives it back
        await vt.until("seat 2 to be clear", lambda s: not (s.get("spots") or {}).get("2"))

    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=7, players=2, heats=1)
        await _heat(vt, pass_a_chip)
        assert await stop() == 0
    messages = _messages(wired.daemon.config.journal)
    pooled = [b for t, b in messages if t == "alert" and b["kind"] == "chip_pooling"]
    assert len(pooled) == 1 and moved[0].hex().upper() in pooled[0]["message"]
    assert "belongs to entry E1, played by entry E2" in pooled[0]["message"]
    reports = [b for t, b in messages if t == "chips.reconciled"]
    assert [r["missing"] for r in reports] == [[], []]


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_the_next_heats_stacks_take_no_chip_the_reader_still_reads(
        tmp_path: Path, short_dir: Path) -> None:
    """Heats in a row: the chips returned at the end of a heat are the tray's again, and the
    next heat's first stack may take one the last seat returned (seed 14 does). The dealer
    takes them off the spots and waits for the reader to read them gone; before, seat 1's new
    stack could be read in the same sweep as seat 3's Ante still holding the chip (a
    `chip_clone`), and the stack was never issued: the virtual dealer stopped at the start
    of the heat."""
    short = tmp_path / "tournament.toml"  # two hands a heat: heats in a row, quickly
    text = TOURNAMENT.read_text()
    assert text.count("\nhands = 10 ") == 1
    short.write_text(text.replace("\nhands = 10 ", "\nhands = 2 "))
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", seed=14)
    table.path.write_text(table.path.read_text().replace(str(TOURNAMENT), str(short)))
    wired = wire_table(read_table_config(table.path))
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=14, players=3, heats=2)
        await vt.ensure_roster()
        entries = await vt.seat_heat()  # the first heat, step by step (VirtualTable.play_heat)
        players = vt.make_players(entries)
        while vt.glance().get("seats"):
            await vt.play_hand(players)
        await vt.acknowledge_all()
        await return_chips(vt)
        # Every chip returned is back in the tray and read gone: none lies on a spot the
        # table still reads (it did on the last seat to return its chips).
        assert dict(vt.table.chips_lying()) == {}
        await vt.send_desk(CloseHeat.NAME)
        await vt.until("the heat to close", lambda s: s.get("heat") is None)
        await vt.play_heat(await vt.seat_heat())  # the next heat, with its own stacks
        assert vt.stacks_issued == 6 and vt.hands_played == 4
        assert await stop() == 0
    messages = _messages(wired.daemon.config.journal)
    assert not [b for t, b in messages if t == "alert" and b["kind"] in CHIP_ALERTS]
    reports = [b for t, b in messages if t == "chips.reconciled"]
    assert len(reports) == 6 and all(r["missing"] == [] for r in reports)
