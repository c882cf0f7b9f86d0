"""What the audit-chain tests share: a desk's ordinary work through the service's own
functions, the central key, and a connection opened OUTSIDE the service (plain sqlite3 or
psycopg, as psql or sqlite3 at a prompt would be) for the insider's edits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.audit import verify_trail
from leaderboard.audit_trail.heads import sign_head
from leaderboard.audit_trail.verify import ChainReport
from leaderboard.desk.auth import init_first_manager, sign_in
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import FakeClock, register
from wire.signing import Signer

CENTRAL = Signer.from_seed("leaderboard", bytes(range(32)))
MANAGER, SUPERVISOR, CLERK = "M1", "S1", "C1"
PHRASES = {MANAGER: "manager's own long phrase", SUPERVISOR: "supervisor's own long phrase",
           CLERK: "clerk's own long phrase"}


def desk_work(engine: sa.Engine, clock: FakeClock) -> None:
    """A first manager at install, a supervisor and a clerk enrolled by her, sign-ins, two
    patrons registered: every audit row written by the service."""
    with Session(engine, expire_on_commit=False) as s:
        init_first_manager(s, clock, staff_id=MANAGER, name="Mpho Manager",
                           passphrase_text=PHRASES[MANAGER])
        sign_in(s, clock, staff_id=MANAGER, passphrase_text=PHRASES[MANAGER], client="cli")
        desk.enrol_staff(s, clock, actor=MANAGER, staff_id=SUPERVISOR, name="Sipho Super",
                         role="supervisor", desk_passphrase=PHRASES[SUPERVISOR])
        desk.enrol_staff(s, clock, actor=MANAGER, staff_id=CLERK, name="Cara Clerk",
                         role="clerk", desk_passphrase=PHRASES[CLERK])
        clock.advance(300)
        sign_in(s, clock, staff_id=CLERK, passphrase_text=PHRASES[CLERK], client="cli")
        register(s, clock, "8001015009087", name="Thandi Mokoena")
        register(s, clock, "7502025009088", name="Johan Smit")


def signed(engine: sa.Engine, clock: FakeClock) -> None:
    """The service signs the chain's head now."""
    assert sign_head(engine, CENTRAL, clock()) is not None


def verified(engine: sa.Engine) -> ChainReport:
    """`verify_trail` with the central key."""
    return verify_trail(engine, CENTRAL.public_key)


@contextmanager
def outside(db: Database) -> Iterator[Any]:
    """A DB-API connection opened outside the service (autocommit), as an insider's."""
    url = sa.make_url(db.url)
    if db.kind == "sqlite":
        import sqlite3

        connection: Any = sqlite3.connect(str(url.database), isolation_level=None)
    else:
        connection = psycopg.connect(
            host=url.host, port=url.port, user=url.username, dbname=url.database,
            options=str(url.query.get("options", "")), autocommit=True)
    try:
        yield connection
    finally:
        connection.close()


def placeholder(db: Database) -> str:
    """The DB-API parameter mark of the database's driver."""
    return "?" if db.kind == "sqlite" else "%s"


def kinds(report: ChainReport) -> list[tuple[str, int | None]]:
    """The findings as (kind, row), in order."""
    return [(f.kind, f.row_id) for f in report.findings]
