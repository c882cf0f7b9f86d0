"""chip counts and decks: each heat's opening and closing tray count, and the deck inventory

Revision ID: 0015_counts_decks
Revises: 0011_display_names
Create Date: 2026-12-06 14:00:00

- ``chip_counts`` (``chips.counted``, issue 33 point 5): one row per message (table, seq):
  the heat, the stage (opening or closing), counted and expected per chip value, the totals
  and the difference in cents, the table's tolerance and whether the difference was over it,
  the dealer who counted and the supervisor who confirmed, and when.
- ``deck_events`` (``decks.event``): one row per message (table, seq): decks received,
  opened, used or destroyed on a venue day, by whom, the witness of a destruction, seal and
  lot numbers, and the table's position after the step with what it broke of the balance.

Nothing is deleted or rewritten; the downgrade drops what this revision added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_counts_decks"
down_revision = "0013_name_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "chip_counts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("heat_id", sa.String(length=64), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("counted", sa.JSON(), nullable=False),
        sa.Column("expected", sa.JSON(), nullable=True),
        sa.Column("total_cents", sa.BigInteger(), nullable=False),
        sa.Column("expected_cents", sa.BigInteger(), nullable=True),
        sa.Column("difference_cents", sa.BigInteger(), nullable=True),
        sa.Column("tolerance_cents", sa.BigInteger(), nullable=False),
        sa.Column("over_tolerance", sa.Boolean(), nullable=False),
        sa.Column("dealer_id", sa.String(length=40), nullable=False),
        sa.Column("supervisor_id", sa.String(length=40), nullable=False),
        sa.Column("counted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_chip_counts_table_seq"),
    )
    op.create_index("ix_chip_counts_heat_id", "chip_counts", ["heat_id"], unique=False)
    op.create_table(
        "deck_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("decks", sa.Integer(), nullable=False),
        sa.Column("by", sa.String(length=40), nullable=False),
        sa.Column("witness", sa.String(length=40), nullable=True),
        sa.Column("seals", sa.JSON(), nullable=False),
        sa.Column("lot", sa.String(length=40), nullable=True),
        sa.Column("source", sa.String(length=100), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("sealed", sa.Integer(), nullable=False),
        sa.Column("in_play", sa.Integer(), nullable=False),
        sa.Column("awaiting", sa.Integer(), nullable=False),
        sa.Column("problems", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_deck_events_table_seq"),
    )
    op.create_index("ix_deck_events_day_table", "deck_events", ["day", "table_id"],
                    unique=False)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_deck_events_day_table", table_name="deck_events")
    op.drop_table("deck_events")
    op.drop_index("ix_chip_counts_heat_id", table_name="chip_counts")
    op.drop_table("chip_counts")
