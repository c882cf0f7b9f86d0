"""SQLAlchemy 2 round trips on SQLite (always) and PostgreSQL (where it runs).

What the leaderboard and the table journal rely on: money as exact 64-bit integer cents,
(table, seq) as a unique idempotency key, and SQLite in WAL mode with synchronous=FULL.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from tests.fixtures.services import Database

# 2**53 + 1: the smallest positive integer a float (double) cannot hold.
NOT_A_FLOAT = 9_007_199_254_740_993
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

metadata = sa.MetaData()
scores = sa.Table(
    "scores",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("table_id", sa.String(32), nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("amount_cents", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("table_id", "seq", name="uq_scores_table_seq"),
)


@pytest.fixture
def engine(database_url: Database) -> sa.Engine:
    """An engine on the test's database with the scores table created."""
    engine = database_url.engine()
    metadata.create_all(engine)
    return engine


def _rows(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        query = sa.select(scores.c.table_id, scores.c.seq, scores.c.amount_cents)
        return [tuple(row) for row in conn.execute(query.order_by(scores.c.id))]


def test_integer_cents_round_trip_exactly(engine: sa.Engine) -> None:
    assert float(NOT_A_FLOAT) != NOT_A_FLOAT  # the value proves no float is involved
    amounts = [NOT_A_FLOAT, -NOT_A_FLOAT, INT64_MAX, INT64_MIN, 1, 0]
    with engine.begin() as conn:
        conn.execute(
            scores.insert(),
            [{"table_id": "T1", "seq": i, "amount_cents": a} for i, a in enumerate(amounts)],
        )
    stored = [amount for _, _, amount in _rows(engine)]
    assert stored == amounts
    assert all(type(amount) is int for amount in stored)


def test_sums_of_cents_are_exact(engine: sa.Engine, database_url: Database) -> None:
    with engine.begin() as conn:
        conn.execute(
            scores.insert(),
            [
                {"table_id": "T1", "seq": 1, "amount_cents": NOT_A_FLOAT},
                {"table_id": "T1", "seq": 2, "amount_cents": 2},
            ],
        )
    with engine.connect() as conn:
        raw = conn.execute(sa.select(sa.func.sum(scores.c.amount_cents))).scalar_one()
        cast = conn.execute(
            sa.select(sa.cast(sa.func.sum(scores.c.amount_cents), sa.BigInteger))
        ).scalar_one()
    assert raw == 9_007_199_254_740_995
    # PostgreSQL's SUM(bigint) is NUMERIC (a Decimal in Python); cast it back for an int.
    assert type(raw) is (Decimal if database_url.kind == "postgres" else int)
    assert (cast, type(cast)) == (9_007_199_254_740_995, int)


def test_duplicate_table_seq_is_refused(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(scores.insert(), {"table_id": "T1", "seq": 7, "amount_cents": 100})
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(scores.insert(), {"table_id": "T1", "seq": 7, "amount_cents": 999})
    # The same seq on another table, and the next seq on this one, are different keys.
    with engine.begin() as conn:
        conn.execute(
            scores.insert(),
            [
                {"table_id": "T2", "seq": 7, "amount_cents": 200},
                {"table_id": "T1", "seq": 8, "amount_cents": 300},
            ],
        )
    assert _rows(engine) == [("T1", 7, 100), ("T2", 7, 200), ("T1", 8, 300)]


def test_duplicate_can_be_skipped_and_counted(engine: sa.Engine, database_url: Database) -> None:
    # INSERT ... ON CONFLICT DO NOTHING RETURNING id: how an idempotent ingest stores a message
    # once and learns that a repeat was a duplicate (no row returned). The cursor's rowcount
    # is no help here: it is -1 with psycopg once SQLAlchemy adds RETURNING.
    dialect_insert = postgresql.insert if database_url.kind == "postgres" else sqlite.insert
    statement = (
        dialect_insert(scores)
        .on_conflict_do_nothing(index_elements=["table_id", "seq"])
        .returning(scores.c.id)
    )
    stored = []
    with engine.begin() as conn:
        for amount in (100, 999, 100):
            row = conn.execute(statement, {"table_id": "T1", "seq": 1, "amount_cents": amount})
            stored.append(row.first() is not None)
    assert stored == [True, False, False]
    assert _rows(engine) == [("T1", 1, 100)]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_postgres_tables_live_in_the_tests_own_schema(
    engine: sa.Engine, database_url: Database
) -> None:
    with engine.connect() as conn:
        found = conn.execute(
            sa.text(
                "SELECT table_schema, column_name, data_type FROM information_schema.columns"
                " WHERE table_name = 'scores' AND column_name IN ('seq', 'amount_cents')"
                " AND table_schema IN (:mine, 'public', current_user)"
                " ORDER BY column_name"
            ), {"mine": database_url.schema}
        ).all()
    assert [tuple(row) for row in found] == [
        (database_url.schema, "amount_cents", "bigint"),
        (database_url.schema, "seq", "bigint"),
    ]


def test_sqlite_wal_and_synchronous_full_via_connect_event(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    engine = sa.create_engine(f"sqlite:///{path}")
    connections_set_up = 0

    @sa.event.listens_for(engine, "connect")
    def _durable(dbapi_connection: Any, _record: Any) -> None:
        nonlocal connections_set_up
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()
        connections_set_up += 1

    try:
        metadata.create_all(engine)
        # Two connections open at once: each new one gets the settings.
        with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2  # FULL
            first.execute(scores.insert(), {"table_id": "T1", "seq": 1, "amount_cents": 5})
            first.commit()
            # Committed pages wait in the write-ahead log until a checkpoint.
            assert path.with_name(path.name + "-wal").stat().st_size > 0
            assert second.execute(sa.select(scores.c.amount_cents)).scalar_one() == 5
        assert connections_set_up == 2
    finally:
        engine.dispose()
