"""the table's chip float: each entry's chips reconciled at the end of its heat

Revision ID: 0009_chips
Revises: 0008_disputes
Create Date: 2026-12-01 14:30:00

- ``chip_reconciliations`` (``chips.reconciled``, promotion rule 19): one row per message
  (table, seq): the entry's chips issued at seating, held at the end of its heat, returned to
  the table's float and missing, as JSON lists of UIDs, with their values in cents.

Nothing is deleted or rewritten; the downgrade drops what this revision added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_chips"
down_revision = "0008_disputes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "chip_reconciliations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("entry_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("heat_id", sa.String(length=64), nullable=True),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("chip_set", sa.String(length=64), nullable=False),
        sa.Column("issued", sa.JSON(), nullable=False),
        sa.Column("held", sa.JSON(), nullable=False),
        sa.Column("returned", sa.JSON(), nullable=False),
        sa.Column("missing", sa.JSON(), nullable=False),
        sa.Column("foreign", sa.JSON(), nullable=False),
        sa.Column("issued_cents", sa.BigInteger(), nullable=False),
        sa.Column("held_cents", sa.BigInteger(), nullable=False),
        sa.Column("returned_cents", sa.BigInteger(), nullable=False),
        sa.Column("missing_cents", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_chip_reconciliations_table_seq"),
    )
    op.create_index("ix_chip_reconciliations_entry_id", "chip_reconciliations", ["entry_id"],
                    unique=False)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_chip_reconciliations_entry_id", table_name="chip_reconciliations")
    op.drop_table("chip_reconciliations")
