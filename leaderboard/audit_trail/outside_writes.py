"""Writes made outside the service: the database's own triggers record every INSERT, UPDATE,
DELETE (and on PostgreSQL TRUNCATE) on the protected tables that does not come from one of the
service's connections, into the append-only ``outside_writes`` table (docs/audit-trail.md).

The service marks each connection it opens (leaderboard.db.make_engine calls
`mark_service_connection`):

- PostgreSQL: the session setting ``showdown.writer = 'service'``; the trigger function reads
  ``current_setting('showdown.writer', true)`` and records ``current_user`` and the client's
  address too.
- SQLite has no session settings: the service's connections run with a page cache of
  SERVICE_CACHE_KIB (``PRAGMA cache_size = -8191``, a size no default has), which the triggers
  read from ``pragma_cache_size``.

Anyone who can write to the database can also forge the mark or drop a trigger; what this
catches is the edit made with psql, sqlite3 or a script, and `verify` reports a missing
trigger. The audit table itself is also protected by its hash chain and the signed heads,
whose key is not in the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Connection, inspect

__all__ = [
    "PROTECTED",
    "SERVICE_CACHE_KIB",
    "create_triggers",
    "drop_triggers",
    "expected_triggers",
    "mark_service_connection",
    "present_triggers",
    "restore_triggers",
]

# Protected table -> the column that names a row (its primary key). D360 says why these.
PROTECTED: Final[Mapping[str, str]] = {
    "audit": "id",
    "audit_tip": "id",
    "audit_heads": "id",
    "staff": "staff_id",
    "desk_sessions": "token_hash",
    "roster_state": "id",
    "tables": "table_id",
    "patrons": "patron_id",
    "patron_documents": "id",
    "exclusions": "id",
    "exclusion_name_keys": "id",
    "identity_holds": "id",
    "refusals": "id",
    "entries": "entry_id",
    "scores": "entry_id",
    "hand_corrections": "id",
    "disputes": "id",
    "prize_awards": "id",
    "draws": "id",
    "proxies": "id",
    "desk_commands": "seq",
    "chip_reconciliations": "id",
    "payout_checks": "id",
    # Tables of issue 33's other points, protected once their migrations have made them.
    "chip_counts": "id",
    "deck_events": "id",
    "draw_commitments": "id",
    "dispute_bundles": "id",
}
SERVICE_CACHE_KIB: Final = 8191
_SETTING: Final = "showdown.writer"
_FUNCTION: Final = "showdown_outside_write"
_GUARD: Final = "showdown_outside_writes_append_only"
_OPERATIONS: Final = ("INSERT", "UPDATE", "DELETE")
_APPEND_ONLY: Final = ("outside_writes is append-only: its rows record writes made outside"
                       " the service")


def mark_service_connection(dbapi_connection: Any, dialect: str) -> None:
    """Mark a new connection of the service so that the triggers do not record its writes."""
    cursor = dbapi_connection.cursor()
    try:
        if dialect == "sqlite":
            cursor.execute(f"PRAGMA cache_size = -{SERVICE_CACHE_KIB}")
        elif dialect == "postgresql":
            cursor.execute(f"SET {_SETTING} = 'service'")
    finally:
        cursor.close()
    if dialect == "postgresql":
        dbapi_connection.commit()  # a session setting: it outlives this transaction


def _trigger_name(table: str, operation: str) -> str:
    return f"outside_write_{table}_{operation.lower()}"


def expected_triggers(connection: Connection) -> set[str]:
    """The names of the triggers `create_triggers` makes on this database (the protected
    tables it has)."""
    return set(_trigger_statements(connection))


def present_triggers(connection: Connection) -> set[str]:
    """The names of the triggers the database has (of any table)."""
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars()
    else:
        rows = connection.exec_driver_sql(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND c.relnamespace = to_regnamespace(current_schema())"
            "::oid").scalars()
    return {str(name) for name in rows}


def create_triggers(connection: Connection) -> None:
    """Create the triggers (and on PostgreSQL their functions) on every protected table the
    database has."""
    _create(connection, set(_trigger_statements(connection)))


def restore_triggers(connection: Connection) -> list[str]:
    """Create again the triggers the database lacks (a migration that copied a table in
    SQLite's batch mode, or a trigger dropped by hand); their names. Nothing to do before
    revision 0018 (no ``outside_writes`` yet)."""
    missing = set(_trigger_statements(connection)) - present_triggers(connection)
    _create(connection, missing)
    return sorted(missing)


def _create(connection: Connection, names: set[str]) -> None:
    if not names:
        return
    if connection.dialect.name == "postgresql":
        for statement in _postgres_functions():
            connection.exec_driver_sql(statement)
    for name, statement in sorted(_trigger_statements(connection).items()):
        if name in names:
            connection.exec_driver_sql(statement)


def drop_triggers(connection: Connection) -> None:
    """Drop what `create_triggers` made (the migration's downgrade)."""
    postgres = connection.dialect.name == "postgresql"
    for name in sorted(expected_triggers(connection)):
        if postgres:
            table = "outside_writes" if name.startswith(_GUARD) else _table_of(name)
            connection.exec_driver_sql(f'DROP TRIGGER IF EXISTS {name} ON "{table}"')
        else:
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
    if postgres:
        connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {_FUNCTION}()")
        connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {_GUARD}()")


def _table_of(trigger: str) -> str:
    stem = trigger.removeprefix("outside_write_")
    return stem.rsplit("_", 1)[0]


def _trigger_statements(connection: Connection) -> dict[str, str]:
    """Each trigger's name and the statement that creates it, for the protected tables the
    database has (names are this module's constants, never input)."""
    tables = set(inspect(connection).get_table_names())
    if "outside_writes" not in tables:
        return {}
    protected = {t: k for t, k in PROTECTED.items() if t in tables}
    if connection.dialect.name == "postgresql":
        return _postgres_triggers(protected)
    when = f"(SELECT cache_size FROM pragma_cache_size) <> -{SERVICE_CACHE_KIB}"  # noqa: S608
    now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    statements = {}
    for table, key in protected.items():
        for operation in _OPERATIONS:
            row = "OLD" if operation == "DELETE" else "NEW"
            name = _trigger_name(table, operation)
            statements[name] = (
                f"CREATE TRIGGER {name} AFTER {operation} ON"  # noqa: S608
                f' "{table}" WHEN {when} BEGIN INSERT INTO outside_writes (table_name,'
                f" operation, row_key, at) VALUES ('{table}', '{operation}',"
                f" substr(CAST({row}.{key} AS TEXT), 1, 200), {now}); END")
    for operation in ("UPDATE", "DELETE"):
        name = f"{_GUARD}_{operation.lower()}"
        statements[name] = (f"CREATE TRIGGER {name} BEFORE {operation} ON outside_writes"
                            f" BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END")
    return statements


def _postgres_functions() -> list[str]:
    return [f"""
CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    item jsonb;
BEGIN
    IF coalesce(current_setting('{_SETTING}', true), '') = 'service' THEN
        RETURN NULL;
    END IF;
    IF TG_LEVEL = 'ROW' THEN
        IF TG_OP = 'DELETE' THEN item := to_jsonb(OLD); ELSE item := to_jsonb(NEW); END IF;
    END IF;
    INSERT INTO outside_writes (table_name, operation, row_key, at, db_user, client_addr)
    VALUES (TG_TABLE_NAME, TG_OP, left(item ->> TG_ARGV[0], 200),
            to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            current_user, host(inet_client_addr()));
    RETURN NULL;
END $$""", f"""
CREATE OR REPLACE FUNCTION {_GUARD}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '{_APPEND_ONLY}';
END $$"""]  # noqa: S608 (the names are this module's constants, never input)


def _postgres_triggers(protected: Mapping[str, str]) -> dict[str, str]:
    statements = {}
    for table, key in protected.items():
        for operation in _OPERATIONS:
            name = _trigger_name(table, operation)
            statements[name] = (f"CREATE TRIGGER {name} AFTER {operation} ON \"{table}\""
                                f" FOR EACH ROW EXECUTE FUNCTION {_FUNCTION}('{key}')")
        name = _trigger_name(table, "truncate")
        statements[name] = (f"CREATE TRIGGER {name} AFTER TRUNCATE ON \"{table}\""
                            f" FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}('{key}')")
    statements[_GUARD] = (f"CREATE TRIGGER {_GUARD} BEFORE UPDATE OR DELETE ON outside_writes"
                          f" FOR EACH ROW EXECUTE FUNCTION {_GUARD}()")
    statements[f"{_GUARD}_truncate"] = (
        f"CREATE TRIGGER {_GUARD}_truncate BEFORE TRUNCATE ON outside_writes FOR EACH"
        f" STATEMENT EXECUTE FUNCTION {_GUARD}()")
    return statements
