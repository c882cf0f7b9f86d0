"""a supervisor's correction of a score, kept beside the table's record

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 02:00:00

- ``scores.corrected_cents``, ``scores.corrected_at``, ``scores.correction_reason``: the
  figure a supervisor ruled after a dispute (rules 22, 23; D65). The table's figure stays in
  ``score_cents``; the standings count the correction. NULL: not corrected.

Voids by a supervisor use the existing ``voided_at`` / ``void_reason``. Nothing is deleted.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("scores", sa.Column("corrected_cents", sa.BigInteger(), nullable=True))
    op.add_column("scores", sa.Column("corrected_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("scores", sa.Column("correction_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    """Revert this revision (corrections are dropped with their columns)."""
    with op.batch_alter_table("scores", schema=None) as batch_op:
        batch_op.drop_column("correction_reason")
        batch_op.drop_column("corrected_at")
        batch_op.drop_column("corrected_cents")
