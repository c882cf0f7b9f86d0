"""desk_terminal_sessions: each desk session's terminal and client address

Revision ID: 0016_desk_terminal_sessions
Revises: 0011_display_names
Create Date: 2026-12-06 14:00:00

- ``desk_sessions.terminal``: the workstation's name (desk.terminal) a session was opened
  from, so sessions are per person and per terminal and listed by it (issue 33, D354);
- ``desk_sessions.address``: the client address the central service saw at sign-in.

Sessions opened before this revision have neither (null). The downgrade drops both.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_desk_terminal_sessions"
down_revision = "0015_counts_decks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the two columns."""
    with op.batch_alter_table("desk_sessions") as batch:
        batch.add_column(sa.Column("terminal", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("address", sa.String(length=64), nullable=True))


def downgrade() -> None:
    """Drop them."""
    with op.batch_alter_table("desk_sessions") as batch:
        batch.drop_column("address")
        batch.drop_column("terminal")
