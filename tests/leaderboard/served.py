"""The central service's desk API served for real, as a desk workstation meets it: the desk
routes (leaderboard.desk_api.routes) under /api/desk, served by uvicorn over HTTPS with a CA
made for the test on a free 127.0.0.1 port, on a migrated SQLite file or PostgreSQL schema.
The tables' commands go to `Tables`: each is kept (``served.tables.commands``) and, as
``served.tables.mode`` says, accepted at once ("accept", the default), applied by a real table
core whose answers a real ingest stores ("loop": tests.leaderboard.roundtrip_support.TableLoop,
table t01), left unanswered ("silent") or not delivered at all ("down": the broker is
unreachable). One service per test module (it starts in about a second); `Served.reset`
empties the database between tests.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
import uvicorn
from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from deploy import certs
from leaderboard.audit_trail.outside_writes import create_triggers, drop_triggers
from leaderboard.db import make_engine, upgrade
from leaderboard.desk import DeskCommand
from leaderboard.desk.sender import SendError
from leaderboard.desk_api.routes import desk_routes
from leaderboard.models import Base, DeskCommandRecord
from tests import services
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import require_service
from tests.leaderboard.desk_api_support import PASSPHRASE, enrol_desk_staff
from tests.leaderboard.desk_fields import HEAT_TIME
from tests.leaderboard.desk_helpers import settings
from tests.leaderboard.roundtrip_support import TableLoop

__all__ = ["PASSPHRASE", "Served", "Tables", "serve_desk_api"]


class Tables:
    """The service's CommandSender in the tests (see the module's docstring)."""

    def __init__(self, engine: sa.Engine, clock: FakeClock) -> None:
        self.engine, self.clock = engine, clock
        self.mode = "accept"
        self.commands: list[DeskCommand] = []
        self._loop: TableLoop | None = None

    @property
    def loop(self) -> TableLoop:
        """The real table t01 (made, and enrolled, when first used)."""
        if self._loop is None:
            self._loop = TableLoop(self.engine, self.clock)
        return self._loop

    def forget_loop(self) -> None:
        """A new table t01 next time (after the database was emptied)."""
        self._loop = None

    async def send(self, command: DeskCommand) -> None:
        """Keep the command and answer it as ``mode`` says."""
        if self.mode == "down":
            raise SendError(f"{command.command} seq {command.seq}: the broker is unreachable")
        self.commands.append(command)
        if self.mode == "loop":
            await self.loop.send(command)
        elif self.mode == "accept":
            with Session(self.engine) as s:  # as the ingest records a table's acceptance
                s.execute(sa.update(DeskCommandRecord)
                          .where(DeskCommandRecord.seq == command.seq)
                          .values(state="accepted", answered_at=self.clock()))
                s.commit()


@dataclass(frozen=True)
class Served:
    """A running desk API: its URL, the CA its certificate chains to, its database and the
    table behind it."""

    url: str
    ca: Path
    engine: sa.Engine
    tables: Tables
    clock: FakeClock
    kind: str

    def enrol(self, staff_id: str, role: str) -> None:
        """Enrol a member with the test passphrase (once)."""
        enrol_desk_staff(self.engine, self.clock, staff_id, role)

    def reset(self, manager: str = "M1") -> None:
        """Empty every table (the schema stays), the clock at the heat's time, the tables
        accepting; then enrol the first ``manager``."""
        with self.engine.begin() as conn:  # the triggers would keep (and refuse) the emptying
            drop_triggers(conn)
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(table.delete())
            create_triggers(conn)
        self.clock.now = HEAT_TIME
        self.tables.mode = "accept"
        self.tables.commands.clear()
        self.tables.forget_loop()
        self.enrol(manager, "manager")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _database(kind: str, tmp: Path) -> Iterator[sa.Engine]:
    if kind == "sqlite":
        engine = make_engine(f"sqlite:///{tmp / 'central.sqlite3'}")
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
    engine = make_engine(url.render_as_string(hide_password=False))
    upgrade(engine)
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@contextmanager
def serve_desk_api(kind: str, tmp: Path, *, answer_wait: float = 0.5,
                   extra_routes: Sequence[BaseRoute] = ()) -> Iterator[Served]:
    """Serve the desk API on ``kind`` ("sqlite" or "postgres") over HTTPS until the block
    ends; a manager ``M1`` is enrolled (passphrase PASSPHRASE). ``extra_routes`` are served
    under /api/desk before the desk API's own (a route another part builds)."""
    tmp.mkdir(parents=True, exist_ok=True)
    certs.make_ca(tmp / "ca.key", tmp / "ca.pem", name="venue CA", days=2)
    certs.make_server_certificate(cert=tmp / "api.pem", key=tmp / "api.key",
                                  ca_cert=tmp / "ca.pem", ca_key=tmp / "ca.key",
                                  common_name="127.0.0.1", names=("127.0.0.1",), days=2)
    clock = FakeClock(HEAT_TIME)
    with _database(kind, tmp) as engine:
        tables = Tables(engine, clock)
        routes = desk_routes(engine, settings(), tables, clock, answer_wait=answer_wait)
        app = Starlette(routes=[Mount("/api/desk", routes=[*extra_routes, *routes])])
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(
            # log_config=None: uvicorn leaves the process's logging as it is (its own config
            # would stop uvicorn.error propagating, for every later test in this worker)
            app, host="127.0.0.1", port=port, log_config=None, access_log=False,
            lifespan="off",
            ssl_certfile=str(tmp / "api.pem"), ssl_keyfile=str(tmp / "api.key")))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the desk API did not start")
            time.sleep(0.02)
        served = Served(f"https://127.0.0.1:{port}/", tmp / "ca.pem", engine, tables, clock,
                        kind)
        served.enrol("M1", "manager")
        try:
            yield served
        finally:
            server.should_exit = True
            thread.join(10)
