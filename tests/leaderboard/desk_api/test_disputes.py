"""The desk API's dispute records: raise, list, show, rule (a ruling on a hand in play sends
its table the correcting command) and close; bad input is a clear 4xx that changes nothing.
On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from leaderboard.desk.sender import RecordingSender
from leaderboard.models import Entry
from tests.leaderboard.desk_api_support import Api
from tests.leaderboard.desk_helpers import FakeClock, local
from tests.leaderboard.test_dispute_records import HAND, seated_with_a_hand
from wire.signing import Signer


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local(2026, 7, 3, 14, 0))


async def test_a_dispute_raised_ruled_and_closed_through_the_api(
    engine: Engine, clock: FakeClock
) -> None:
    with Session(engine, expire_on_commit=False) as s:
        entry = seated_with_a_hand(s, clock)
    sender = RecordingSender(venue="gold-reef", signer=Signer.from_seed("desk-a", bytes(32)))
    api = Api(engine, clock, sender)
    api.token = api.sign_in("clerk-7", "clerk")
    status, body = await api.call("POST", "/dispute-records", {
        "entry_id": entry, "claim": "odds paid short", "hand_ids": [HAND]})
    assert status == 201, body
    number = body["dispute_id"]
    assert (body["raised_by_role"], body["recorded_by"], body["hands"][0]["net_cents"]) == (
        "participant", "clerk-7", 7_500)
    status, body = await api.call("POST", "/dispute-records", {
        "entry_id": entry, "claim": "x", "hand_ids": "t01-000003"})
    assert status == 400 and "field 'hand_ids': a list" in body["error"]
    status, body = await api.call("POST", f"/dispute-records/{number}/ruling", {
        "ruling": "hand_corrected", "net": 10_000, "why": "odds pay 2 to 1"})
    assert (status, body["role_needed"]) == (403, "supervisor")  # a clerk may not rule
    api.token = api.sign_in("S3", "supervisor")
    status, body = await api.call("POST", f"/dispute-records/{number}/ruling", {
        "ruling": "hand_corrected", "net": "lots", "why": "re-paid"})
    assert status == 400 and "net" in body["error"]
    status, body = await api.call("POST", f"/dispute-records/{number}/ruling", {
        "ruling": "hand_corrected", "net": 10_000, "why": "odds pay 2 to 1"})
    assert status == 201, body
    assert (body["status"], body["ruled_by"], body["sent"][0]["command"]) == (
        "ruled", "S3", "correct_hand")
    [sent] = sender.commands
    assert (sent.table, sent.args["net"], sent.args["dispute_id"]) == ("t01", 10_000, number)
    status, body = await api.call("GET", "/dispute-records?status=ruled")
    assert status == 200 and [d["dispute_id"] for d in body["disputes"]] == [number]
    status, body = await api.call("GET", f"/dispute-records/{number}")
    assert status == 200 and body["ruling_detail"]["command_seq"] == sent.seq
    status, body = await api.call("POST", f"/dispute-records/{number}/closing",
                                  {"outcome": "told"})
    assert status == 409 and "has not been applied by table t01 yet" in body["error"]
    for path, says in (("/dispute-records/99999999999999999999", "path field 'dispute_id'"),
                       ("/dispute-records/7", "no dispute")):
        status, body = await api.call("GET", path)
        assert status == 404 and body["error"].startswith(says)
    with Session(engine) as s:
        patron = s.get(Entry, entry).patron_id  # type: ignore[union-attr]
    status, body = await api.call("GET", f"/patrons/{patron}")
    assert status == 200 and [(d["dispute_id"], d["status"], d["ruling"]) for d in
                              body["disputes"]] == [(number, "ruled", "hand_corrected")]
    status, body = await api.call("GET", "/dispute-records?status=pending")
    assert status == 400 and "open, ruled, closed" in body["error"]
