"""disputes as records: who raised them, their hands, the ruling; hands' correcting records

Revision ID: 0008_disputes
Revises: 0007_command_results
Create Date: 2026-12-01 14:00:00

- ``disputes`` (rules 22, 37, 53): ``raised_by_role`` (participant | dealer | supervisor;
  existing rows are participants' ``score.disputed``), ``raised_by`` (the entry or staff id),
  ``recorded_by`` (the desk operator who recorded a participant's dispute), ``hand_ids``,
  ``status`` (open -> ruled -> closed; existing resolved rows are closed), the ruling
  (``ruling``, ``ruling_reason``, ``ruled_by``, ``ruled_at``, ``ruling_detail``). A dispute
  recorded at the desk has no table message: ``table_id``, ``seq`` and ``score_cents`` may be
  NULL.
- ``hand_corrections``: a table's ``hand.corrected`` (one row per message, table and seq): a
  ruling on a settled hand applied to the entry's chips; the hand's row is never changed.

Nothing is deleted; the downgrade drops what this revision added (desk-recorded disputes,
which have no table message, go with it).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_disputes"
down_revision = "0007_command_results"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("disputes", schema=None) as batch_op:
        batch_op.alter_column("table_id", existing_type=sa.String(length=64), nullable=True)
        batch_op.alter_column("seq", existing_type=sa.BigInteger(), nullable=True)
        batch_op.alter_column("score_cents", existing_type=sa.BigInteger(), nullable=True)
        batch_op.add_column(sa.Column("raised_by_role", sa.String(length=16), nullable=False,
                                      server_default="participant"))
        batch_op.add_column(sa.Column("raised_by", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("recorded_by", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("hand_ids", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("status", sa.String(length=16), nullable=False,
                                      server_default="open"))
        batch_op.add_column(sa.Column("ruling", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("ruling_reason", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("ruled_by", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("ruled_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("ruling_detail", sa.JSON(), nullable=True))
    op.execute("UPDATE disputes SET status = 'closed' WHERE resolved_at IS NOT NULL")
    op.execute("UPDATE disputes SET raised_by = entry_id WHERE raised_by IS NULL")
    op.create_table(
        "hand_corrections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hand_id", sa.String(length=64), nullable=False),
        sa.Column("entry_id", sa.String(length=40), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("ruling", sa.String(length=16), nullable=False),
        sa.Column("recorded_net", sa.BigInteger(), nullable=False),
        sa.Column("counted_net", sa.BigInteger(), nullable=False),
        sa.Column("balance_before", sa.BigInteger(), nullable=False),
        sa.Column("balance_after", sa.BigInteger(), nullable=False),
        sa.Column("hands_played", sa.Integer(), nullable=False),
        sa.Column("dispute_id", sa.Integer(), nullable=True),
        sa.Column("by", sa.String(length=200), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("heat_id", sa.String(length=64), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_hand_corrections_table_seq"),
    )
    op.create_index("ix_hand_corrections_hand_id", "hand_corrections", ["hand_id"])
    op.create_index("ix_hand_corrections_entry_id", "hand_corrections", ["entry_id"])
    op.create_index("ix_hand_corrections_dispute_id", "hand_corrections", ["dispute_id"])


def downgrade() -> None:
    """Revert this revision (desk-recorded disputes and the rulings go with it)."""
    op.drop_index("ix_hand_corrections_dispute_id", table_name="hand_corrections")
    op.drop_index("ix_hand_corrections_entry_id", table_name="hand_corrections")
    op.drop_index("ix_hand_corrections_hand_id", table_name="hand_corrections")
    op.drop_table("hand_corrections")
    op.execute("DELETE FROM disputes WHERE seq IS NULL OR table_id IS NULL"
               " OR score_cents IS NULL")
    with op.batch_alter_table("disputes", schema=None) as batch_op:
        for column in ("ruling_detail", "ruled_at", "ruled_by", "ruling_reason", "ruling",
                       "status", "hand_ids", "recorded_by", "raised_by", "raised_by_role"):
            batch_op.drop_column(column)
        batch_op.alter_column("score_cents", existing_type=sa.BigInteger(), nullable=False)
        batch_op.alter_column("seq", existing_type=sa.BigInteger(), nullable=False)
        batch_op.alter_column("table_id", existing_type=sa.String(length=64), nullable=False)
