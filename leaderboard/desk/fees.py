"""Entry fees collected, by how they were paid (rule 6: cash or value chips): the desk's
economics view of the buy-ins. Refunded entries are not counted (their fee went back);
entries sold before payment was recorded are shown as ``not_recorded``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard.desk.entries import PAYMENT_METHODS
from leaderboard.models import Entry
from leaderboard.projections import UNPAID_STATUSES

__all__ = ["NOT_RECORDED", "FeeLine", "entry_fees"]

NOT_RECORDED: Final = "not_recorded"


@dataclass(frozen=True, slots=True, kw_only=True)
class FeeLine:
    """One payment method's entries and their fees (integer cents)."""

    payment: str
    entries: int
    cents: int


def entry_fees(session: Session) -> tuple[FeeLine, ...]:
    """The qualifying entry fees kept, by payment method (every method listed, then
    ``not_recorded`` when there are such entries)."""
    rows = session.execute(
        select(Entry.payment, func.count(), func.coalesce(func.sum(Entry.buy_in_cents), 0))
        .where(Entry.stage == Stage.QUALIFYING.value, Entry.buy_in_cents > 0,
               Entry.status.not_in(sorted(UNPAID_STATUSES)))
        .group_by(Entry.payment)).all()
    found = {payment or NOT_RECORDED: (int(n), int(c)) for payment, n, c in rows}
    lines = [FeeLine(payment=m, entries=found.get(m, (0, 0))[0], cents=found.get(m, (0, 0))[1])
             for m in PAYMENT_METHODS]
    lines += [FeeLine(payment=k, entries=n, cents=c) for k, (n, c) in sorted(found.items())
              if k not in PAYMENT_METHODS]
    return tuple(lines)
