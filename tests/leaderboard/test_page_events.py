"""The status events of GET /events (leaderboard.web): the service's link state first, the
document after it, the status again while the standings keep changing, and the page's
version, which is the one the served page carries (a page that sees another reloads)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from leaderboard.web import PAGE, StandingsFeed, create_app, page_version
from tests.leaderboard.support import InLoopServer, SseClient, http_get


def _feed() -> tuple[StandingsFeed, list[int]]:
    count = [0]

    def compute() -> dict[str, Any]:
        count[0] += 1
        return {"board": {"rows": []}, "n": count[0]}

    return StandingsFeed(compute, debounce=0), count


async def test_the_stream_starts_with_the_status_and_carries_the_pages_version() -> None:
    feed, _ = _feed()
    await feed.refresh()
    state = {"state": "offline", "broker_connected": False}
    async with InLoopServer(create_app(feed, status=lambda: state, page_seconds=7)) as server:
        html = (await http_get(server.port, "/")).body.decode("utf-8")
        served = re.search(r'<meta name="page-version" content="([0-9a-f]{12})">', html)
        assert served is not None
        assert served.group(1) == page_version(PAGE.read_text(encoding="utf-8"))
        async with SseClient(server.port) as sse:
            first = await sse.next()
            while first.event is None:  # the retry hint
                first = await sse.next()
            assert first.event == "status"
            status = json.loads(first.data)
            assert status == {**state, "page": served.group(1), "page_seconds": 7}
            assert (await sse.next()).event == "standings"
    await feed.close()


async def test_the_status_is_sent_while_the_standings_change_without_pause() -> None:
    feed, _ = _feed()
    await feed.refresh()
    calls = [0]

    def status() -> dict[str, Any]:
        calls[0] += 1
        return {"state": "live", "call": calls[0]}

    async def churn() -> None:
        while not feed.is_closed():
            await feed.refresh()  # a new version each time
            await asyncio.sleep(0.2)

    async with InLoopServer(create_app(feed, status=status)) as server:
        task = asyncio.create_task(churn())
        kinds: list[str | None] = []
        async with SseClient(server.port) as sse:
            while kinds.count("status") < 2:  # one at once, one after 5 s of changes
                kinds.append((await sse.next()).event)
        assert kinds.count("standings") >= 10  # it was never quiet for 5 s
        await feed.close()
        await task
