"""The desk API as its tests drive it: the routes called through their ASGI interface.

httpx (needed by starlette.testclient.TestClient) is not installed in the project venv, so the
routes are driven through their ASGI interface directly (`Api.call`): the same requests a
client would send, routing, authentication and status codes included. Each `Api` enrols its
person (``desk-1``, a manager, unless told otherwise) with a desk passphrase and signs in as
they would (leaderboard.desk.auth.sign_in); `Api.sign_in` signs in someone else.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.routing import Mount

from leaderboard import desk
from leaderboard.desk.auth import sign_in
from leaderboard.desk_api.routes import desk_routes
from leaderboard.models import StaffRecord
from leaderboard.web import StandingsFeed, create_app
from runtime.clocks import WallClock
from tests.leaderboard.desk_helpers import FakeClock, settings

__all__ = ["PASSPHRASE", "SIGNED_IN", "Api", "enrol_desk_staff"]

PASSPHRASE = "correct horse battery staple"  # noqa: S105 - a test credential
SIGNED_IN = "(the Api's own session)"  # `Api.call`'s default token: the Api's person's


def enrol_desk_staff(engine: Engine, clock: WallClock, staff_id: str, role: str,
                     passphrase: str = PASSPHRASE) -> None:
    """Enrol ``staff_id`` with a desk passphrase (once: an enrolled member is left alone)."""
    with Session(engine, expire_on_commit=False) as s:
        if s.get(StaffRecord, staff_id) is None:
            desk.enrol_staff(s, clock, actor="test-setup", staff_id=staff_id,
                             name=f"Staff {staff_id}", role=role, desk_passphrase=passphrase)


class Api:
    """The desk routes mounted as the page mounts them, called through ASGI; with a `feed`,
    the whole page app (its /api/standings too), as the service serves it."""

    def __init__(self, engine: Engine, clock: FakeClock, sender: Any,
                 feed: StandingsFeed | None = None, *, staff_id: str | None = "desk-1",
                 role: str = "manager") -> None:
        self.engine, self.clock = engine, clock
        routes = desk_routes(engine, settings(), sender, clock)
        self.app = (create_app(feed, desk=routes) if feed is not None
                    else Starlette(routes=[Mount("/api/desk", routes=routes)]))
        self.token = None if staff_id is None else self.sign_in(staff_id, role)

    def sign_in(self, staff_id: str, role: str = "manager") -> str:
        """Enrol ``staff_id`` (if new) as ``role`` and sign them in; their session token."""
        enrol_desk_staff(self.engine, self.clock, staff_id, role)
        with Session(self.engine, expire_on_commit=False) as s:
            return sign_in(s, self.clock, staff_id=staff_id, passphrase_text=PASSPHRASE,
                           client="api").token

    async def call(self, method: str, path: str, body: Any = None, *,
                   token: str | None = SIGNED_IN, raw: bytes | None = None,
                   root: str = "/api/desk") -> tuple[int, dict[str, Any]]:
        payload = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else b"")
        headers = [(b"content-type", b"application/json"), (b"host", b"desk.test")]
        token = self.token if token == SIGNED_IN else token
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
