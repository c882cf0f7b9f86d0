"""The demo's compressed calendar: a simulated clock that the desk, the central service and
the table daemons all read, and the tournament file whose calendar suits the simulated days.

The clock is the machine's clock plus an offset that only grows: within a simulated day time
runs at the real pace (hands take seconds), and between stages the demo jumps it forward to
the next heat day, the semi-finals, the Final, the prize days. Every part reads the same clock,
so a command's record at the desk, the table's answer and the score's acknowledgement are
stamped in the same simulated time, as on a floor whose clock is right.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as dtime
from typing import Final

from controller.clock import ClockReading, ClockSource, boot_id
from game.tournament.schedule import WEEKDAYS
from runtime.clocks import utc_now

__all__ = ["CalendarClock", "DemoCalendar", "demo_tournament", "plan_calendar"]

_SEMI_AT: Final = dtime(16, 0)  # as shipped: the semi-finals at 16:00, the Final at 17:00
_FINAL_AT: Final = dtime(17, 0)
_DAYS_AFTER: Final = 2  # as shipped: the finals two days after the last heat day


class CalendarClock:
    """The simulated wall clock (aware UTC): the machine's clock plus an offset that grows."""

    def __init__(self, start: datetime) -> None:
        self._offset = start - utc_now()

    def __call__(self) -> datetime:
        """Now, in simulated time (a `runtime.clocks.WallClock`)."""
        return utc_now() + self._offset

    def jump_to(self, when: datetime) -> None:
        """Move the clock forward to `when` (a moment already passed leaves it alone)."""
        ahead = when - self()
        if ahead > timedelta(0):
            self._offset += ahead

    def table_clock(self) -> ClockSource:
        """The clock source of a table daemon on this calendar: simulated wall time, the
        kernel's monotonic time and boot id (the journal orders by those)."""
        def read() -> ClockReading:
            mono = time.monotonic_ns()
            return ClockReading(wall=self(), mono_ns=mono, boot_id=boot_id(), synced=True)

        return read


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoCalendar:
    """The simulated days: qualifying heat days, and when the finals are."""

    days: tuple[date, ...]  # the qualifying heat days, one after the other
    semi_final: datetime  # venue time
    final: datetime
    weeks: int = 1  # the prize weeks the heat days touch

    @property
    def first_day(self) -> date:
        """The first heat day."""
        return self.days[0]

    @property
    def last_day(self) -> date:
        """The last heat day (qualifying ends after its heat)."""
        return self.days[-1]


def plan_calendar(days: int, *, today: date, week_starts_on: str, tz: tzinfo) -> DemoCalendar:
    """`days` heat days from the first suitable day on or after `today`: they straddle a
    prize week's start (half before it, half from it), so that two or more days give two
    prize weeks; the finals as shipped, two days after the last heat day."""
    if days < 1:
        raise ValueError(f"the qualifying campaign needs at least one day, got {days}")
    start_weekday = (WEEKDAYS.index(week_starts_on) - days // 2) % 7
    first = today + timedelta(days=(start_weekday - today.weekday()) % 7)
    heat_days = tuple(first + timedelta(days=n) for n in range(days))
    finals = heat_days[-1] + timedelta(days=_DAYS_AFTER)
    week_one = first - timedelta(days=(first.weekday() - WEEKDAYS.index(week_starts_on)) % 7)
    return DemoCalendar(days=heat_days, semi_final=datetime.combine(finals, _SEMI_AT, tzinfo=tz),
                        final=datetime.combine(finals, _FINAL_AT, tzinfo=tz),
                        weeks=(heat_days[-1] - week_one).days // 7 + 1)


def _toml_value(key: str, value: object) -> str:
    """One settings value as TOML (rand amounts are strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list | tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "[" + ", ".join(str(v) for v in value) + "]"
    raise ValueError(f"setting {key}: {value!r} is not a whole number, text, true/false or a"
                     " list of whole numbers")


def _changes(calendar: DemoCalendar, rules: Mapping[str, object]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {
        ("venue", "name"): '"Showdown demo floor (simulated tables)"',
        ("qualifying", "first_day"): calendar.first_day.isoformat(),
        ("qualifying", "last_day"): calendar.last_day.isoformat(),
        ("qualifying", "ends"): calendar.last_day.isoformat(),
        ("semi_final", "starts"): f"{calendar.semi_final:%Y-%m-%dT%H:%M:%S}",
        ("final", "starts"): f"{calendar.final:%Y-%m-%dT%H:%M:%S}",
    }
    if "weekly_prizes.weeks" not in rules:  # a prize for each week with heats
        out[("weekly_prizes", "weeks")] = str(calendar.weeks)
    for dotted, value in rules.items():
        section, dot, key = dotted.partition(".")
        if not dot or not key:
            raise ValueError(f"setting {dotted!r}: name it as section.key (e.g."
                             " qualifying.advance)")
        if (section, key) in out:
            raise ValueError(f"setting {dotted}: the demo sets the calendar itself")
        out[(section, key)] = _toml_value(dotted, value)
    return out


def demo_tournament(template: str, calendar: DemoCalendar,
                    rules: Mapping[str, object] | None = None) -> str:
    """The tournament settings `template` with the demo's calendar (its heat days, a weekly
    prize for each week they touch, the finals two days after) and the `rules` overrides
    ("section.key" -> value); the heat window and every other rule stay as in the template.
    ValueError names a key the template lacks."""
    changes = _changes(calendar, rules or {})
    done: set[tuple[str, str]] = set()
    section = ""
    lines = [f"# showdown demo: the shipped settings on a simulated calendar of"
             f" {len(calendar.days)} heat days from {calendar.first_day:%Y-%m-%d}"]
    for line in template.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
        key, eq, rest = line.partition("=")
        where = (section, key.strip())
        if eq and not stripped.startswith("#") and where in changes:
            comment = rest[rest.index("#"):] if "#" in rest else ""
            lines.append(f"{key.rstrip()} = {changes[where]}" + (f"   {comment}" if comment
                                                                  else ""))
            done.add(where)
        else:
            lines.append(line)
    missing = ", ".join(".".join(m) for m in sorted(set(changes) - done))
    if missing:
        raise ValueError(f"the tournament template has no {missing}")
    return "\n".join(lines) + "\n"
