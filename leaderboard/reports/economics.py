"""Tournament economics: entry fees collected by payment (rule 6: cash or value chips), the
refunds, the two progressive pools the buy-ins fund (rule 18: 80% Final Prize Pool, 20% Top
Score Progressive), and the prizes awarded by kind with their claims (rule 55: claimed,
unclaimed, expired, withheld) and what is left of each pool.

Fees, refunds and awards are those of the period (by the day the entry was bought, the day
the prize was awarded, in venue time); the pools are the tournament's to date, as the live
page shows them (paid qualifying buy-ins). Weekly prizes are funded by the house, not a pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.money import format_rand, split_round_down
from game.tournament.entries import Stage
from game.tournament.prizes import PrizeKind
from game.tournament.schema import TournamentSettings
from leaderboard.desk.awards import prize_status
from leaderboard.desk.entries import PAYMENT_METHODS
from leaderboard.models import Entry, PrizeAward
from leaderboard.projections import REFUNDED, UNPAID_STATUSES
from leaderboard.reports.window import ReportWindow, parse_instant

__all__ = ["CLAIM_STATES", "NOT_RECORDED", "Economics", "Line", "PoolLine", "PrizeLine",
           "economics", "read_economics"]

NOT_RECORDED: Final = "not_recorded"
CLAIM_STATES: Final = ("claimed", "unclaimed", "expired", "withheld")
POOL_OF: Final = {PrizeKind.FINAL.value: "final_pool", PrizeKind.TOP_SCORE.value: "top_score"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """A count and an amount in cents."""

    count: int
    cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeLine:
    """One kind of prize: awarded in the period, and those awards by claim state now."""

    kind: str
    awarded: Line
    states: dict[str, Line]


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolLine:
    """A progressive pool to date: its amount, what was awarded from it, what is left."""

    pool: str
    percent: str
    cents: int
    awarded_cents: int
    remainder_cents: int
    awarded: bool  # whether its prizes have been awarded


@dataclass(frozen=True, slots=True, kw_only=True)
class Economics:
    """The economics report."""

    fees: tuple[tuple[str, Line], ...]
    fees_total: Line
    refunds: Line
    paid_entries: int
    buy_ins_cents: int
    split_remainder_cents: int
    pools: tuple[PoolLine, ...]
    prizes: tuple[PrizeLine, ...]
    house_weekly_cents: int
    as_of: datetime
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryRow:
    """What economics needs of an entry."""

    payment: str | None
    buy_in_cents: int
    status: str
    bought_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AwardRow:
    """What economics needs of a prize award, with its claim state now."""

    kind: str
    amount_cents: int
    awarded_at: datetime | None
    state: str


def read_economics(session: Session, now: datetime) -> tuple[list[EntryRow], list[AwardRow]]:
    """The qualifying entries with a buy-in, and every prize award with its state at ``now``."""
    entries = [EntryRow(payment=e.payment, buy_in_cents=e.buy_in_cents, status=e.status,
                        bought_at=parse_instant(e.bought_at.isoformat()) if e.bought_at
                        else None)
               for e in session.scalars(select(Entry).where(
                   Entry.stage == Stage.QUALIFYING.value, Entry.buy_in_cents > 0))]
    awards = [AwardRow(kind=a.kind, amount_cents=a.amount_cents,
                       awarded_at=parse_instant(a.awarded_at.isoformat()) if a.awarded_at
                       else None, state=prize_status(a, now))
              for a in session.scalars(select(PrizeAward).order_by(PrizeAward.id))]
    return entries, awards


def _line(items: Sequence[int]) -> Line:
    return Line(count=len(items), cents=sum(items))


def economics(entries: Sequence[EntryRow], awards: Sequence[AwardRow],
              settings: TournamentSettings, window: ReportWindow, now: datetime) -> Economics:
    """The economics of the period (pools to date)."""
    kept = [e for e in entries if e.status not in UNPAID_STATUSES]
    in_period = [e for e in kept if window.contains(e.bought_at)]
    methods = [*PAYMENT_METHODS, *sorted({e.payment or NOT_RECORDED for e in in_period}
                                         - set(PAYMENT_METHODS))]
    fees = tuple((m, _line([e.buy_in_cents for e in in_period
                            if (e.payment or NOT_RECORDED) == m])) for m in methods)
    refunds = _line([e.buy_in_cents for e in entries
                     if e.status == REFUNDED and window.contains(e.bought_at)])
    buy_ins = sum(e.buy_in_cents for e in kept)
    prizes = settings.prizes
    (final, top), rest = split_round_down(buy_ins, [prizes.final_pool_percent,
                                                    prizes.top_score_percent])
    notes: list[str] = []
    pools = []
    for kind, cents, percent in ((PrizeKind.FINAL.value, final, prizes.final_pool_percent),
                                 (PrizeKind.TOP_SCORE.value, top, prizes.top_score_percent)):
        mine = [a for a in awards if a.kind == kind]
        paid = sum(a.amount_cents for a in mine)
        if paid > cents:
            notes.append(f"{POOL_OF[kind]}: {format_rand(paid)} awarded, more than the pool to"
                         f" date of {format_rand(cents)}: entries refunded after the award, or"
                         " a prize book that counted refunded entries")
        pools.append(PoolLine(pool=POOL_OF[kind], percent=f"{float(percent):g}%",
                              cents=cents, awarded_cents=paid, remainder_cents=cents - paid,
                              awarded=bool(mine)))
    lines = []
    for kind in PrizeKind:
        mine = [a for a in awards if a.kind == kind.value and window.contains(a.awarded_at)]
        states = {s: _line([a.amount_cents for a in mine if a.state == s]) for s in CLAIM_STATES}
        lines.append(PrizeLine(kind=kind.value, awarded=_line([a.amount_cents for a in mine]),
                               states=states))
    weekly = sum(a.amount_cents for a in awards if a.kind == PrizeKind.WEEKLY.value)
    if any(e.payment is None for e in in_period):
        notes.append("entries sold before the payment method was recorded are shown as"
                     f" {NOT_RECORDED}")
    return Economics(
        fees=fees, fees_total=_line([e.buy_in_cents for e in in_period]), refunds=refunds,
        paid_entries=len(kept), buy_ins_cents=buy_ins, split_remainder_cents=rest,
        pools=tuple(pools), prizes=tuple(lines), house_weekly_cents=weekly, as_of=now,
        notes=tuple(notes))
