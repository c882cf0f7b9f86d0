"""Issue 34 point 1: on PostgreSQL a connection that can no longer write (SQLSTATE 25006, a
demoted primary; shutdowns; connection failures) is a lost connection: the engine drops it
and the pool, and the next attempt connects again (leaderboard.db, D388).

The read-only server is made safely on the machine's PostgreSQL: the engine's own first
connection is put in ``default_transaction_read_only`` for its session only (what a standby
or a demoted primary answers), so nothing of the machine's database changes."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from leaderboard.db import connection_lost, lost_connection_state, make_engine
from tests import services
from tests.fixtures.services import require_service


@pytest.mark.parametrize(("sqlstate", "lost"), [
    ("25006", True), ("57P01", True), ("57P02", True), ("57P03", True), ("08006", True),
    ("08001", True), ("23505", False), ("40001", False), ("25P02", False), (None, False)])
def test_which_sqlstates_are_a_lost_connection(sqlstate: str | None, lost: bool) -> None:
    assert lost_connection_state(sqlstate) is lost


@pytest.mark.postgres
def test_a_read_only_error_drops_the_connection_and_the_next_attempt_writes() -> None:
    require_service("PostgreSQL", services.postgres_up(), "{}:{}".format(*services.POSTGRES))
    engine = make_engine(services.POSTGRES_URL)
    opened: list[Any] = []

    @event.listens_for(engine, "connect")
    def _first_read_only(dbapi_connection: Any, _record: Any) -> None:
        # The first connection answers as a standby would; later ones are writable.
        opened.append(dbapi_connection)
        if len(opened) == 1:
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET SESSION default_transaction_read_only = on")
            dbapi_connection.commit()

    try:
        with engine.connect() as connection:  # the ping at checkout passes: it only reads
            connection.execute(text("SELECT 1"))
        with pytest.raises(DBAPIError) as caught, engine.begin() as connection:
            connection.execute(text("CREATE TEMP TABLE drill_probe (n int)"))
        assert getattr(caught.value.orig, "sqlstate", None) == "25006"
        assert caught.value.connection_invalidated
        assert connection_lost(caught.value)
        with engine.begin() as connection:  # a new connection: writable
            connection.execute(text("CREATE TEMP TABLE drill_probe (n int)"))
            connection.execute(text("INSERT INTO drill_probe VALUES (1)"))
            assert connection.execute(text("SELECT count(*) FROM drill_probe")).scalar() == 1
        assert len(opened) == 2
        assert opened[0].closed
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_refused_write_is_not_a_lost_connection() -> None:
    require_service("PostgreSQL", services.postgres_up(), "{}:{}".format(*services.POSTGRES))
    engine = make_engine(services.POSTGRES_URL)
    try:
        with pytest.raises(DBAPIError) as caught, engine.begin() as connection:
            connection.execute(text("SELECT 1 / 0"))
        assert not caught.value.connection_invalidated
        assert not connection_lost(caught.value)
    finally:
        engine.dispose()


def test_psycopg_errors_raised_unwrapped_by_an_event_count_too() -> None:
    psycopg = pytest.importorskip("psycopg")
    assert connection_lost(psycopg.errors.ReadOnlySqlTransaction("read-only"))
    assert connection_lost(psycopg.errors.AdminShutdown("terminating connection"))
    assert connection_lost(psycopg.OperationalError("server closed the connection"))
    assert not connection_lost(psycopg.errors.UniqueViolation("duplicate key"))
    assert not connection_lost(ValueError("not a database error"))
