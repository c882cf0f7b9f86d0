"""The desk's HTTP API and its command sender.

httpx (needed by starlette.testclient.TestClient) is not installed in the project venv, so the
routes are driven through their ASGI interface directly (`desk_api_support.Api`): the requests a
client would send, routing, authentication and status codes included.
"""

from __future__ import annotations

import asyncio
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from controller.table_service import TableService
from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from leaderboard import desk
from leaderboard.db import make_engine
from leaderboard.desk import DeskCommand
from leaderboard.desk.sender import DeskSender, NullSender, RecordingSender, SendError
from leaderboard.desk_api.http import Body, Result
from leaderboard.desk_api.routes import _DeskApi
from leaderboard.models import Entry, Refusal
from leaderboard.projections import project
from leaderboard.standings.view import ViewOptions, standings
from leaderboard.web import StandingsFeed
from runtime.settings_files import read_paytables
from tests.fixtures.services import MqttBroker
from tests.leaderboard.desk_api_support import Api, enrol_desk_staff
from tests.leaderboard.desk_fields import final_field, qualifying_field
from tests.leaderboard.desk_helpers import FakeClock, add_score, local, register, settings
from wire.envelope import seal, verify_envelope
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics

DESK = Signer.from_seed("desk-a", bytes(range(32)))
ADULT = {"name": "Thabo Mokoena", "id_kind": "id_document", "id_number": "8001015009087",
         "birth_date": "1980-01-01"}


def _nothing(_s: Session, _b: Body, _r: object) -> Result:
    return Result({})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local(2026, 7, 3, 14, 0))


