"""The period and place a report covers: venue-local dates (inclusive), the venue's time zone,
an optional venue, and how times and amounts are written in each output format."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

__all__ = ["ReportWindow", "parse_day", "parse_instant", "rand_plain"]


def parse_day(text: str, what: str) -> date:
    """A YYYY-MM-DD date (ValueError naming ``what`` when it is not one)."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a date (YYYY-MM-DD)") from None


def parse_instant(text: object) -> datetime | None:
    """An RFC 3339 time as an aware datetime (None when missing or not a time)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def rand_plain(cents: int) -> str:
    """Cents as a plain decimal rand amount for JSON and CSV ("-1234.50"): no symbol and no
    separators, so a spreadsheet reads it as a number."""
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), 100)
    return f"{sign}{units}.{rest:02d}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportWindow:
    """Venue-local days ``first``..``last`` (either open), the venue's zone, and a venue."""

    tz: tzinfo
    first: date | None = None
    last: date | None = None
    venue: str | None = None

    def __post_init__(self) -> None:
        if self.first is not None and self.last is not None and self.first > self.last:
            raise ValueError(f"--from {self.first} is after --to {self.last}")

    def contains(self, moment: datetime | None) -> bool:
        """Whether an instant falls on one of the window's venue days (unknown: no)."""
        if moment is None:
            return False
        day = moment.astimezone(self.tz).date()
        return (self.first is None or day >= self.first) and (
            self.last is None or day <= self.last)

    def utc_bounds(self, margin: timedelta) -> tuple[datetime | None, datetime | None]:
        """The window's first and last instants in UTC, widened by ``margin`` (for a coarse
        filter in SQL on a time that may differ a little from the one the report counts)."""
        start = None if self.first is None else datetime.combine(
            self.first, time(0), self.tz).astimezone(UTC) - margin
        end = None if self.last is None else datetime.combine(
            self.last + timedelta(days=1), time(0), self.tz).astimezone(UTC) + margin
        return start, end

    def local(self, moment: datetime | None) -> str | None:
        """An instant in venue time, ISO 8601 with its offset (for JSON and CSV)."""
        if moment is None:
            return None
        return moment.astimezone(self.tz).isoformat(timespec="seconds")

    def shown(self, moment: datetime | None) -> str:
        """An instant in venue time for people: "2026-07-03 14:05"."""
        return "-" if moment is None else f"{moment.astimezone(self.tz):%Y-%m-%d %H:%M}"

    def label(self) -> str:
        """The period in words, for the report's heading."""
        first = "the start" if self.first is None else self.first.isoformat()
        last = "now" if self.last is None else self.last.isoformat()
        where = f", venue {self.venue}" if self.venue else ""
        return f"{first} to {last} (venue days){where}"

