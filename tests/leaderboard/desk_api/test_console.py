"""The desk API's console endpoints (issue 12): staff and their roster, participants'
credentials, desk acknowledgements, disputes and payout checks; bad input to each is a clear
4xx that changes nothing. A table daemon's core applies what the desk sends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from controller.table_service import TableService
from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.staff import secret_matches
from leaderboard.desk import DeskCommand
from leaderboard.desk.sender import RecordingSender
from leaderboard.models import AuditEntry, Dispute, Patron, PayoutCheck, Score, StaffRecord
from runtime.settings_files import read_paytables
from tests.leaderboard.desk_api_support import Api
from tests.leaderboard.desk_helpers import FakeClock, add_score, local, settings
from tests.leaderboard.ingest_support import FakeTable, enroll
from wire.envelope import verify_envelope
from wire.signing import KeyRing, Signer

DESK = Signer.from_seed("desk-a", bytes(range(32)))
DEALER = {"staff_id": "D12", "name": "Nandi Dlamini", "role": "dealer", "pin": "4821",
          "card": "04A1B2C3"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local(2026, 7, 3, 14, 0))


@pytest.fixture
def sender() -> RecordingSender:
    return RecordingSender(venue="gold-reef", signer=DESK)


def table_service() -> TableService:
    return TableService(table_id="t01", settings=settings(), paytables=read_paytables(None),
                        deal=DEFAULT_DEAL, registry=ChipRegistry(
                            [Chip(uid=bytes(8), value_cents=2_500, chip_set="test")],
                            chip_set="test"))


def apply_at(table: TableService, sender: RecordingSender, command: DeskCommand,
             clock: FakeClock) -> Any:
    """What the table does with the envelope the desk sent for ``command``."""
    sent = next(s for s in sender.sent if s.command == command)
    assert sent.envelope is not None
    envelope = verify_envelope(sent.envelope.encode(), KeyRing([DESK.public_key]))
    body = {**envelope.body, "signer": envelope.signer, "command_seq": envelope.seq}
    return table.apply("desk", body, clock.now)


async def test_staff_are_enrolled_listed_and_their_roster_applied_by_a_table(
    engine: Engine, clock: FakeClock, sender: RecordingSender
) -> None:
    api = Api(engine, clock, sender)  # desk-1, a manager: roster version 1, sent as manager
    status, body = await api.call("POST", "/staff", DEALER)
    assert status == 201
    assert (body["staff_id"], body["pin"], body["card"], body["roster_version"]) == (
        "D12", True, True, 2)
    assert "4821" not in json.dumps(body) and "04A1B2C3" not in json.dumps(body)
    await api.call("POST", "/staff", {"staff_id": "S1", "name": "Sipho", "role": "supervisor",
                                      "pin": "99887766"})
    status, body = await api.call("POST", "/staff/S1/disable", {})
    assert (status, body["active"], body["roster_version"]) == (200, False, 4)
    status, body = await api.call("POST", "/staff/S1/pin", {"pin": "1234"})
    assert (status, body["roster_version"]) == (200, 5)
    status, body = await api.call("GET", "/staff")
    assert [(m["staff_id"], m["role"], m["active"]) for m in body["staff"]] == [
        ("D12", "dealer", True), ("S1", "supervisor", False), ("desk-1", "manager", True)]
    assert "hash" not in json.dumps(body) and "scrypt" not in json.dumps(body)

    enroll(engine, FakeTable("t01"))
    status, body = await api.call("POST", "/staff/roster", {})
    assert (status, body["roster_version"], [s["table"] for s in body["sent"]]) == (
        201, 5, ["t01"])
    [command] = sender.commands
    table = table_service()
    applied = apply_at(table, sender, command, clock)
    assert applied.ok, applied.error
    assert dict(applied.detail) == {"roster_version": 5, "staff": 3}
    assert [(m["staff_id"], m["role"]) for m in command.args["members"]] == [
        ("D12", "dealer"), ("S1", "supervisor"), ("desk-1", "manager")]
    # The same version again: recorded and sent, and the table says why it refuses it.
    status, _ = await api.call("POST", "/staff/roster", {"table": "t01"})
    assert status == 201
    refused = apply_at(table, sender, sender.commands[-1], clock)
    assert not refused.ok and "version 5 is not newer" in str(refused.error)


async def test_credentials_seating_and_a_desk_acknowledgement(
    engine: Engine, clock: FakeClock, sender: RecordingSender
) -> None:
    api = Api(engine, clock, sender)
    status, body = await api.call("POST", "/patrons", {
        "name": "Thabo Mokoena", "id_kind": "id_document", "id_number": "8001015009087",
        "birth_date": "1980-01-01", "rewards_card": "5555 6666",
        "pin": "0042"})
    assert status == 201
    pid = body["patron_id"]
    status, body = await api.call("POST", f"/patrons/{pid}/credentials",
                                  {"pin": "1357"})
    assert (status, body) == (200, {"patron_id": pid, "card": True, "pin": True, "sent": []})
    entry = (await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"}))[1]
    await api.call("POST", "/heats", {"table": "t01", "stage": "qualifying"})
    status, _ = await api.call("POST", "/seatings", {"entry_id": entry["entry_id"],
                                                     "table": "t01", "seat": 2})
    assert status == 201
    table = table_service()
    for command in sender.commands:
        applied = apply_at(table, sender, command, clock)
        assert applied.ok, applied.error
    seat = sender.commands[-1]
    assert {"card_hash", "pin_hash"} <= set(seat.args)
    assert "5555" not in json.dumps(dict(seat.args)) and "1357" not in json.dumps(
        dict(seat.args))
    # A card changed after seating goes to the table, signed, and replaces the seat's (D330).
    status, body = await api.call("POST", f"/patrons/{pid}/credentials",
                                  {"rewards_card": "6012 3456 7890 1234"})
    changed = sender.commands[-1]
    assert (status, body["sent"]) == (200, [{"table": "t01", "seq": changed.seq,
                                             "entry_id": entry["entry_id"]}])
    assert changed.command == "participant_proofs"
    applied = apply_at(table, sender, changed, clock)
    assert applied.ok, applied.error
    proof = table.core.proofs[entry["entry_id"]]
    assert secret_matches("6012345678901234", proof.card_hash or "")
    assert secret_matches("1357", proof.pin_hash or "") and proof.seat == 2
    status, body = await api.call("GET", f"/patrons/{pid}")
    assert [(e["code"], e["state"], e["score"]) for e in body["entries"]] == [
        (entry["code"], "seated", None)]

    with Session(engine) as s:
        add_score(s, entry["entry_id"], 23_450, stage="qualifying", acknowledged=None,
                  recorded=local(2026, 7, 3, 15, 0))
    status, body = await api.call("POST", "/acknowledgements", {
        "entry_id": entry["entry_id"], "method": "desk_id_check"})
    assert status == 201
    assert (body["table"], body["entry_id"], body["method"]) == (
        "t01", entry["entry_id"], "desk_id_check")
    ack = sender.commands[-1]
    assert (ack.command, dict(ack.args)) == ("ack_score", {"entry_id": entry["entry_id"],
                                                           "method": "desk_id_check"})
    # This table has played no hand for the entry: it reads the command and says so.
    applied = apply_at(table, sender, ack, clock)
    assert not applied.ok and "no unacknowledged score" in str(applied.error)
    # Once the central records have the acknowledgement, the patron's record says so (D333).
    with Session(engine) as s:
        score = s.get(Score, entry["entry_id"])
        assert score is not None
        score.acknowledged_at = local(2026, 7, 3, 15, 5).astimezone(UTC)  # as ingest stores
        score.ack_method = "desk_id_check"
        s.commit()
    status, body = await api.call("GET", f"/patrons/{pid}")
    shown = body["entries"][0]
    assert (shown["state"], shown["status"], shown["score"]["score"],
            shown["score"]["ack_method_text"], shown["score"]["acknowledged_local"]) == (
        "acknowledged", "seated", "R234.50", "ID checked at the desk", "2026-07-03 15:05")


async def test_disputes_and_payout_checks_over_http(
    engine: Engine, clock: FakeClock, sender: RecordingSender
) -> None:
    at = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)
    with Session(engine) as s:
        s.add(Dispute(entry_id="E1", table_id="t01", seq=5, stage="qualifying", heat_id="h",
                      score_cents=23_450, note="hand 12 paid short", at=at))
        s.add(PayoutCheck(hand_id="t01-000002", table_id="t01", seq=7, heat_id="h",
                          outcome="overridden", mismatches=[], unverifiable=[], by="S1",
                          reason="walked away", at=at))
        s.commit()
    api = Api(engine, clock, sender, staff_id="supervisor-1", role="supervisor")
    status, body = await api.call("GET", "/disputes?open=1")
    assert status == 200 and [d["entry_id"] for d in body["disputes"]] == ["E1"]
    status, body = await api.call("POST", "/dispute-resolutions", {
        "entry_id": "E1", "resolution": "hand replayed; the score stands"})
    assert status == 201 and body["resolved"][0]["resolved_by"] == "supervisor-1"
    assert (await api.call("GET", "/disputes?open=true"))[1] == {"disputes": []}
    status, body = await api.call("GET", "/payouts?overridden=yes")
    assert status == 200 and [(p["hand_id"], p["by"]) for p in body["payouts"]] == [
        ("t01-000002", "S1")]


@pytest.mark.parametrize("case", [
    ("POST", "/staff", {**DEALER, "pin": "12"}, 400, "PIN must be 4 to 8 digits"),
    ("POST", "/staff", {**DEALER, "pin": 4821}, 400, "field 'pin': a non-empty string"),
    ("POST", "/staff", {**DEALER, "role": "boss"}, 400, "role 'boss' is not one of"),
    ("POST", "/staff", {**DEALER, "pin": None, "card": None}, 400, "needs a PIN or an"),
    ("POST", "/staff", {**DEALER, "actor": ""}, 400, "field 'actor'"),
    ("POST", "/staff/D99/disable", {}, 404, "no staff member 'D99'"),
    ("POST", "/staff/D12/pin", {}, 400, "field 'pin'"),
    ("POST", "/staff/roster", {}, 409, "no table is enrolled"),
    ("POST", "/staff/roster", {"table": "t 1"}, 400, "table"),
    ("POST", "/patrons/P-none/credentials", {"pin": "1234"}, 404,
     "no patron 'P-none'"),
    ("POST", "/patrons", {"name": "Thabo Mokoena", "id_kind": "id_document",
                          "id_number": "8001015009087", "birth_date": "1980-01-01",
                          "rewards_card": "RC-100001"}, 400,
     "field 'rewards_card': RC-100001: a rewards card reads as 8 to 19 digits or a hex UID"),
    ("POST", "/patrons/P-none/credentials", {"pin": "12x4"}, 404,
     "no patron"),
    ("POST", "/acknowledgements", {"entry_id": "E-none", "method": "desk_id_check"}, 404,
     "no entry 'E-none'"),
    ("POST", "/acknowledgements", {"entry_id": "E-none", "method": "wave"}, 400,
     "method 'wave' is not one of"),
    ("POST", "/dispute-resolutions", {"entry_id": "E9", "resolution": "x"}, 404,
     "no dispute on record"),
    ("POST", "/dispute-resolutions", {"entry_id": "E9"}, 400,
     "field 'resolution'"),
    ("GET", "/disputes?open=perhaps", None, 400, "field 'open': true or false"),
])
async def test_bad_console_requests_are_refused_clearly_and_change_nothing(
    engine: Engine, clock: FakeClock, sender: RecordingSender,
    case: tuple[str, str, Any, int, str]
) -> None:
    method, path, body, status, words = case
    api = Api(engine, clock, sender)  # desk-1, signed in: one member, two audit rows
    got, answer = await api.call(method, path, body)
    assert (got, words in answer.get("error", "")) == (status, True), answer
    assert "4821" not in json.dumps(answer)
    with Session(engine) as s:
        assert s.scalars(select(StaffRecord.staff_id)).all() == ["desk-1"]
        assert s.scalars(select(AuditEntry.action).order_by(AuditEntry.id)).all() == [
            "staff.enrolled", "desk.signed_in"]
        assert s.scalar(select(func.count()).select_from(Patron)) == 0
    assert sender.commands == []
