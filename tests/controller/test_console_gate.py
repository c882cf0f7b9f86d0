"""The console gate: sign-in by PIN or employee card, sessions, participants' proofs.

A real table core behind a real journal-less ingest (the table service's own apply), so every
outcome here is what the core records."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.console_config import ConsoleConfig
from controller.console_gate import ConsoleGate
from controller.table_service import Applied, TableService
from drivers.readings import IdTap
from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.messages.table import ScoreRecorded
from game.staff import SIMULATOR_COST, LockoutPolicy, hash_secret
from runtime.settings_files import read_paytables, read_tournament

T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
SALT = b"gate-test-salt-01"
CARD_SALT = base64.urlsafe_b64encode(b"roster-card-salt").decode().rstrip("=")
REWARDS = "6001234567890123"
EMPLOYEE = "04A1B2C3D4E5F6"


class Table:
    """A table service fed through the gate the way the daemon feeds it."""

    def __init__(self, tmp: Path, *, simulated: bool = False, **console: Any) -> None:
        self.service = TableService(
            table_id="t07", settings=read_tournament(None), paytables=read_paytables(None),
            deal=DEFAULT_DEAL, registry=ChipRegistry([Chip(uid=b"\xe0" * 8, value_cents=2_500,
                                                           chip_set="house")],
                                                     chip_set="house"),
            lockout=LockoutPolicy(free=3))
        self.now = T0
        self.journal: list[tuple[str, dict[str, Any]]] = []
        self.gate = ConsoleGate(config=ConsoleConfig(**console), core=lambda: self.service.core,
                                ingest=self.ingest, now=lambda: self.now,
                                signatures=tmp / "signatures", simulated=simulated)

    async def ingest(self, kind: str, payload: Mapping[str, Any]) -> Applied:
        self.now += timedelta(seconds=1)
        self.journal.append((kind, dict(payload)))
        return self.service.apply(kind, payload, self.now)

    async def desk(self, **body: Any) -> Applied:
        return await self.ingest("desk", {"signer": "desk", **body})


def roster(version: int = 1) -> dict[str, Any]:
    return {"command": "staff_roster", "version": version, "card_salt": CARD_SALT, "members": [
        {"staff_id": "D12", "name": "Dineo", "role": "dealer",
         "pin_hash": hash_secret("4821", SALT)},
        {"staff_id": "S3", "name": "Sipho", "role": "supervisor",
         "pin_hash": hash_secret("9034", SALT),
         "card_hash": hash_secret(EMPLOYEE, base64.urlsafe_b64decode(CARD_SALT + "=="))},
    ]}


async def ready(tmp: Path, *, simulated: bool = False, **console: Any) -> Table:
    table = Table(tmp, simulated=simulated, **console)
    assert (await table.desk(**roster(), command_seq=1)).ok
    return table


async def test_a_pin_sign_in_gives_a_session_and_journals_no_secret(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    answer = await table.gate.handle("sign_in", {"staff_id": "D12", "pin": "4821"})
    assert answer["ok"], answer
    token = answer["detail"]["session"]
    assert answer["detail"] == {"session": token, "staff_id": "D12", "name": "Dineo",
                                "role": "dealer"}
    assert (await table.gate.session(token)) is not None
    kinds = [(k, p["event"]) for k, p in table.journal if k == "staff"]
    assert kinds == [("staff", "signed_in")]
    assert "4821" not in repr(table.journal) and token not in repr(table.journal)
    assert table.service.core.staff.signed_in.keys() == {"D12"}
    out = await table.gate.handle("sign_out", {"session": token})
    assert out["ok"] and await table.gate.session(token) is None
    again = await table.gate.handle("whoami", {"session": token})
    assert again == {"ok": False, "error": "not signed in"}  # a replayed token is dead


async def test_wrong_pins_back_off_that_terminal_for_that_id_and_say_how_long(
        tmp_path: Path) -> None:
    table = await ready(tmp_path)
    gate = table.gate
    for _ in range(2):
        wrong = await gate.handle("sign_in", {"staff_id": "S3", "pin": "0000"}, terminal="A")
        assert wrong == {"ok": False, "error": "wrong staff id or PIN"}
    third = await gate.handle("sign_in", {"staff_id": "S3", "pin": "0000"}, terminal="A")
    assert third["error"] == ("wrong staff id or PIN; too many failed sign-ins from this"
                              " screen: the next attempt waits 30 s")
    # the right PIN at that terminal waits too (unchecked, recorded, not counted) ...
    waits = await gate.handle("sign_in", {"staff_id": "S3", "pin": "9034"}, terminal="A")
    assert not waits["ok"] and waits["error"].startswith(
        "too many failed sign-ins from this screen for S3: wait 30 s and try again")
    assert table.journal[-1][1] == {
        "event": "sign_in_failed", "method": "pin", "staff_id": "S3", "terminal": "A",
        "waited": True, "detail": "refused unchecked: this terminal must wait 30 s for S3"}
    assert [p["terminal"] for k, p in table.journal if k == "staff"] == ["A"] * 4
    # ... while the same person signs in at another terminal
    elsewhere = await gate.handle("sign_in", {"staff_id": "S3", "pin": "9034"}, terminal="B")
    assert elsewhere["ok"], elsewhere
    # unknown ids count against the terminal, not against a real id
    for _ in range(3):
        unknown = await gate.handle("sign_in", {"staff_id": "X9", "pin": "1"}, terminal="C")
    assert unknown["error"].startswith("wrong staff id or PIN; too many failed sign-ins")
    assert table.journal[-1][1]["detail"] == "unknown staff id 'X9'"
    assert table.journal[-1][1]["staff_id"] is None
    assert (await gate.handle("sign_in", {"staff_id": "D12", "pin": "4821"},
                              terminal="C"))["ok"]
    # once waited, the next failure waits twice as long; a good sign-in clears the count
    table.now += timedelta(seconds=30)
    fourth = await gate.handle("sign_in", {"staff_id": "S3", "pin": "0000"}, terminal="A")
    assert fourth["error"].endswith("the next attempt waits 60 s")
    table.now += timedelta(seconds=60)
    assert (await gate.handle("sign_in", {"staff_id": "S3", "pin": "9034"},
                              terminal="A"))["ok"]
    assert table.service.core.staff.backed_off(table.now) == []


async def test_wrong_cards_back_off_the_terminal_before_the_next_tap(tmp_path: Path) -> None:
    table = await ready(tmp_path)

    async def tap(number: str) -> Mapping[str, Any]:
        pending = asyncio.create_task(table.gate.handle("sign_in", {"method": "card"},
                                                        terminal="A"))
        while table.gate.waiting_for is None:
            await asyncio.sleep(0.01)
        table.gate.offer_tap(IdTap(number=number, form="uid", device="ids", at_mono=0.0))
        return await pending

    for _ in range(3):
        wrong = await tap("04FFFFFFFFFFFF")
    assert wrong["error"] == ("this card is not an enrolled employee card; too many failed"
                              " sign-ins from this screen: the next attempt waits 30 s")
    assert [p["terminal"] for k, p in table.journal if k == "staff"] == ["A"] * 3
    refused = await table.gate.handle("sign_in", {"method": "card"}, terminal="A")
    assert "for unknown staff ids and cards: wait" in refused["error"]
    assert table.gate.waiting_for is None  # refused before waiting for a tap
    # a PIN sign-in at that terminal is not held up by the wrong cards
    assert (await table.gate.handle("sign_in", {"staff_id": "S3", "pin": "9034"},
                                    terminal="A"))["ok"]


@pytest.mark.parametrize(("request_", "error"), [
    ({"staff_id": 7, "reason": "r"}, "staff_id: give the staff id"),
    ({"staff_id": "S3", "terminal": ["A"], "reason": "r"}, "terminal: give the terminal"),
    ({"reason": "r"}, "staff_id: name the staff id"),
    ({"staff_id": "S3"}, "reason: say why"),
    ({"staff_id": "S3", "reason": "  "}, "reason: say why"),
])
async def test_a_malformed_lift_is_refused_naming_the_field(
        tmp_path: Path, request_: dict[str, Any], error: str) -> None:
    table = await ready(tmp_path)
    token = (await table.gate.handle("sign_in", {"staff_id": "S3", "pin": "9034"}))[
        "detail"]["session"]
    before = len(table.journal)
    answer = await table.gate.handle("unlock_staff", {"session": token, **request_})
    assert not answer["ok"] and answer["error"].startswith(error)
    assert len(table.journal) == before


@pytest.mark.parametrize(("request_", "error"), [
    ({"staff_id": "", "pin": "1"}, "give your staff id"),
    ({"staff_id": "D12"}, "give your PIN"),
    ({"staff_id": ["D12"], "pin": "4821"}, "give your staff id"),
    ({"staff_id": "D12", "pin": 4821}, "give your PIN"),
])
async def test_malformed_sign_ins_are_refused_and_change_nothing(
        tmp_path: Path, request_: dict[str, Any], error: str) -> None:
    table = await ready(tmp_path)
    before = len(table.journal)
    assert await table.gate.handle("sign_in", request_) == {"ok": False, "error": error}
    assert len(table.journal) == before


async def test_no_roster_no_sign_in(tmp_path: Path) -> None:
    table = Table(tmp_path)
    answer = await table.gate.handle("sign_in", {"staff_id": "D12", "pin": "4821"})
    assert not answer["ok"] and "no staff roster" in answer["error"]


async def test_an_employee_card_tap_signs_in_its_owner(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    pending = asyncio.create_task(table.gate.handle("sign_in", {"method": "card"}))
    while table.gate.waiting_for is None:
        await asyncio.sleep(0.01)
    assert table.gate.waiting_for == "staff sign-in"
    assert table.gate.offer_tap(IdTap(number=EMPLOYEE, form="uid", device="ids", at_mono=0.0))
    answer = await pending
    assert answer["ok"] and answer["detail"]["staff_id"] == "S3"
    pending = asyncio.create_task(table.gate.handle("sign_in", {"method": "card"}))
    while table.gate.waiting_for is None:
        await asyncio.sleep(0.01)
    table.gate.offer_tap(IdTap(number="04FFFFFFFFFFFF", form="uid", device="ids", at_mono=0.0))
    refused = await pending
    assert refused == {"ok": False, "error": "this card is not an enrolled employee card"}
    assert table.journal[-1][1]["detail"] == "card ****FFFF is not an enrolled employee card"
    assert not table.gate.offer_tap(IdTap(number=EMPLOYEE, form="uid", device="ids", at_mono=0.0))


async def test_a_tap_that_never_comes_times_out(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    answer = await table.gate.handle("sign_in", {"method": "card", "wait": 0.5})
    assert answer == {"ok": False, "error": "no card was tapped in time"}


async def test_an_idle_session_expires_and_is_signed_out(tmp_path: Path) -> None:
    table = await ready(tmp_path, session_minutes=10)
    token = (await table.gate.handle("sign_in", {"staff_id": "D12", "pin": "4821"}))[
        "detail"]["session"]
    table.now += timedelta(minutes=11)
    assert await table.gate.session(token) is None
    assert table.journal[-1][1]["detail"] == "session expired"
    assert table.service.core.staff.signed_in == {}


async def scored(table: Table, **seat: Any) -> str:
    """Open a heat, seat E1 and give it a recorded score (the desk's way in, no hands)."""
    assert (await table.desk(command="open_heat", stage="qualifying", heat_id="Q1")).ok
    assert (await table.desk(command="seat", entry_id="E1", seat=1, **seat)).ok
    core = table.service.core  # the score a finished entry leaves (hands: tests/game)
    core.unacknowledged["E1"] = ScoreRecorded(
        entry_id="E1", stage="qualifying", heat_id="Q1", table="t07", seat=1, score=215_000,
        hands=10, status="finished", markers_forfeited=0, last_hand_id="t07-000010", at="x")
    return "E1"


async def test_the_participant_taps_their_own_rewards_card(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    await scored(table, card_hash=hash_secret(REWARDS, SALT))

    async def tap(number: str) -> dict[str, Any]:
        pending = asyncio.create_task(table.gate.handle("acknowledge", {"entry_id": "E1"}))
        while table.gate.waiting_for is None:
            await asyncio.sleep(0.01)
        assert table.gate.waiting_for == "acknowledgement of E1"
        table.gate.offer_tap(IdTap(number=number, form="track2", device="ids", at_mono=0.0))
        return dict(await pending)

    wrong = await tap("6001234567899999")
    assert wrong == {"ok": False,
                     "error": "card ****9999 is not the rewards card of entry E1's player"}
    assert "E1" in table.service.core.unacknowledged
    right = await tap(REWARDS)
    assert right["ok"], right
    assert table.journal[-1] == ("participant", {"action": "acknowledge", "entry_id": "E1",
                                                 "method": "card"})
    assert REWARDS not in repr(table.journal)


def png(width: int = 60, height: int = 20) -> bytes:
    rows = b"".join(b"\x00" + bytes((x * y) % 256 for x in range(width)) for y in range(height))
    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                             0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b""))


