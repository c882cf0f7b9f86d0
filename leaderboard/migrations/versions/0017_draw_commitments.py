"""draw_commitments: the Final's seat draw committed before it is drawn; countersigned
dispute bundles

Revision ID: 0017_draw_commitments
Revises: 0011_display_names
Create Date: 2026-12-06 14:00:00

- ``draw_commitments``: a seed drawn and stored before the draw, its SHA-256 recorded and
  shown first, the witness's staff id, who committed it, when, until when it may be used,
  and when it was used (once).
- ``draws.commitment_id``: the commitment a draw used (unique: a commitment draws once).
- ``dispute_bundles``: a table's dispute bundle received for a dispute, as the central
  service countersigned it.

The downgrade drops them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_draw_commitments"
down_revision = "0016_desk_terminal_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the commitments and bundles tables; link a draw to its commitment."""
    op.create_table(
        "draw_commitments",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("seed_hex", sa.Text(), nullable=False),
        sa.Column("seed_sha256", sa.String(length=64), nullable=False),
        sa.Column("witness", sa.String(length=40), nullable=False),
        sa.Column("committed_by", sa.String(length=200), nullable=False),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("draws") as batch:
        batch.add_column(sa.Column("commitment_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_draws_commitment_id", "draw_commitments",
                                 ["commitment_id"], ["id"])
        batch.create_unique_constraint("uq_draws_commitment_id", ["commitment_id"])
    op.create_table(
        "dispute_bundles",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("dispute_id", sa.Integer(), sa.ForeignKey("disputes.id"), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("bundle_sha256", sa.String(length=64), nullable=False),
        sa.Column("bundle", sa.Text(), nullable=False),
        sa.Column("countersigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("countersigned_by", sa.String(length=200), nullable=False),
    )
    op.create_index("ix_dispute_bundles_dispute_id", "dispute_bundles", ["dispute_id"])


def downgrade() -> None:
    """Drop the bundles, the draw's link and the commitments."""
    op.drop_index("ix_dispute_bundles_dispute_id", table_name="dispute_bundles")
    op.drop_table("dispute_bundles")
    with op.batch_alter_table("draws") as batch:
        batch.drop_constraint("uq_draws_commitment_id", type_="unique")
        batch.drop_constraint("fk_draws_commitment_id", type_="foreignkey")
        batch.drop_column("commitment_id")
    op.drop_table("draw_commitments")
