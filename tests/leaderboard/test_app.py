"""`showdown leaderboard serve` as one service: a broker, a database, a fake enrolled table.

Each test starts the real composition (LeaderboardService) against the embedded broker and
the machine's Mosquitto, on SQLite: signed scores published over MQTT reach the JSON API and
the SSE stream, the retained standings topic carries them signed and without names, a gap
makes the service send a signed resend request, desk commands go out through the same single
connection, and systemd hears READY, WATCHDOG and STOPPING.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.services import MqttBroker
from tests.leaderboard.desk_api_support import PASSPHRASE, enrol_desk_staff
from tests.leaderboard.support import (
    START,
    VENUE,
    FakeTable,
    Running,
    SseClient,
    desk_sign_in,
    finish,
    http_get,
    http_post,
    start,
)
from wire.envelope import Envelope, verify_envelope
from wire.mqtt import MqttClient, MqttSettings, connect
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics, standings_topic


@pytest.fixture
async def running(tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str
                  ) -> AsyncIterator[Running]:
    run = await start(tmp_path, mqtt_broker, unique_topic, watchdog_s=0.2)
    try:
        yield run
    finally:
        assert await finish(run) == 0


async def board_with(stream: SseClient, entry_id: str) -> dict[str, Any]:
    """The first standings document on the stream whose board shows `entry_id`."""
    while True:
        doc = await stream.next_standings()
        if any(r["entry_id"] == entry_id for r in doc["board"]["rows"]):
            return doc


async def retained_standings(run: Running, *, containing: str) -> Envelope:
    """The retained standings message, once one contains `containing`; verified."""
    ring = KeyRing([run.leaderboard_key.public_key])
    topic = standings_topic(VENUE, run.root)
    async with connect(broker_settings(run), client_id=f"display-{secrets.token_hex(3)}"
                       ) as client:
        await client.subscribe(topic, qos=1)
        async for message in client.messages():
            if message.topic != topic or not message.payload:
                continue
            envelope = verify_envelope(message.payload, ring)
            if containing in message.payload.decode():
                return envelope
    raise AssertionError("the subscription ended")  # pragma: no cover


async def test_a_signed_score_reaches_the_api_the_stream_and_the_retained_topic(
        running: Running) -> None:
    run = running
    async with SseClient(run.port) as stream:
        first = await stream.next_standings()
        assert "E-LIVE01" not in str(first)
        await run.table.score("E-LIVE01", 575_000, START - timedelta(minutes=5))
        doc = await asyncio.wait_for(board_with(stream, "E-LIVE01"), 60)
    top = doc["board"]["rows"][0]
    assert (top["entry_id"], top["score"], top["acknowledged"], top["table"]) == (
        "E-LIVE01", "R5,750.00", True, "t01")
    api = (await http_get(run.port, "/api/standings")).json()
    assert api["board"]["rows"][0]["entry_id"] == "E-LIVE01"

    envelope = await asyncio.wait_for(retained_standings(run, containing="E-LIVE01"), 30)
    assert (envelope.type, envelope.signer, envelope.seq, envelope.venue) == (
        "standings", "leaderboard", 0, VENUE)
    assert envelope.body["board"]["rows"][0]["entry_id"] == "E-LIVE01"
    health = (await http_get(run.port, "/healthz")).json()
    assert health["subscribed"] is True
    assert health["ingest"]["stored"] == 2
    assert health["ingest"]["rejected"] == 0


async def test_a_forged_score_is_refused_and_never_shown(running: Running) -> None:
    run = running
    forger = FakeTable(VENUE, Signer.generate("t01"), run.broker.host, run.broker.port, run.root)
    await forger.score("E-LIVE01", 999_900, START)
    # A genuine message afterwards proves the forged one was processed before it.
    await run.table.score("E-LIVE01", 100_000, START)
    async with SseClient(run.port) as stream:
        doc = await asyncio.wait_for(board_with(stream, "E-LIVE01"), 60)
    rows = {r["entry_id"]: r["score_cents"] for r in doc["board"]["rows"]}
    assert rows["E-LIVE01"] == 100_000
    health = (await http_get(run.port, "/healthz")).json()
    assert health["ingest"]["rejections"].get("bad_signature") == 2


async def test_a_gap_makes_the_service_ask_the_table_to_resend(running: Running) -> None:
    run = running
    cmd = TableTopics(VENUE, "t01", run.root).cmd
    ring = KeyRing([run.leaderboard_key.public_key])
    async with connect(broker_settings(run), client_id=f"t01-{secrets.token_hex(3)}") as client:
        await client.subscribe(cmd, qos=1)
        first = run.table.envelope("alert", {"kind": "x", "message": "one"}, START)
        run.table.envelope("alert", {"kind": "x", "message": "lost"}, START)  # seq 2 is lost
        third = run.table.envelope("alert", {"kind": "x", "message": "three"}, START)
        await run.table.publish([("events", first), ("events", third)])
        request = await asyncio.wait_for(next_command(client, ring), 60)
    assert request.type == "resend"
    assert dict(request.body) | {"command_id": None} == {
        "table": "t01", "command": "resend", "from_seq": 2, "command_id": None}


async def test_desk_commands_go_out_signed_through_the_service(running: Running) -> None:
    run = running
    cmd = TableTopics(VENUE, "t01", run.root).cmd
    ring = KeyRing([run.leaderboard_key.public_key])
    assert run.service.engine is not None
    await asyncio.to_thread(enrol_desk_staff, run.service.engine, run.service.clock, "S7",
                            "supervisor")
    token = await desk_sign_in(run.port, "S7", PASSPHRASE)
    async with connect(broker_settings(run), client_id=f"t01-{secrets.token_hex(3)}") as client:
        await client.subscribe(cmd, qos=1)
        answer = await http_post(run.port, "/api/desk/heats",
                                 {"table": "t01", "stage": "qualifying"}, token=token)
        # No table answers here: sent, no answer yet (docs/desk-commands.md).
        assert answer.status == 202, answer
        assert [c["state"] for c in answer.json()["commands"]] == ["sent"]
        command = await asyncio.wait_for(next_command(client, ring), 60)
    assert command.type == "open_heat"
    assert command.body["table"] == "t01"
    assert command.body["stage"] == "qualifying"


async def test_systemd_hears_ready_watchdog_and_stopping(tmp_path: Path, mqtt_broker: MqttBroker,
                                                        unique_topic: str) -> None:
    run = await start(tmp_path, mqtt_broker, unique_topic, watchdog_s=0.1)
    await asyncio.wait_for(run.notify.pinged.wait(), 30)
    assert await finish(run) == 0
    calls = run.notify.calls
    # Pings run from start-up (a long migration is not a hang) until the engine is disposed,
    # so they may come before READY and after STOPPING.
    assert [c for c in calls if c != "WATCHDOG"] == ["READY", "STOPPING"]
    assert "WATCHDOG" in calls


async def next_command(client: MqttClient, ring: KeyRing) -> Envelope:
    """The next message on the subscribed cmd topic, verified against `ring`."""
    message = await client.next_message()
    return verify_envelope(message.payload, ring)


def broker_settings(run: Running) -> MqttSettings:
    """The test broker, for a client of the test's own (a display, a table)."""
    return MqttSettings(host=run.broker.host, port=run.broker.port)
