"""identities at the desk: every document, name matching, holds, disqualification, payment

Revision ID: 0006_identity
Revises: 0005_desk_accounts
Create Date: 2026-12-01 13:30:00

- ``patron_documents``: every document a patron presented (kind, normalised number, one
  patron per number); each existing patron's registration document is copied in.
- ``identity_holds``: a possible list match (name, birth date) waiting for, or decided by, a
  supervisor.
- ``patrons.standing`` (clear | held | refused | disqualified; existing patrons are clear)
  and ``standing_reason``.
- ``exclusions.birth_date`` (NULL: the list gives none), ``name_key`` and ``letters_key``
  (leaderboard.name_match's forms of the name, computed here for the rows already stored).
- ``entries.payment`` (rule 6: cash | value_chips; NULL for entries sold before this
  revision: not recorded), ``disqualified_at``, ``disqualified_reason``.
- ``prize_awards.withheld_at``, ``withheld_reason``.

Nothing is deleted or rewritten; the downgrade drops what this revision added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from leaderboard.name_match import letters_key, name_key

revision = "0006_identity"
down_revision = "0005_desk_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "patron_documents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("patron_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("number", sa.String(length=64), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("added_by", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["patron_id"], ["patrons.patron_id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("number"),
    )
    op.create_index("ix_patron_documents_patron_id", "patron_documents", ["patron_id"],
                    unique=False)
    op.create_table(
        "identity_holds",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("patron_id", sa.String(length=40), nullable=False),
        sa.Column("context", sa.String(length=32), nullable=False),
        sa.Column("matches", sa.JSON(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("opened_by", sa.String(length=200), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["patron_id"], ["patrons.patron_id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_identity_holds_patron_id", "identity_holds", ["patron_id"],
                    unique=False)
    op.add_column("patrons", sa.Column("standing", sa.String(length=16), nullable=False,
                                       server_default=sa.text("'clear'")))
    op.add_column("patrons", sa.Column("standing_reason", sa.Text(), nullable=True))
    op.add_column("exclusions", sa.Column("birth_date", sa.Date(), nullable=True))
    op.add_column("exclusions", sa.Column("name_key", sa.String(length=200), nullable=False,
                                          server_default=""))
    op.add_column("exclusions", sa.Column("letters_key", sa.String(length=100),
                                          nullable=False, server_default=""))
    op.create_index("ix_exclusions_letters_key", "exclusions", ["letters_key"], unique=False)
    op.add_column("entries", sa.Column("payment", sa.String(length=16), nullable=True))
    op.add_column("entries", sa.Column("disqualified_at", sa.DateTime(timezone=True),
                                       nullable=True))
    op.add_column("entries", sa.Column("disqualified_reason", sa.Text(), nullable=True))
    op.add_column("prize_awards", sa.Column("withheld_at", sa.DateTime(timezone=True),
                                            nullable=True))
    op.add_column("prize_awards", sa.Column("withheld_reason", sa.Text(), nullable=True))
    bind = op.get_bind()
    bind.execute(sa.text(
        "INSERT INTO patron_documents (patron_id, kind, number, added_at, added_by)"
        " SELECT patron_id, id_kind, id_number, created_at, 'registration' FROM patrons"))
    rows = bind.execute(sa.text("SELECT id, name FROM exclusions")).all()
    for row_id, name in rows:
        bind.execute(sa.text("UPDATE exclusions SET name_key = :k, letters_key = :l"
                             " WHERE id = :i"),
                     {"k": name_key(name or "")[:200], "l": letters_key(name or "")[:100],
                      "i": row_id})


def downgrade() -> None:
    """Revert this revision (documents, holds and the new columns go with it)."""
    # Plain DROP COLUMN (SQLite 3.35+), as in 0004: a batch copy of ``patrons`` or
    # ``entries`` would drop tables other tables' foreign keys name.
    op.drop_column("prize_awards", "withheld_reason")
    op.drop_column("prize_awards", "withheld_at")
    op.drop_column("entries", "disqualified_reason")
    op.drop_column("entries", "disqualified_at")
    op.drop_column("entries", "payment")
    op.drop_index("ix_exclusions_letters_key", table_name="exclusions")
    op.drop_column("exclusions", "letters_key")
    op.drop_column("exclusions", "name_key")
    op.drop_column("exclusions", "birth_date")
    op.drop_column("patrons", "standing_reason")
    op.drop_column("patrons", "standing")
    op.drop_index("ix_identity_holds_patron_id", table_name="identity_holds")
    op.drop_table("identity_holds")
    op.drop_index("ix_patron_documents_patron_id", table_name="patron_documents")
    op.drop_table("patron_documents")
