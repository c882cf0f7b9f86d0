"""central_lease: which central instance is active (the lease) and its fencing epoch

Revision ID: 0019_central_lease
Revises: 0018_audit_chain
Create Date: 2026-12-06 17:00:00

- ``central_lease``: one row (id 1): the instance holding the lease, its fencing epoch (a
  counter that every takeover increments) and when the lease expires, on the database's own
  clock (leaderboard.central_lease). It starts empty: the first instance to take the lease
  writes the row (epoch 1).

The downgrade drops the table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_central_lease"
down_revision = "0018_audit_chain"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the lease table (empty)."""
    op.create_table(
        "central_lease",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("renewed_at", sa.Float(), nullable=False),
        sa.Column("taken_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    """Drop the lease table."""
    op.drop_table("central_lease")
