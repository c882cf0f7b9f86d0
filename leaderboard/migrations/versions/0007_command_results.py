"""the desk's commands and the tables' answers to them

Revision ID: 0007_command_results
Revises: 0006_identity
Create Date: 2026-12-01 13:30:00

- ``desk_commands``: every command the desk records for a table, keyed by its envelope seq
  (no longer the audit row's id: a seq must never repeat, even after a restore from backup,
  docs/desk-commands.md), with its audit row, its arguments, what a refusal puts back, and its
  state (recorded, sent, send_failed, held, accepted, refused) with the table's reason.
- ``command_results``: every ``command.result`` a table published, once per (table, seq),
  with the seq of the command it answers.

Commands recorded before this revision keep their audit-row seqs and no state (they are read
from the audit as before). The downgrade drops both tables.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_command_results"
down_revision = "0006_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "desk_commands",
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("audit_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("command", sa.String(length=32), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("undo", sa.JSON(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result_seq", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["audit_id"], ["audit.id"]),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_index("ix_desk_commands_audit_id", "desk_commands", ["audit_id"], unique=False)
    op.create_index("ix_desk_commands_table_id", "desk_commands", ["table_id"], unique=False)
    op.create_index("ix_desk_commands_state", "desk_commands", ["state"], unique=False)
    op.create_table(
        "command_results",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("command_id", sa.String(length=200), nullable=True),
        sa.Column("command_seq", sa.BigInteger(), nullable=True),
        sa.Column("command", sa.String(length=32), nullable=True),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("held_until", sa.String(length=64), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_command_results_table_seq"),
    )
    op.create_index("ix_command_results_command_seq", "command_results", ["command_seq"],
                    unique=False)


def downgrade() -> None:
    """Revert this revision (the commands' states and the tables' answers go with it)."""
    op.drop_index("ix_command_results_command_seq", table_name="command_results")
    op.drop_table("command_results")
    op.drop_index("ix_desk_commands_state", table_name="desk_commands")
    op.drop_index("ix_desk_commands_table_id", table_name="desk_commands")
    op.drop_index("ix_desk_commands_audit_id", table_name="desk_commands")
    op.drop_table("desk_commands")
