"""desk accounts: a passphrase and sign-in lock-out per staff member, and desk sessions

Revision ID: 0005_desk_accounts
Revises: 0004
Create Date: 2026-12-01 13:30:00

- ``staff.desk_hash``: the scrypt hash of a clerk's, supervisor's or manager's desk
  passphrase (NULL: no desk sign-in; dealers never have one); ``staff.desk_failures``,
  ``staff.desk_failed_at``, ``staff.desk_locked_until``: failed desk sign-ins since the last
  good one and the lock-out they caused. ``staff.role`` also holds ``clerk`` and ``manager``.
- ``desk_sessions``: one row per desk sign-in, keyed by the SHA-256 of its random token (the
  token itself is never stored), with its absolute expiry, idle timeout and when it ended.

Nothing is deleted or rewritten; the downgrade drops what this revision added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_desk_accounts"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("staff") as batch:
        batch.add_column(sa.Column("desk_hash", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("desk_failures", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("desk_failed_at", sa.DateTime(timezone=True),
                                   nullable=True))
        batch.add_column(sa.Column("desk_locked_until", sa.DateTime(timezone=True),
                                   nullable=True))
    op.create_table(
        "desk_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("staff_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("idle_seconds", sa.Integer(), nullable=False),
        sa.Column("client", sa.String(length=40), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_why", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(["staff_id"], ["staff.staff_id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_desk_sessions_staff_id", "desk_sessions", ["staff_id"], unique=False)


def downgrade() -> None:
    """Undo this revision."""
    op.drop_index("ix_desk_sessions_staff_id", table_name="desk_sessions")
    op.drop_table("desk_sessions")
    with op.batch_alter_table("staff") as batch:
        batch.drop_column("desk_locked_until")
        batch.drop_column("desk_failed_at")
        batch.drop_column("desk_failures")
        batch.drop_column("desk_hash")
