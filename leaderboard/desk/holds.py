"""Possible list matches held for a supervisor (issue 13): a name (and birth date, where the
list has one) matching a list without a document match holds the registration, the buy-in or
the seating; the patron can neither buy nor be seated until a supervisor decides
(`leaderboard.desk.hold_decisions`).

`screen` is what every action that lets a patron play calls: the patron's standing, then the
eligibility check, refusing, holding or letting through.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.schema import NameCheckSettings
from leaderboard.desk.action import refuse, write_audit
from leaderboard.desk.errors import Conflict
from leaderboard.eligibility import ListIndex, Verdict, as_utc, check
from leaderboard.models import IdentityHold, Patron

__all__ = [
    "APPROVED",
    "CLEAR",
    "DISQUALIFIED",
    "HELD",
    "REFUSED",
    "Held",
    "open_hold",
    "open_holds",
    "screen",
]

CLEAR: Final = "clear"
HELD: Final = "held"
REFUSED: Final = "refused"  # a supervisor refused a possible match
DISQUALIFIED: Final = "disqualified"  # rule 57
APPROVED: Final = "approved"


class Held(Conflict):
    """The action waits for a supervisor's decision on a possible list match (HTTP 409)."""

    def __init__(self, who: str, hold_id: int, matches: tuple[str, ...]) -> None:
        self.hold_id = hold_id
        self.matches = matches
        super().__init__(f"{who} held for a supervisor's decision (hold {hold_id}): "
                         + "; ".join(matches))


def open_holds(session: Session, patron_id: str) -> list[IdentityHold]:
    """A patron's holds waiting for a decision, oldest first."""
    return list(session.scalars(select(IdentityHold).where(
        IdentityHold.patron_id == patron_id, IdentityHold.decision.is_(None))
        .order_by(IdentityHold.id)).all())


def open_hold(session: Session, patron: Patron, verdict: Verdict, now: datetime, *,
              context: str, actor: str) -> IdentityHold:
    """Hold the patron on the verdict's possible matches (flushed, not committed)."""
    row = IdentityHold(patron_id=patron.patron_id, context=context,
                       matches=[m.as_json() for m in verdict.possible],
                       opened_at=as_utc(now), opened_by=actor)
    patron.standing = HELD
    patron.standing_reason = "; ".join(m.sentence() for m in verdict.possible)
    session.add(row)
    session.flush()
    write_audit(session, now, actor, "identity.held", detail={
        "hold_id": row.id, "patron_id": patron.patron_id, "context": context,
        "matches": row.matches})
    return row


def screen(session: Session, tz: tzinfo, patron: Patron, now: datetime, *, context: str,
           actor: str, who: str, index: ListIndex | None = None,
           names: NameCheckSettings | None = None) -> None:
    """Let the patron play, or raise: Conflict for a standing that bars them (held, refused,
    disqualified), Refused on a list (recorded), Held on a possible match (the hold is
    opened and committed)."""
    if patron.standing == HELD:
        pending = open_holds(session, patron.patron_id)
        if pending:
            raise Held(who, pending[0].id, tuple(
                str(m.get("list_name")) for h in pending for m in h.matches))
    if patron.standing == REFUSED:
        raise Conflict(f"{who}: patron {patron.patron_id} was refused by a supervisor:"
                       f" {patron.standing_reason}")
    if patron.standing == DISQUALIFIED:
        raise Conflict(f"{who}: patron {patron.patron_id} is disqualified (rule 57):"
                       f" {patron.standing_reason}")
    verdict = check(session, patron, now, tz=tz, index=index, names=names)
    if not verdict.eligible:
        raise refuse(session, patron, verdict, now, context=context, actor=actor, who=who)
    if verdict.held:
        row = open_hold(session, patron, verdict, now, context=context, actor=actor)
        session.commit()
        raise Held(who, row.id, tuple(m.sentence() for m in verdict.possible))
