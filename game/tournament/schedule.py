"""The qualifying calendar: daily heat window, last buy-in, end of qualifying and prize weeks.

Rules: tournament.md "Entries and eligibility" (buy-ins only in the heat window, daily 13:00 to
00:00, last buy-in at 00:00), "Leaderboards and ties" (weeks run Friday 00:00 to Thursday 23:59;
prizes for the first 4 weeks), promotion rule 21 (qualifying ends after the last heat). All
times are venue-local; the caller passes aware datetimes (the venue tzinfo comes from config).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

__all__ = ["WEEKDAYS", "HeatWindow", "QualifyingSchedule", "WeeklyPrizes"]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = timedelta(days=1)
_WEEK = timedelta(days=7)


def _offset(t: time, base: time) -> timedelta:
    """How long after `base` the clock next shows `t` (0 if equal), within one day."""
    delta = datetime.combine(date.min, t) - datetime.combine(date.min, base)
    return delta % _DAY


@dataclass(frozen=True, slots=True, kw_only=True)
class HeatWindow:
    """The daily heat window: opens, closes (a close at or before the opening is the next day)."""

    opens: time
    closes: time
    last_buy_in: time

    @property
    def length(self) -> timedelta:
        """How long the window stays open each day (zero = an empty window)."""
        return _offset(self.closes, self.opens)

    @property
    def buy_in_span(self) -> timedelta:
        """From the opening to the last buy-in, inclusive."""
        return _offset(self.last_buy_in, self.opens)

    @property
    def crosses_midnight(self) -> bool:
        """Whether the window closes on the next calendar day (e.g. 13:00 to 00:00)."""
        return self.closes <= self.opens


@dataclass(frozen=True, slots=True, kw_only=True)
class QualifyingSchedule:
    """Qualifying heats run daily from first_day to last_day; qualifying ends after `ends`' heat."""

    first_day: date
    last_day: date
    ends: date
    window: HeatWindow
    tz: tzinfo

    def opens_at(self, day: date) -> datetime:
        """When the heat window of `day` opens (venue time)."""
        return datetime.combine(day, self.window.opens, tzinfo=self.tz)

    @property
    def starts_at(self) -> datetime:
        """The first heat window's opening: the start of qualifying."""
        return self.opens_at(self.first_day)

    @property
    def ends_at(self) -> datetime:
        """When qualifying ends: the close of the heat window on the `ends` day."""
        return self.opens_at(self.ends) + self.window.length

    def heat_day(self, at: datetime) -> date | None:
        """The qualifying day whose heat window (opening to close, inclusive) holds `at`, if any."""
        local = at.astimezone(self.tz)
        for day in (local.date(), local.date() - _DAY):
            start = self.opens_at(day)
            if (
                self.first_day <= day <= self.last_day
                and start <= local <= start + self.window.length
            ):
                return day
        return None

    def buy_in_open(self, at: datetime) -> bool:
        """Whether a buy-in is accepted at `at`: inside a heat window, up to the last buy-in."""
        local = at.astimezone(self.tz)
        for day in (local.date(), local.date() - _DAY):
            start = self.opens_at(day)
            if (
                self.first_day <= day <= self.last_day
                and start <= local <= start + self.window.buy_in_span
            ):
                return True
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class WeeklyPrizes:
    """Prize weeks begin on weekday `starts_on` (0 = Monday) at `starts_at`; first `weeks` pay."""

    starts_on: int
    starts_at: time
    weeks: int
    prize_cents: int = 0  # the cash prize of each paying week (set by the casino)

    def first_week_start(self, schedule: QualifyingSchedule) -> datetime:
        """The start of week 1: the last week start at or before qualifying opens."""
        first = schedule.starts_at
        back = (first.weekday() - self.starts_on) % 7
        start = datetime.combine(first.date() - timedelta(days=back), self.starts_at,
                                 tzinfo=schedule.tz)
        if start > first:
            start -= _WEEK
        return start

    def week_of(self, schedule: QualifyingSchedule, heat_day: date) -> int:
        """The prize week (1, 2, ...) of a heat day, by when its heat window opens.

        A score belongs to its entry's heat day, so hands played after midnight in the
        13:00-00:00 window still count for the week the heat opened in.
        """
        return (schedule.opens_at(heat_day) - self.first_week_start(schedule)) // _WEEK + 1

    def weeks_in(self, schedule: QualifyingSchedule) -> int:
        """How many prize weeks (whole or part) the qualifying heats touch."""
        return self.week_of(schedule, schedule.last_day)

    def week_bounds(self, schedule: QualifyingSchedule, week: int) -> tuple[datetime, datetime]:
        """Week `week`'s start (inclusive) and end (exclusive), venue time."""
        if week < 1:
            raise ValueError(f"weeks are numbered from 1, got {week}")
        start = self.first_week_start(schedule) + (week - 1) * _WEEK
        return start, start + _WEEK
