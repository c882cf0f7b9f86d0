"""Fuzz the live desk API with requests generated from its OpenAPI document; count the answers.

Serves the desk API (leaderboard.desk_api.routes under /api/desk, as the central service mounts it)
with uvicorn on a free port of 127.0.0.1, on a new SQLite file or the database given, with a
fixed desk clock (a heat day) and a sender that drops the commands. A few patrons, entries, a
heat and staff are created first so the generated ids find records. Then Hypothesis draws
``--requests`` requests (bench/support/desk_fuzz_requests.py: mostly typed, some malformed)
and sends each over HTTP/1.1, authenticated by `authorise`.

It prints the request count, the answers by status class and by status, and every 5xx
(method, path, body, answer); exit 1 if any answer was a 5xx or the connection failed. It
also lists the declared fields that no request read (a declaration the operation may not use).

Run: ``.venv/bin/python bench/fuzz_desk_api.py [--requests N] [--seed S] [--database URL]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import logging
import platform
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import uvicorn
from hypothesis import HealthCheck, Phase, given, seed, settings
from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.routing import Mount
from support.desk_fuzz_requests import Pools, Request, requests

from leaderboard import desk
from leaderboard.db import make_engine, upgrade
from leaderboard.desk.auth import sign_in
from leaderboard.desk.sender import NullSender
from leaderboard.desk_api.http import FIELDS_READ
from leaderboard.desk_api.routes import desk_routes
from leaderboard.desk_api.schema import OPERATIONS, openapi
from runtime.http_serving import InLoopServer, listen
from runtime.settings_files import read_tournament

DEFAULT_REQUESTS: Final = 10_000
FUZZER: Final = "fuzz-manager"  # the person the run signs in as
PASSPHRASE: Final = "a throwaway passphrase for the fuzz run"  # noqa: S105
_session: dict[str, str] = {}  # the signed-in fuzzer's session token
HEAT_DAY: Final = datetime(2026, 7, 3, 13, 0, tzinfo=ZoneInfo("Africa/Johannesburg"))


def _clock() -> datetime:
    """The desk's fixed moment (a heat day)."""
    return HEAT_DAY


def authorise(headers: dict[str, str]) -> dict[str, str]:
    """The credential of the fuzzing person (a manager, signed in by `Server`): the ONE
    place the run's requests carry it."""
    return {**headers, "Authorization": f"Bearer {_session['token']}"}


class Server:
    """The desk API served by uvicorn in a thread of its own, on a free port."""

    def __init__(self, database: str) -> None:
        self.engine = make_engine(database)
        upgrade(self.engine)
        with Session(self.engine, expire_on_commit=False) as s:
            desk.enrol_staff(s, _clock, actor="fuzz-setup", staff_id=FUZZER,
                             name="Fuzz Manager", role="manager", desk_passphrase=PASSPHRASE)
        self.sign_in()
        routes = desk_routes(self.engine, read_tournament(), NullSender(), _clock)
        self.app = Starlette(routes=[Mount("/api/desk", routes=routes)])
        self.sock = listen("127.0.0.1", 0, source="fuzz", key="port")
        self.port = self.sock.getsockname()[1]
        self.server = InLoopServer(uvicorn.Config(self.app, log_config=None, access_log=False,
                                                  lifespan="off", log_level="critical"))
        self.thread = threading.Thread(target=lambda: asyncio.run(
            self.server.serve(sockets=[self.sock])), name="desk-api", daemon=True)

    def sign_in(self) -> None:
        """Sign the fuzzer in (again, after a generated DELETE /session ended its session)."""
        with Session(self.engine, expire_on_commit=False) as s:
            _session["token"] = sign_in(s, _clock, staff_id=FUZZER, passphrase_text=PASSPHRASE,
                                        client="api").token

    def __enter__(self) -> Server:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.engine.dispose()


