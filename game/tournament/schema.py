"""Validate a tournament settings document (TOML already parsed) into frozen settings.

Pure: the caller reads the file and looks up the venue's time zone (see
runtime/settings_files.py). Every key is required and documented in
docs/tournament-config.md; unknown keys are refused. Every mistake, including settings that
contradict each other (promotion rule 21's "18 June" against heats to 30 July), is a
`ConfigError(source, key, reason)` naming the file, the key(s) and why. All problems are
collected and raised together as `ConfigErrors`, so an operator can fix them in one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, tzinfo
from fractions import Fraction
from typing import Any, Final, Literal

from game.card_forms import CARD_FORMS, CardForm
from game.errors import ConfigError
from game.money import InvalidAmount, format_rand, parse_percent, parse_rand
from game.tournament.entries import UNUSED_MARKER_RULES, Stage, StageRules, UnusedMarkers
from game.tournament.schedule import WEEKDAYS, HeatWindow, QualifyingSchedule, WeeklyPrizes
from game.wagers.house_limits import HouseRules
from game.wagers.settle import SIDE_BETS

__all__ = [
    "TIE_RULES",
    "ConfigErrors",
    "NameCheckSettings",
    "PrizeSettings",
    "StageSettings",
    "TieRule",
    "TournamentSettings",
    "parse_tournament",
    "timezone_name",
]

TieRule = Literal["earlier_acknowledged", "split"]
TIE_RULES: Final[tuple[TieRule, ...]] = ("earlier_acknowledged", "split")
MAX_SEATS: Final = 6  # seats at a Heads Up Hold'em table (rules.md §2)


class ConfigErrors(ConfigError):
    """Several problems in one settings file; `errors` lists each as a ConfigError."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.source, first.key, first.reason)
        more = len(self.errors) - 1
        if more:
            self.args = (f"{self.args[0]} (and {more} more problem{'s' if more > 1 else ''})",)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageSettings:
    """One stage: the entry rules, when it starts, heats x seats, and how many advance.

    Qualifying has no start time or fixed heats (entries play on the daily heat schedule, see
    TournamentSettings.schedule); the Final has no `advance` (it ends in the prize split).
    """

    rules: StageRules
    starts_at: datetime | None
    heats: int | None
    seats_per_heat: int | None
    advance: int | None

    @property
    def seats(self) -> int | None:
        """All seats of the stage (heats x seats per heat), None for qualifying."""
        if self.heats is None or self.seats_per_heat is None:
            return None
        return self.heats * self.seats_per_heat


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeSettings:
    """How buy-ins become prizes (percentages exact, shares rounded down to the cent)."""

    final_pool_percent: Fraction
    top_score_percent: Fraction
    top_score_places: tuple[Fraction, ...]
    final_places: tuple[Fraction, ...]
    claim_days: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NameCheckSettings:
    """How alike a name must be to a list's name to be held for a supervisor (whole
    percentages of the name matched, leaderboard.eligibility; D369): with the same birth date,
    with a list row that gives none, and with a different birth date."""

    same_birth_date: int = 80
    no_birth_date: int = 85
    other_birth_date: int = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentSettings:
    """Every tournament setting, validated; amounts in cents, instants aware in venue time."""

    source: str
    venue_name: str
    timezone: str
    tz: tzinfo
    currency: str
    buy_in_cents: int
    house: HouseRules  # the limits common to all stages (markers_per_entry per stage)
    folded_seat_side_bets: Literal["settle"]
    preflop_play: Literal["3x"]
    affordability: Literal["cover_1x_play"]
    marker_value_cents: int
    markers_usable_on: tuple[str, ...]
    unused_markers: UnusedMarkers
    qualifying: StageSettings
    schedule: QualifyingSchedule
    semi_final: StageSettings
    final: StageSettings
    weekly_prizes: WeeklyPrizes
    prizes: PrizeSettings
    acknowledged_only: bool
    tie_rule: TieRule
    # The forms the venue's rewards-card readers produce (venue.card_forms; D329).
    card_forms: tuple[CardForm, ...] = CARD_FORMS
    # How the desk's list checks weigh a name match against the birth date ([list_checks]).
    name_checks: NameCheckSettings = NameCheckSettings()

    def stage(self, stage: Stage) -> StageSettings:
        """The settings of one stage."""
        return {Stage.QUALIFYING: self.qualifying, Stage.SEMI_FINAL: self.semi_final,
                Stage.FINAL: self.final}[stage]

    def house_rules(self, stage: Stage) -> HouseRules:
        """The house limits at a table of this stage (with its markers per entry)."""
        return self.stage(stage).rules.house


