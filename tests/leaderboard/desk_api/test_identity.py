"""The desk API's identity operations (issue 13): a held registration and its decision, a
document added, a disqualification whose `unseat` reaches the table signed through a real
broker, the payment method required, and the fees by method."""

from __future__ import annotations

import asyncio

import aiomqtt
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from leaderboard.desk.sender import DeskSender, NullSender
from leaderboard.models import Entry
from leaderboard.standings.view import ViewOptions, standings
from tests.fixtures.services import MqttBroker
from tests.leaderboard.desk_api_support import Api
from tests.leaderboard.desk_helpers import FakeClock, add_score, local, settings
from wire.envelope import verify_envelope
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics

DESK = Signer.from_seed("desk-a", bytes(range(32)))
PERSON = {"name": "Thandi Mokoena", "id_kind": "rewards_card", "id_number": "6099 4400 0001",
          "birth_date": "1980-05-17"}
LIST = {"kind": "self_exclusion", "source": "NRGP", "source_date": "2026-07-01",
        "csv": "id_number,name,birth_date\n8005175009087,MOKOENA Thandi,1980-05-17\n"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local(2026, 7, 3, 14, 0))


async def test_a_held_registration_is_decided_by_a_supervisor(engine: Engine,
                                                              clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    assert (await api.call("POST", "/lists", LIST))[0] == 201
    status, body = await api.call("POST", "/patrons", PERSON)
    assert (status, body["standing"]) == (202, "held")
    pid, hold_id = body["patron_id"], body["hold_id"]
    assert body["matches"][0]["list_name"] == "MOKOENA Thandi"
    status, body = await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"})
    assert (status, body["hold_id"]) == (409, hold_id)
    status, body = await api.call("GET", "/holds?open=1")
    assert status == 200 and [h["hold_id"] for h in body["holds"]] == [hold_id]
    api.token = api.sign_in("C7", "clerk")
    status, body = await api.call("POST", f"/holds/{hold_id}/approve", {"why": "not her"})
    assert (status, body["role_needed"]) == (403, "supervisor")
    api.token = api.sign_in("S-floor", "supervisor")
    status, body = await api.call("POST", f"/holds/{hold_id}/approve", {})
    assert status == 400 and "say why" in body["error"]
    for bad in ("0", "x1", str(2**64)):
        assert (await api.call("POST", f"/holds/{bad}/refuse", {"why": "w"}))[0] == 404
    status, body = await api.call("POST", f"/holds/{hold_id}/refuse",
                                  {"why": "same person, photo matches"})
    assert (status, body["decision"], body["decided_by"]) == (200, "refused", "S-floor")
    status, body = await api.call("GET", f"/patrons/{pid}")
    assert (body["standing"], body["standing_reason"]) == ("refused",
                                                           "same person, photo matches")
    status, body = await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"})
    assert status == 409 and "refused by a supervisor" in body["error"]


async def test_payment_is_required_and_fees_are_shown_by_method(engine: Engine,
                                                                clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    pid = (await api.call("POST", "/patrons", {**PERSON, "name": "Lindiwe Ndlovu"}))[1][
        "patron_id"]
    status, body = await api.call("POST", "/entries", {"patron_id": pid})
    assert status == 400 and "payment" in body["error"]
    status, body = await api.call("POST", "/entries", {"patron_id": pid,
                                                       "payment": "card"})
    assert status == 400 and "cash or value_chips" in body["error"]
    for payment in ("value_chips", "cash", "cash"):
        status, body = await api.call("POST", "/entries", {"patron_id": pid,
                                                           "payment": payment})
        assert (status, body["payment"]) == (201, payment)
    status, body = await api.call("GET", "/fees")
    assert status == 200 and body["total_cents"] == 30_000
    assert [(f["payment"], f["entries"], f["shown"]) for f in body["fees"]] == [
        ("cash", 2, "R200.00"), ("value_chips", 1, "R100.00")]
    status, body = await api.call("GET", f"/patrons/{pid}")
    assert sorted(e["payment"] for e in body["entries"]) == ["cash", "cash", "value_chips"]


async def test_a_document_added_later_is_checked(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    pid = (await api.call("POST", "/patrons", {**PERSON, "name": "Someone Else"}))[1][
        "patron_id"]
    assert (await api.call("POST", "/lists", LIST))[0] == 201
    status, body = await api.call("POST", f"/patrons/{pid}/documents",
                                  {"kind": "id_document", "number": "800517 5009 087"})
    assert status == 403 and "self-exclusion" in body["error"]
    status, body = await api.call("POST", f"/patrons/{pid}/documents",
                                  {"kind": "id_document", "number": "800517 5009 087"})
    assert status == 409 and "already on file" in body["error"]
    status, body = await api.call("GET", f"/patrons/{pid}")
    assert body["documents"] == ["rewards_card", "id_document"]


async def test_a_disqualified_seated_entry_is_unseated_at_its_table_through_the_broker(
        engine: Engine, clock: FakeClock, mqtt_broker: MqttBroker, unique_topic: str) -> None:
    sender = DeskSender(MqttSettings(host=mqtt_broker.host, port=mqtt_broker.port,
                                     topic_root=unique_topic), venue="gold-reef", signer=DESK)
    api = Api(engine, clock, sender)
    cheat = (await api.call("POST", "/patrons", {**PERSON, "name": "Cheat One"}))[1]["patron_id"]
    honest = (await api.call("POST", "/patrons", {**PERSON, "id_number": "6099 4400 0002",
                                                  "name": "Honest Two"}))[1]["patron_id"]

    async def buy(patron: str) -> str:
        body = (await api.call("POST", "/entries", {"patron_id": patron, "payment": "cash"}))[1]
        return str(body["entry_id"])

    scored, playing, other = await buy(cheat), await buy(cheat), await buy(honest)
    recorded = local(2026, 7, 3, 14, 30)
    with Session(engine) as s:
        add_score(s, scored, 900_000, stage="qualifying", recorded=recorded,
                  acknowledged=recorded, seq=1)
        add_score(s, other, 300_000, stage="qualifying", recorded=recorded,
                  acknowledged=recorded, seq=2)
    clock.now = local(2026, 7, 3, 15, 0)
    api.token = api.sign_in("desk-1")  # an hour on: the morning's session has gone idle
    assert board(engine, clock) == [scored, other]
    topic = TableTopics("gold-reef", "t03", unique_topic).cmd
    async with aiomqtt.Client(mqtt_broker.host, mqtt_broker.port) as client:
        await client.subscribe(topic, qos=1)
        assert (await api.call("POST", "/heats", {"table": "t03",
                                                  "stage": "qualifying"}))[0] == 201
        assert (await api.call("POST", "/seatings", {"entry_id": playing, "table": "t03",
                                                     "seat": 5}))[0] == 201
        api.token = api.sign_in("S-floor", "supervisor")
        status, body = await api.call("POST", "/disqualifications", {
            "patron_id": cheat, "why": "chips passed to another entry"})
        assert status == 201, body
        assert (sorted(body["entries"]), body["unseated"]) == (sorted([scored, playing]),
                                                               [playing])
        types: list[str] = []
        async with asyncio.timeout(20):
            async for message in client.messages:
                assert isinstance(message.payload, bytes)
                envelope = verify_envelope(message.payload, KeyRing([DESK.public_key]))
                types.append(envelope.type)
                if envelope.type == "unseat":
                    break
    assert types == ["open_heat", "seat", "unseat"]
    assert envelope.seq == body["seqs"][0]
    assert (envelope.body["entry_id"], envelope.body["seat"]) == (playing, 5)
    with Session(engine) as s:
        row = s.scalars(select(Entry).where(Entry.entry_id == playing)).one()
        assert row.disqualified_at is not None
    assert board(engine, clock) == [other]  # the cheat's R9,000 no longer counts
    status, body = await api.call("POST", "/entries", {"patron_id": cheat, "payment": "cash"})
    assert status == 409 and "disqualified" in body["error"]


def board(engine: Engine, clock: FakeClock) -> list[str]:
    """The entries on the qualifying board, best first."""
    doc = standings(engine, settings(), ViewOptions(venue="gold-reef", title="Main"),
                    now=clock())
    return [r["entry_id"] for r in doc["board"]["rows"]]
