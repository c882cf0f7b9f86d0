"""The central service's desk API served for real, as a desk workstation meets it: the desk
routes (leaderboard.desk_api.routes) under /api/desk, served by uvicorn over HTTPS with a CA
made for the test on a free 127.0.0.1 port, on a migrated SQLite file or PostgreSQL schema.
The tables' commands go to a real table core whose answers a real ingest stores
(tests.leaderboard.roundtrip_support.TableLoop): ``served.loop.answer = False`` makes the
table silent. One service per test module (it starts in about a second).
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from deploy import certs
from leaderboard.db import upgrade
from leaderboard.desk_api.routes import desk_routes
from tests import services
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import require_service
from tests.leaderboard.desk_api_support import PASSPHRASE, enrol_desk_staff
from tests.leaderboard.desk_fields import HEAT_TIME
from tests.leaderboard.desk_helpers import settings
from tests.leaderboard.roundtrip_support import TableLoop

__all__ = ["PASSPHRASE", "Served", "serve_desk_api"]


@dataclass(frozen=True)
class Served:
    """A running desk API: its URL, the CA its certificate chains to, its database and the
    table behind it."""

    url: str
    ca: Path
    engine: sa.Engine
    loop: TableLoop
    clock: FakeClock
    kind: str

    def enrol(self, staff_id: str, role: str) -> None:
        """Enrol a member with the test passphrase (once)."""
        enrol_desk_staff(self.engine, self.clock, staff_id, role)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _database(kind: str, tmp: Path) -> Iterator[sa.Engine]:
    if kind == "sqlite":
        engine = sa.create_engine(f"sqlite:///{tmp / 'central.sqlite3'}")
        upgrade(engine)
        try:
            yield engine
        finally:
            engine.dispose()
        return
    require_service("PostgreSQL", services.postgres_up(),
                             "{}:{}".format(*services.POSTGRES))
    schema = f"served_{secrets.token_hex(6)}"
    admin = sa.create_engine(services.POSTGRES_URL, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.make_url(services.POSTGRES_URL).update_query_dict(
        {"options": f"-csearch_path={schema}"})
    engine = sa.create_engine(url)
    upgrade(engine)
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@contextmanager
def serve_desk_api(kind: str, tmp: Path, *, answer_wait: float = 0.5) -> Iterator[Served]:
    """Serve the desk API on ``kind`` ("sqlite" or "postgres") over HTTPS until the block
    ends; a manager ``M1`` is enrolled (passphrase PASSPHRASE)."""
    certs.make_ca(tmp / "ca.key", tmp / "ca.pem", name="venue CA", days=2)
    certs.make_server_certificate(cert=tmp / "api.pem", key=tmp / "api.key",
                                  ca_cert=tmp / "ca.pem", ca_key=tmp / "ca.key",
                                  common_name="127.0.0.1", names=("127.0.0.1",), days=2)
    clock = FakeClock(HEAT_TIME)
    with _database(kind, tmp) as engine:
        loop = TableLoop(engine, clock)
        routes = desk_routes(engine, settings(), loop, clock, answer_wait=answer_wait)
        app = Starlette(routes=[Mount("/api/desk", routes=routes)])
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
            ssl_certfile=str(tmp / "api.pem"), ssl_keyfile=str(tmp / "api.key")))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the desk API did not start")
            time.sleep(0.02)
        served = Served(f"https://127.0.0.1:{port}/", tmp / "ca.pem", engine, loop, clock, kind)
        served.enrol("M1", "manager")
        try:
            yield served
        finally:
            server.should_exit = True
            thread.join(10)
