"""constraints the desk relies on, and the evidence to verify stored messages again

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 18:50:00

- ``uq_draws_stage``: one seat draw per stage (the first one stored is in force, rule 40).
- ``uq_entries_place_seat``: one semi-final or Final place per heat and seat while the
  places wait to be seated (rules 27, 40; ``table_id`` still NULL), a partial index on both
  PostgreSQL and SQLite.
- ``uq_prize_awards_kind_entry``: an entry is awarded a prize of a kind once (rule 55).
- ``messages.payload_sha256`` and ``messages.envelope``: the signed payload as received and
  its SHA-256, so that a stored message can be verified again against the table's key
  (``showdown leaderboard audit``). Rows stored before this revision keep NULL there.

A database whose rows already break one of the new constraints (two desks raced before the
database enforced it) is not changed: the upgrade stops and names the rows a supervisor must
resolve. Nothing is deleted or renumbered here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from leaderboard.db import MigrationError

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_UNSEATED_PLACE = "stage IN ('semi_final', 'final') AND table_id IS NULL"

# (what, the query listing the rows that break the new index)
_DUPLICATES = (
    ("more than one seat draw for a stage (draws: stage, ids)",
     "SELECT stage, id FROM draws WHERE stage IN"
     " (SELECT stage FROM draws GROUP BY stage HAVING COUNT(*) > 1) ORDER BY stage, id"),
    ("two unseated semi-final or Final places on one heat and seat (entries: heat, seat,"
     " entry)",
     "SELECT heat_id, seat, entry_id FROM entries e WHERE e.stage IN ('semi_final', 'final')"
     " AND e.table_id IS NULL AND EXISTS (SELECT 1 FROM entries o WHERE o.stage IN"
     " ('semi_final', 'final') AND o.table_id IS NULL AND o.heat_id = e.heat_id"
     " AND o.seat = e.seat AND o.entry_id <> e.entry_id) ORDER BY heat_id, seat, entry_id"),
    ("an entry awarded a prize of one kind twice (prize_awards: kind, entry, ids)",
     "SELECT kind, entry_id, id FROM prize_awards p WHERE EXISTS (SELECT 1 FROM prize_awards"
     " o WHERE o.kind = p.kind AND o.entry_id = p.entry_id AND o.id <> p.id)"
     " ORDER BY kind, entry_id, id"),
)


def _refuse_duplicates() -> None:
    """MigrationError naming every row that would break a new unique index."""
    connection = op.get_bind()
    problems = []
    for what, query in _DUPLICATES:
        rows = connection.execute(sa.text(query)).all()
        if rows:
            listed = "; ".join(" ".join(str(v) for v in row) for row in rows[:20])
            more = f" and {len(rows) - 20} more" if len(rows) > 20 else ""
            problems.append(f"{what}: {listed}{more}")
    if problems:
        raise MigrationError(
            "revision 0002 cannot be applied until a supervisor resolves "
            + " | ".join(problems) + " (nothing was changed)")


def upgrade() -> None:
    """Apply this revision."""
    _refuse_duplicates()
    op.add_column("messages", sa.Column("payload_sha256", sa.String(length=64), nullable=True))
    op.add_column("messages", sa.Column("envelope", sa.Text(), nullable=True))
    op.create_index("uq_draws_stage", "draws", ["stage"], unique=True)
    op.create_index("uq_entries_place_seat", "entries", ["heat_id", "seat"], unique=True,
                    postgresql_where=sa.text(_UNSEATED_PLACE),
                    sqlite_where=sa.text(_UNSEATED_PLACE))
    op.create_index("uq_prize_awards_kind_entry", "prize_awards", ["kind", "entry_id"],
                    unique=True)


def downgrade() -> None:
    """Revert this revision (the stored envelopes are dropped with their columns)."""
    op.drop_index("uq_prize_awards_kind_entry", table_name="prize_awards")
    op.drop_index("uq_entries_place_seat", table_name="entries")
    op.drop_index("uq_draws_stage", table_name="draws")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_column("envelope")
        batch_op.drop_column("payload_sha256")
