"""Qualifying entries: bought inside the heat window (rules 6, 7), refunded while not yet
seated."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from game.tournament import Stage
from game.tournament_schema import TournamentSettings
from leaderboard.desk.action import (
    begin_action,
    desk_now,
    refuse,
    require_reason,
    write_audit,
)
from leaderboard.desk.errors import Conflict
from leaderboard.desk.ids import ENTRY_PREFIX, new_id
from leaderboard.desk.lookups import REGISTERED, get_entry, get_patron, has_score
from leaderboard.eligibility import as_utc, check
from leaderboard.models import Entry
from leaderboard.projections import REFUNDED
from runtime.clocks import WallClock


def _window_text(settings: TournamentSettings) -> str:
    s = settings.schedule
    return (f"buy-ins are taken daily {s.window.opens:%H:%M} to {s.window.last_buy_in:%H:%M}"
            f" ({settings.timezone}) from {s.first_day:%d %b} to {s.last_day:%d %b %Y}")


def buy_entry(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
              patron_id: str, why: str | None = None) -> Entry:
    """Sell a qualifying entry (R100, rule 6) inside the heat window; a patron may buy many,
    each its own entry and heat (rule 7). Eligibility is checked again before the money."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    patron = get_patron(session, patron_id)
    schedule = settings.schedule
    heat_day = schedule.heat_day(now)
    if not schedule.buy_in_open(now) or heat_day is None:
        local = now.astimezone(settings.tz)
        raise Conflict(f"no buy-in at {local:%Y-%m-%d %H:%M}: {_window_text(settings)}")
    verdict = check(session, patron, now, tz=settings.tz)
    if not verdict.eligible:
        raise refuse(session, patron, verdict, now, context="buy_in", actor=actor,
                     who=f"buy-in for patron {patron.patron_id}")
    entry = Entry(entry_id=new_id(ENTRY_PREFIX[Stage.QUALIFYING]),
                  patron_id=patron.patron_id, stage=Stage.QUALIFYING.value, heat_day=heat_day,
                  buy_in_cents=settings.buy_in_cents, bought_at=as_utc(now), status=REGISTERED)
    session.add(entry)
    write_audit(session, now, actor, "entry.bought", detail={
        "entry_id": entry.entry_id, "patron_id": patron.patron_id,
        "buy_in_cents": settings.buy_in_cents, "heat_day": heat_day.isoformat()}, why=why)
    session.commit()
    return entry


def refund_entry(session: Session, clock: WallClock, *, actor: str, entry_id: str,
                 why: str) -> Entry:
    """Refund a qualifying entry that has not been seated: its buy-in goes back to the
    patron and out of the pools (D60). A seated entry leaves by `unseat` or a table fault."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the entry is refunded")
    entry = get_entry(session, entry_id)
    if entry.stage != Stage.QUALIFYING.value:
        raise Conflict(f"entry {entry.entry_id} is a {entry.stage} place: only a bought"
                       " (qualifying) entry is refunded")
    if entry.status == REFUNDED:
        raise Conflict(f"entry {entry.entry_id} has already been refunded")
    if entry.status != REGISTERED or has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} is {entry.status}: only an entry not yet"
                       " seated is refunded (a table out of service: `desk table-fault`)")
    _refund(session, now, actor, entry, cause="desk", why=reason)
    session.commit()
    return entry


def _refund(session: Session, now: datetime, actor: str, entry: Entry, *, cause: str,
            why: str) -> None:
    entry.status = REFUNDED
    write_audit(session, now, actor, "entry.refunded", detail={
        "entry_id": entry.entry_id, "patron_id": entry.patron_id, "cause": cause,
        "refund_cents": entry.buy_in_cents, "table": entry.table_id,
        "heat_id": entry.heat_id}, why=why)
