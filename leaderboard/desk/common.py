"""What every desk action shares: the clock, the desk lock, the operator, the audit row,
recorded refusals, races lost to another desk, ids, and looking up patrons and entries."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from game.tournament import Stage
from game.tournament_schema import TournamentSettings
from leaderboard.desk.errors import Conflict, DeskError, NotFound, Refused
from leaderboard.desk_lock import hold_desk_lock
from leaderboard.eligibility import Candidate, Verdict, as_utc, record_refusal
from leaderboard.models import AuditEntry, Entry, Patron, Score
from leaderboard.projections import SEATED, WITHDRAWN
from wire.topics import TopicError, validate_id

Clock = Callable[[], datetime]

# Entry ids are opaque: "E-" and 16 hex digits for a buy-in; a semi-final place won by entry
# E-x is S-x and a Final place won by S-x is F-x, so the chain of places can be followed
# without a patron's identity.
_ENTRY_PREFIX: Final = {Stage.QUALIFYING: "E-", Stage.SEMI_FINAL: "S-", Stage.FINAL: "F-"}
FINAL_HEAT: Final = "final-1"
_PLAYED: Final = (SEATED, WITHDRAWN)  # a withdrawn entry left before its last hand (D55)
_REGISTERED: Final = "registered"


def _now(clock: Clock) -> datetime:
    now = clock()
    if now.utcoffset() is None:
        raise DeskError(f"the desk clock gave {now!r} without a time zone")
    return now


def _begin(session: Session, actor: str) -> str:
    """Start a desk action: the operator's name checked, then the desk lock taken, so that
    the action's checks and writes are not interleaved with another desk's (D57)."""
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


def _audit(session: Session, now: datetime, actor: str, action: str, *,
           detail: Mapping[str, Any], why: str | None = None) -> AuditEntry:
    body = dict(detail)
    if why is not None and why.strip():
        body["why"] = " ".join(why.split())
    row = AuditEntry(at=as_utc(now), actor=actor, action=action, detail=body)
    session.add(row)
    session.flush()
    return row


def _refuse(session: Session, person: Candidate | Patron, verdict: Verdict, now: datetime, *,
            context: str, actor: str, who: str) -> Refused:
    """Record and commit a refusal; the caller raises what this returns."""
    refusal = record_refusal(session, person, verdict, now, context=context, actor=actor)
    session.commit()
    return Refused(who, verdict, refusal.id)


@contextmanager
def _race(session: Session, describe: Callable[[], str]) -> Iterator[None]:
    """Writes that a unique index may refuse because another desk did the same at the same
    moment: the session is rolled back and `Conflict(describe())` raised (describe runs after
    the rollback, so it sees what the other desk stored)."""
    try:
        yield
    except IntegrityError:
        session.rollback()
        raise Conflict(describe()) from None


def _table_id(table: str) -> str:
    try:
        return validate_id("table", table)
    except TopicError as exc:
        raise DeskError(str(exc)) from None


def _new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(8)}"


def _stage(entry: Entry) -> Stage:
    try:
        return Stage(entry.stage)
    except ValueError:
        raise DeskError(f"entry {entry.entry_id} has an unknown stage {entry.stage!r}") from None


def semi_heat_id(heat: int) -> str:
    """The heat id of semi-final heat `heat` (1, 2): what the table's heat is opened with."""
    return f"semi-final-{heat}"


def _has_score(session: Session, entry_id: str) -> bool:
    return session.get(Score, entry_id) is not None


def _local_day(settings: TournamentSettings, moment: datetime) -> date:
    return moment.astimezone(settings.tz).date()


def get_patron(session: Session, patron_id: str) -> Patron:
    """A registered patron, or NotFound."""
    patron = session.get(Patron, str(patron_id).strip())
    if patron is None:
        raise NotFound(f"no patron {patron_id!r}")
    return patron


def get_entry(session: Session, entry_id: str) -> Entry:
    """An entry, or NotFound."""
    entry = session.get(Entry, str(entry_id).strip())
    if entry is None:
        raise NotFound(f"no entry {entry_id!r}")
    return entry


def _reason(why: str | None, what: str, *, kept: str = "the audit") -> str:
    reason = " ".join((why or "").split())
    if not reason:
        raise DeskError(f"say why {what} (--why): it goes into {kept}")
    return reason


def _stage_entries(session: Session, stage: Stage) -> list[Entry]:
    return list(session.scalars(
        select(Entry).where(Entry.stage == stage.value).order_by(Entry.entry_id)).all())
