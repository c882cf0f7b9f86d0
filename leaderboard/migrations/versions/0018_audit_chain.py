"""audit_chain: hash-chained audit rows, signed heads, writes made outside the service

Revision ID: 0018_audit_chain
Revises: 0011_display_names
Create Date: 2026-12-06 14:00:00

- ``audit.prev_hash`` and ``audit.row_hash`` (leaderboard.audit_trail.chain), and an index on
  ``audit.action``. Every existing row is chained here, in id order, as it is found (D361):
  the chain vouches for them from now on, not for what happened to them before.
- ``audit_tip``: the chain's one tip row (last id and hash; ``legacy_until``, the last row
  chained by this migration).
- ``audit_heads``: the signed heads (leaderboard.audit_trail.heads).
- ``outside_writes`` and the triggers on the protected tables that fill it
  (leaderboard.audit_trail.outside_writes), created last so that nothing above is recorded.
- For each staff member whose enrolment the old audit log shows (a ``staff.enrolled`` row of
  that staff id and role), a ``staff.enrolment_carried`` row vouching for the staff row as it
  is now (leaderboard.desk.enrolment); a staff row without one is refused at sign-in.

The downgrade drops the triggers, the tables, the index and the columns.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from leaderboard.audit_trail.chain import (
    GENESIS,
    TIP_ROW,
    AuditValues,
    append_audit,
    canonical_at,
    detail_text,
    row_hash,
)
from leaderboard.audit_trail.outside_writes import create_triggers, drop_triggers
from leaderboard.desk.enrolment import CARRIED, ENROLLED, identity_digest

revision = "0018_audit_chain"
down_revision = "0017_draw_commitments"
branch_labels = None
depends_on = None

_ACTOR = "migration:0018_audit_chain"


def upgrade() -> None:
    """Add the chain's columns and tables, chain the existing rows, carry the enrolments the
    old log shows, then create the triggers."""
    op.add_column("audit", sa.Column("prev_hash", sa.String(length=64), nullable=True))
    op.add_column("audit", sa.Column("row_hash", sa.String(length=64), nullable=True))
    op.create_index("ix_audit_action", "audit", ["action"])
    op.create_table(
        "audit_tip",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("last_id", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.Column("legacy_until", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "audit_heads",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("row_id", sa.BigInteger(), nullable=False),
        sa.Column("row_hash", sa.String(length=64), nullable=False),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("key_id", sa.String(length=64), nullable=False),
        sa.Column("signature", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "outside_writes",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("table_name", sa.String(length=64), nullable=False),
        sa.Column("operation", sa.String(length=8), nullable=False),
        sa.Column("row_key", sa.String(length=200), nullable=True),
        sa.Column("at", sa.String(length=40), nullable=False),
        sa.Column("db_user", sa.String(length=100), nullable=True),
        sa.Column("client_addr", sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    bind = op.get_bind()
    last_id, last_hash = _chain_existing(bind)
    tip = sa.table("audit_tip", sa.column("id"), sa.column("last_id"), sa.column("last_hash"),
                   sa.column("legacy_until"))
    bind.execute(tip.insert().values(id=TIP_ROW, last_id=last_id, last_hash=last_hash,
                                     legacy_until=last_id))
    _carry_enrolments(bind)
    create_triggers(bind)


def _chain_existing(bind: sa.Connection) -> tuple[int, str]:
    """Chain every existing audit row in id order; the last id and hash."""
    audit = sa.table("audit", sa.column("id"), sa.column("at", sa.DateTime(timezone=True)),
                     sa.column("actor"),
                     sa.column("action"), sa.column("detail", sa.JSON),
                     sa.column("prev_hash"), sa.column("row_hash"))
    last_id, last_hash = 0, GENESIS
    rows = bind.execute(sa.select(audit.c.id, audit.c.at, audit.c.actor, audit.c.action,
                                  audit.c.detail).order_by(audit.c.id)).all()
    for row in rows:
        at = row.at if isinstance(row.at, datetime) else datetime.fromisoformat(str(row.at))
        digest = row_hash(id=int(row.id), at=canonical_at(at), actor=str(row.actor),
                          action=str(row.action), detail=detail_text(row.detail),
                          prev_hash=last_hash)
        bind.execute(audit.update().where(audit.c.id == row.id)
                     .values(prev_hash=last_hash, row_hash=digest))
        last_id, last_hash = int(row.id), digest
    return last_id, last_hash


def _carry_enrolments(bind: sa.Connection) -> None:
    """A ``staff.enrolment_carried`` row for each staff row the old log shows enrolled."""
    audit = sa.table("audit", sa.column("action"), sa.column("actor"),
                     sa.column("detail", sa.JSON), sa.column("id"))
    staff = sa.table("staff", sa.column("staff_id"), sa.column("name"), sa.column("role"),
                     sa.column("enrolled_at", sa.DateTime(timezone=True)))
    enrolled: dict[tuple[str, str], int] = {}
    for row in bind.execute(sa.select(audit.c.id, audit.c.detail)
                            .where(audit.c.action == ENROLLED).order_by(audit.c.id)):
        detail = row.detail if isinstance(row.detail, dict) else {}
        enrolled[(str(detail.get("staff_id")), str(detail.get("role")))] = int(row.id)
    now = datetime.now(UTC)
    carried = []
    for member in bind.execute(sa.select(staff).order_by(staff.c.staff_id)):
        source = enrolled.get((member.staff_id, member.role))
        if source is None:
            continue
        at = (member.enrolled_at if isinstance(member.enrolled_at, datetime)
              else datetime.fromisoformat(str(member.enrolled_at)))
        carried.append(AuditValues(at=now, actor=_ACTOR, action=CARRIED, detail={
            "staff_id": member.staff_id, "role": member.role, "enrolled_row": source,
            "identity": identity_digest(staff_id=member.staff_id, name=member.name,
                                        role=member.role, enrolled_at=at),
            "bootstrap": False}))
    append_audit(bind, carried)


def downgrade() -> None:
    """Drop the triggers, the new tables, the index and the chain's columns."""
    drop_triggers(op.get_bind())
    op.drop_table("outside_writes")
    op.drop_table("audit_heads")
    op.drop_table("audit_tip")
    op.drop_index("ix_audit_action", table_name="audit")
    # Plain DROP COLUMN (SQLite 3.35+): a batch copy of ``audit`` would lose its triggers.
    op.drop_column("audit", "row_hash")
    op.drop_column("audit", "prev_hash")
