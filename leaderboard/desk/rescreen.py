"""A list imported later screens the patrons already registered (issue 13): a patron a list
now names by a document is refused (a `Refusal` row; qualifying entries not yet played are
refunded), one it may name (by name, with birth date where the list has one) is held for a
supervisor like a new registration; entries already seated are reported for the floor, not
touched (a supervisor decides: unseat, or disqualify under rule 57)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.entries import refund_unplayed
from leaderboard.desk.holds import CLEAR, HELD, open_hold, open_holds
from leaderboard.eligibility import (
    ImportResult,
    ListIndex,
    ListRow,
    check,
    import_list,
    record_refusal,
)
from leaderboard.models import Entry, Patron
from leaderboard.projections import SEATED
from runtime.clocks import WallClock

__all__ = ["Rescreen", "import_and_rescreen", "rescreen"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rescreen:
    """What screening the registered patrons again found."""

    checked: int
    refused: tuple[str, ...]  # patron ids a list names by document
    held: tuple[int, ...]  # holds opened on possible matches
    refunded: tuple[str, ...]  # entries refunded (their patron refused)
    seated: tuple[str, ...]  # entries seated now whose patron was refused or held


def rescreen(session: Session, settings: TournamentSettings, clock: WallClock, *,
             actor: str) -> Rescreen:
    """Check every patron not already barred against the lists in force (not committed;
    the caller holds the desk lock)."""
    now = desk_now(clock)
    index = ListIndex.load(session)
    refused: list[str] = []
    held: list[int] = []
    refunded: list[str] = []
    seated: list[str] = []
    patrons = session.scalars(select(Patron).where(Patron.standing.in_((CLEAR, HELD)))
                              .options(selectinload(Patron.documents))
                              .order_by(Patron.patron_id)).all()
    for patron in patrons:
        verdict = check(session, patron, now, tz=settings.tz, index=index,
                        names=settings.name_checks)
        if not verdict.reasons and not verdict.possible:
            continue
        if verdict.reasons:
            record_refusal(session, patron, verdict, now, context="rescreen", actor=actor)
            refused.append(patron.patron_id)
            refunded += refund_unplayed(session, now, actor, patron.patron_id,
                                        cause="list", why=verdict.reason,
                                        stages=(Stage.QUALIFYING,))
        else:
            pending = {str(m.get("key")) for h in open_holds(session, patron.patron_id)
                       for m in h.matches}
            if {m.key for m in verdict.possible} <= pending:
                continue  # already waiting for the same decision
            held.append(open_hold(session, patron, verdict, now, context="rescreen",
                                  actor=actor).id)
        seated += session.scalars(select(Entry.entry_id).where(
            Entry.status == SEATED,
            (Entry.patron_id == patron.patron_id) | (Entry.played_by == patron.patron_id)))
    return Rescreen(checked=len(patrons), refused=tuple(refused), held=tuple(held),
                    refunded=tuple(refunded), seated=tuple(seated))


def import_and_rescreen(session: Session, settings: TournamentSettings, clock: WallClock, *,
                        actor: str, kind: str, rows: tuple[ListRow, ...], source: str,
                        source_date: date) -> tuple[ImportResult, Rescreen]:
    """Import a list (leaderboard.eligibility.import_list) and screen the registered patrons
    again in the same transaction, audited and committed."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    result = import_list(session, kind=kind, rows=rows, source=source,
                         source_date=source_date, at=now, actor=actor)
    found = rescreen(session, settings, clock, actor=actor)
    write_audit(session, now, actor, "list.rescreened", detail={
        "kind": result.kind, "source": result.source, "checked": found.checked,
        "refused": list(found.refused), "held": list(found.held),
        "refunded": list(found.refunded), "seated": list(found.seated)})
    session.commit()
    return result, found
