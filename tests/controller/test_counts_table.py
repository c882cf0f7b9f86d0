"""Chip counts and decks at a real table daemon (simulated devices, embedded broker): the
dealer counts the tray at the heat's opening through the console, a supervisor confirms with
their own PIN, the table publishes ``chips.counted`` with what its RFID float expected, and a
difference over the house's tolerance is an alert; the deck inventory's steps, each under
the person's own credential, with a witness to a destruction; all of it rebuilt on restart.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_REFUSED
from cli.main import main
from game.messages.chips import ChipsCounted
from game.messages.decks import DecksEvent
from game.money import format_rand
from tests.controller.console.support import DEALER, SUPERVISOR, ConsoleTable, console_table

D, S = DEALER["staff_id"], SUPERVISOR["staff_id"]


def published(table: ConsoleTable, kind: str) -> list[dict[str, Any]]:
    """The bodies of the messages of ``kind`` in the table's outbox, oldest first."""
    journal = table.daemon.journal
    assert journal is not None
    return [dict(m.body) for m in journal.messages(1) if m.type == kind]


def dealer_records(table: ConsoleTable) -> list[dict[str, Any]]:
    """The journaled ``dealer`` inputs' payloads."""
    journal = table.daemon.journal
    assert journal is not None
    return [dict(r.payload) for r in journal.records() if r.kind == "dealer"]


def tray(table: ConsoleTable) -> Counter[int]:
    """The chips of the set in play by value, counted from the simulator's own registry:
    every one is in the tray before any stack is issued."""
    registry = table.chips.registry
    return Counter(c.value_cents for c in registry if c.chip_set == registry.chip_set)


async def test_the_opening_count_is_confirmed_by_a_second_person_and_a_shortfall_alerts(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,), stacks=False)
        dealer = await table.sign_in(DEALER)
        expected = tray(table)
        smallest = min(expected)
        counted = {str(v): n - (v == smallest) for v, n in expected.items()}  # one chip short

        door = await table.daemon.on_console({"action": "count_chips", "session": dealer,
                                              "stage": "opening", "counted": {"500x": 1}})
        assert door["field"] == "counted" and "'500x' is not a chip value" in door["error"]
        odd = next(v for v in range(100, 100_000, 100) if v not in expected)
        door = await table.daemon.on_console({"action": "count_chips", "session": dealer,
                                              "stage": "opening", "counted": {str(odd): 1}})
        assert door["field"] == "counted"
        assert f"{format_rand(odd)} is not a chip value of the set in play" in door["error"]
        assert dealer_records(table) == []  # refused at the door: nothing journaled

        answer = await table.act(dealer, "count_chips", stage="opening", counted=counted)
        total = sum(v * n for v, n in expected.items())
        assert answer["detail"]["expected_cents"] == total
        assert answer["detail"]["difference_cents"] == -smallest

        own = await table.daemon.on_console({"action": "confirm_count", "session": dealer,
                                             "stage": "opening", "staff_id": D,
                                             "pin": DEALER["pin"]})
        assert not own["ok"] and f"{D} counted this tray: a second person" in own["error"]
        wrong = await table.daemon.on_console({"action": "confirm_count", "session": dealer,
                                               "stage": "opening", "staff_id": S,
                                               "pin": "0000"})
        assert wrong == {"ok": False, "error": "wrong staff id or PIN"}
        assert published(table, ChipsCounted.TYPE) == []

        done = await table.act(dealer, "confirm_count", stage="opening", staff_id=S,
                               pin=SUPERVISOR["pin"])
        assert done["detail"]["confirmed_by"] == S and done["detail"]["alert"] is True
        [message] = published(table, ChipsCounted.TYPE)
        assert (message["dealer_id"], message["supervisor_id"]) == (D, S)
        assert message["expected"] == {str(v): n for v, n in sorted(expected.items())}
        assert message["counted"] == counted
        assert (message["total_cents"], message["difference_cents"]) == (
            total - smallest, -smallest)
        assert message["tolerance_cents"] == 0 and message["over_tolerance"] is True
        [alert] = [a for a in published(table, "alert")
                   if a["kind"] == "chip_count_discrepancy"]
        assert alert["evidence"]["supervisor_id"] == S

        records = dealer_records(table)
        assert [(r["action"], r["by"]) for r in records] == [
            ("count_chips", D), ("confirm_count", D), ("confirm_count", S)]
        assert all("pin" not in r for r in records)  # the secret is never journaled
        journal = table.daemon.journal
        assert journal is not None
        failed = [r.payload for r in journal.records() if r.kind == "staff"
                  and r.payload["event"] == "sign_in_failed"]
        assert [(f["staff_id"], f["detail"]) for f in failed] == [
            (S, "confirming a chip count: wrong PIN")]
        again = await table.daemon.on_console({"action": "count_chips", "session": dealer,
                                               "stage": "opening", "counted": counted})
        assert "confirmed already" in again["error"]

    async with console_table(tmp_path) as table:  # a restart: rebuilt from the journal
        counts = table.status()["tallies"]["counts"]
        assert counts["opening"]["confirmed"] and counts["opening"]["supervisor_id"] == S


