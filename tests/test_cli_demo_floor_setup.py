"""The demo floor's generated settings and simulated patrons (controller.commands.demo_floor)."""

from __future__ import annotations

import random
import tomllib
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.commands.demo_floor import demo_tournament
from game.schedule import QualifyingSchedule
from game.tournament import Stage
from game.tournament_schema import TournamentSettings, parse_tournament
from runtime.settings_files import default_tournament_path
from simulators.patrons import make_patrons

SAST = ZoneInfo("Africa/Johannesburg")
TEMPLATE = default_tournament_path().read_text("utf-8")


def _schedule(now: datetime) -> tuple[QualifyingSchedule, TournamentSettings]:
    settings = parse_tournament(tomllib.loads(demo_tournament(TEMPLATE, now)), "demo",
                                tz=SAST)
    return settings.schedule, settings


@given(st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2035, 12, 31),
                    timezones=st.just(SAST)))
def test_a_demo_started_at_any_moment_has_a_heat_open_for_most_of_a_day(now: datetime) -> None:
    schedule, settings = _schedule(now)
    heat_day = schedule.heat_day(now)
    assert heat_day is not None
    # Every moment of the next 20 hours belongs to the same heat, with buy-ins open (the
    # demo buys and seats at the real clock; the last minute before midnight used to fail).
    for hours in range(21):
        at = now + timedelta(hours=hours)
        assert schedule.heat_day(at) == heat_day
        assert schedule.buy_in_open(at)
    assert schedule.opens_at(heat_day) <= now < schedule.opens_at(heat_day) + timedelta(hours=3)
    assert schedule.first_day == heat_day - timedelta(days=6)
    assert schedule.last_day == schedule.ends == heat_day + timedelta(days=21)
    semi = settings.stage(Stage.SEMI_FINAL).starts_at
    final = settings.stage(Stage.FINAL).starts_at
    assert semi is not None and final is not None
    assert schedule.ends_at < semi < final


def test_only_the_calendar_changes() -> None:
    shipped = tomllib.loads(TEMPLATE)
    demo = tomllib.loads(demo_tournament(TEMPLATE, datetime(2026, 11, 29, 23, 59, tzinfo=SAST)))
    for section in ("money", "wagers", "markers", "weekly_prizes", "prizes", "scores"):
        assert demo[section] == shipped[section]
    assert demo["semi_final"]["starts"].date() == date(2026, 12, 22)
    assert demo["final"]["starts"].date() == date(2026, 12, 22)
    assert demo["semi_final"]["hands"] == shipped["semi_final"]["hands"]
    assert demo["qualifying"]["hands"] == shipped["qualifying"]["hands"]


def test_a_template_without_the_calendar_is_refused() -> None:
    with pytest.raises(ValueError, match=r"qualifying\.first_day"):
        demo_tournament(TEMPLATE.replace("first_day", "first_dayz"),
                        datetime(2026, 11, 29, 12, 0, tzinfo=SAST))


def test_patrons_are_distinct_adults_and_one_under_age_walk_in() -> None:
    today = date(2026, 11, 29)
    people = make_patrons(11, rng=random.Random(3), today=today)
    assert len(people) == 12
    assert len({p.name for p in people}) == len({p.id_number for p in people}) == 12

    def age(born: date) -> int:
        return today.year - born.year - ((today.month, today.day) < (born.month, born.day))

    assert all(19 <= age(p.birth_date) <= 70 for p in people[:11])
    assert age(people[11].birth_date) == 17
    assert make_patrons(11, rng=random.Random(3), today=today) == people  # seeded
    with pytest.raises(ValueError, match="distinct"):
        make_patrons(400, rng=random.Random(3), today=today)
