"""One desk action at a time: each desk action checks the state and writes under one lock.

Desk actions check, then write (a seat is free, then it is taken; a table has no open heat,
then it has one). Several desks and HTTP requests may act at once, so each action takes the
desk lock before its first read, and holds it until its transaction ends (commit or
rollback). Desk actions are human-paced and take milliseconds: one lock for all of them costs
nothing and leaves no check-then-write race (docs/leaderboard.md).

- PostgreSQL: a transaction-level advisory lock (``pg_advisory_xact_lock``).
- SQLite: the database's write lock, taken at once (``BEGIN IMMEDIATE``) instead of at the
  first write, so that what the checks read cannot change before the transaction ends.

Then the audit chain's tip (leaderboard.audit_trail.chain.lock_tip), before any other row, as
an ingest batch takes it: neither can then hold a row the other waits for while it waits for
the tip (D361).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import text
from sqlalchemy.orm import Session

from leaderboard.audit_trail.chain import lock_tip

__all__ = ["DESK_LOCK_ID", "WAIT_MS", "hold_desk_lock"]

DESK_LOCK_ID: Final = 0x73686F77_6465736B  # "showdesk": the advisory lock's 64-bit id
WAIT_MS: Final = 10_000  # how long a desk action waits for another one's lock


def hold_desk_lock(session: Session) -> None:
    """Take the desk lock for the rest of ``session``'s transaction (waiting up to WAIT_MS
    for another desk's action to end), and forget what the session had loaded before it."""
    connection = session.connection()
    dialect = connection.dialect.name
    if dialect == "postgresql":
        # At most as long as SQLite's busy timeout (leaderboard.db): then an error, not a hang.
        connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{WAIT_MS}ms'")
        connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": DESK_LOCK_ID})
    elif dialect == "sqlite":
        dbapi = connection.connection.dbapi_connection
        if dbapi is not None and not dbapi.in_transaction:  # else it holds the lock already
            connection.exec_driver_sql("BEGIN IMMEDIATE")
    lock_tip(connection)
    session.expire_all()
