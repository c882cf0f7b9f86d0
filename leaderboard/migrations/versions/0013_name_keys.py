"""name_keys: the keys list rows' names are found by (names as people write them, issue 33)

Revision ID: 0013_name_keys
Revises: 0011_display_names
Create Date: 2026-12-06 14:00:00

- ``exclusion_name_keys``: one row per (list row, part of its name, key), with the name's
  number of parts: the part's own form, its phonetic codes, its pet-form groups, its surname
  without particles, its first and last letters (leaderboard.name_similarity.blocking_keys).
  A registration reads only the list rows that share keys with its name on enough of their
  parts (D368). The keys of every list row already stored are computed here.

The downgrade drops the table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from leaderboard.name_similarity import blocking_keys, name_parts

revision = "0013_name_keys"
down_revision = "0011_display_names"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the table and key the list rows already stored."""
    op.create_table(
        "exclusion_name_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("exclusion_id", sa.Integer(), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("parts", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["exclusion_id"], ["exclusions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_exclusion_name_keys_key", "exclusion_name_keys",
                    ["key", "exclusion_id", "part", "parts"], unique=False)
    op.create_index("ix_exclusion_name_keys_exclusion_id", "exclusion_name_keys",
                    ["exclusion_id"], unique=False)
    bind = op.get_bind()
    keys = [{"e": row_id, "p": part, "n": len(name_parts(name or "")), "k": key[:64]}
            for row_id, name in bind.execute(sa.text("SELECT id, name FROM exclusions")).all()
            for part, key in blocking_keys(name or "")]
    if keys:
        bind.execute(sa.text("INSERT INTO exclusion_name_keys (exclusion_id, part, parts, key)"
                             " VALUES (:e, :p, :n, :k)"), keys)


def downgrade() -> None:
    """Drop the keys (the list rows keep their names)."""
    op.drop_index("ix_exclusion_name_keys_exclusion_id", table_name="exclusion_name_keys")
    op.drop_index("ix_exclusion_name_keys_key", table_name="exclusion_name_keys")
    op.drop_table("exclusion_name_keys")
