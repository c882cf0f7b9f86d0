"""``Database.migrate`` (tests/fixtures/services.py), which most database tests use instead of
running the migrations each, gives exactly what a real ``upgrade`` gives: the same tables,
columns, indexes, constraints, triggers and functions, at the same revision."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from leaderboard.db import head_revisions, make_engine, upgrade
from tests import services
from tests.fixtures.services import Database, _schema_url

_PG_CATALOG = {
    "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default,"
               " ordinal_position FROM information_schema.columns"
               " WHERE table_schema = current_schema()",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes"
               " WHERE schemaname = current_schema()",
    "constraints": "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)"
                   " FROM pg_constraint WHERE connamespace = current_schema()::regnamespace",
    "triggers": "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM"
                " pg_trigger WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class"
                " WHERE relnamespace = current_schema()::regnamespace)",
    "functions": "SELECT proname, pg_get_functiondef(oid) FROM pg_proc"
                 " WHERE pronamespace = current_schema()::regnamespace",
    "sequences": "SELECT sequencename, data_type, start_value, last_value FROM pg_sequences"
                 " WHERE schemaname = current_schema()",
    "revision": "SELECT version_num FROM alembic_version",
}


def _structure(engine: sa.Engine, schema: str | None) -> dict[str, Any]:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            queries = {"objects": "SELECT type, name, tbl_name, sql FROM sqlite_master",
                       "revision": "SELECT version_num FROM alembic_version",
                       "journal_mode": "PRAGMA journal_mode"}
        else:
            queries = _PG_CATALOG
        found = {what: sorted(tuple(row) for row in conn.exec_driver_sql(query))
                 for what, query in queries.items()}
    text = repr(found)
    return {"text": text if schema is None else re.sub(re.escape(schema), "<schema>", text)}


def _real(database_url: Database, tmp_path: Path) -> Iterator[tuple[sa.Engine, str | None]]:
    """An engine on a second new database of the same kind, migrated for real."""
    if database_url.kind == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'real.sqlite3'}")
        upgrade(engine)
        yield engine, None
        engine.dispose()
        return
    schema = f"test_{secrets.token_hex(6)}"
    admin = sa.create_engine(services.POSTGRES_URL, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(_schema_url(services.POSTGRES_URL, schema))
    try:
        upgrade(engine)
        yield engine, schema
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def test_a_migrated_copy_is_what_the_migrations_make(database_url: Database,
                                                      tmp_path: Path) -> None:
    copy = make_engine(database_url.url)
    database_url.migrate(copy)
    try:
        for real, schema in _real(database_url, tmp_path):
            assert _structure(copy, database_url.schema) == _structure(real, schema)
        with copy.connect() as conn:
            assert {conn.scalar(sa.text("SELECT version_num FROM alembic_version"))} == (
                head_revisions())
    finally:
        copy.dispose()
