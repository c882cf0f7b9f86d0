"""The demo floor's generated settings, calendar clock, narrator and simulated patrons
(floor.plan, floor.clock, floor.progress, floor.tables)."""

from __future__ import annotations

import asyncio
import random
import tomllib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from floor.clock import FloorClock
from floor.plan import TournamentPlan, demo_tournament, plan_calendar, tournament_settings
from floor.progress import Narrator
from floor.tables import AckTurns
from game.tournament.entries import Stage
from game.tournament.schema import parse_tournament
from runtime.settings_files import default_tournament_path
from simulators.patrons import make_patrons

SAST = ZoneInfo("Africa/Johannesburg")
TEMPLATE = default_tournament_path().read_text("utf-8")


@settings(deadline=None)
@given(today=st.dates(min_value=date(2025, 1, 1), max_value=date(2035, 12, 31)),
       days=st.integers(min_value=1, max_value=12))
def test_the_heat_days_straddle_a_prize_week_and_the_finals_follow(today: date,
                                                                   days: int) -> None:
    calendar = plan_calendar(days, today=today, week_starts_on="friday", tz=SAST)
    text = demo_tournament(TEMPLATE, calendar)
    s = parse_tournament(tomllib.loads(text), "demo", tz=SAST)
    assert today <= calendar.first_day < today + timedelta(days=7)
    assert list(calendar.days) == [calendar.first_day + timedelta(days=n) for n in range(days)]
    assert s.schedule.first_day == calendar.first_day
    assert s.schedule.last_day == s.schedule.ends == calendar.last_day
    # half of the days before a Friday, half from it: two prize weeks from two days on
    weeks = {s.weekly_prizes.week_of(s.schedule, d) for d in calendar.days}
    assert len(weeks) == calendar.weeks == s.weekly_prizes.weeks
    assert days == 1 or len(weeks) >= 2
    friday = next(d for n in range(7) if (d := calendar.first_day + timedelta(days=n)).weekday()
                  == 4)
    assert sum(d < friday for d in calendar.days) == days // 2
    semi, final = s.stage(Stage.SEMI_FINAL).starts_at, s.stage(Stage.FINAL).starts_at
    assert semi is not None and final is not None
    assert s.schedule.ends_at < semi < final
    assert semi.date() == calendar.last_day + timedelta(days=2)


def test_only_the_calendar_changes_unless_rules_are_given() -> None:
    shipped = tomllib.loads(TEMPLATE)
    calendar = plan_calendar(4, today=date(2026, 12, 1), week_starts_on="friday", tz=SAST)
    demo = tomllib.loads(demo_tournament(TEMPLATE, calendar))
    for section in ("money", "wagers", "markers", "prizes", "scores"):
        assert demo[section] == shipped[section]
    for section in ("semi_final", "final"):
        assert {k: v for k, v in demo[section].items() if k != "starts"} == \
            {k: v for k, v in shipped[section].items() if k != "starts"}
    assert demo["qualifying"]["first_day"] == date(2026, 12, 2)  # a Wednesday
    assert demo["qualifying"]["heat_opens"] == shipped["qualifying"]["heat_opens"]
    assert demo["weekly_prizes"]["weeks"] == 2
    assert demo["weekly_prizes"]["prize"] == shipped["weekly_prizes"]["prize"]
    small = tomllib.loads(demo_tournament(TEMPLATE, calendar, {
        "qualifying.advance": 4, "prizes.final_places": [70, 30],
        "weekly_prizes.prize": "R500", "scores.acknowledged_only": True}))
    assert small["qualifying"]["advance"] == 4
    assert small["prizes"]["final_places"] == [70, 30]
    assert small["weekly_prizes"]["prize"] == "R500"


@pytest.mark.parametrize(("rules", "message"), [
    ({"qualifying.advancez": 4}, r"has no qualifying\.advancez"),
    ({"advance": 4}, "section.key"),
    ({"qualifying.first_day": "2026-01-01"}, "sets the calendar itself"),
    ({"prizes.final_places": [0.5]}, "not a whole number"),
])
def test_bad_rules_are_refused_by_name(rules: dict[str, object], message: str) -> None:
    calendar = plan_calendar(2, today=date(2026, 12, 1), week_starts_on="friday", tz=SAST)
    with pytest.raises(ValueError, match=message):
        demo_tournament(TEMPLATE, calendar, rules)


def test_a_plan_too_small_for_the_semi_finals_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"give 3 qualifying scores, but the semi-finals take"
                                         r" 12 \(qualifying\.advance\)"):
        tournament_settings(TournamentPlan(directory=tmp_path, tables=1, players=2, days=2))
    # qualifying only needs no semi-final places; a setting that contradicts another is named
    tournament_settings(TournamentPlan(directory=tmp_path, tables=1, players=2, days=2,
                                       whole=False))
    with pytest.raises(ValueError, match="semi_final"):
        tournament_settings(TournamentPlan(directory=tmp_path, tables=2, players=2, days=2,
                                rules={"qualifying.advance": 4, "semi_final.heats": 1,
                                       "semi_final.seats_per_heat": 2}))


def test_the_calendar_clock_runs_and_only_jumps_forward() -> None:
    start = datetime(2026, 12, 2, 12, 30, tzinfo=SAST)
    clock = FloorClock.calendar(start)
    first = clock.wall()
    assert first.tzinfo is not None
    assert timedelta(0) <= first - start < timedelta(seconds=5)
    clock.advance_to(start + timedelta(days=3))
    later = clock.wall()
    assert later >= start + timedelta(days=3)
    clock.advance_to(start)  # the past: nothing moves back
    assert clock.wall() >= later
    reading = clock.reading()
    assert reading.wall >= later and reading.wall.utcoffset() == timedelta(0)
    assert reading.wall.tzinfo is UTC and reading.mono_ns > 0


def test_the_narrator_prints_one_line_a_bar_when_not_on_a_terminal() -> None:
    lines: list[str] = []
    with Narrator(lines.append, live=False) as narrator:
        bar = narrator.bar("qualifying day 1/2", 20)
        for _ in range(15):
            bar.advance()
        narrator.say("a narrative line")
        bar.finish("3 heats")
        bar.finish()  # once only
    assert lines[0] == "qualifying day 1/2: 20 hands ..."
    assert lines[1] == "a narrative line"
    assert lines[2].startswith("qualifying day 1/2: done in ") and lines[2].endswith(" s; 3 heats")
    assert len(lines) == 3 and bar.done == bar.total == 20


def test_tables_acknowledge_in_table_order_whoever_finishes_first() -> None:
    order: list[str] = []

    async def table(turns: AckTurns, name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        async with turns.turn(name):
            order.append(name)

    async def main() -> None:
        turns = AckTurns(["t01", "t02", "t03"])
        await asyncio.gather(table(turns, "t03", 0), table(turns, "t02", 0.01),
                             table(turns, "t01", 0.02))
        stopped = AckTurns(["t01", "t02"])
        await stopped.release("t01")  # t01 stopped before its turn: t02 does not wait
        await asyncio.wait_for(table(stopped, "t02", 0), 1)

    asyncio.run(main())
    assert order == ["t01", "t02", "t03", "t02"]


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
