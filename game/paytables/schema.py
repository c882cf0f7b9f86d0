"""Validate a paytable document (TOML already parsed) into `Paytables` (docs/paytables.md).

Every mistake is refused with `ConfigError(source, key, reason)`, naming the file, the exact
key (``trips_plus.flush``, ``pocket_bonus[2].hands``; Pocket Bonus lines count from 1) and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from game.errors import ConfigError
from game.paytables.lines import (
    SWEET16_LINES,
    CategoryTable,
    Pay,
    Paytables,
    PocketLine,
    Sweet16Table,
)
from game.poker.evaluate import Category
from game.poker.ranges import ALL_CLASSES, InvalidRange, parse_range

__all__ = ["CATEGORY_TABLES", "SECTIONS", "parse_pay", "parse_paytables"]

CATEGORY_TABLES: Final = ("trips_plus", "odds_win", "odds_lose")
SECTIONS: Final = (*CATEGORY_TABLES, "pocket_bonus", "sweet16")
_TITLES: Final = {"trips_plus": "Trips Plus", "odds_win": "Odds, seat wins",
                  "odds_lose": "Odds, seat loses (bad beat)"}
# Tables that must pay on at least one line (an Odds table may be empty: it then never pays).
_MUST_PAY: Final = frozenset({"trips_plus", "sweet16", "pocket_bonus"})
_MISSING: Final = "missing: every paytable must be stated in the file"
_POCKET_KEYS: Final = ("name", "pays", "hands", "dealer")
_RATIO: Final = re.compile(r"\s*([0-9]+)\s*:\s*([0-9]+)\s*")
_CATEGORY_BY_KEY: Final = {c.key: c for c in Category}


def parse_pay(value: object, source: str, key: str) -> Pay:
    """A pay written as N (N to 1) or "A:B" (A to B), both positive integers."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(
            source, key, f'a pay must be a whole number N (N to 1) or a string "A:B", '
            f"not {value!r}"
        )
    if isinstance(value, int):
        if value <= 0:
            raise ConfigError(source, key, f"a pay must be positive, not {value}")
        return Pay(value)
    m = _RATIO.fullmatch(value)
    if m is None:
        raise ConfigError(
            source, key, f'a pay in a string must be "A:B" with whole numbers, not {value!r}'
        )
    to_win, per = int(m.group(1)), int(m.group(2))
    if to_win <= 0 or per <= 0:
        raise ConfigError(source, key, f"both sides of a pay must be positive, not {value!r}")
    return Pay(to_win, per)


def _table(data: Mapping[str, Any], name: str, source: str) -> Mapping[str, Any]:
    if name not in data:
        raise ConfigError(source, name, _MISSING)
    section = data[name]
    if not isinstance(section, Mapping):
        raise ConfigError(source, name, f"must be a table [{name}]")
    return section


def _category_table(data: Mapping[str, Any], name: str, source: str) -> CategoryTable:
    section = _table(data, name, source)
    pays: dict[Category, Pay] = {}
    for key, value in section.items():
        category = _CATEGORY_BY_KEY.get(key)
        if category is None:
            known = ", ".join(c.key for c in reversed(Category))
            raise ConfigError(source, f"{name}.{key}", f"unknown hand category (known: {known})")
        if name == "odds_lose" and category is Category.ROYAL_FLUSH:
            raise ConfigError(
                source, f"{name}.{key}", "a royal flush can never lose, so this line never pays"
            )
        pays[category] = parse_pay(value, source, f"{name}.{key}")
    if name in _MUST_PAY and not pays:
        raise ConfigError(source, name, "the table has no paying line")
    ordered = {c: pays[c] for c in sorted(pays, reverse=True)}
    return CategoryTable(_TITLES[name], ordered)


def _sweet16(data: Mapping[str, Any], source: str) -> Sweet16Table:
    section = _table(data, "sweet16", source)
    pays: dict[str, Pay] = {}
    for key, value in section.items():
        if key not in SWEET16_LINES:
            raise ConfigError(
                source, f"sweet16.{key}", f"unknown line (known: {', '.join(SWEET16_LINES)})"
            )
        pays[key] = parse_pay(value, source, f"sweet16.{key}")
    if not pays:
        raise ConfigError(source, "sweet16", "the table has no paying line")
    return Sweet16Table({k: pays[k] for k in SWEET16_LINES if k in pays})


