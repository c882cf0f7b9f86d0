"""game.tournament.schema and game.tournament.schedule: the tournament settings and their
contradictions.

The shipped config/tournament.toml must load with the values of tournament.md; every
contradiction is refused with a message naming the keys involved.
"""

from __future__ import annotations

import copy
import tomllib
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from game.errors import ConfigError
from game.tournament.entries import Stage
from game.tournament.schema import ConfigErrors, TournamentSettings, parse_tournament, timezone_name
from game.wagers.house_limits import HouseRules

CONFIG = Path(__file__).resolve().parents[3] / "config"
SAST = ZoneInfo("Africa/Johannesburg")
R = 100


def shipped() -> dict[str, Any]:
    return tomllib.loads((CONFIG / "tournament.toml").read_text(encoding="utf-8"))


def load(data: dict[str, Any]) -> TournamentSettings:
    return parse_tournament(data, "t.toml", tz=SAST)


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, *, s: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, s, tzinfo=SAST)


@pytest.fixture(name="settings")
def _settings() -> TournamentSettings:
    return load(shipped())


def test_shipped_config_has_the_values_of_the_spec(settings: TournamentSettings) -> None:
    s = settings
    assert (s.venue_name, s.timezone, s.currency) == (
        "Main Casino Floor tournament area", "Africa/Johannesburg", "ZAR")
    assert s.buy_in_cents == 100 * R
    assert s.house == HouseRules(denomination_cents=25 * R, min_ante_cents=25 * R,
                                 max_ante_cents=1_000 * R, side_bet_max_cents=250 * R,
                                 marker_value_cents=500 * R, markers_per_entry=0,
                                 side_bets_need_main=True)
    assert (s.folded_seat_side_bets, s.preflop_play, s.affordability) == (
        "settle", "3x", "cover_1x_play")
    assert s.markers_usable_on == ("trips_plus", "pocket_bonus", "sweet16")
    assert s.unused_markers == "forfeit"
    q, semi, final = s.qualifying, s.semi_final, s.final
    assert (q.rules.hands, semi.rules.hands, final.rules.hands) == (10, 12, 12)
    assert {x.rules.starting_chips_cents for x in (q, semi, final)} == {2_000 * R}
    assert (q.rules.markers, semi.rules.markers, final.rules.markers) == (0, 0, 3)
    assert s.house_rules(Stage.FINAL).markers_per_entry == 3
    assert s.house_rules(Stage.QUALIFYING).markers_per_entry == 0
    assert (q.advance, semi.advance, final.advance) == (12, 6, None)
    assert (semi.heats, semi.seats_per_heat, final.heats, final.seats_per_heat) == (2, 6, 1, 6)
    assert semi.starts_at == at(2026, 8, 1, 16)
    assert final.starts_at == at(2026, 8, 1, 17)
    assert semi.starts_at.utcoffset() == timedelta(hours=2)  # SAST, UTC+2
    sched = s.schedule
    assert (sched.first_day, sched.last_day, sched.ends) == (
        date(2026, 7, 3), date(2026, 7, 30), date(2026, 7, 30))
    assert (sched.window.opens, sched.window.closes, sched.window.last_buy_in) == (
        time(13), time(0), time(0))
    assert sched.ends_at == at(2026, 7, 31, 0)
    assert (s.weekly_prizes.starts_on, s.weekly_prizes.starts_at, s.weekly_prizes.weeks) == (
        4, time(0), 4)  # Friday 00:00
    p = s.prizes
    assert (p.final_pool_percent, p.top_score_percent) == (Fraction(80), Fraction(20))
    assert p.top_score_places == tuple(map(Fraction, (60, 25, 15)))
    assert p.final_places == tuple(map(Fraction, (60, 10, 9, 8, 7, 6)))
    assert p.claim_days == 15
    assert s.acknowledged_only is True
    assert s.tie_rule == "earlier_acknowledged"
    assert s.stage(Stage.SEMI_FINAL) is semi


