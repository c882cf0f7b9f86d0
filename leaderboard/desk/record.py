"""The record: the latest audit rows and refusals."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.desk.errors import DeskError
from leaderboard.models import AuditEntry, Refusal


def audit_log(session: Session, *, limit: int = 100, action: str | None = None
              ) -> Sequence[AuditEntry]:
    """The latest audit rows, newest first."""
    if limit < 1:
        raise DeskError("limit must be at least 1")
    query = select(AuditEntry)
    if action is not None:
        query = query.where(AuditEntry.action == action)
    return session.scalars(query.order_by(AuditEntry.id.desc()).limit(limit)).all()


def refusals(session: Session, *, limit: int = 100) -> Sequence[Refusal]:
    """The latest refusals, newest first."""
    return session.scalars(select(Refusal).order_by(Refusal.id.desc()).limit(limit)).all()
