"""The connection light turns live only from fresh, verified messages (issue 33 point 7, D384).

The whole service runs (broker subscription, database, page, SSE) on SQLite and on
PostgreSQL. A fake enrolled table, and a forger with a key of its own under the table's
name, publish over MQTT; after each message the ingest has handled (its counters say so),
the status the page reads (the first ``event: status`` of a new /events stream, and
/healthz) must be:

- waiting, after a message whose signature does not verify (and no table counted as heard);
- stale, after a verified message whose own time is older than ``[page] stale_after_s``;
- still stale, after a copy of a fresh message the ingest had already stored (a replay);
- still stale, after a message re-using a stored seq with other content;
- live, after a fresh, verified, new message.

The same walk in a real browser (test_page_light_browser.py) checks the light itself.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.services import Database, MqttBroker
from tests.leaderboard import support
from tests.leaderboard.support import FakeTable, Running, SseClient, finish, http_get, start
from wire.signing import Signer
from wire.topics import TableTopics

STALE_AFTER_S = 300.0  # the page's default
Check = Callable[[str, int], Awaitable[None]]  # (state expected, tables seen expected)


def serve_on(database: Database, monkeypatch: pytest.MonkeyPatch) -> Database:
    """Make `support.start` run the service on `database` (SQLite or PostgreSQL)."""
    original = support.write_config

    def write_config(*args: Any, **kwargs: Any) -> Path:
        path = original(*args, **kwargs)
        text = re.sub(r'^database = ".*"$', lambda _: f"database = {json.dumps(database.url)}",
                      path.read_text(), count=1, flags=re.MULTILINE)
        path.write_text(text)
        return path

    monkeypatch.setattr(support, "write_config", write_config)
    return database


@pytest.fixture
def on_database(database_url: Database, monkeypatch: pytest.MonkeyPatch) -> Database:
    """`support.start` runs the service on the test's database (SQLite or PostgreSQL)."""
    return serve_on(database_url, monkeypatch)


def score_body(entry_id: str, cents: int, wall: datetime, table: str) -> dict[str, Any]:
    """A score.recorded body as a table sends it (tests.leaderboard.support.FakeTable.score)."""
    return {"entry_id": entry_id, "stage": "qualifying", "heat_id": "h-0708", "table": table,
            "seat": 2, "score": cents, "hands": 10, "status": "finished",
            "markers_forfeited": 0, "last_hand_id": "x", "at": wall.astimezone(UTC).isoformat()}


async def handled(run: Running, outcome: str, before: int) -> None:
    """Wait until the ingest has counted one more message of `outcome` than `before`."""
    async with asyncio.timeout(30):
        while getattr(run.service.ingestor.counters(), outcome) <= before:  # type: ignore[union-attr]
            await asyncio.sleep(0.02)
    await asyncio.sleep(0)  # the receive loop notes the link right after the counters


async def publish_one(run: Running, outcome: str, payload: bytes,
                      sender: FakeTable | None = None) -> None:
    """Publish one payload on the table's scores topic and wait for the ingest's `outcome`."""
    ingestor = run.service.ingestor
    assert ingestor is not None
    before = getattr(ingestor.counters(), outcome)
    await (sender or run.table).publish([("scores", payload)])
    await handled(run, outcome, before)


async def walk(run: Running, check: Check) -> None:
    """The messages of the module docstring, each followed by `check`."""
    table, now = run.table, run.service.clock
    name = table.signer.key_id
    await check("waiting", 0)

    # Signed with another key under the table's name: refused, nothing heard.
    forger = FakeTable(table.venue, Signer.generate(name), table.host, table.port, table.root,
                       seq=100)
    forged = forger.envelope("score.recorded", score_body("E-LIVE01", 900_000, now(), name),
                             now())
    await publish_one(run, "rejected", forged, forger)
    assert run.service.ingestor is not None
    assert run.service.ingestor.counters().rejections.get("bad_signature") == 1
    await check("waiting", 0)

    # Verified and new, but its own time is an hour old: stored, the table heard, not live.
    old = now() - timedelta(hours=1)
    await publish_one(run, "stored",
                      table.envelope("score.recorded", score_body("E-LIVE01", 575_000, old,
                                                                  name), old))
    await check("stale", 1)

    # A fresh message stored already (handed to the ingest directly), then sent again.
    fresh = now()
    copy = table.envelope("score.recorded", score_body("E-1a07c2", 612_500, fresh, name), fresh)
    topic = TableTopics(table.venue, name, table.root).for_suffix("scores")
    result = await run.service.ingestor.handle(topic, copy)
    assert result.outcome == "stored"
    await check("stale", 1)
    await publish_one(run, "duplicates", copy)
    await check("stale", 1)

    # The stored seq again with other content: refused as a replay.
    table.seq -= 1
    replayed = table.envelope("score.recorded", score_body("E-1a07c2", 999_000, now(), name),
                              now())
    await publish_one(run, "rejected", replayed)
    assert run.service.ingestor.counters().rejections.get("replayed_seq") == 1
    await check("stale", 1)

    # Fresh, verified, new: live.
    await publish_one(run, "stored",
                      table.envelope("score.recorded", score_body("E-33b9f0", 480_000, now(),
                                                                  name), now()))
    await check("live", 1)


async def status_read_by_the_page(port: int) -> dict[str, Any]:
    """The first status event of a new /events stream (what the page reads on connect)."""
    async with SseClient(port) as events:
        while True:
            event = await events.next()
            if event.event == "status":
                return dict(json.loads(event.data))


@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_light_turns_live_only_from_fresh_verified_messages(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str,
        on_database: Database) -> None:
    run = await start(tmp_path, mqtt_broker, unique_topic)
    assert run.service.config.page.stale_after_s == STALE_AFTER_S

    async def check(state: str, tables: int) -> None:
        status = await status_read_by_the_page(run.port)
        assert (status["state"], status["tables_seen"]) == (state, tables), status
        health = (await http_get(run.port, "/healthz")).json()
        assert health["link"]["state"] == state
        if state == "stale":  # the time of the old message (venue time), not of its arrival
            age = status["last_message_age_s"]
            assert 3600 - 60 < age < 3600 + 120, status

    try:
        await walk(run, check)
    finally:
        assert await finish(run) == 0
