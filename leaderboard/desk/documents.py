"""A patron's documents (rule 5): every one presented at the desk (ID document, passport,
driver's licence, rewards card) is stored normalised, belongs to one patron only, and is
checked against the lists like the first (issue 13)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.card_forms import CARD_FORMS, CardForm
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import (
    begin_action,
    conflict_on_race,
    desk_now,
    refuse,
    write_audit,
)
from leaderboard.desk.credentials import rewards_card_number
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.lookups import get_patron
from leaderboard.eligibility import ID_KINDS, as_utc, check, normalize_id
from leaderboard.models import Patron, PatronDocument
from runtime.clocks import WallClock

__all__ = ["add_document", "document_number", "holder_of", "store_documents"]


def document_number(kind: str, number: str,
                    card_forms: tuple[CardForm, ...] = CARD_FORMS) -> str:
    """A document's number normalised, its kind checked (a rewards card against the forms
    the venue's readers produce, ``card_forms``); DeskError saying what is wrong."""
    if kind not in ID_KINDS:
        raise DeskError(f"unknown document kind {kind!r} (one of {', '.join(ID_KINDS)})")
    if kind == "rewards_card":
        return rewards_card_number(number, card_forms, field="number")
    try:
        return normalize_id(str(number))
    except ValueError as exc:
        raise DeskError(str(exc)) from None


def holder_of(session: Session, number: str) -> str | None:
    """The patron a document number belongs to, if any (the first document of patrons
    registered before revision 0005 is in ``patrons.id_number`` as well)."""
    holder = session.scalar(select(PatronDocument.patron_id).where(
        PatronDocument.number == number))
    if holder is None:
        holder = session.scalar(select(Patron.patron_id).where(Patron.id_number == number))
    return holder


def store_documents(session: Session, patron: Patron, documents: Iterable[tuple[str, str]],
                    *, now: datetime, actor: str) -> None:
    """Add a patron's documents (kind, normalised number); not flushed or committed."""
    for kind, number in documents:
        session.add(PatronDocument(patron_id=patron.patron_id, kind=kind, number=number,
                                   added_at=as_utc(now), added_by=actor))


def add_document(session: Session, settings: TournamentSettings, clock: WallClock, *,
                 actor: str, patron_id: str, kind: str, number: str,
                 why: str | None = None) -> PatronDocument:
    """Record another document a patron presents; it is checked against the lists at once
    (a list naming it refuses the patron, recorded; the document stays on file)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    patron = get_patron(session, patron_id)
    value = document_number(kind, number, settings.card_forms)
    holder = holder_of(session, value)
    if holder == patron.patron_id:
        raise Conflict(f"{kind} {value} is already on file for patron {holder}")
    if holder is not None:
        raise Conflict(f"{kind} {value} belongs to patron {holder}: one document, one patron")
    row = PatronDocument(patron_id=patron.patron_id, kind=kind, number=value,
                         added_at=as_utc(now), added_by=actor)

    def raced() -> str:
        return (f"{kind} {value} was recorded at the same moment at another desk, for patron"
                f" {holder_of(session, value) or '(unknown)'}")

    with conflict_on_race(session, raced):
        session.add(row)
        write_audit(session, now, actor, "identity.document_added", detail={
            "patron_id": patron.patron_id, "kind": kind}, why=why)
        session.flush()
    session.refresh(patron)
    verdict = check(session, patron, now, tz=settings.tz, names=settings.name_checks)
    if verdict.reasons:
        raise refuse(session, patron, verdict, now, context="document", actor=actor,
                     who=f"patron {patron.patron_id} on the {kind} presented")
    session.commit()
    return row
