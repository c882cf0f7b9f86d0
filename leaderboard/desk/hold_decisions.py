"""A supervisor's decision on a possible list match (leaderboard.desk.holds): approved (the
patron may play; this match is not raised again for them) or refused (recorded as a refusal,
rules 2-3; the patron is barred and their qualifying entries not yet played refunded), each
with a reason, audited and naming the supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard.desk.action import begin_action, desk_now, require_reason, write_audit
from leaderboard.desk.duties import check_duty
from leaderboard.desk.entries import refund_unplayed
from leaderboard.desk.errors import Conflict, NotFound
from leaderboard.desk.holds import APPROVED, CLEAR, HELD, REFUSED, open_holds
from leaderboard.desk.roles import require_supervisor
from leaderboard.eligibility import Verdict, as_utc, from_db, record_refusal
from leaderboard.models import IdentityHold, Patron
from runtime.clocks import WallClock

__all__ = ["HoldView", "approve_hold", "hold_view", "holds", "refuse_hold"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldView:
    """A hold as the desk shows it."""

    hold_id: int
    patron_id: str
    context: str
    matches: tuple[dict[str, Any], ...]
    opened_at: datetime
    opened_by: str
    decision: str | None
    decided_at: datetime | None
    decided_by: str | None
    reason: str | None

    @property
    def open(self) -> bool:
        """Whether no supervisor has decided yet."""
        return self.decision is None


def hold_view(row: IdentityHold) -> HoldView:
    """The view of a stored hold."""
    return HoldView(hold_id=row.id, patron_id=row.patron_id, context=row.context,
                    matches=tuple(row.matches), opened_at=from_db(row.opened_at),
                    opened_by=row.opened_by, decision=row.decision,
                    decided_at=from_db(row.decided_at) if row.decided_at else None,
                    decided_by=row.decided_by, reason=row.reason)


def holds(session: Session, *, open_only: bool = False,
          patron_id: str | None = None) -> tuple[HoldView, ...]:
    """The holds, oldest first (``open_only``: those waiting for a decision)."""
    query = select(IdentityHold).order_by(IdentityHold.id)
    if open_only:
        query = query.where(IdentityHold.decision.is_(None))
    if patron_id is not None:
        query = query.where(IdentityHold.patron_id == patron_id.strip())
    return tuple(hold_view(r) for r in session.scalars(query).all())


def _pending(session: Session, hold_id: int) -> tuple[IdentityHold, Patron]:
    row = session.get(IdentityHold, hold_id)
    if row is None:
        raise NotFound(f"no hold {hold_id}")
    if row.decision is not None:
        raise Conflict(f"hold {hold_id} was already {row.decision} by {row.decided_by} at"
                       f" {from_db(row.decided_at or row.opened_at):%Y-%m-%d %H:%M} UTC")
    patron = session.get(Patron, row.patron_id)
    if patron is None:
        raise NotFound(f"hold {hold_id} names no patron on file ({row.patron_id})")
    return row, patron


def _decide(row: IdentityHold, now: datetime, actor: str, decision: str, reason: str) -> None:
    row.decision, row.decided_at, row.decided_by, row.reason = (
        decision, as_utc(now), actor, reason)


def approve_hold(session: Session, clock: WallClock, *, actor: str, hold_id: int,
                 why: str | None) -> HoldView:
    """A supervisor decides a possible match is not the listed person: the patron may play
    (this match is not raised again for them), with the reason, audited."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    require_supervisor(session, actor, "identity.hold_approved")
    reason = require_reason(why, "the possible match is approved")
    row, patron = _pending(session, hold_id)
    check_duty("register / approve hold", actor=actor, earlier=(row.opened_by,))
    _decide(row, now, actor, APPROVED, reason)
    session.flush()
    if patron.standing == HELD and not open_holds(session, patron.patron_id):
        patron.standing, patron.standing_reason = CLEAR, None
    write_audit(session, now, actor, "identity.hold_approved", detail={
        "hold_id": row.id, "patron_id": patron.patron_id, "supervisor": actor,
        "matches": row.matches, "reason": reason})
    session.commit()
    return hold_view(row)


def refuse_hold(session: Session, clock: WallClock, *, actor: str, hold_id: int,
                why: str | None) -> HoldView:
    """A supervisor decides the patron is the listed person: refused (a `Refusal` row, rules
    2-3), barred from buying and seating, their qualifying entries not yet played refunded."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    require_supervisor(session, actor, "identity.hold_refused")
    reason = require_reason(why, "the possible match is refused")
    row, patron = _pending(session, hold_id)
    check_duty("register / approve hold", actor=actor, earlier=(row.opened_by,))
    _decide(row, now, actor, REFUSED, reason)
    sentences = tuple(f"supervisor {actor} judged the patron to be {m.get('list_name')!r} on"
                      f" the {m.get('list_kind')} list ({m.get('source')}): {reason}"
                      for m in row.matches)
    kinds = tuple(dict.fromkeys(str(m.get("list_kind")) for m in row.matches))
    refusal = record_refusal(session, patron, Verdict(reasons=sentences, lists=kinds), now,
                             context="hold", actor=actor)
    patron.standing, patron.standing_reason = REFUSED, reason
    refunded = refund_unplayed(session, now, actor, patron.patron_id, cause="refused",
                               why=reason, stages=(Stage.QUALIFYING,))
    write_audit(session, now, actor, "identity.hold_refused", detail={
        "hold_id": row.id, "patron_id": patron.patron_id, "supervisor": actor,
        "matches": row.matches, "reason": reason, "refusal_id": refusal.id,
        "refunded": refunded})
    session.commit()
    return hold_view(row)
