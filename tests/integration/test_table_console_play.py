"""The virtual table at a running daemon under issue 12's rules: staff sign in with their own
credentials (a dealer cannot void), every hand's payout is verified by the chip readers, an
overpay blocks the next hand until a supervisor overrides it (or the dealer takes the chip
back), and participants acknowledge with the proofs the table asks for.

Each test runs the daemon in the test's loop with the simulated shoe, chip reader and ID reader
behind the real drivers; no broker is needed (desk commands go straight in, the link keeps
trying in the background). Outcomes are read from the journal the daemon wrote.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.wiring import WiredTable, wire_table
from simulators.chip_steps import change_on_spot, issue_stacks
from simulators.players import VirtualPlayer
from simulators.table_play import TableStuck, VirtualTable
from tests.integration.daemon_support import free_port, make_table, running


def _messages(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    with Journal.open(path, read_only=True) as journal:
        return [(m.type, m.body) for m in journal.messages(1)]


def _inputs(path: Path, kind: str) -> list[Mapping[str, Any]]:
    with Journal.open(path, read_only=True) as journal:
        return [r.payload for r in journal.records() if r.kind == kind]


async def _seat(vt: VirtualTable, heat_id: str, players: int) -> dict[int, VirtualPlayer]:
    await vt.send_desk("open_heat", stage="qualifying", heat_id=heat_id)
    for seat in range(1, players + 1):
        await vt.send_desk("seat", entry_id=f"E{seat}", seat=seat)
    await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == players)
    return {seat: VirtualPlayer(name=f"player {seat}", rng=random.Random(seat))
            for seat in range(1, players + 1)}


def _wired(tmp_path: Path, short_dir: Path, **toml: Any) -> WiredTable:
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", **toml)
    return wire_table(table.config)


async def test_a_heat_with_every_payout_verified_and_acknowledged_by_card(
        tmp_path: Path, short_dir: Path) -> None:
    wired = _wired(tmp_path, short_dir)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=3, players=2, heats=1)
        await vt.run()
        assert await stop() == 0
    messages = _messages(wired.daemon.config.journal)
    settled = [b["hand_id"] for t, b in messages if t == "hand.settled"]
    checked = {b["hand_id"]: b for t, b in messages if t == "payout.checked"}
    assert settled and vt.payouts_verified == len(settled) == vt.hands_played
    assert set(checked) == set(settled)
    assert {b["outcome"] for b in checked.values()} == {"verified"}
    assert not any(t == "alert" and b["kind"].startswith("payout") for t, b in messages)
    # Each score acknowledged by a tap of the entry's rewards card on the ID reader.
    acks = {b["entry_id"]: b["method"] for t, b in messages if t == "score.acknowledged"}
    assert len(acks) == 2 and set(acks.values()) == {"card"} and vt.acknowledged == acks
    # The roster came first; every console press names the signed-in virtual dealer.
    dealer = vt.staff.dealer.staff_id
    presses = _inputs(wired.daemon.config.journal, "dealer")
    assert presses and {p["by"] for p in presses} == {dealer}
    signed = [b for t, b in messages if t == "staff.session" and b["event"] == "signed_in"]
    assert [b["staff_id"] for b in signed] == [dealer]


@pytest.mark.parametrize("methods", [["pin"], ["pin", "signature"]])
async def test_a_table_without_an_id_reader_acknowledges_by_pin(
        tmp_path: Path, short_dir: Path, methods: list[str]) -> None:
    wired = _wired(tmp_path, short_dir, id_reader=False, acknowledge_with=methods)
    async with running(wired.daemon) as stop:
        assert wired.devices.id_simulator is None
        vt = wired.virtual_table(seed=4, players=1, heats=1)
        await vt.run()
        assert await stop() == 0
    acks = [b for t, b in _messages(wired.daemon.config.journal) if t == "score.acknowledged"]
    assert [b["method"] for b in acks] == ["+".join(methods)]
    assert (acks[0].get("evidence") is not None) == ("signature" in methods)


@pytest.mark.parametrize("fix", ["override", "take_back"])
async def test_an_overpay_blocks_the_next_hand_until_it_is_put_right(
        tmp_path: Path, short_dir: Path, fix: str) -> None:
    wired = _wired(tmp_path, short_dir)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=9, players=3, overpay_hand=1,
                                 overpay_fix=fix)
        players = await _seat(vt, "qualifying-overpay", 3)
        while vt.faults_injected == 0 and wired.daemon.status()["seats"]:
            await vt.play_hand(players)
        assert vt.faults_injected == 1
        await vt.play_hand(players)  # the next hand opens once the payout is put right
        assert await stop() == 0
    journal = wired.daemon.config.journal
    messages = _messages(journal)
    over = [b for t, b in messages if t == "alert" and b["kind"] == "payout_overpaid"]
    assert len(over) == 1 and "overpaid by R2.50" in over[0]["message"]
    hand_id = over[0]["hand_id"]
    assert vt.hands_blocked == 1 and vt.last_refusal is not None
    assert f"payout of hand {hand_id} is not verified" in vt.last_refusal
    checked = next(b for t, b in messages if t == "payout.checked" and b["hand_id"] == hand_id)
    supervisor = vt.staff.supervisor.staff_id
    if fix == "override":
        assert checked["outcome"] == "overridden" and checked["by"] == supervisor
        assert "overpaid by R2.50" in checked["reason"]
        assert [(m["seat"], m["held"] - m["expected"]) for m in checked["mismatches"]] == [
            (over[0]["seat"], 250)]
        overrides = [p for p in _inputs(journal, "dealer")
                     if p["action"] == "payout_override"]
        assert [(p["by"], p["reason"]) for p in overrides] == [(supervisor, checked["reason"])]
        assert vt.overrides == 1 and vt.taken_back == 0
        sessions = [(b["event"], b["staff_id"]) for t, b in messages if t == "staff.session"
                    and b["staff_id"] == supervisor]
        assert sessions == [("signed_in", supervisor), ("signed_out", supervisor)]
    else:
        assert checked["outcome"] == "verified" and checked["by"] is None
        assert vt.taken_back == 1 and vt.overrides == 0
    # The hand after the overpaid one was played (its payout verified like any other).
    settled = [b["hand_id"] for t, b in messages if t == "hand.settled"]
    assert settled[-2] == hand_id and settled[-1] != hand_id


async def test_a_dealer_cannot_void_a_hand_and_a_supervisor_can(
        tmp_path: Path, short_dir: Path) -> None:
    wired = _wired(tmp_path, short_dir)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=2, players=1)
        await _seat(vt, "qualifying-void", 1)
        await issue_stacks(vt)  # placed from the tray, issued as read (D346)
        await change_on_spot(vt, 1, [[2500, 2500]])  # R500 chips: change on the spot
        vt.chips.place(1, "ante", 2500)
        vt.chips.place(1, "odds", 2500)
        await vt.until("the wagers", lambda s: s["spots"].get("1") == {"ante": 2500,
                                                                       "odds": 2500})
        await vt.console("no_more_bets")
        with pytest.raises(TableStuck, match="'void' is a supervisor's action"):
            await vt.console("void", reason="test: the dealer tries")
        assert wired.daemon.status()["hand"] is not None
        await vt.supervise("void", reason="test: the supervisor voids")
        status = wired.daemon.status()
        assert await stop() == 0
    assert status["hand"] is None and vt.supervisor_actions == ["void"]
    voided = [b for t, b in _messages(wired.daemon.config.journal) if t == "hand.voided"]
    assert len(voided) == 1
    record = voided[0].get("record", voided[0])
    assert record["void"]["by"] == vt.staff.supervisor.staff_id
    assert record["void"]["reason"] == "test: the supervisor voids"
