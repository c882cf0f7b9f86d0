"""Disputes and payout checks the tables report: listed for the supervisor, and a dispute's
resolution recorded (audited). The ruling itself, if the score changes, is a void or a
correction (leaderboard.desk.rulings)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.dispute_records import raisers
from leaderboard.desk.duties import check_duty
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.values import DisputeView, PayoutCheckView
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import Dispute, PayoutCheck
from runtime.clocks import WallClock

__all__ = ["DISPUTE_RESOLVED", "disputes", "payout_checks", "resolve_dispute"]

DISPUTE_RESOLVED = "score.dispute_resolved"


def _view(row: Dispute) -> DisputeView:
    return DisputeView(dispute_id=row.id, entry_id=row.entry_id, table=row.table_id,
                       seq=row.seq, stage=row.stage, heat_id=row.heat_id,
                       score_cents=row.score_cents, note=row.note, at=from_db(row.at),
                       resolved_at=from_db(row.resolved_at) if row.resolved_at else None,
                       resolved_by=row.resolved_by, resolution=row.resolution)


def disputes(session: Session, *, open_only: bool = False,
             entry_id: str | None = None) -> list[DisputeView]:
    """The disputes, oldest first (``open_only``: those not resolved yet)."""
    query = select(Dispute)
    if open_only:
        query = query.where(Dispute.resolved_at.is_(None))
    if entry_id is not None:
        query = query.where(Dispute.entry_id == str(entry_id).strip())
    return [_view(r) for r in session.scalars(query.order_by(Dispute.at, Dispute.id))]


def resolve_dispute(session: Session, clock: WallClock, *, actor: str, entry_id: str,
                    resolution: str) -> list[DisputeView]:
    """Record the supervisor's resolution of an entry's open dispute(s)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    text = " ".join(str(resolution or "").split())
    if not text:
        raise DeskError("say how the dispute was resolved (--resolution): it goes into the"
                        " record and the audit")
    if len(text) > 1000:
        raise DeskError("the resolution is longer than 1000 characters")
    entry = str(entry_id).strip()
    rows = session.scalars(select(Dispute).where(Dispute.entry_id == entry)
                           .order_by(Dispute.at, Dispute.id)).all()
    if not rows:
        raise NotFound(f"entry {entry!r} has no dispute on record")
    open_rows = [r for r in rows if r.resolved_at is None]
    if not open_rows:
        raise Conflict(f"entry {entry}'s dispute was already resolved by {rows[-1].resolved_by}:"
                       f" {rows[-1].resolution}")
    for row in open_rows:
        check_duty("raise / rule dispute", actor=actor, earlier=raisers(row))
    for row in open_rows:
        row.resolved_at, row.resolved_by, row.resolution = as_utc(now), actor, text
        row.status = "closed"
    write_audit(session, now, actor, DISPUTE_RESOLVED, detail={
        "entry_id": entry, "disputes": [[r.table_id, r.seq] for r in open_rows],
        "resolution": text})
    session.commit()
    return [_view(r) for r in open_rows]


def payout_checks(session: Session, *, overridden_only: bool = False,
                  limit: int = 200) -> list[PayoutCheckView]:
    """The latest payout checks, newest first (``overridden_only``: a supervisor's)."""
    if limit < 1:
        raise DeskError("limit must be at least 1")
    query = select(PayoutCheck)
    if overridden_only:
        query = query.where(PayoutCheck.outcome == "overridden")
    rows = session.scalars(query.order_by(PayoutCheck.at.desc(), PayoutCheck.id.desc())
                           .limit(limit))
    return [PayoutCheckView(hand_id=r.hand_id, table=r.table_id, seq=r.seq, heat_id=r.heat_id,
                            outcome=r.outcome, mismatches=tuple(r.mismatches),
                            unverifiable=tuple(r.unverifiable), by=r.by, reason=r.reason,
                            at=from_db(r.at)) for r in rows]
