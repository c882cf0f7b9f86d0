"""Reading what a desk action works on: patrons, entries and their stage, scores, and the
tournament day of a moment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from leaderboard.desk.errors import DeskError, NotFound
from leaderboard.models import Entry, Patron, Score
from leaderboard.projections import SEATED, WITHDRAWN

__all__ = [
    "PLAYED",
    "REGISTERED",
    "entry_codes",
    "get_entry",
    "get_patron",
    "has_score",
    "local_day",
    "stage_entries",
    "stage_of",
]

PLAYED: Final = (SEATED, WITHDRAWN)  # a withdrawn entry left before its last hand (D55)
REGISTERED: Final = "registered"
_CODE: Final = re.compile(r"[0-9A-Z]{2}-[0-9A-Z]{3,10}")  # an entry code, leaderboard.display_names


def get_patron(session: Session, patron_id: str) -> Patron:
    """A registered patron, or NotFound."""
    patron = session.get(Patron, str(patron_id).strip())
    if patron is None:
        raise NotFound(f"no patron {patron_id!r}")
    return patron


def get_entry(session: Session, entry_id: str) -> Entry:
    """An entry by its id or by the short code people see (D331: "K7-42F", when one entry
    has it; a qualifying entry and its places share a code), or NotFound."""
    text = str(entry_id).strip()
    entry = session.get(Entry, text)
    if entry is not None:
        return entry
    if _CODE.fullmatch(text.upper()):
        found = session.scalars(select(Entry).where(Entry.entry_code == text.upper())
                                .order_by(Entry.entry_id)).all()
        if len(found) == 1:
            return found[0]
        if found:
            raise NotFound(f"entry code {text.upper()} is entries"
                           f" {', '.join(f'{e.entry_id} ({e.stage})' for e in found)}:"
                           " give the entry id")
    raise NotFound(f"no entry {entry_id!r}")


def entry_codes(session: Session, entry_ids: Iterable[str]) -> dict[str, str]:
    """Entry id -> the short code people see (D331), for these entries (the id itself for
    an entry stored without a code, or none with that id)."""
    ids = list(dict.fromkeys(entry_ids))
    found = dict(session.execute(select(Entry.entry_id, Entry.entry_code)
                                 .where(Entry.entry_id.in_(ids))).all()) if ids else {}
    return {i: found.get(i) or i for i in ids}


def stage_of(entry: Entry) -> Stage:
    """The entry's stage, or DeskError when the stored stage is not one."""
    try:
        return Stage(entry.stage)
    except ValueError:
        raise DeskError(f"entry {entry.entry_id} has an unknown stage {entry.stage!r}") from None


def stage_entries(session: Session, stage: Stage) -> list[Entry]:
    """Every entry of a stage, by entry id."""
    return list(session.scalars(
        select(Entry).where(Entry.stage == stage.value).order_by(Entry.entry_id)).all())


def has_score(session: Session, entry_id: str) -> bool:
    """True when a score is recorded for the entry."""
    return session.get(Score, entry_id) is not None


def local_day(settings: TournamentSettings, moment: datetime) -> date:
    """The tournament's local day (its time zone) of a moment."""
    return moment.astimezone(settings.tz).date()
