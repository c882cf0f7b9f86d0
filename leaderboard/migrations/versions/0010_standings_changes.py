"""standings_changes: every change of a score or an entry, for the incremental standings

Revision ID: 0010_standings_changes
Revises: 0009_chips
Create Date: 2026-12-01 19:40:00

- ``standings_changes`` (``id``, ``entry_id``): one row, written by a trigger, for every row
  of ``scores`` or ``entries`` inserted, updated or deleted, by whatever wrote it (the ingest,
  the desk, a script). The service's incremental standings (leaderboard/standings/live.py)
  read the rows after the last one they applied and read only those entries again. The ids
  only rise: AUTOINCREMENT on SQLite (an id is never used twice), a sequence on PostgreSQL.
- The triggers: on SQLite one per table and operation; on PostgreSQL one function
  (``standings_changed``) and one row trigger per table.

Nothing existing is changed; the downgrade drops the triggers and the table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_standings_changes"
down_revision = "0009_chips"
branch_labels = None
depends_on = None

_TABLES = ("scores", "entries")

_PG_FUNCTION = """
CREATE FUNCTION standings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO standings_changes (entry_id) VALUES (NEW.entry_id);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.entry_id IS DISTINCT FROM NEW.entry_id)
    THEN
        INSERT INTO standings_changes (entry_id) VALUES (OLD.entry_id);
    END IF;
    RETURN NULL;
END
$$
"""


def _sqlite_triggers(table: str) -> list[str]:
    insert = "INSERT INTO standings_changes (entry_id) VALUES"
    return [
        f"CREATE TRIGGER trg_{table}_standings_insert AFTER INSERT ON {table}"
        f" BEGIN {insert} (NEW.entry_id); END",
        f"CREATE TRIGGER trg_{table}_standings_update AFTER UPDATE ON {table}"
        f" BEGIN {insert} (NEW.entry_id);"
        " INSERT INTO standings_changes (entry_id) SELECT OLD.entry_id"
        " WHERE OLD.entry_id IS NOT NEW.entry_id; END",
        f"CREATE TRIGGER trg_{table}_standings_delete AFTER DELETE ON {table}"
        f" BEGIN {insert} (OLD.entry_id); END",
    ]


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "standings_changes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  autoincrement=True, nullable=False),
        sa.Column("entry_id", sa.String(length=40), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        for table in _TABLES:
            op.execute(f"CREATE TRIGGER trg_{table}_standings AFTER INSERT OR UPDATE OR DELETE"
                       f" ON {table} FOR EACH ROW EXECUTE FUNCTION standings_changed()")
    else:
        for table in _TABLES:
            for statement in _sqlite_triggers(table):
                op.execute(statement)


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name == "postgresql":
        for table in _TABLES:
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_standings ON {table}")
        op.execute("DROP FUNCTION IF EXISTS standings_changed()")
    else:
        for table in _TABLES:
            for op_name in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_standings_{op_name}")
    op.drop_table("standings_changes")
