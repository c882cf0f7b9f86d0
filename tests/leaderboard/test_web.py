"""The page, the JSON API, server-sent events and health, served by uvicorn on a real socket.

The standings come from a real database (SQLite and PostgreSQL); a change committed to it and
announced with `StandingsFeed.changed()` (what ingest calls) reaches an open SSE stream.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from game.tournament.schema import TournamentSettings
from leaderboard import web
from leaderboard.desk.sender import NullSender
from leaderboard.desk_api.routes import desk_routes
from leaderboard.standings.view import ViewOptions, standings
from leaderboard.web import StandingsFeed, create_app
from runtime.settings_files import read_tournament
from tests.leaderboard.desk_api_support import PASSPHRASE, enrol_desk_staff
from tests.leaderboard.support import (
    InLoopServer,
    SseClient,
    add_entry,
    add_patron,
    add_score,
    desk_sign_in,
    http_get,
    http_post,
    local,
    seed_field,
)

REPO = Path(__file__).resolve().parents[2]
NOW = local(8, 22)


@pytest.fixture(scope="module")
def settings() -> TournamentSettings:
    return read_tournament(REPO / "config" / "tournament.toml")


def make_feed(engine: Engine, settings: TournamentSettings) -> StandingsFeed:
    options = ViewOptions(venue="goldreef", title="Main floor", rows=20)
    return StandingsFeed(lambda: standings(engine, settings, options, now=NOW), debounce=0)


@pytest.fixture
async def served(engine: Engine, settings: TournamentSettings
                 ) -> AsyncIterator[tuple[StandingsFeed, int]]:
    seed_field(engine)
    enrol_desk_staff(engine, lambda: NOW, "desk-1", "clerk")
    feed = make_feed(engine, settings)
    await feed.refresh()
    runner = asyncio.create_task(feed.run())
    app = create_app(feed, desk=desk_routes(engine, settings, NullSender(), lambda: NOW),
                     health=lambda: {"subscribed": True})
    async with InLoopServer(app) as server:
        yield feed, server.port
        await feed.close()
    await runner


async def test_json_api_serves_the_standings(served: tuple[StandingsFeed, int]) -> None:
    feed, port = served
    response = await http_get(port, "/api/standings")
    assert response.status == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["cache-control"] == "no-store"
    doc = response.json()
    assert doc["version"] == feed.version == 1
    board = doc["board"]
    # 14 acknowledged scores counted, the fifteenth awaits acknowledgement.
    assert board["counted"] == 14
    assert board["awaiting_acknowledgement"] == 1
    assert [r["entry_id"] for r in board["rows"][:3]] == ["E-1a07c2", "E-33b9f0", "E-0c41d8"]
    assert board["rows"][0]["score"] == "R5,125.00"
    assert [r["advancing"] for r in board["rows"]] == [True] * 12 + [False] * 2
    # 15 buy-ins of R100: R1,200 Final Prize Pool and R300 Top Score Progressive.
    assert doc["pools"]["final_pool"]["text"] == "R1,200.00"
    assert doc["pools"]["top_score"]["text"] == "R300.00"
    # Week 1 (3 to 9 July): the top score of the week, heat day 4 July.
    assert doc["week"]["week"] == 1
    assert [r["entry_id"] for r in doc["week"]["leaders"]] == ["E-1a07c2"]


async def test_page_is_html_with_a_strict_content_security_policy(
        served: tuple[StandingsFeed, int]) -> None:
    _, port = served
    response = await http_get(port, "/")
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.body.decode("utf-8")
    assert "new EventSource(\"/events\")" in html
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    # The one inline script and the one style block are allowed by their hashes only.
    for tag in ("script", "style"):
        (inline,) = re.findall(rf"<{tag}>(.*?)</{tag}>", html, re.DOTALL)
        digest = base64.b64encode(hashlib.sha256(inline.encode("utf-8")).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    head = await http_get(port, "/", method="HEAD")
    assert head.status == 200


async def test_events_send_the_standings_at_once_and_again_after_a_change(
        served: tuple[StandingsFeed, int], engine: Engine) -> None:
    feed, port = served
    async with SseClient(port) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        hint = await stream.next()
        assert hint.retry == 3000
        first = await stream.next()
        assert (first.event, first.id) == ("standings", "1")
        assert "E-NEW" not in first.data

        with Session(engine) as s:
            add_patron(s, "P-NEW", "New Player", 99)
            add_entry(s, "E-NEW", "P-NEW", date(2026, 7, 8))
            s.flush()
            add_score(s, "E-NEW", 600_000, local(8, 21, 50))
            s.commit()
        feed.changed("score.acknowledged")  # what ingest calls after its commit

        doc = await stream.next_standings()
        assert doc["version"] == 2
        top = doc["board"]["rows"][0]
        assert (top["entry_id"], top["score"], top["acknowledged"]) == (
            "E-NEW", "R6,000.00", True)
        assert doc["pools"]["entries"] == 16


async def test_a_change_that_changes_nothing_keeps_the_version(
        served: tuple[StandingsFeed, int]) -> None:
    feed, _ = served
    assert await feed.refresh() == 1
    feed.changed("hand.settled")
    assert await feed.refresh() == 1


async def test_events_send_keep_alive_comments(served: tuple[StandingsFeed, int],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _, port = served
    monkeypatch.setattr(web, "KEEPALIVE_SECONDS", 0.05)
    async with SseClient(port) as stream:
        events = [await stream.next() for _ in range(3)]
    assert [e.event for e in events[:2]] == [None, "standings"]
    assert events[2].comment == "keep-alive"


async def test_a_reconnecting_stream_gets_the_current_standings(
        served: tuple[StandingsFeed, int]) -> None:
    _, port = served
    async with SseClient(port, "/events") as stream:
        stream_doc = await stream.next_standings()
    api_doc = (await http_get(port, "/api/standings")).json()
    assert stream_doc == api_doc


async def test_health_and_the_desk_api_behind_a_sign_in(
        served: tuple[StandingsFeed, int]) -> None:
    _, port = served
    health = await http_get(port, "/healthz")
    assert health.status == 200
    assert health.json()["status"] == "ok"
    assert health.json()["subscribed"] is True
    refused = await http_get(port, "/api/desk/prizes")
    assert (refused.status, refused.json()["reason"]) == (401, "no_session")
    token = await desk_sign_in(port, "desk-1", PASSPHRASE)
    allowed = await http_get(port, "/api/desk/prizes",
                             headers={"Authorization": f"Bearer {token}"})
    assert allowed.status == 200
    clerk = await http_get(port, "/api/desk/audit", headers={"Authorization": f"Bearer {token}"})
    assert (clerk.status, clerk.json()["role_needed"]) == (403, "supervisor")


async def test_before_the_first_computation_the_api_says_starting(
        engine: Engine, settings: TournamentSettings) -> None:
    feed = make_feed(engine, settings)
    health: dict[str, Any] = {}
    async with InLoopServer(create_app(feed, health=lambda: health)) as server:
        api = await http_get(server.port, "/api/standings")
        hz = await http_get(server.port, "/healthz")
        missing = await http_get(server.port, "/api/desk/audit")
        await feed.close()
    assert (api.status, hz.status) == (503, 503)
    assert hz.json()["status"] == "starting"
    assert missing.status == 404  # no desk routes given: no desk API


async def test_a_buy_in_at_the_desk_moves_the_pools_on_the_stream(
        served: tuple[StandingsFeed, int]) -> None:
    _, port = served
    auth = {"token": await desk_sign_in(port, "desk-1", PASSPHRASE)}
    async with SseClient(port) as stream:
        before = await stream.next_standings()
        assert before["pools"]["entries"] == 15
        patron = await http_post(port, "/api/desk/patrons", {
            "name": "Naledi Sithole", "id_kind": "id_document",
            "id_number": "8506150123083", "birth_date": "1985-06-15"}, **auth)
        assert patron.status == 201, patron.body
        bought = await http_post(port, "/api/desk/entries", {
            "patron_id": patron.json()["patron_id"],
            "payment": "cash"}, **auth)
        assert bought.status == 201, bought.body
        after = await stream.next_standings()
    # 16 buy-ins of R100: R1,280 Final Prize Pool, R320 Top Score Progressive.
    assert after["pools"]["entries"] == 16
    assert (after["pools"]["final_pool"]["text"], after["pools"]["top_score"]["text"]) == (
        "R1,280.00", "R320.00")
    assert "Naledi" not in json.dumps(after)


async def test_health_is_degraded_while_the_broker_is_not_subscribed(
        engine: Engine, settings: TournamentSettings) -> None:
    feed = make_feed(engine, settings)
    await feed.refresh()
    async with InLoopServer(create_app(feed, health=lambda: {"ok": False,
                                                             "subscribed": False})) as server:
        hz = await http_get(server.port, "/healthz")
        await feed.close()
    assert hz.status == 200
    assert (hz.json()["status"], hz.json()["subscribed"]) == ("degraded", False)


class _DatabaseGone(Exception):
    """Stands for a connection lost in a database failover (leaderboard.db.connection_lost)."""


@pytest.mark.parametrize(("error", "level", "traceback"), [
    (_DatabaseGone("server closed the connection unexpectedly\ndetail"), "warning", False),
    (KeyError("a bug"), "error", True),
])
async def test_a_failed_recomputation_keeps_the_document_and_a_lost_database_is_one_line(
        log_events: list[dict[str, Any]], error: Exception, level: str, traceback: bool) -> None:
    calls = [0]

    def compute() -> dict[str, Any]:
        calls[0] += 1
        if calls[0] > 1:
            raise error
        return {"board": {"rows": []}}

    feed = StandingsFeed(compute, debounce=0,
                         unavailable=lambda exc: isinstance(exc, _DatabaseGone))
    await feed.refresh()
    runner = asyncio.create_task(feed.run())
    feed.changed()
    async with asyncio.timeout(10):
        while feed.failures < 1:
            await asyncio.sleep(0.01)
    await feed.close()
    await runner
    said = [e for e in log_events if e["event"] == "standings_refresh_failed"]
    assert [e["log_level"] for e in said] == [level]
    assert ("exc_info" in said[0]) is traceback
    if not traceback:
        assert said[0]["error"] == "server closed the connection unexpectedly"
    assert feed.version == 1 and feed.current is not None