def _range(value: object, source: str, key: str) -> frozenset[str]:
    if not isinstance(value, str):
        raise ConfigError(source, key, f'a range must be a string such as "22-KK", not {value!r}')
    try:
        return parse_range(value)
    except InvalidRange as exc:
        raise ConfigError(source, key, f"malformed range: {exc}") from exc


def _pocket_line(item: object, where: str, source: str) -> PocketLine:
    if not isinstance(item, Mapping):
        raise ConfigError(source, where, "each Pocket Bonus line must be a table [[pocket_bonus]]")
    for key in item:
        if key not in _POCKET_KEYS:
            raise ConfigError(
                source, f"{where}.{key}", f"unknown key (known: {', '.join(_POCKET_KEYS)})"
            )
    for key in ("name", "pays", "hands"):
        if key not in item:
            raise ConfigError(source, f"{where}.{key}", "missing")
    name = item["name"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(source, f"{where}.name", "a line name must be non-empty text")
    pays = parse_pay(item["pays"], source, f"{where}.pays")
    hands = _range(item["hands"], source, f"{where}.hands")
    dealer = _range(item["dealer"], source, f"{where}.dealer") if "dealer" in item else None
    return PocketLine(name=name.strip(), pays=pays, hands=hands, dealer=dealer)


def _pocket_bonus(data: Mapping[str, Any], source: str) -> tuple[PocketLine, ...]:
    if "pocket_bonus" not in data:
        raise ConfigError(source, "pocket_bonus", _MISSING)
    items = data["pocket_bonus"]
    if isinstance(items, Mapping) or not isinstance(items, Sequence) or isinstance(items, str):
        raise ConfigError(
            source, "pocket_bonus", "must be an array of tables, one [[pocket_bonus]] per line"
        )
    if not items:
        raise ConfigError(source, "pocket_bonus", "the table has no paying line")
    lines: list[PocketLine] = []
    # claimed[h]: the dealer classes for which seat class h is already paid by an earlier line
    claimed: dict[str, frozenset[str]] = {}
    all_dealer = frozenset(ALL_CLASSES)
    seen: dict[str, int] = {}
    for number, item in enumerate(items, start=1):
        where = f"pocket_bonus[{number}]"
        line = _pocket_line(item, where, source)
        if line.name in seen:
            raise ConfigError(
                source, f"{where}.name",
                f"duplicate line name {line.name!r} (also pocket_bonus[{seen[line.name]}])",
            )
        seen[line.name] = number
        dealer = all_dealer if line.dealer is None else line.dealer
        dead = sorted(h for h in line.hands if dealer <= claimed.get(h, frozenset()))
        if dead:
            key = f"{where}.hands"
            raise ConfigError(
                source, key, f"line {line.name!r} can never pay for {', '.join(dead)}: "
                "an earlier line already pays those hands (first match pays)"
            )
        if line.dealer is not None:
            clash = sorted(h for h in line.hands if dealer & claimed.get(h, frozenset()))
            if clash:
                raise ConfigError(
                    source, f"{where}.dealer",
                    f"line {line.name!r} overlaps an earlier line for {', '.join(clash)}: "
                    "dealer lines for the same hands must not share dealer hands",
                )
        for h in line.hands:
            claimed[h] = claimed.get(h, frozenset()) | dealer
        lines.append(line)
    return tuple(lines)


def parse_paytables(data: Mapping[str, Any], source: str) -> Paytables:
    """Validate a parsed paytable document (see docs/paytables.md) into `Paytables`.

    ``source`` names the file in every error. All five tables must be present.
    """
    for key in data:
        if key not in SECTIONS:
            raise ConfigError(source, key, f"unknown section (known: {', '.join(SECTIONS)})")
    trips_plus = _category_table(data, "trips_plus", source)
    odds_win = _category_table(data, "odds_win", source)
    odds_lose = _category_table(data, "odds_lose", source)
    pocket_bonus = _pocket_bonus(data, source)
    sweet16 = _sweet16(data, source)
    return Paytables(
        trips_plus=trips_plus, odds_win=odds_win, odds_lose=odds_lose,
        pocket_bonus=pocket_bonus, sweet16=sweet16, source=source,
    )
