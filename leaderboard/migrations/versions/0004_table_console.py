"""the table console: staff enrolment, participants' proof, disputes, payout checks, manual hands

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 11:00:00

- ``staff`` and ``roster_state``: dealers and supervisors enrolled at the desk, their PIN and
  employee card only as game.staff hashes; the roster's version (raised by every change) and
  the one card salt employee cards are hashed with (drawn once, when the first member is
  enrolled).
- ``patrons.card_hash``, ``patrons.pin_hash``: hashes of a participant's rewards card number
  and PIN, sent to the table at seating; NULL: none recorded.
- ``scores.ack_evidence``: the SHA-256 of a signature drawn at the table (NULL: none).
- ``hands.manual``: a card or wager of the hand was keyed by hand (rule 58); existing rows
  are from before manual entry was marked and read as false.
- ``disputes`` (``score.disputed``, and the supervisor's resolution) and ``payout_checks``
  (``payout.checked``), one row per message (table, seq).

Nothing is deleted or rewritten; the downgrade drops what this revision added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "staff",
        sa.Column("staff_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("pin_hash", sa.String(length=200), nullable=True),
        sa.Column("card_hash", sa.String(length=200), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("enrolled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("staff_id"),
    )
    op.create_table(
        "roster_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("card_salt", sa.String(length=100), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "disputes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("entry_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=True),
        sa.Column("heat_id", sa.String(length=64), nullable=True),
        sa.Column("score_cents", sa.BigInteger(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.String(length=200), nullable=True),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_disputes_table_seq"),
    )
    op.create_index("ix_disputes_entry_id", "disputes", ["entry_id"], unique=False)
    op.create_table(
        "payout_checks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("hand_id", sa.String(length=64), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("heat_id", sa.String(length=64), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("mismatches", sa.JSON(), nullable=False),
        sa.Column("unverifiable", sa.JSON(), nullable=False),
        sa.Column("by", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("table_id", "seq", name="uq_payout_checks_table_seq"),
    )
    op.create_index("ix_payout_checks_hand_id", "payout_checks", ["hand_id"], unique=False)
    op.add_column("patrons", sa.Column("card_hash", sa.String(length=200), nullable=True))
    op.add_column("patrons", sa.Column("pin_hash", sa.String(length=200), nullable=True))
    op.add_column("scores", sa.Column("ack_evidence", sa.String(length=64), nullable=True))
    op.add_column("hands", sa.Column("manual", sa.Boolean(), nullable=False,
                                     server_default=sa.false()))


def downgrade() -> None:
    """Revert this revision (staff, disputes, payout checks and the hashes go with it)."""
    # Plain DROP COLUMN (SQLite 3.35+ has it): a batch copy of ``patrons`` would drop the
    # table the entries' foreign key names, which SQLite refuses.
    op.drop_column("hands", "manual")
    op.drop_column("scores", "ack_evidence")
    op.drop_column("patrons", "pin_hash")
    op.drop_column("patrons", "card_hash")
    op.drop_index("ix_payout_checks_hand_id", table_name="payout_checks")
    op.drop_table("payout_checks")
    op.drop_index("ix_disputes_entry_id", table_name="disputes")
    op.drop_table("disputes")
    op.drop_table("roster_state")
    op.drop_table("staff")