async def test_decks_received_opened_used_and_destroyed_before_a_witness(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,), stacks=False)
        dealer = await table.sign_in(DEALER)
        supervisor = await table.sign_in(SUPERVISOR)
        refused = await table.daemon.on_console({"action": "decks_received", "session": dealer,
                                                 "decks": 12})
        assert "is a supervisor's action" in refused["error"]
        await table.act(supervisor, "decks_received", decks=12, seals=["A1", "A2"],
                        lot="L-77", source="cage")
        await table.act(dealer, "decks_opened", decks=2, seals=["A1"])
        await table.act(dealer, "decks_used", decks=1, seals=["A1"])
        self_witness = await table.daemon.on_console({
            "action": "decks_destroyed", "session": supervisor, "decks": 1, "staff_id": S,
            "pin": SUPERVISOR["pin"]})
        assert "cannot witness their own destruction" in self_witness["error"]
        await table.act(supervisor, "decks_destroyed", decks=1, seals=["A1"], staff_id=D,
                        pin=DEALER["pin"])
        broken = await table.act(dealer, "decks_used", decks=3)
        assert broken["detail"]["balanced"] is False
        steps = published(table, DecksEvent.TYPE)
        assert [(s["kind"], s["decks"], s["by"], s["witness"]) for s in steps] == [
            ("received", 12, S, None), ("opened", 2, D, None), ("used", 1, D, None),
            ("destroyed", 1, S, D), ("used", 3, D, None)]
        # 12 received = 2 opened + 10 sealed; 2 opened = 4 used + -2 in play: broken
        assert (steps[-1]["sealed"], steps[-1]["in_play"], steps[-1]["awaiting"]) == (
            10, -2, 3)
        assert steps[-1]["problems"] == ["2 more decks used than opened"]
        [alert] = [a for a in published(table, "alert") if a["kind"] == "deck_balance"]
        assert "2 more decks used than opened" in alert["message"]
        position = table.status()["tallies"]["decks"]["position"]

    async with console_table(tmp_path) as table:
        assert table.status()["tallies"]["decks"]["position"] == position