async def test_a_signed_in_session_is_required(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    status, body = await api.call("GET", "/prizes", token=None)
    assert (status, body["reason"]) == (401, "no_session")
    status, body = await api.call("GET", "/prizes", token=api.token[:-1] + "z")
    assert (status, body["reason"]) == (401, "unknown_session")
    status, body = await api.call("GET", "/prizes")
    assert (status, body) == (200, {"prizes": []})
    with pytest.raises(KeyError, match=r"not in leaderboard\.desk\.permissions"):
        _DeskApi(engine, settings(), NullSender(), clock).endpoint("prizes.steal", _nothing)


async def test_register_check_and_refusals(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    status, body = await api.call("POST", "/patrons", ADULT)
    assert status == 201 and body["patron_id"].startswith("P-")
    pid = body["patron_id"]
    status, body = await api.call("GET", f"/patrons/{pid}")
    assert (status, body) == (200, {"patron_id": pid, "name": "Thabo Mokoena",
                                    "id_kind": "id_document", "standing": "clear",
                                    "standing_reason": None, "documents": ["id_document"],
                                    "card": False, "pin": False, "entries": [],
                                    "disputes": []})
    assert (await api.call("GET", "/patrons/P-none"))[0] == 404
    status, body = await api.call("POST", "/patrons", ADULT)
    assert status == 409 and pid in body["error"]
    status, body = await api.call("POST", "/patrons", {**ADULT, "birth_date": None})
    assert (status, body["error"]) == (400, "field 'birth_date': a non-empty string is required")
    status, body = await api.call("POST", "/patrons", raw=b"{not json")
    assert status == 400 and "not JSON" in body["error"]
    status, body = await api.call("POST", "/patrons", [1, 2])
    assert (status, body["error"]) == (400, "the request body must be a JSON object")
    young = {**ADULT, "id_number": "0807045009087", "birth_date": "2008-07-04"}
    status, body = await api.call("POST", "/patrons", young)
    assert status == 403
    assert body["reasons"] == ["under 18 (rule 1): born 2008-07-04, 18 only on 2026-07-04"]
    with Session(engine) as s:
        refusal = s.get(Refusal, body["refusal_id"])
        assert refusal is not None and refusal.context == "registration"

    status, body = await api.call("POST", "/lists", {
        "kind": "self_exclusion", "source": "NGB", "source_date": "2026-07-01",
        "csv": "id_number,name\n8001015009087,Thabo Mokoena\nxx,Bad\n"})
    assert status == 400 and "self_exclusion list from NGB:3:" in body["error"]
    status, body = await api.call("POST", "/lists", {
        "kind": "self_exclusion", "source": "NGB", "source_date": "2026-07-01",
        "csv": "8001015009087,Thabo Mokoena\n"})
    assert (status, body["rows"]) == (201, 1)
    assert (body["rescreen"]["checked"], body["rescreen"]["refused"]) == (1, [pid])
    status, body = await api.call("POST", "/check", {"patron_id": pid})
    assert status == 200 and not body["eligible"]
    assert body["reasons"] == ["on the self-exclusion list (rule 2): NGB, dated 2026-07-01"]
    status, body = await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"})
    assert status == 403 and "self-exclusion" in body["error"]
    with Session(engine) as s:
        assert s.scalars(select(Refusal.context).order_by(Refusal.id)).all() == [
            "registration", "rescreen", "check", "buy_in"]


async def test_buy_seat_and_signed_commands(engine: Engine, clock: FakeClock) -> None:
    sender = RecordingSender(venue="gold-reef", signer=DESK)
    api = Api(engine, clock, sender)
    pid = (await api.call("POST", "/patrons", ADULT))[1]["patron_id"]
    clock.now = local(2026, 7, 3, 12, 59)
    status, body = await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"})
    assert status == 409 and "no buy-in at 2026-07-03 12:59" in body["error"]
    clock.now = local(2026, 7, 3, 13, 0)
    status, entry = await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"})
    assert status == 201
    assert (entry["heat_day"], entry["buy_in_cents"]) == ("2026-07-03", 10_000)
    status, heat = await api.call("POST", "/heats", {"table": "t01", "stage": "qualifying"})
    assert status == 201
    status, seat = await api.call("POST", "/seatings", {"entry_id": entry["entry_id"],
                                                        "table": "t01", "seat": 2})
    assert status == 201
    assert (seat["seat"], seat["heat_id"], seat["player"]) == (2, heat["heat_id"], pid)
    status, body = await api.call("POST", "/seatings", {"entry_id": entry["entry_id"],
                                                        "table": "t01", "seat": "2"})
    assert status == 400 and "'seat'" in body["error"]
    assert [c.command for c in sender.commands] == ["open_heat", "seat"]
    envelope = sender.sent[1].envelope
    assert envelope is not None
    ring = KeyRing([DESK.public_key])
    verified = verify_envelope(envelope.encode(), ring)
    assert (verified.venue, verified.table, verified.type, verified.seq) == (
        "gold-reef", "desk-a", "seat", seat["seq"])
    assert verified.body == {"table": "t01", "command": "seat",
                             "command_id": f"desk-a-{seat['seq']}",
                             "entry_id": entry["entry_id"], "seat": 2,
                             "entry_code": entry["code"]}
    status, body = await api.call("GET", "/audit?limit=2")
    assert status == 200
    assert [a["action"] for a in body["audit"]] == ["entry.seated", "heat.opened"]
    status, body = await api.call("POST", "/unseatings", {"entry_id": entry["entry_id"]})
    assert status == 400 and "'why'" in body["error"]
    status, left = await api.call("POST", "/unseatings", {
        "entry_id": entry["entry_id"], "why": "patron left"})
    assert status == 201
    assert left == {"table": "t01", "seq": left["seq"], "seat": 2, "code": entry["code"],
                    "entry_id": entry["entry_id"], "reason": "patron left"}
    unseat = verify_envelope(sender.sent[2].envelope.encode(), ring)  # type: ignore[union-attr]
    assert unseat.body == {"table": "t01", "command": "unseat",
                           "command_id": f"desk-a-{left['seq']}", "seat": 2,
                           "entry_id": entry["entry_id"], "reason": "patron left"}


async def test_refunds_and_a_table_fault_and_the_table_applies_them(engine: Engine,
                                                                     clock: FakeClock) -> None:
    sender = RecordingSender(venue="gold-reef", signer=DESK)
    api = Api(engine, clock, sender)
    pid = (await api.call("POST", "/patrons", ADULT))[1]["patron_id"]
    clock.now = local(2026, 7, 3, 13, 0)
    mistaken = (await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"}))[1]
    played = (await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"}))[1]
    status, body = await api.call("POST", "/refunds", {"entry_id": mistaken["entry_id"]})
    assert status == 400 and "'why'" in body["error"]
    status, body = await api.call("POST", "/refunds", {
        "entry_id": mistaken["entry_id"], "why": "bought twice"})
    assert (status, body) == (201, {"entry_id": mistaken["entry_id"], "code": mistaken["code"],
                                    "refund_cents": 10_000})
    status, body = await api.call("POST", "/refunds", {
        "entry_id": mistaken["entry_id"], "why": "bought twice"})
    assert status == 409 and "already been refunded" in body["error"]
    await api.call("POST", "/heats", {"table": "t01", "stage": "qualifying"})
    await api.call("POST", "/seatings", {"entry_id": played["entry_id"], "table": "t01",
                                         "seat": 3})
    status, fault = await api.call("POST", "/table-faults", {
        "table": "t01", "why": "chip reader dead"})
    assert status == 201
    assert (fault["refunded"], fault["released"]) == ({played["entry_id"]: 10_000}, [])
    assert [c.command for c in sender.commands] == ["open_heat", "seat", "unseat", "close_heat"]
    assert [c.seq for c in sender.commands[2:]] == fault["seqs"]
    # The table, back in service, verifies and applies what it was sent (between hands).
    table = TableService(table_id="t01", settings=settings(), paytables=read_paytables(None),
                         deal=DEFAULT_DEAL, registry=ChipRegistry(
                             [Chip(uid=bytes(8), value_cents=2_500, chip_set="test")],
                             chip_set="test"))
    ring = KeyRing([DESK.public_key])
    events = []
    for sent in sender.sent:
        assert sent.envelope is not None
        verified = verify_envelope(sent.envelope.encode(), ring)
        applied = table.apply("desk", {**verified.body, "signer": verified.signer,
                                       "command_seq": verified.seq}, clock.now)
        assert applied.ok, applied.error
        events += [m.type for m in applied.messages]
    assert [e for e in events if e != "command.result"][-2:] == ["entry.unseated", "heat.closed"]
    assert table.status()["heat"] is None


def scored_entries(engine: Engine, clock: FakeClock) -> dict[str, str]:
    """Four entries of one patron: scores of R2,250 and R5,000 acknowledged at table t09, one
    of R9,900 awaiting acknowledgement, and one with no score yet."""
    recorded = local(2026, 7, 3, 15, 0)
    with Session(engine, expire_on_commit=False) as s:
        pid = register(s, clock, "8001015009087")
        names = ("disputed", "voided", "unacked", "unscored")
        ids = {n: desk.buy_entry(s, settings(), clock, actor="desk-1", patron_id=pid,
                                 payment="cash").entry_id
               for n in names}
        for seq, (name, cents, acked) in enumerate((("disputed", 225_000, True),
                                                    ("voided", 500_000, True),
                                                    ("unacked", 990_000, False)), start=1):
            add_score(s, ids[name], cents, stage="qualifying", recorded=recorded,
                      acknowledged=recorded if acked else None, table="t09", seq=seq)
    return ids


def _board(doc: dict[str, Any]) -> dict[str, tuple[int, bool]]:
    return {r["entry_id"]: (r["score_cents"], r["acknowledged"]) for r in doc["board"]["rows"]}


async def standings_showing(api: Api, feed: StandingsFeed, entry_id: str) -> dict[str, Any]:
    """GET /api/standings once the feed, recomputed after the desk's writes, shows the entry
    on the board (each desk write raises a recomputation; the timeout only stops a hang)."""
    while True:
        status, doc = await api.call("GET", "/api/standings", root="")
        assert status == 200
        if entry_id in _board(doc):
            return doc
        assert await feed.wait_newer(doc["version"], timeout=30) is not None


async def test_score_rulings_void_and_correct_and_the_standings_count_them(
        engine: Engine, clock: FakeClock) -> None:
    ids = await asyncio.to_thread(scored_entries, engine, clock)
    clock.now = local(2026, 7, 3, 16, 0)
    feed = StandingsFeed(lambda: standings(engine, settings(), ViewOptions(
        venue="gold-reef", title="Main floor"), now=clock()), debounce=0)
    await feed.refresh()
    runner = asyncio.create_task(feed.run())
    api = Api(engine, clock, NullSender(), feed, staff_id="pit-boss", role="supervisor")
    try:
        status, before = await api.call("GET", "/api/standings", root="")
        assert status == 200
        assert _board(before) == {ids["voided"]: (500_000, True),
                                  ids["disputed"]: (225_000, True)}
        assert before["board"]["awaiting_acknowledgement"] == 1

        void = {"entry_id": ids["voided"], "why": "dispute upheld: misdeal"}
        assert (await api.call("POST", "/score-voids", void, token=None))[0] == 401
        status, body = await api.call("POST", "/score-voids", {**void, "why": None})
        assert (status, body["error"]) == (400, "field 'why': a non-empty string is required")
        status, body = await api.call("POST", "/score-voids", {**void, "entry_id": "E-nope"})
        assert status == 404 and "no entry 'E-nope'" in body["error"]
        status, body = await api.call("POST", "/score-voids", {**void,
                                                               "entry_id": ids["unscored"]})
        assert (status, body["error"]) == (404, f"entry {ids['unscored']} has no recorded"
                                                " score")
        status, body = await api.call("POST", "/score-voids", void)
        with Session(engine) as s:  # the answer names the entry by its code too (D331)
            voided = s.get(Entry, ids["voided"])
            assert voided is not None
        assert (status, body) == (201, {
            "entry_id": ids["voided"], "code": voided.entry_code, "ruling": "voided",
            "stage": "qualifying",
            "table": "t09", "recorded_cents": 500_000, "counted_cents": None,
            "at": clock.now.isoformat(), "why": "dispute upheld: misdeal"})
        status, body = await api.call("POST", "/score-voids", void)
        assert status == 409 and f"entry {ids['voided']}'s score is voided" in body["error"]

        fix = {"entry_id": ids["disputed"], "score_cents": 150_000,
               "why": "dispute upheld: chips miscounted"}
        assert (await api.call("POST", "/score-corrections", fix, token="x" * 20))[0] == 401
        for bad in ("12", 12.5, True, None):
            status, body = await api.call("POST", "/score-corrections",
                                          {**fix, "score_cents": bad})
            assert (status, body["error"]) == (
                400, f"field 'score_cents': a whole number is required, got {bad!r}")
        status, body = await api.call("POST", "/score-corrections", {**fix, "why": " "})
        assert (status, body["error"]) == (400, "field 'why': a non-empty string is required")
        status, body = await api.call("POST", "/score-corrections", {**fix, "score_cents": -1})
        assert status == 400 and "0 or more cents, not -1" in body["error"]
        assert (await api.call("POST", "/score-corrections",
                               {**fix, "entry_id": "E-nope"}))[0] == 404
        status, body = await api.call("POST", "/score-corrections",
                                      {**fix, "entry_id": ids["voided"]})
        assert status == 409 and "is voided" in body["error"]
        status, body = await api.call("POST", "/score-corrections", fix)
        with Session(engine) as s:
            disputed = s.get(Entry, ids["disputed"])
            assert disputed is not None
        assert (status, body) == (201, {
            "entry_id": ids["disputed"], "code": disputed.entry_code, "ruling": "corrected",
            "stage": "qualifying",
            "table": "t09", "recorded_cents": 225_000, "counted_cents": 150_000,
            "at": clock.now.isoformat(), "why": "dispute upheld: chips miscounted"})
        status, body = await api.call("POST", "/score-corrections",
                                      {**fix, "entry_id": ids["unacked"],
                                       "score_cents": 99_000})
        assert (status, body["counted_cents"]) == (201, 99_000)

        # The desk's writes refresh the feed: the page counts the rulings, not the table's
        # figures; the unacknowledged score, corrected, counts as acknowledged (rule 23).
        after = await standings_showing(api, feed, ids["unacked"])
        assert _board(after) == {ids["disputed"]: (150_000, True),
                                 ids["unacked"]: (99_000, True)}
        rows = {r["entry_id"]: r for r in after["board"]["rows"]}
        assert rows[ids["disputed"]]["score"] == "R1,500.00"
        assert (after["board"]["voided"], after["board"]["awaiting_acknowledgement"]) == (1, 0)
        status, body = await api.call("GET", "/audit?limit=3")
        assert [(a["action"], a["actor"], a["detail"]["entry_id"], a["detail"]["why"])
                for a in body["audit"]] == [
            ("score.corrected", "pit-boss", ids["unacked"], "dispute upheld: chips miscounted"),
            ("score.corrected", "pit-boss", ids["disputed"], "dispute upheld: chips miscounted"),
            ("score.voided", "pit-boss", ids["voided"], "dispute upheld: misdeal")]
    finally:
        await feed.close()
        await runner


class FailingSender:
    """A broker that cannot be reached."""

    async def send(self, command: DeskCommand) -> None:
        raise SendError(f"{command.command} seq {command.seq} is recorded but was not delivered")


async def test_an_undelivered_command_is_kept_and_can_be_resent(engine: Engine,
                                                                clock: FakeClock) -> None:
    api = Api(engine, clock, FailingSender())
    status, body = await api.call("POST", "/heats", {"table": "t02", "stage": "qualifying"})
    assert status == 502 and "not delivered" in body["error"]
    seq = body["recorded"]["seq"]
    sender = RecordingSender()
    api = Api(engine, clock, sender)
    status, body = await api.call("POST", f"/commands/{seq}/resend", {})
    assert (status, body) == (200, {"table": "t02", "command": "open_heat", "seq": seq})
    assert sender.commands[0].seq == seq and sender.commands[0].args["stage"] == "qualifying"
    assert (await api.call("POST", "/commands/999/resend", {}))[0] == 404


async def test_places_draw_and_replay(engine: Engine, clock: FakeClock) -> None:
    with Session(engine, expire_on_commit=False) as s:
        await asyncio.to_thread(final_field, s, clock)
    api = Api(engine, clock, NullSender())
    status, body = await api.call("GET", "/places/semi_final")
    assert status == 200 and len(body["places"]) == 12
    assert [p["position"] for p in body["places"]] == list(range(1, 13))
    status, body = await api.call("GET", "/places/final")
    assert status == 200 and [p["seat"] for p in body["places"]] == [None] * 6
    assert (await api.call("GET", "/places/qualifying"))[0] == 404
    enrol_desk_staff(engine, clock, "sup-1", "supervisor")
    status, committed = await api.call("POST", "/draw-commitments",
                                       {"stage": "final", "witness": "sup-1"})
    assert status == 201
    chosen = {"stage": "final", "commitment_id": committed["commitment_id"]}
    status, drawn = await api.call("POST", "/draws", chosen)
    assert status == 201 and not drawn["reused"]
    assert sorted(drawn["seats"].values()) == [1, 2, 3, 4, 5, 6]
    status, again = await api.call("POST", "/draws", chosen)
    assert status == 200 and again["reused"] and again["seats"] == drawn["seats"]
    status, replay = await api.call("GET", f"/draws/{drawn['draw_id']}/replay")
    assert status == 200 and replay["matches"] and replay["stored"] == drawn["seats"]
    assert (await api.call("GET", "/draws/x/replay"))[0] == 404
    status, body = await api.call("POST", "/seat-choices", {
        "entry_id": next(iter(drawn["seats"])), "heat": 1, "seat": 1})
    assert status == 400 and "drawn" in body["error"]


async def test_prizes_award_and_claim(engine: Engine, clock: FakeClock) -> None:
    with Session(engine, expire_on_commit=False) as s:
        await asyncio.to_thread(qualifying_field, s, clock)
    a_number = "5001015009087"  # patron A of qualifying_field: the week's top score
    clock.now = local(2026, 7, 10, 9, 0)
    api = Api(engine, clock, NullSender())
    status, body = await api.call("POST", "/prizes", {"kind": "weekly", "week": 1,
                                                      "prize_cents": 500_000})
    assert status == 201
    (award,) = body["prizes"]
    assert (award["amount_cents"], award["status"]) == (500_000, "unclaimed")
    assert datetime.fromisoformat(award["deadline"]) == local(2026, 7, 26, 0, 0)
    status, body = await api.call("POST", "/prizes", {"kind": "weekly", "week": 1,
                                                      "prize_cents": 500_000})
    assert status == 409
    status, body = await api.call("POST", "/prizes", {"kind": "lottery"})
    assert status == 400 and "unknown prize kind" in body["error"]
    path = f"/prizes/{award['award_id']}/claim"
    status, body = await api.call("POST", path, {"id_number": a_number})
    assert status == 403 and "segregation of duties: award / pay prize" in body["error"]
    cashier = api.sign_in("S2", "supervisor")  # desk-1 awarded it: another person pays it
    status, body = await api.call("POST", path, {"id_number": "9999999999999"}, token=cashier)
    assert status == 409
    status, body = await api.call("POST", path, {"id_number": a_number, "receipt": "R-7"},
                                  token=cashier)
    assert status == 200 and body["status"] == "claimed"
    assert (await api.call("POST", path, {"id_number": a_number}, token=cashier))[0] == 409
    status, body = await api.call("GET", "/prizes")
    assert [p["status"] for p in body["prizes"]] == ["claimed"]


# ---- the MQTT sender ----------------------------------------------------------------------


async def test_desk_sender_publishes_a_verifiable_command(mqtt_broker: MqttBroker,
                                                          unique_topic: str) -> None:
    settings_ = MqttSettings(host=mqtt_broker.host, port=mqtt_broker.port,
                             topic_root=unique_topic)
    sender = DeskSender(settings_, venue="gold-reef", signer=DESK)
    command = DeskCommand(seq=41, table="t03", command="seat",
                          args={"entry_id": "E-00ff", "seat": 5})
    topic = TableTopics("gold-reef", "t03", unique_topic).cmd
    async with aiomqtt.Client(mqtt_broker.host, mqtt_broker.port) as client:
        await client.subscribe(topic, qos=1)
        await sender.send(command)
        async with asyncio.timeout(20):
            message = await anext(aiomqtt_messages(client))
    assert message.topic.value == topic
    payload = message.payload
    assert isinstance(payload, bytes)
    envelope = verify_envelope(payload, KeyRing([DESK.public_key]))
    assert (envelope.table, envelope.seq, envelope.type) == ("desk-a", 41, "seat")
    assert envelope.body == {"table": "t03", "command": "seat", "command_id": "desk-a-41",
                             "entry_id": "E-00ff", "seat": 5}


async def aiomqtt_messages(client: aiomqtt.Client) -> Any:
    async for message in client.messages:
        yield message


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_desk_sender_says_when_the_broker_is_unreachable() -> None:
    sender = DeskSender(MqttSettings(host="127.0.0.1", port=free_port(), timeout_s=2.0),
                        venue="gold-reef", signer=DESK)
    with pytest.raises(SendError, match=r"t03 \(seq 7\) is recorded but was not delivered"):
        await sender.send(DeskCommand(seq=7, table="t03", command="close_heat"))


def test_null_sender_drops_commands() -> None:
    asyncio.run(NullSender().send(DeskCommand(seq=1, table="t01", command="close_heat")))


def test_a_table_applies_the_desks_commands(engine: Engine, clock: FakeClock) -> None:
    """The commands the desk signs are the ones a table daemon verifies and acts on."""
    table = TableService(table_id="t01", settings=settings(), paytables=read_paytables(None),
                         deal=DEFAULT_DEAL, registry=ChipRegistry(
                             [Chip(uid=bytes(8), value_cents=2_500, chip_set="test")],
                             chip_set="test"))
    sender = RecordingSender(venue="gold-reef", signer=DESK)
    ring = KeyRing([DESK.public_key])
    s = settings()
    with Session(engine, expire_on_commit=False) as session:
        patron = desk.register_patron(session, s, clock, actor="d", name="X",
                                      id_kind="licence", id_number="DL123456",
                                      birth_date=datetime(1990, 1, 1).date())
        entry = desk.buy_entry(session, s, clock, actor="d", patron_id=patron.patron_id,
                               payment="cash")
        commands = [desk.open_heat(session, s, clock, actor="d", table="t01",
                                   stage="qualifying"),
                    desk.seat_entry(session, s, clock, actor="d", entry_id=entry.entry_id,
                                    table="t01", seat=4).command]
    for command in commands:
        asyncio.run(sender.send(command))
    events = []
    for sent in sender.sent:
        assert sent.envelope is not None
        envelope = verify_envelope(sent.envelope.encode(), ring)
        body = {**envelope.body, "signer": envelope.signer, "command_seq": envelope.seq}
        applied = table.apply("desk", body, clock.now)
        assert applied.ok, applied.error
        events += [(m.type, dict(m.body)) for m in applied.messages]
    opened = [b for t, b in events if t == "heat.opened"]
    seated = [b for t, b in events if t == "entry.seated"]
    assert opened[0]["heat_id"] == commands[0].args["heat_id"]
    assert (seated[0]["entry_id"], seated[0]["seat"]) == (entry.entry_id, 4)
    # The same command delivered twice (QoS 1) is refused by the table, never applied twice.
    again = sender.sent[1].envelope
    assert again is not None
    body = {**again.body, "signer": again.table, "command_seq": again.seq}
    assert not table.apply("desk", body, clock.now).ok
    # The patron leaves: the desk's unseat reaches the table, whose report withdraws the entry.
    with Session(engine, expire_on_commit=False) as session:
        unseat = desk.unseat_entry(session, clock, actor="d", entry_id=entry.entry_id,
                                   why="patron left")
    asyncio.run(sender.send(unseat))
    last = sender.sent[-1].envelope
    assert last is not None
    verified = verify_envelope(last.encode(), ring)
    applied = table.apply("desk", {**verified.body, "signer": verified.signer,
                                   "command_seq": verified.seq}, clock.now)
    assert applied.ok, applied.error
    [report] = [m for m in applied.messages if m.type == "entry.unseated"]
    assert dict(report.body) | {"at": None} == {"entry_id": entry.entry_id, "seat": 4,
                                                "hands_played": 0, "reason": "patron left",
                                                "at": None}
    published = seal(venue="gold-reef", table="t01", seq=3, wall=clock.now, type=report.type,
                     body=dict(report.body), boot="b", mono=3,
                     signer=Signer.from_seed("t01", bytes(32)))
    with Session(engine) as session:
        assert project(session.connection(), published).changes == ("entry.unseated",)
        session.commit()
        assert session.get(Entry, entry.entry_id).status == "withdrawn"  # type: ignore[union-attr]


async def test_a_database_that_does_not_answer_is_a_503_not_a_traceback(
    tmp_path: Path, clock: FakeClock
) -> None:
    # A real fault: the database file's directory does not exist, so every connect fails.
    missing = make_engine(f"sqlite:///{tmp_path / 'gone' / 'leaderboard.sqlite'}")
    sender = RecordingSender(venue="gold-reef", signer=DESK)
    api = Api(missing, clock, sender, staff_id=None)  # nobody can sign in: no database
    status, body = await api.call("POST", "/patrons", ADULT, token="x" * 43)
    assert status == 503
    assert body["error"].startswith("the database did not answer")
    assert body["detail"] == "unable to open database file"
    assert sender.commands == []
    missing.dispose()