async def test_pin_and_signature_acknowledgement_keeps_the_signature(tmp_path: Path) -> None:
    table = await ready(tmp_path, acknowledge_with=("pin", "signature"))
    await scored(table, pin_hash=hash_secret("7777", SALT))
    image = png()
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    assert (await table.gate.handle("acknowledge", {"entry_id": "E1", "pin": "1111",
                                                    "signature": url}))["error"] == (
        "that PIN is not the PIN of this entry's player")
    blank = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    assert "empty" in (await table.gate.handle("acknowledge", {
        "entry_id": "E1", "pin": "7777", "signature": blank}))["error"]
    ok = await table.gate.handle("acknowledge", {"entry_id": "E1", "pin": "7777",
                                                 "signature": url})
    assert ok["ok"], ok
    digest = hashlib.sha256(image).hexdigest()
    assert table.journal[-1][1] == {"action": "acknowledge", "entry_id": "E1",
                                    "method": "pin+signature", "evidence": digest}
    assert (tmp_path / "signatures" / f"E1-{digest[:16]}.png").read_bytes() == image


@pytest.mark.parametrize("simulated", [False, True])
async def test_a_virtual_persons_cheap_credential_works_only_at_a_simulated_table(
        tmp_path: Path, simulated: bool) -> None:
    table = await ready(tmp_path, simulated=simulated, acknowledge_with=("pin",))
    cheap = {"staff_id": "V1", "name": "virtual dealer", "role": "dealer",
             "pin_hash": hash_secret("2468", SALT, cost=SIMULATOR_COST)}
    grown = roster(2)
    assert (await table.desk(**{**grown, "members": [*grown["members"], cheap]},
                             command_seq=2)).ok
    answer = await table.gate.handle("sign_in", {"staff_id": "V1", "pin": "2468"})
    house = await table.gate.handle("sign_in", {"staff_id": "D12", "pin": "4821"})
    assert house["ok"], house  # the house's hashes are checked at either table
    await scored(table, pin_hash=hash_secret("7777", SALT, cost=SIMULATOR_COST))
    ack = await table.gate.handle("acknowledge", {"entry_id": "E1", "pin": "7777"})
    if simulated:
        assert answer["ok"] and ack["ok"], (answer, ack)
        return
    assert answer == {"ok": False, "error": "wrong staff id or PIN"}
    failed = [p for k, p in table.journal if k == "staff" and p["event"] == "sign_in_failed"]
    assert [p["detail"] for p in failed] == [(
        "the PIN was hashed at the simulator's KDF cost, which a table with a real device"
        " refuses: enrol it again at the desk")]
    assert ack == {"ok": False, "error": "entry E1's PIN was hashed at the simulator's KDF"
                   " cost, which a table with a real device refuses: enrol it again at the desk"}
    assert "E1" in table.service.core.unacknowledged


async def test_an_entry_without_the_required_credential_goes_to_the_desk(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    await scored(table)
    answer = await table.gate.handle("acknowledge", {"entry_id": "E1"})
    assert answer == {"ok": False, "error": "no rewards card is on record for entry E1:"
                                            " acknowledge at the desk"}
    assert (await table.gate.handle("acknowledge", {"entry_id": "E9"}))["error"] == (
        "entry 'E9' has no score waiting for acknowledgement at this table")


async def test_a_dispute_needs_a_note_and_is_journaled(tmp_path: Path) -> None:
    table = await ready(tmp_path)
    await scored(table)
    assert (await table.gate.handle("dispute", {"entry_id": "E1", "note": " "}))["error"] == (
        "say what is wrong with the score (a note is required)")
    answer = await table.gate.handle("dispute", {"entry_id": "E1", "note": "hand 7 short"})
    assert answer["ok"]
    assert table.service.core.disputed == {"E1": "hand 7 short"}