class Client:
    """One keep-alive HTTP connection, opened again when the server closed it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def send(self, request: Request) -> tuple[int, bytes]:
        """Send `request`; its status and answer body."""
        headers = {"Content-Type": "application/json", **dict(request.headers)}
        if request.authorised:
            headers = authorise(headers)
        chunked = request.variant == "3 MB streamed"
        for attempt in (1, 2):
            body: Any = request.body
            if chunked and request.body is not None:
                raw = request.body
                body = (raw[i:i + 65536] for i in range(0, len(raw), 65536))
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.conn.connect()
                assert self.conn.sock is not None
                self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                # The server may answer (413) before the whole body is sent: read it then.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.conn.request(request.method, request.path, body=body,
                                      headers=headers, encode_chunked=chunked)
                answer = self.conn.getresponse()
                data = answer.read()
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if answer.will_close:
                self.conn.close()
                self.conn = None
            return answer.status, data
        raise AssertionError("unreachable")


def _seed(client: Client, pools: Pools) -> None:
    """Create records for the generated ids to find: patrons, entries, a heat, staff."""
    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, data = client.send(Request("POST", f"/api/desk{path}",
                                           json.dumps(body).encode()))
        if status >= 300:
            raise SystemExit(f"seeding {path} failed: {status} {data[:300]!r}")
        answer: dict[str, Any] = json.loads(data)
        return answer

    patrons = [post("/patrons", {"name": f"Fuzz Patron {i}", "id_kind": "id_document",
                                 "id_number": f"800101500{i:04d}", "birth_date": "1980-01-01"}
                    )["patron_id"] for i in range(4)]
    entries = [post("/entries", {"patron_id": p, "payment": "cash"})["entry_id"]
               for p in patrons for _ in (1, 2)]
    heat = post("/heats", {"table": "t01", "stage": "qualifying"})
    seated = post("/seatings", {"entry_id": entries[0], "table": "t01", "seat": 1})
    post("/staff", {"staff_id": "S-fuzz", "name": "Fuzz Dealer", "role": "dealer",
                    "pin": "4821"})
    pools.ids.update(patron_id=patrons, entry_id=entries, heat_id=[heat["heat_id"]],
                     staff_id=["S-fuzz"], seq=[heat["seq"], seated["seq"]], draw_id=[1],
                     award_id=[1])


def run(count: int, seed_value: int, database: str) -> int:
    """Fuzz `count` requests; print the figures; 0 if no answer was a 5xx."""
    document = openapi()
    pools = Pools()
    outcomes: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    variants: Counter[str] = Counter()
    errors: list[str] = []
    logging.getLogger("leaderboard").setLevel(logging.CRITICAL)
    with Server(database) as server:
        client = Client(server.port)
        _seed(client, pools)
        FIELDS_READ.clear()
        started = time.perf_counter()

        @seed(seed_value)
        @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(requests(document, pools))
        def fuzz(request: Request) -> None:
            status, data = client.send(request)
            if request.method == "DELETE" and status == 200:  # it signed the fuzzer out
                server.sign_in()
            statuses[status] += 1
            outcomes[f"{status // 100}xx"] += 1
            variants[request.variant] += 1
            if status >= 500 and len(errors) < 20:
                errors.append(f"{status} {request.method} {request.path[:120]}"
                              f" body={(request.body or b'')[:160]!r} -> {data[:300]!r}")

        fuzz()
        seconds = time.perf_counter() - started
    total = sum(statuses.values())
    print(f"desk API fuzz: {total} requests in {seconds:.1f} s ({total / seconds:.0f}/s),"
          f" seed {seed_value}, database {database.split(':', maxsplit=1)[0]},"
          f" {len(document['paths'])} paths, {sum(len(m) for m in document['paths'].values())}"
          f" operations; Python {platform.python_version()}")
    print("by class:  " + "  ".join(f"{k} {outcomes[k]}" for k in ("2xx", "3xx", "4xx", "5xx")))
    print("by status: " + "  ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    print("by kind:   " + "  ".join(f"{k} {v}" for k, v in sorted(variants.items())))
    unread = sorted(f"{s.name}.{f.name}" for s in OPERATIONS for f in (*s.fields, *s.path_fields)
                    if f.name not in FIELDS_READ.get(s.name, set()))
    print(f"declared fields no request read: {', '.join(unread) or 'none'}")
    for line in errors:
        print(f"5xx: {line}")
    ok = outcomes["5xx"] == 0 and total >= count
    print(f"result: {'OK' if ok else 'FAILED'} (5xx answers: {outcomes['5xx']})")
    return 0 if ok else 1


def main() -> int:
    """Parse the options and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--database", help="an SQLAlchemy URL (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database = args.database or f"sqlite:///{Path(tmp) / 'fuzz.sqlite3'}"
        return run(args.requests, args.seed, database)


if __name__ == "__main__":
    sys.exit(main())
