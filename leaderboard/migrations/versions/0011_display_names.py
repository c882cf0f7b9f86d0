"""display_names: entry codes, name consent and screen names for the page

Revision ID: 0011_display_names
Revises: 0010_standings_changes
Create Date: 2026-12-01 23:00:00

- ``entries.entry_code``: the short code the page shows ("K7-42F",
  leaderboard.display_names), unique per stage (``uq_entries_stage_code``). Every existing
  entry gets its code here, the earliest bought first (a later entry with a colliding code
  gets a longer one), as new entries get theirs when stored.
- ``patrons.name_consent`` (false for every existing patron: no consent was asked, so the
  page shows their code), ``patrons.screen_name`` and its comparison key
  ``patrons.screen_name_key`` (unique).

The downgrade drops the columns and the index.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from leaderboard.display_names import entry_code

revision = "0011_display_names"
down_revision = "0010_standings_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the columns, give every entry its code, then make codes unique per stage."""
    op.add_column("entries", sa.Column("entry_code", sa.String(length=16), nullable=True))
    op.add_column("patrons", sa.Column("name_consent", sa.Boolean(), nullable=False,
                                       server_default=sa.false()))
    op.add_column("patrons", sa.Column("screen_name", sa.String(length=40), nullable=True))
    op.add_column("patrons", sa.Column("screen_name_key", sa.String(length=80),
                                       nullable=True))
    op.create_index("uq_patrons_screen_name_key", "patrons", ["screen_name_key"],
                    unique=True)
    entries = sa.table("entries", sa.column("entry_id", sa.String), sa.column("stage", sa.String),
                       sa.column("bought_at", sa.DateTime), sa.column("entry_code", sa.String))
    bind = op.get_bind()
    rows = bind.execute(sa.select(entries.c.entry_id, entries.c.stage)
                        .order_by(entries.c.bought_at, entries.c.entry_id)).all()
    codes: set[tuple[str, str]] = set()
    for entry_id, stage in rows:
        code = _free_code(str(entry_id), str(stage), codes)
        codes.add((str(stage), code))
        bind.execute(entries.update().where(entries.c.entry_id == entry_id)
                     .values(entry_code=code))
    op.create_index("uq_entries_stage_code", "entries", ["stage", "entry_code"], unique=True)


def _free_code(entry_id: str, stage: str, codes: set[tuple[str, str]]) -> str:
    def taken(code: str) -> bool:
        return (stage, code) in codes

    return entry_code(entry_id, taken)


def downgrade() -> None:
    """Drop the index and the columns."""
    op.drop_index("uq_entries_stage_code", table_name="entries")
    op.drop_index("uq_patrons_screen_name_key", table_name="patrons")
    # Plain DROP COLUMN (SQLite 3.35+): a batch copy of ``entries`` would lose its triggers.
    for table, column in (("patrons", "screen_name_key"), ("patrons", "screen_name"),
                          ("patrons", "name_consent"), ("entries", "entry_code")):
        op.drop_column(table, column)
