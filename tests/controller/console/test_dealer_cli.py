"""`showdown table dealer ACTION --staff ID`: the technicians' console on the local API socket
signs in under the person's own PIN, takes the action, and signs out; the record names them
(a manager's `unlock_staff --lift-for ID` too)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cli.errors import EXIT_REFUSED
from cli.main import main
from tests.controller.console.support import (
    DEALER,
    MANAGER,
    SUPERVISOR,
    console_table,
    roster_body,
)


async def test_the_dealer_cli_acts_under_the_persons_own_credential(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        await table.place_wagers((1,))
        sock = str(table.daemon.config.api.socket)
        pin = tmp_path / "pin"
        pin.write_text("0000\n")
        wrong = await asyncio.to_thread(main, ["table", "dealer", "no_more_bets", "--socket",
                                               sock, "--staff-id", DEALER["staff_id"],
                                               "--pin-file", str(pin)])
        assert wrong == EXIT_REFUSED
        assert "sign-in refused: wrong staff id or PIN" in capsys.readouterr().err
        assert table.status()["hand"] is None
        pin.write_text(DEALER["pin"] + "\n")
        assert await asyncio.to_thread(main, ["table", "dealer", "no_more_bets", "--socket",
                                              sock, "--staff-id", DEALER["staff_id"],
                                              "--pin-file", str(pin)]) == 0
        assert table.status()["hand"] is not None
        refused = await asyncio.to_thread(main, ["table", "dealer", "void", "--socket", sock,
                                                 "--staff-id", DEALER["staff_id"], "--pin-file",
                                                 str(pin), "--why", "misdeal"])
        assert refused == EXIT_REFUSED
        assert "'void' is a supervisor's action" in capsys.readouterr().err
        journal = table.daemon.journal
        assert journal is not None
        pressed = [r.payload for r in journal.records() if r.kind == "dealer"]
        assert [(p["action"], p["by"]) for p in pressed] == [
            ("no_more_bets", DEALER["staff_id"]), ("void", DEALER["staff_id"])]
        events = [r.payload["event"] for r in journal.records() if r.kind == "staff"
                  and r.payload.get("staff_id") == DEALER["staff_id"]]
        assert events == ["sign_in_failed", "signed_in", "signed_out", "signed_in",
                          "signed_out"]
        assert table.status()["staff"] == []


async def test_a_dealer_disputes_a_settled_hand_from_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        entries = await table.open_heat((1,))
        session = await table.sign_in(DEALER)
        await table.play_hand(session, (1,))
        sock = str(table.daemon.config.api.socket)
        pin = tmp_path / "pin"
        pin.write_text(DEALER["pin"] + "\n")
        journal = table.daemon.journal
        assert journal is not None
        [hand_id] = [m.body["hand_id"] for m in journal.messages(1) if m.type == "hand.settled"]
        base = ["table", "dealer", "dispute_hand", "--socket", sock, "--staff-id",
                DEALER["staff_id"], "--pin-file", str(pin)]
        unknown = await asyncio.to_thread(main, [*base, "--hand", "nope", "--seat", "1",
                                                 "--why", "paid short"])
        assert unknown != 0
        assert "hand_id: nope is not a settled hand of this table's heat" in capsys.readouterr().err
        assert await asyncio.to_thread(main, [*base, "--hand", hand_id, "--seat", "1",
                                              "--why", "paid short"]) == 0
        [raised] = [m.body for m in journal.messages(1) if m.type == "hand.disputed"]
    assert (raised["hand_id"], raised["entry_id"], raised["by"], raised["role"],
            raised["claim"]) == (hand_id, entries[0], DEALER["staff_id"], "dealer",
                                 "paid short")


async def test_a_supervisor_corrects_a_settled_hand_from_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        entries = await table.open_heat((1,))
        await table.play_hand(await table.sign_in(DEALER), (1,))
        sock = str(table.daemon.config.api.socket)
        pin = tmp_path / "pin"
        pin.write_text(SUPERVISOR["pin"] + "\n")
        journal = table.daemon.journal
        assert journal is not None
        [settled] = [m.body for m in journal.messages(1) if m.type == "hand.settled"]
        base = ["table", "dealer", "rule_hand", "--socket", sock, "--staff-id",
                SUPERVISOR["staff_id"], "--pin-file", str(pin), "--hand", settled["hand_id"],
                "--seat", "1", "--why", "odds paid short"]
        bad = await asyncio.to_thread(main, [*base, "--ruling", "correct", "--net", "R1.5x"])
        assert bad != 0 and "--net:" in capsys.readouterr().err
        missing = await asyncio.to_thread(main, [*base, "--ruling", "correct"])
        assert missing == EXIT_REFUSED
        assert "net: missing" in capsys.readouterr().err
        assert await asyncio.to_thread(main, [*base, "--ruling", "correct",
                                              "--net=-R25"]) == 0
        [corrected] = [m.body for m in journal.messages(1) if m.type == "hand.corrected"]
    assert (corrected["entry_id"], corrected["counted_net"], corrected["by"],
            corrected["made_at"]) == (entries[0], -2_500, SUPERVISOR["staff_id"], "table")


async def test_a_manager_lifts_a_sign_in_wait_from_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        await table.desk("staff_roster", **{k: v for k, v in roster_body(
            2, people=(DEALER, SUPERVISOR, MANAGER)).items() if k not in ("command", "signer")})
        sock = str(table.daemon.config.api.socket)
        for pin in ("0000", "1111", "2222"):  # at the local socket: its one terminal
            wrong = await table.daemon.on_console({"action": "sign_in", "pin": pin,
                                                   "staff_id": SUPERVISOR["staff_id"]})
        assert wrong["error"].endswith("the next attempt waits 30 s")
        pin = tmp_path / "pin"
        pin.write_text(MANAGER["pin"] + "\n")
        base = ["table", "dealer", "unlock_staff", "--socket", sock, "--staff-id",
                MANAGER["staff_id"], "--pin-file", str(pin), "--lift-for",
                SUPERVISOR["staff_id"]]
        assert await asyncio.to_thread(main, [*base, "--terminal", "10.1.1.1", "--why",
                                              "typo"]) == EXIT_REFUSED
        assert (f"nothing is locked for {SUPERVISOR['staff_id']} at 10.1.1.1"
                in capsys.readouterr().err)
        assert await asyncio.to_thread(main, [*base, "--why", "badge checked"]) == 0
        assert "unlock staff: done" in capsys.readouterr().out
        journal = table.daemon.journal
        assert journal is not None
        [lift] = [r.payload for r in journal.records() if r.kind == "staff"
                  and r.payload["event"] == "unlocked" and r.payload.get("terminal") is None]
        assert (lift["by"], lift["staff_id"], lift["detail"]) == (
            MANAGER["staff_id"], SUPERVISOR["staff_id"], "badge checked")
        assert (await table.daemon.on_console({"action": "sign_in", "pin": SUPERVISOR["pin"],
                                               "staff_id": SUPERVISOR["staff_id"]}))["ok"]
