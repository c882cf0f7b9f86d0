"""The desk API as its tests drive it: the routes called through their ASGI interface.

httpx (needed by starlette.testclient.TestClient) is not installed in the project venv, so the
routes are driven through their ASGI interface directly (`Api.call`): the same requests a
client would send, routing, authentication and status codes included.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.routing import Mount

from leaderboard.desk_api import desk_routes
from leaderboard.web import StandingsFeed, create_app
from tests.leaderboard.desk_helpers import FakeClock, settings

__all__ = ["TOKEN", "Api"]

TOKEN = "t0ken-for-the-desk-api-tests"  # noqa: S105 - a test credential


class Api:
    """The desk routes mounted as the page mounts them, called through ASGI; with a `feed`,
    the whole page app (its /api/standings too), as the service serves it."""

    def __init__(self, engine: Engine, clock: FakeClock, sender: Any,
                 feed: StandingsFeed | None = None) -> None:
        routes = desk_routes(engine, settings(), sender, clock, token=TOKEN)
        self.app = (create_app(feed, desk=routes) if feed is not None
                    else Starlette(routes=[Mount("/api/desk", routes=routes)]))

    async def call(self, method: str, path: str, body: Any = None, *, token: str | None = TOKEN,
                   raw: bytes | None = None, root: str = "/api/desk"
                   ) -> tuple[int, dict[str, Any]]:
        payload = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else b"")
        headers = [(b"content-type", b"application/json"), (b"host", b"desk.test")]
        if token is not None:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        path, _, query = f"{root}{path}".partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": query.encode(), "root_path": "", "headers": headers,
                 "client": ("127.0.0.1", 50000), "server": ("desk.test", 80)}
        inbox = [{"type": "http.request", "body": payload, "more_body": False}]
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return inbox.pop(0) if inbox else {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return status, json.loads(data)
