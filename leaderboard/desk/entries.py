"""Qualifying entries: bought inside the heat window (rules 6, 7) and paid in cash or value
chips (rule 6, recorded), refunded while not yet seated."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import (
    begin_action,
    desk_now,
    require_reason,
    write_audit,
)
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.holds import screen
from leaderboard.desk.ids import ENTRY_PREFIX, new_id
from leaderboard.desk.lookups import REGISTERED, get_entry, get_patron, has_score
from leaderboard.eligibility import as_utc
from leaderboard.models import Entry
from leaderboard.projections import REFUNDED
from runtime.clocks import WallClock

PAYMENT_METHODS: Final = ("cash", "value_chips")  # rule 6
_ENTRY_ID: Final = re.compile(r"E-[0-9a-f]{16}")


def payment_method(payment: str | None) -> str:
    """How a buy-in is paid, checked: one of PAYMENT_METHODS (required at the desk)."""
    value = (payment or "").strip().lower().replace("-", "_").replace(" ", "_")
    if value not in PAYMENT_METHODS:
        shown = "nothing" if not (payment or "").strip() else repr(payment)
        raise DeskError(f"say how the buy-in is paid (rule 6): {' or '.join(PAYMENT_METHODS)},"
                        f" not {shown}")
    return value


def _window_text(settings: TournamentSettings) -> str:
    s = settings.schedule
    return (f"buy-ins are taken daily {s.window.opens:%H:%M} to {s.window.last_buy_in:%H:%M}"
            f" ({settings.timezone}) from {s.first_day:%d %b} to {s.last_day:%d %b %Y}")


def buy_entry(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
              patron_id: str, payment: str | None, why: str | None = None,
              entry_id: str | None = None) -> Entry:
    """Sell a qualifying entry (R100, rule 6) inside the heat window, paid in cash or value
    chips (``payment``, recorded); a patron may buy many, each its own entry and heat (rule
    7). Eligibility is checked again before the money: a list refuses, a possible match
    holds the sale for a supervisor (leaderboard.desk.holds). ``entry_id``: the id to give
    (a seeded simulation's own, ``E-`` and 16 hex digits); by default a new random one."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    method = payment_method(payment)
    prefix = ENTRY_PREFIX[Stage.QUALIFYING]
    if entry_id is not None:
        if not _ENTRY_ID.fullmatch(entry_id):
            raise DeskError(f"entry id {entry_id!r} must be {prefix!r} and 16 hex digits")
        if session.get(Entry, entry_id) is not None:
            raise Conflict(f"entry {entry_id} exists already")
    patron = get_patron(session, patron_id)
    schedule = settings.schedule
    heat_day = schedule.heat_day(now)
    if not schedule.buy_in_open(now) or heat_day is None:
        local = now.astimezone(settings.tz)
        raise Conflict(f"no buy-in at {local:%Y-%m-%d %H:%M}: {_window_text(settings)}")
    screen(session, settings.tz, patron, now, context="buy_in", actor=actor,
           who=f"buy-in for patron {patron.patron_id}", names=settings.name_checks)
    entry = Entry(entry_id=entry_id or new_id(prefix),
                  patron_id=patron.patron_id, stage=Stage.QUALIFYING.value, heat_day=heat_day,
                  buy_in_cents=settings.buy_in_cents, bought_at=as_utc(now), status=REGISTERED,
                  payment=method)
    session.add(entry)
    write_audit(session, now, actor, "entry.bought", detail={
        "entry_id": entry.entry_id, "patron_id": patron.patron_id,
        "buy_in_cents": settings.buy_in_cents, "heat_day": heat_day.isoformat(),
        "payment": method}, why=why)
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
    record_refund(session, now, actor, entry, cause="desk", why=reason)
    session.commit()
    return entry


def record_refund(session: Session, now: datetime, actor: str, entry: Entry, *, cause: str,
            why: str) -> None:
    """Mark ``entry`` refunded and audit it, inside the desk action under way (its caller's
    lock and transaction): a refund at the desk, a table taken out of service."""
    entry.status = REFUNDED
    write_audit(session, now, actor, "entry.refunded", detail={
        "entry_id": entry.entry_id, "patron_id": entry.patron_id, "cause": cause,
        "refund_cents": entry.buy_in_cents, "table": entry.table_id,
        "heat_id": entry.heat_id}, why=why)


def refund_unplayed(session: Session, now: datetime, actor: str, patron_id: str, *,
                    cause: str, why: str, stages: Sequence[Stage]) -> list[str]:
    """Refund a patron's entries of `stages` not yet seated and without a score (a patron
    refused on a list or by a supervisor); their ids. Not committed."""
    refunded: list[str] = []
    for entry in session.scalars(select(Entry).where(
            Entry.patron_id == patron_id, Entry.status == REGISTERED,
            Entry.stage.in_([s.value for s in stages])).order_by(Entry.entry_id)).all():
        if not has_score(session, entry.entry_id):
            record_refund(session, now, actor, entry, cause=cause, why=why)
            refunded.append(entry.entry_id)
    return refunded