def timezone_name(data: Mapping[str, Any], source: str) -> str:
    """The venue's time zone name (venue.timezone), for the caller to look up before parsing."""
    venue = data.get("venue")
    value = venue.get("timezone") if isinstance(venue, Mapping) else None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            source, "venue.timezone",
            'missing: name the venue time zone, e.g. "Africa/Johannesburg"',
        )
    return value.strip()


class _Bad(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---- value parsers: each takes the raw TOML value and returns it typed, or raises _Bad ----

def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad("must be a non-empty string")
    return value.strip()


def _choice(*options: str, why: str = "") -> Callable[[object], str]:
    def parse(value: object) -> str:
        if value not in options:
            if len(options) == 1:
                raise _Bad(f"only {options[0]!r} is supported ({why}), not {value!r}")
            raise _Bad(f"must be one of {', '.join(repr(o) for o in options)}, not {value!r}")
        return str(value)
    return parse


def _whole(low: int) -> Callable[[object], int]:
    def parse(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(f"must be a whole number, not {value!r}")
        if value < low:
            raise _Bad(f"must be at least {low}, not {value}")
        return value
    return parse


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"must be true or false, not {value!r}")
    return value


def _only_true(why: str) -> Callable[[object], bool]:
    def parse(value: object) -> bool:
        if value is not True:
            raise _Bad(f"only true is supported ({why}), not {value!r}")
        return True
    return parse


def _rand(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, str):
        raise _Bad(f'write an amount as a string such as "R1,000" or "R37.50", not {value!r}')
    try:
        cents = parse_rand(value)
    except InvalidAmount as exc:
        raise _Bad(exc.reason) from exc
    if cents < 0:
        raise _Bad(f"cannot be negative ({format_rand(cents)})")
    return cents


def _percent(value: object) -> Fraction:
    if isinstance(value, float):
        raise _Bad(f'write {value} as a whole number or a string such as "12.5" (no floats)')
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _Bad(f"a percentage must be a whole number or a string, not {value!r}")
    try:
        return parse_percent(value)
    except InvalidAmount as exc:
        raise _Bad(exc.reason) from exc


def _percents(value: object) -> tuple[Fraction, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad("must be a non-empty list of percentages, e.g. [60, 25, 15]")
    try:
        return tuple(_percent(v) for v in value)
    except _Bad as exc:
        raise _Bad(f"{exc.reason} (in {value!r})") from exc


def _day(value: object) -> date:
    if isinstance(value, datetime) or not isinstance(value, date):
        raise _Bad(f"must be a date such as 2026-07-03 (no quotes, no time), not {value!r}")
    return value


def _clock(value: object) -> time:
    if not isinstance(value, time):
        raise _Bad(f"must be a time of day such as 13:00:00 (no quotes), not {value!r}")
    if value.tzinfo is not None:
        raise _Bad("a time of day is venue-local: write it without an offset")
    return value


def _moment(value: object) -> datetime:
    if not isinstance(value, datetime):
        raise _Bad(
            f"must be a date and time such as 2026-08-01T16:00:00 (no quotes), not {value!r}"
        )
    return value


def _share(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 50 <= value <= 100:
        raise _Bad(f"must be a whole percentage from 50 to 100, not {value!r}")
    return value


def _card_forms(value: object) -> tuple[CardForm, ...]:
    if (not isinstance(value, list) or not value
            or any(v not in CARD_FORMS for v in value) or len(set(value)) != len(value)):
        raise _Bad(f"list the forms the venue's card readers produce, one or more of"
                   f" {list(CARD_FORMS)!r} each once, not {value!r}")
    return tuple(f for f in CARD_FORMS if f in value)


def _side_bets(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or sorted(map(str, value)) != sorted(SIDE_BETS):
        raise _Bad(
            f"markers ride on all three side bets (rule 46): write {list(SIDE_BETS)!r};"
            f" another set is not supported, got {value!r}"
        )
    return tuple(str(v) for v in value)


_SETTLE: Final = "rules.md §0 item 3: a folded seat's side bets are settled"
_PREFLOP: Final = "rules.md §0 item 7: Play is 3x preflop, 2x on the flop, 1x at the river"
_AFFORD: Final = "rules.md §0 item 9: chips must cover Ante, Odds, side bets and a 1x Play"
_STAGE_KEYS: Final = {"hands": _whole(1), "starting_chips": _rand, "markers": _whole(0)}
_SPEC: Final[dict[str, dict[str, Callable[[object], Any]]]] = {
    "venue": {"name": _text, "timezone": _text, "card_forms": _card_forms},
    "money": {
        "currency": _choice("ZAR", why="amounts are shown in rand"), "buy_in": _rand,
        "denomination": _rand,
    },
    "wagers": {
        "minimum_per_hand": _rand, "maximum_ante": _rand, "side_bet_maximum": _rand,
        "side_bets_need_main": _only_true(
            "settlement needs Ante and Odds in play for a side bet, rules.md §0 item 8"
        ), "folded_seat_side_bets": _choice("settle", why=_SETTLE),
        "preflop_play": _choice("3x", why=_PREFLOP),
        "affordability": _choice("cover_1x_play", why=_AFFORD),
    },
    "markers": {
        "value": _rand, "usable_on": _side_bets, "unused_markers": _choice(*UNUSED_MARKER_RULES),
    },
    "qualifying": {
        **_STAGE_KEYS, "first_day": _day, "last_day": _day, "ends": _day, "heat_opens": _clock,
        "heat_closes": _clock, "last_buy_in": _clock, "advance": _whole(1),
    },
    "semi_final": {
        **_STAGE_KEYS, "starts": _moment, "heats": _whole(1), "seats_per_heat": _whole(1),
        "advance": _whole(1),
    },
    "final": {**_STAGE_KEYS, "starts": _moment, "heats": _whole(1), "seats_per_heat": _whole(1)},
    "weekly_prizes": {"week_starts_on": _choice(*WEEKDAYS), "week_starts_at": _clock,
                      "weeks": _whole(0), "prize": _rand},
    "prizes": {
        "final_pool_percent": _percent, "top_score_percent": _percent,
        "top_score_places": _percents, "final_places": _percents, "claim_days": _whole(1),
    },
    "scores": {"acknowledged_only": _flag, "tie_rule": _choice(*TIE_RULES)},
    "list_checks": {"same_birth_date": _share, "no_birth_date": _share,
                    "other_birth_date": _share},
}

# The one key a file may leave out (D329): files written before it existed mean the forms
# every ID reader driver produces.
_OPTIONAL: Final[dict[str, object]] = {"venue.card_forms": CARD_FORMS}
# The one table a file may leave out (D369): files written before it existed mean the shipped
# thresholds (NameCheckSettings' defaults).
_SHIPPED_NAME_CHECKS: Final = NameCheckSettings()
_OPTIONAL_TABLES: Final[dict[str, Mapping[str, object]]] = {"list_checks": {
    "same_birth_date": _SHIPPED_NAME_CHECKS.same_birth_date,
    "no_birth_date": _SHIPPED_NAME_CHECKS.no_birth_date,
    "other_birth_date": _SHIPPED_NAME_CHECKS.other_birth_date,
}}


class _Reader:
    """Reads every key of every table, collecting problems instead of stopping at the first."""

    def __init__(self, data: object, source: str, tz: tzinfo) -> None:
        self.source = source
        self.tz = tz
        self.errors: list[ConfigError] = []
        self.values: dict[str, Any] = {}
        if not isinstance(data, Mapping):
            self.fail("", "the settings must be a TOML document of tables")
            return
        for name in data:
            if name not in _SPEC:
                self.fail(name, f"unknown table or key (known tables: {', '.join(_SPEC)})")
        for name, spec in _SPEC.items():
            self._table(data, name, spec)

    def fail(self, key: str, reason: str) -> None:
        self.errors.append(ConfigError(self.source, key, reason))

    def _table(self, data: Mapping[str, Any], name: str, spec: Mapping[str, Callable[[object], Any]]
               ) -> None:
        table = data.get(name)
        if table is None and name in _OPTIONAL_TABLES:
            table = _OPTIONAL_TABLES[name]
        if table is None:
            self.fail(name, f"missing table [{name}]")
            return
        if not isinstance(table, Mapping):
            self.fail(name, f"must be a table [{name}], not {table!r}")
            return
        for key in table:
            if key not in spec:
                self.fail(f"{name}.{key}", f"unknown key (known: {', '.join(spec)})")
        for key, parse in spec.items():
            path = f"{name}.{key}"
            if key not in table and path in _OPTIONAL:
                self.values[path] = _OPTIONAL[path]
                continue
            if key not in table:
                self.fail(path, "missing: every setting must be stated in the file")
                continue
            try:
                value = parse(table[key])
            except _Bad as exc:
                self.fail(path, exc.reason)
                continue
            if isinstance(value, datetime):
                value = self._venue_time(value)
            self.values[path] = value

    def _venue_time(self, value: datetime) -> datetime:
        if value.tzinfo is None:
            return value.replace(tzinfo=self.tz)
        return value.astimezone(self.tz)

    def has(self, *paths: str) -> bool:
        """Whether every named key was read; cross-checks run only on keys that were."""
        return all(p in self.values for p in paths)

    def __getitem__(self, path: str) -> Any:
        return self.values[path]


def parse_tournament(data: Mapping[str, Any], source: str, *, tz: tzinfo) -> TournamentSettings:
    """Validate a parsed settings document; raises ConfigErrors listing every problem.

    `tz` is the venue's time zone (venue.timezone, looked up by the caller): local dates and
    times in the file are read in it.
    """
    r = _Reader(data, source, tz)
    _check_money(r)
    _check_stages(r)
    _check_schedule(r)
    _check_prizes(r)
    if r.errors:
        raise ConfigErrors(r.errors)
    try:
        return _build(r)
    except ConfigError as exc:  # a limit refused by HouseRules/StageRules that no check caught
        raise ConfigErrors([ConfigError(source, exc.key, exc.reason)]) from exc


def _multiple_of(r: _Reader, key: str, unit_key: str, factor: int = 1) -> None:
    if not r.has(key, unit_key) or r[unit_key] <= 0:
        return
    unit = factor * r[unit_key]
    if r[key] % unit:
        den = format_rand(r[unit_key])
        what = f"{unit_key} ({den})"
        if factor > 1:
            what = f"{factor} x {unit_key} ({factor} x {den} = {format_rand(unit)})"
        r.fail(key, f"{format_rand(r[key])} is not a multiple of {what}")


def _check_money(r: _Reader) -> None:
    for key in ("money.buy_in", "money.denomination", "wagers.minimum_per_hand", "markers.value"):
        if r.has(key) and r[key] <= 0:
            r.fail(key, "must be more than R0")
    # The minimum is Ante + Odds with Ante == Odds, so each is half of it and must be whole chips.
    _multiple_of(r, "wagers.minimum_per_hand", "money.denomination", factor=2)
    for key in ("wagers.maximum_ante", "wagers.side_bet_maximum", "markers.value"):
        _multiple_of(r, key, "money.denomination")
    if r.has("wagers.maximum_ante", "wagers.minimum_per_hand") and (
        2 * r["wagers.maximum_ante"] < r["wagers.minimum_per_hand"]
    ):
        r.fail(
            "wagers.maximum_ante",
            f"{format_rand(r['wagers.maximum_ante'])} is below the minimum Ante"
            f" (half of wagers.minimum_per_hand, {format_rand(r['wagers.minimum_per_hand'] // 2)})",
        )


def _check_stages(r: _Reader) -> None:
    for stage in Stage:
        chips = f"{stage}.starting_chips"
        _multiple_of(r, chips, "money.denomination")
        if r.has(chips, "wagers.minimum_per_hand"):
            # as game.wagers.house_limits.least_stake_cents
            least = 3 * (r["wagers.minimum_per_hand"] // 2)
            if r[chips] < least:
                r.fail(
                    chips,
                    f"{format_rand(r[chips])} cannot cover one hand at the minimum: Ante + Odds"
                    f" (wagers.minimum_per_hand) and a 1x Play need {format_rand(least)}",
                )
    for stage in (Stage.SEMI_FINAL, Stage.FINAL):
        seats = f"{stage}.seats_per_heat"
        if r.has(seats) and r[seats] > MAX_SEATS:
            r.fail(seats, f"{r[seats]} seats: a table has at most {MAX_SEATS}")
    for here, nxt in (("qualifying", "semi_final"), ("semi_final", "final")):
        keys = (f"{here}.advance", f"{nxt}.heats", f"{nxt}.seats_per_heat")
        if r.has(*keys):
            seats = r[keys[1]] * r[keys[2]]
            if r[keys[0]] > seats:
                r.fail(
                    keys[0],
                    f"top {r[keys[0]]} advance but {keys[1]} x {keys[2]} gives only"
                    f" {r[keys[1]]} x {r[keys[2]]} = {seats} seats",
                )
    keys = ("semi_final.advance", "semi_final.heats", "semi_final.seats_per_heat")
    if r.has(*keys) and r[keys[0]] > r[keys[1]] * r[keys[2]]:
        r.fail(keys[0], f"more advance than the {r[keys[1]] * r[keys[2]]} semi-final seats")


def _check_schedule(r: _Reader) -> None:
    if r.has("qualifying.first_day", "qualifying.last_day") and (
        r["qualifying.last_day"] < r["qualifying.first_day"]
    ):
        r.fail(
            "qualifying.last_day",
            f"{r['qualifying.last_day']} is before qualifying.first_day"
            f" {r['qualifying.first_day']}",
        )
    if r.has("qualifying.ends", "qualifying.last_day") and (
        r["qualifying.ends"] < r["qualifying.last_day"]
    ):
        r.fail(
            "qualifying.ends",
            f"qualifying.ends {r['qualifying.ends']} is before the last heat day"
            f" qualifying.last_day {r['qualifying.last_day']}: qualifying ends after the last"
            " heat (promotion rule 21)",
        )
    window = _window(r)
    if window is not None and window.length.total_seconds() == 0:
        r.fail(
            "qualifying.heat_closes",
            f"the heat window is empty: qualifying.heat_opens and heat_closes are both"
            f" {window.opens:%H:%M}",
        )
    elif window is not None and window.buy_in_span > window.length:
        r.fail(
            "qualifying.last_buy_in",
            f"{window.last_buy_in:%H:%M} is outside the heat window"
            f" {window.opens:%H:%M}-{window.closes:%H:%M}"
            " (qualifying.heat_opens to qualifying.heat_closes)",
        )
    schedule = _schedule(r)
    if (
        schedule is not None
        and r.has("semi_final.starts")
        and r["semi_final.starts"] < schedule.ends_at
    ):
        r.fail(
            "semi_final.starts",
            f"{r['semi_final.starts']:%Y-%m-%d %H:%M} is before qualifying ends"
            f" ({schedule.ends_at:%Y-%m-%d %H:%M}, the close of the heat on qualifying.ends)",
        )
    if r.has("semi_final.starts", "final.starts") and (
        r["final.starts"] <= r["semi_final.starts"]
    ):
        r.fail(
            "final.starts",
            f"{r['final.starts']:%Y-%m-%d %H:%M} is not after semi_final.starts"
            f" {r['semi_final.starts']:%Y-%m-%d %H:%M}",
        )
    weekly = _weekly(r)
    if schedule is not None and weekly is not None and schedule.first_day <= schedule.last_day:
        weeks = weekly.weeks_in(schedule)
        if weekly.weeks > weeks:
            r.fail(
                "weekly_prizes.weeks",
                f"{weekly.weeks} prize weeks but the heats (qualifying.first_day to"
                f" qualifying.last_day) touch only {weeks}",
            )


def _check_prizes(r: _Reader) -> None:
    pools = ("prizes.final_pool_percent", "prizes.top_score_percent")
    if r.has(*pools) and r[pools[0]] + r[pools[1]] != 100:
        r.fail(
            f"{pools[0]} + {pools[1]}",
            f"{_pct(r[pools[0]])} + {_pct(r[pools[1]])} = {_pct(r[pools[0]] + r[pools[1]])},"
            " not 100: every buy-in must go to a pool",
        )
    for key in ("prizes.top_score_places", "prizes.final_places"):
        if r.has(key) and sum(r[key]) != 100:
            r.fail(
                key,
                f"{' + '.join(_pct(p) for p in r[key])} = {_pct(sum(r[key]))}, not 100",
            )
    if r.has("prizes.final_places", "final.heats", "final.seats_per_heat"):
        seats = r["final.heats"] * r["final.seats_per_heat"]
        if len(r["prizes.final_places"]) > seats:
            r.fail(
                "prizes.final_places",
                f"{len(r['prizes.final_places'])} prize places but final.heats x"
                f" final.seats_per_heat gives only {seats} finalists",
            )


def _pct(value: Fraction) -> str:
    return f"{value.numerator}%" if value.denominator == 1 else f"{float(value):g}%"


def _window(r: _Reader) -> HeatWindow | None:
    keys = ("qualifying.heat_opens", "qualifying.heat_closes", "qualifying.last_buy_in")
    if not r.has(*keys):
        return None
    return HeatWindow(opens=r[keys[0]], closes=r[keys[1]], last_buy_in=r[keys[2]])


def _schedule(r: _Reader) -> QualifyingSchedule | None:
    window = _window(r)
    if window is None or not r.has("qualifying.first_day", "qualifying.last_day",
                                   "qualifying.ends"):
        return None
    return QualifyingSchedule(first_day=r["qualifying.first_day"],
                              last_day=r["qualifying.last_day"], ends=r["qualifying.ends"],
                              window=window, tz=r.tz)


def _weekly(r: _Reader) -> WeeklyPrizes | None:
    keys = ("weekly_prizes.week_starts_on", "weekly_prizes.week_starts_at", "weekly_prizes.weeks",
            "weekly_prizes.prize")
    if not r.has(*keys):
        return None
    return WeeklyPrizes(starts_on=WEEKDAYS.index(r[keys[0]]), starts_at=r[keys[1]],
                        weeks=r[keys[2]], prize_cents=r[keys[3]])


def _build(r: _Reader) -> TournamentSettings:
    base = HouseRules(
        denomination_cents=r["money.denomination"],
        min_ante_cents=r["wagers.minimum_per_hand"] // 2,
        max_ante_cents=r["wagers.maximum_ante"],
        side_bet_max_cents=r["wagers.side_bet_maximum"],
        marker_value_cents=r["markers.value"],
        markers_per_entry=0,
        side_bets_need_main=r["wagers.side_bets_need_main"],
    )

    def stage(which: Stage, starts: datetime | None, heats: int | None, seats: int | None,
              advance: int | None) -> StageSettings:
        markers = r[f"{which}.markers"]
        rules = StageRules(
            stage=which, hands=r[f"{which}.hands"],
            starting_chips_cents=r[f"{which}.starting_chips"], markers=markers,
            house=HouseRules(
                denomination_cents=base.denomination_cents, min_ante_cents=base.min_ante_cents,
                max_ante_cents=base.max_ante_cents, side_bet_max_cents=base.side_bet_max_cents,
                marker_value_cents=base.marker_value_cents, markers_per_entry=markers,
                side_bets_need_main=base.side_bets_need_main,
            ),
            unused_markers=r["markers.unused_markers"],
        )
        return StageSettings(rules=rules, starts_at=starts, heats=heats, seats_per_heat=seats,
                             advance=advance)

    schedule = _schedule(r)
    weekly = _weekly(r)
    assert schedule is not None
    assert weekly is not None
    return TournamentSettings(
        source=r.source, venue_name=r["venue.name"], timezone=r["venue.timezone"], tz=r.tz,
        currency=r["money.currency"], buy_in_cents=r["money.buy_in"], house=base,
        folded_seat_side_bets=r["wagers.folded_seat_side_bets"],
        preflop_play=r["wagers.preflop_play"], affordability=r["wagers.affordability"],
        marker_value_cents=r["markers.value"], markers_usable_on=r["markers.usable_on"],
        unused_markers=r["markers.unused_markers"],
        qualifying=stage(Stage.QUALIFYING, None, None, None, r["qualifying.advance"]),
        schedule=schedule,
        semi_final=stage(Stage.SEMI_FINAL, r["semi_final.starts"], r["semi_final.heats"],
                         r["semi_final.seats_per_heat"], r["semi_final.advance"]),
        final=stage(Stage.FINAL, r["final.starts"], r["final.heats"], r["final.seats_per_heat"],
                    None),
        weekly_prizes=weekly,
        prizes=PrizeSettings(
            final_pool_percent=r["prizes.final_pool_percent"],
            top_score_percent=r["prizes.top_score_percent"],
            top_score_places=r["prizes.top_score_places"], final_places=r["prizes.final_places"],
            claim_days=r["prizes.claim_days"],
        ),
        acknowledged_only=r["scores.acknowledged_only"], tie_rule=r["scores.tie_rule"],
        card_forms=r["venue.card_forms"],
        name_checks=NameCheckSettings(
            same_birth_date=r["list_checks.same_birth_date"],
            no_birth_date=r["list_checks.no_birth_date"],
            other_birth_date=r["list_checks.other_birth_date"],
        ),
    )