def test_rule_21_schedule_is_refused_naming_both_keys() -> None:
    data = tomllib.loads((CONFIG / "tournament-bad-rule21.toml").read_text(encoding="utf-8"))
    with pytest.raises(ConfigErrors) as info:
        load(data)
    message = str(info.value)
    assert "qualifying.ends" in message
    assert "qualifying.last_day" in message
    assert "2026-06-18" in message
    assert "2026-07-30" in message
    assert info.value.source == "t.toml"
    assert len(info.value.errors) == 1


def test_bad_rule21_file_differs_from_shipped_only_in_the_end_date() -> None:
    bad = tomllib.loads((CONFIG / "tournament-bad-rule21.toml").read_text(encoding="utf-8"))
    good = shipped()
    assert bad["qualifying"].pop("ends") == date(2026, 6, 18)
    good["qualifying"].pop("ends")
    assert bad == good


def changed(path: str, value: object) -> dict[str, Any]:
    data = copy.deepcopy(shipped())
    *tables, key = path.split(".")
    node = data
    for t in tables:
        node = node.setdefault(t, {})
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return data


class _Delete:
    """A marker for "remove this key" whose repr is the same in every process (pytest-xdist)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()

CONTRADICTIONS = [
    # (key to change, new value, words every message must contain)
    ("prizes.final_pool_percent", 75, ["prizes.final_pool_percent", "prizes.top_score_percent",
                                      "95%"]),
    ("prizes.top_score_percent", "20.5", ["prizes.top_score_percent", "100.5%"]),
    ("prizes.final_places", [60, 10, 9, 8, 7, 5], ["prizes.final_places", "99%"]),
    ("prizes.top_score_places", [60, 25, 10], ["prizes.top_score_places", "95%"]),
    ("prizes.final_places", [40, 10, 10, 10, 10, 10, 10], ["prizes.final_places", "final.heats",
                                                           "6 finalists"]),
    ("qualifying.ends", date(2026, 6, 18), ["qualifying.ends", "qualifying.last_day"]),
    ("qualifying.last_day", date(2026, 7, 2), ["qualifying.last_day", "qualifying.first_day"]),
    ("semi_final.starts", datetime(2026, 7, 30, 16), ["semi_final.starts", "qualifying.ends",
                                                      "2026-07-31 00:00"]),
    ("final.starts", datetime(2026, 8, 1, 15), ["final.starts", "semi_final.starts"]),
    ("final.starts", datetime(2026, 8, 1, 16), ["final.starts", "semi_final.starts"]),
    ("qualifying.heat_closes", time(13), ["qualifying.heat_closes", "heat_opens", "empty"]),
    ("qualifying.last_buy_in", time(12), ["qualifying.last_buy_in", "outside the heat window"]),
    ("qualifying.last_buy_in", time(0, 1), ["qualifying.last_buy_in", "outside"]),
    ("qualifying.hands", 0, ["qualifying.hands", "at least 1"]),
    ("semi_final.hands", 0, ["semi_final.hands", "at least 1"]),
    ("final.hands", -12, ["final.hands", "at least 1"]),
    ("qualifying.starting_chips", "R2,010", ["qualifying.starting_chips", "money.denomination",
                                             "R2,010.00"]),
    ("final.starting_chips", "R50", ["final.starting_chips", "wagers.minimum_per_hand", "R75.00"]),
    ("wagers.minimum_per_hand", "R75", ["wagers.minimum_per_hand", "2 x money.denomination",
                                        "money.denomination"]),
    ("wagers.minimum_per_hand", "R0", ["wagers.minimum_per_hand", "more than R0"]),
    ("wagers.side_bet_maximum", "R260", ["wagers.side_bet_maximum", "money.denomination"]),
    ("wagers.maximum_ante", "R1,010", ["wagers.maximum_ante", "money.denomination"]),
    ("wagers.maximum_ante", "R0", ["wagers.maximum_ante", "wagers.minimum_per_hand"]),
    ("markers.value", "R510", ["markers.value", "money.denomination"]),
    ("money.denomination", "R0", ["money.denomination", "more than R0"]),
    ("qualifying.advance", 13, ["qualifying.advance", "semi_final.heats",
                                "semi_final.seats_per_heat", "2 x 6 = 12"]),
    ("semi_final.advance", 7, ["semi_final.advance", "final.heats", "1 x 6 = 6"]),
    ("semi_final.seats_per_heat", 7, ["semi_final.seats_per_heat", "at most 6"]),
    ("weekly_prizes.weeks", 5, ["weekly_prizes.weeks", "only 4"]),
    # types and values
    ("money.buy_in", 100, ["money.buy_in", "R1,000"]),
    ("money.buy_in", "R100.005", ["money.buy_in", "two decimals"]),
    ("money.currency", "USD", ["money.currency", "'ZAR'"]),
    ("prizes.final_pool_percent", 80.0, ["prizes.final_pool_percent", "no floats"]),
    ("qualifying.first_day", "2026-07-03", ["qualifying.first_day", "no quotes"]),
    ("qualifying.first_day", datetime(2026, 7, 3, 13), ["qualifying.first_day", "no time"]),
    ("qualifying.heat_opens", "13:00", ["qualifying.heat_opens", "time of day"]),
    ("semi_final.starts", date(2026, 8, 1), ["semi_final.starts", "date and time"]),
    ("scores.tie_rule", "coin_flip", ["scores.tie_rule", "earlier_acknowledged", "split"]),
    ("scores.acknowledged_only", "yes", ["scores.acknowledged_only", "true or false"]),
    ("markers.unused_markers", "refund", ["markers.unused_markers", "forfeit"]),
    ("markers.usable_on", ["sweet16"], ["markers.usable_on", "rule 46"]),
    ("wagers.preflop_play", "2x or 3x", ["wagers.preflop_play", "only '3x'", "§0 item 7"]),
    ("wagers.folded_seat_side_bets", "lose", ["wagers.folded_seat_side_bets", "'settle'"]),
    ("wagers.affordability", "none", ["wagers.affordability", "'cover_1x_play'"]),
    ("weekly_prizes.week_starts_on", "fri", ["weekly_prizes.week_starts_on", "'friday'"]),
    ("prizes.claim_days", 0, ["prizes.claim_days", "at least 1"]),
    ("final.heats", True, ["final.heats", "whole number"]),
    ("venue.name", "", ["venue.name", "non-empty"]),
    # unknown and missing keys
    ("qualifying.hand", 10, ["qualifying.hand", "unknown key", "hands"]),
    ("final.advance", 1, ["final.advance", "unknown key"]),
    ("extras.colour", "red", ["extras", "unknown table"]),
    ("semi_final.hands", DELETE, ["semi_final.hands", "missing"]),
    ("scores", DELETE, ["scores", "missing table"]),
]


@pytest.mark.parametrize(("path", "value", "words"), CONTRADICTIONS,
                         ids=[f"{c[0]}={c[1]!r}"[:60] for c in CONTRADICTIONS])
def test_contradiction_refused_naming_the_keys(path: str, value: object, words: list[str]) -> None:
    with pytest.raises(ConfigErrors) as info:
        load(changed(path, value))
    messages = [str(e) for e in info.value.errors]
    assert any(all(w in m for w in words) for m in messages), messages
    assert all(m.startswith("t.toml: ") for m in messages)
    assert isinstance(info.value, ConfigError)


def test_every_problem_is_reported_at_once() -> None:
    data = changed("qualifying.ends", date(2026, 6, 18))
    data["prizes"]["final_places"] = [50, 10, 9, 8, 7, 6]
    data["final"]["colour"] = "red"
    with pytest.raises(ConfigErrors) as info:
        load(data)
    keys = [e.key for e in info.value.errors]
    assert keys == ["final.colour", "qualifying.ends", "prizes.final_places"]
    assert "(and 2 more problems)" in str(info.value)


def test_not_a_document() -> None:
    with pytest.raises(ConfigErrors, match="TOML document"):
        parse_tournament([], "t.toml", tz=SAST)  # type: ignore[arg-type]


def test_percentages_may_be_decimal_strings() -> None:
    data = changed("prizes.final_places", [60, 10, "9.5", "7.5", 7, 6])
    assert load(data).prizes.final_places[2:4] == (Fraction(19, 2), Fraction(15, 2))


def test_offset_datetimes_are_read_in_venue_time() -> None:
    data = changed("semi_final.starts", datetime(2026, 8, 1, 14, tzinfo=UTC))
    starts = load(data).semi_final.starts_at
    assert starts == at(2026, 8, 1, 16)
    assert starts is not None
    assert starts.tzinfo is SAST


def test_timezone_name() -> None:
    assert timezone_name(shipped(), "t.toml") == "Africa/Johannesburg"
    with pytest.raises(ConfigError) as info:
        timezone_name({"venue": {"name": "x"}}, "t.toml")
    assert info.value.key == "venue.timezone"


# --- game.tournament.schedule: buy-ins, heat days and prize weeks on the shipped calendar ---

@pytest.mark.parametrize(
    ("moment", "open_"),
    [
        (at(2026, 7, 3, 12, 59, s=59), False),   # before the first window opens
        (at(2026, 7, 3, 13), True),
        (at(2026, 7, 3, 23, 59, s=59), True),
        (at(2026, 7, 4, 0), True),             # the last buy-in at 00:00 [Qualifying Heats]
        (at(2026, 7, 4, 0, 0, s=1), False),
        (at(2026, 7, 4, 12, 0), False),
        (at(2026, 7, 2, 23, 0), False),        # the day before qualifying
        (at(2026, 7, 30, 20), True),
        (at(2026, 7, 31, 0), True),            # the last heat's last buy-in
        (at(2026, 7, 31, 13), False),          # no heat on 31 July
        (datetime(2026, 7, 3, 11, 0, tzinfo=UTC), True),  # 13:00 SAST
    ],
)
def test_buy_in_window(settings: TournamentSettings, moment: datetime, open_: bool) -> None:
    assert settings.schedule.buy_in_open(moment) is open_


def test_heat_day(settings: TournamentSettings) -> None:
    sched = settings.schedule
    assert sched.heat_day(at(2026, 7, 4, 0)) == date(2026, 7, 3)
    assert sched.heat_day(at(2026, 7, 4, 13)) == date(2026, 7, 4)
    assert sched.heat_day(at(2026, 7, 4, 0, 30)) is None
    assert sched.heat_day(at(2026, 8, 1, 16)) is None


def test_an_early_last_buy_in() -> None:
    s = load(changed("qualifying.last_buy_in", time(23)))
    assert s.schedule.buy_in_open(at(2026, 7, 3, 23))
    assert not s.schedule.buy_in_open(at(2026, 7, 3, 23, 0, s=1))
    assert s.schedule.heat_day(at(2026, 7, 3, 23, 30)) == date(2026, 7, 3)


@pytest.mark.parametrize(
    ("day", "week"),
    [(date(2026, 7, 3), 1), (date(2026, 7, 9), 1), (date(2026, 7, 10), 2), (date(2026, 7, 16), 2),
     (date(2026, 7, 17), 3), (date(2026, 7, 24), 4), (date(2026, 7, 30), 4)],
)
def test_prize_weeks_run_friday_to_thursday(settings: TournamentSettings, day: date,
                                            week: int) -> None:
    # 3 July 2026 is a Friday; 30 July a Thursday: four whole weeks [17].
    assert settings.weekly_prizes.week_of(settings.schedule, day) == week


def test_week_bounds(settings: TournamentSettings) -> None:
    w, sched = settings.weekly_prizes, settings.schedule
    assert w.week_bounds(sched, 1) == (at(2026, 7, 3), at(2026, 7, 10))
    assert w.week_bounds(sched, 4) == (at(2026, 7, 24), at(2026, 7, 31))
    assert w.weeks_in(sched) == 4
    with pytest.raises(ValueError, match="from 1"):
        w.week_bounds(sched, 0)


def test_a_midweek_start_makes_a_short_first_week() -> None:
    # Qualifying from Wednesday 1 July: week 1 is Fri 26 June..Thu 2 July (2 heat days).
    s = load(changed("qualifying.first_day", date(2026, 7, 1)))
    assert s.weekly_prizes.week_of(s.schedule, date(2026, 7, 2)) == 1
    assert s.weekly_prizes.week_of(s.schedule, date(2026, 7, 3)) == 2
    assert s.weekly_prizes.weeks_in(s.schedule) == 5
