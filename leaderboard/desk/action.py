"""What every desk action does around its own work: read the desk clock, check the operator
and take the desk lock, write the audit row, record a refusal, turn a race lost to another
desk into a Conflict, and insist on a reason where the audit needs one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboard.audit_trail.chain import audit_row
from leaderboard.desk.errors import Conflict, DeskError, Refused
from leaderboard.desk.lock import hold_desk_lock
from leaderboard.eligibility import Candidate, Verdict, as_utc, record_refusal
from leaderboard.models import AuditEntry, Patron
from runtime.clocks import WallClock

__all__ = [
    "begin_action",
    "conflict_on_race",
    "desk_now",
    "refuse",
    "require_reason",
    "write_audit",
]



def desk_now(clock: WallClock) -> datetime:
    """The desk clock's time, refused when it has no time zone."""
    now = clock()
    if now.utcoffset() is None:
        raise DeskError(f"the desk clock gave {now!r} without a time zone")
    return now


def begin_action(session: Session, actor: str) -> str:
    """Start a desk action: the operator's name checked, then the desk lock taken (with the
    audit chain's tip: leaderboard.desk.lock), so that the action's checks and writes are not
    interleaved with another desk's."""
    actor = _actor(actor)
    hold_desk_lock(session)
    return actor


def _actor(actor: str) -> str:
    actor = " ".join(str(actor).split())
    if not actor:
        raise DeskError("name who performs the desk action (the operator)")
    if len(actor) > 200:
        raise DeskError("the operator's name is longer than 200 characters")
    return actor


def write_audit(session: Session, now: datetime, actor: str, action: str, *,
                detail: Mapping[str, Any], why: str | None = None) -> AuditEntry:
    """Write the audit row of a desk action at the end of the audit chain (pending changes
    flushed first); `why`, when given, goes in its detail."""
    body = dict(detail)
    if why is not None and why.strip():
        body["why"] = " ".join(why.split())
    return audit_row(session, as_utc(now), actor, action, body)


def refuse(session: Session, person: Candidate | Patron, verdict: Verdict, now: datetime, *,
           context: str, actor: str, who: str) -> Refused:
    """Record and commit a refusal; the caller raises what this returns."""
    refusal = record_refusal(session, person, verdict, now, context=context, actor=actor)
    session.commit()
    return Refused(who, verdict, refusal.id)


@contextmanager
def conflict_on_race(session: Session, describe: Callable[[], str]) -> Iterator[None]:
    """Writes that a unique index may refuse because another desk did the same at the same
    moment: the session is rolled back and `Conflict(describe())` raised (describe runs after
    the rollback, so it sees what the other desk stored)."""
    try:
        yield
    except IntegrityError:
        session.rollback()
        raise Conflict(describe()) from None


def require_reason(why: str | None, what: str, *, kept: str = "the audit") -> str:
    """The reason given for `what`, whitespace folded; refused when it is empty."""
    reason = " ".join((why or "").split())
    if not reason:
        raise DeskError(f"say why {what} (--why): it goes into {kept}")
    return reason