async def test_the_dealer_cli_counts_and_a_supervisor_confirms_with_their_own_pin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,), stacks=False)
        sock = str(table.daemon.config.api.socket)
        pins = {}
        for person in (DEALER, SUPERVISOR):
            pins[person["staff_id"]] = tmp_path / f"pin-{person['staff_id']}"
            pins[person["staff_id"]].write_text(person["pin"] + "\n")
        expected = tray(table)
        counts = [f"--counted={format_rand(v)}={n}" for v, n in sorted(expected.items())]
        base = ["table", "dealer", "--socket", sock, "--staff-id", D, "--pin-file",
                str(pins[D]), "--stage", "opening"]
        assert await asyncio.to_thread(main, [*base[:2], "count_chips", *base[2:],
                                              *counts]) == 0
        no_second = await asyncio.to_thread(main, [*base[:2], "confirm_count", *base[2:]])
        assert no_second != 0 and "--confirm-by ID" in capsys.readouterr().err
        assert await asyncio.to_thread(main, [*base[:2], "confirm_count", *base[2:],
                                              "--confirm-by", S, "--confirm-pin-file",
                                              str(pins[S])]) == 0
        assert "difference cents: R0.00" in capsys.readouterr().out
        assert await asyncio.to_thread(main, ["table", "status", "--socket", sock]) == 0
        total = format_rand(sum(v * n for v, n in expected.items()))
        assert (f"  opening count: opening count of heat H1: {total} counted by {D}, {total}"
                " expected, no difference\n") in capsys.readouterr().out
        [message] = published(table, ChipsCounted.TYPE)
        assert message["difference_cents"] == 0 and not message["over_tolerance"]
        late = await asyncio.to_thread(main, [*base[:2], "confirm_count", *base[2:],
                                              "--confirm-by", S, "--confirm-pin-file",
                                              str(pins[S])])
        assert late == EXIT_REFUSED and "confirmed already" in capsys.readouterr().err

        # the deck steps as docs/console.md gives them, each under the person's own PIN
        def as_(who: str, action: str, *more: str) -> list[str]:
            return ["table", "dealer", action, "--socket", sock, "--staff-id", who,
                    "--pin-file", str(pins[who]), *more]
        seals = ["--seal", "A1", "--seal", "A2"]
        for argv in (as_(S, "decks_received", "--decks", "2", *seals, "--lot", "L-7",
                         "--from", "cage"),
                     as_(D, "decks_opened", "--decks", "2", *seals),
                     as_(D, "decks_used", "--decks", "2", *seals),
                     as_(S, "decks_destroyed", "--decks", "2", *seals, "--confirm-by", D,
                         "--confirm-pin-file", str(pins[D]))):
            assert await asyncio.to_thread(main, argv) == 0, capsys.readouterr().err
        steps = published(table, DecksEvent.TYPE)
        assert [(e["kind"], e["by"], e["witness"], e["seals"]) for e in steps] == [
            ("received", S, None, ["A1", "A2"]), ("opened", D, None, ["A1", "A2"]),
            ("used", D, None, ["A1", "A2"]), ("destroyed", S, D, ["A1", "A2"])]
        assert steps[0]["lot"] == "L-7" and steps[0]["source"] == "cage"
        assert all(e["problems"] == [] for e in steps)


async def test_the_house_tolerance_is_journaled_with_the_confirmation(tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,), stacks=False)
    config = tmp_path / "table.toml"  # the same table, restarted with a tolerance of R5.00
    config.write_text(config.read_text("utf-8") + "\n[chips]\ncount_tolerance_cents = 500\n",
                      "utf-8")
    async with console_table(tmp_path) as table:
        dealer = await table.sign_in(DEALER)
        expected = tray(table)
        smallest = min(expected)
        assert smallest <= 500  # one chip short is within R5.00
        counted = {str(v): n - (v == smallest) for v, n in expected.items()}
        await table.act(dealer, "count_chips", stage="opening", counted=counted)
        done = await table.act(dealer, "confirm_count", stage="opening", staff_id=S,
                               pin=SUPERVISOR["pin"])
        assert done["detail"]["alert"] is False
        [record] = [r for r in dealer_records(table) if r["action"] == "confirm_count"]
        assert record["tolerance_cents"] == 500
        [message] = published(table, ChipsCounted.TYPE)
        assert (message["difference_cents"], message["tolerance_cents"],
                message["over_tolerance"]) == (-smallest, 500, False)
        assert [a for a in published(table, "alert")
                if a["kind"] == "chip_count_discrepancy"] == []


async def test_a_witness_to_decks_destroyed_proves_themselves_by_tapping_their_card(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,), stacks=False)
        supervisor = await table.sign_in(SUPERVISOR)
        await table.act(supervisor, "decks_received", decks=2)
        await table.act(supervisor, "decks_opened", decks=2)
        await table.act(supervisor, "decks_used", decks=2)
        gate = table.daemon.gate
        assert gate is not None
        request = asyncio.ensure_future(table.daemon.on_console({
            "action": "decks_destroyed", "session": supervisor, "decks": 2,
            "method": "card", "wait": 5}))
        for _ in range(2000):  # until the gate waits for the tap (a guard against a hang)
            if gate.waiting_for is not None:
                break
            await asyncio.sleep(0.005)
        assert gate.waiting_for == "witnessing decks destroyed"
        table.ids.tap(DEALER["card"])
        answer = await request
        assert answer["ok"], answer
        [step] = [s for s in published(table, DecksEvent.TYPE) if s["kind"] == "destroyed"]
        assert (step["by"], step["witness"], step["awaiting"]) == (S, D, 0)
        [record] = [r for r in dealer_records(table) if r["action"] == "decks_destroyed"]
        assert (record["witness"], record["method"]) == (D, "card")
