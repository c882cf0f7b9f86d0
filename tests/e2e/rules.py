"""The tournament's rules as the end-to-end recomputation reads them, straight from the TOML file.

Deliberately not `game.tournament.schema`: the recomputation must not share the system's
reading of the settings beyond the file itself. Only the keys the arithmetic needs are read
(money, stages, markers, prize weeks, prize percentages, claims, acknowledgement and ties);
amounts are parsed with `game.money` (a parsing helper: "R2,000" -> 200000 cents).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from game.money import parse_percent, parse_rand

__all__ = ["STAGES", "Rules", "StageRule", "read_rules", "rules_from_mapping"]

StageName = Literal["qualifying", "semi_final", "final"]
STAGES: tuple[StageName, ...] = ("qualifying", "semi_final", "final")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRule:
    """One stage: hands per entry, starting chips, markers, seats and how many advance."""

    hands: int
    starting_cents: int
    markers: int
    advance: int | None  # None: the Final (nobody advances)
    heats: int | None
    seats_per_heat: int | None
    starts: datetime | None  # venue-local start (semi-final and Final), aware


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """Everything the recomputation needs from the tournament settings file."""

    timezone: ZoneInfo
    buy_in_cents: int
    denomination_cents: int
    minimum_per_hand_cents: int
    marker_value_cents: int
    unused_markers: str  # forfeit | count_at_value
    stages: Mapping[str, StageRule]
    first_day: date
    last_day: date
    heat_opens: time
    last_buy_in: time
    week_starts_on: int  # weekday number, Monday 0
    week_starts_at: time
    prize_weeks: int
    weekly_prize_cents: int
    final_pool_percent: Fraction
    top_score_percent: Fraction
    top_score_places: tuple[Fraction, ...]
    final_places: tuple[Fraction, ...]
    claim_days: int
    acknowledged_only: bool
    tie_rule: str  # earlier_acknowledged | split

    @property
    def least_stake_cents(self) -> int:
        """The least an entry needs to play a hand: Ante + Odds + a 1x Play at the minimum
        Ante (half the minimum per hand, rounded up to the denomination)."""
        half = -(-self.minimum_per_hand_cents // 2)
        unit = self.denomination_cents
        ante = -(-half // unit) * unit
        return 3 * ante

    def stage(self, name: str) -> StageRule:
        """The rules of one stage by name (qualifying, semi_final, final)."""
        return self.stages[name]


def _get(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"tournament settings: missing {path}")
        node = node[part]
    return node


def _aware(value: Any, tz: ZoneInfo) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"expected a local date-time, got {value!r}")
    return value.replace(tzinfo=tz) if value.tzinfo is None else value


def rules_from_mapping(data: Mapping[str, Any]) -> Rules:
    """Rules from the parsed TOML document (a KeyError names a missing key)."""
    tz = ZoneInfo(str(_get(data, "venue.timezone")))
    stages: dict[str, StageRule] = {}
    for name in STAGES:
        section = _get(data, name)
        stages[name] = StageRule(
            hands=int(section["hands"]),
            starting_cents=parse_rand(section["starting_chips"]),
            markers=int(section.get("markers", 0)),
            advance=int(section["advance"]) if "advance" in section else None,
            heats=int(section["heats"]) if "heats" in section else None,
            seats_per_heat=(int(section["seats_per_heat"]) if "seats_per_heat" in section
                            else None),
            starts=_aware(section.get("starts"), tz),
        )
    weekday = str(_get(data, "weekly_prizes.week_starts_on")).lower()
    return Rules(
        timezone=tz,
        buy_in_cents=parse_rand(_get(data, "money.buy_in")),
        denomination_cents=parse_rand(_get(data, "money.denomination")),
        minimum_per_hand_cents=parse_rand(_get(data, "wagers.minimum_per_hand")),
        marker_value_cents=parse_rand(_get(data, "markers.value")),
        unused_markers=str(_get(data, "markers.unused_markers")),
        stages=stages,
        first_day=_get(data, "qualifying.first_day"),
        last_day=_get(data, "qualifying.last_day"),
        heat_opens=_get(data, "qualifying.heat_opens"),
        last_buy_in=_get(data, "qualifying.last_buy_in"),
        week_starts_on=_WEEKDAYS.index(weekday),
        week_starts_at=_get(data, "weekly_prizes.week_starts_at"),
        prize_weeks=int(_get(data, "weekly_prizes.weeks")),
        weekly_prize_cents=parse_rand(_get(data, "weekly_prizes.prize")),
        final_pool_percent=parse_percent(_get(data, "prizes.final_pool_percent")),
        top_score_percent=parse_percent(_get(data, "prizes.top_score_percent")),
        top_score_places=tuple(parse_percent(p) for p in _get(data, "prizes.top_score_places")),
        final_places=tuple(parse_percent(p) for p in _get(data, "prizes.final_places")),
        claim_days=int(_get(data, "prizes.claim_days")),
        acknowledged_only=bool(_get(data, "scores.acknowledged_only")),
        tie_rule=str(_get(data, "scores.tie_rule")),
    )


def read_rules(path: Path) -> Rules:
    """Rules from a tournament settings file (config/tournament.toml or a demo's own)."""
    with path.open("rb") as handle:
        return rules_from_mapping(tomllib.load(handle))
