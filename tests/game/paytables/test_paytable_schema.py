"""Paytable documents: the shipped format is read exactly, and every mistake is refused by key."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.errors import ConfigError
from game.paytables.lines import Pay
from game.paytables.schema import parse_pay, parse_paytables
from game.poker.evaluate import Category

CONFIG = Path(__file__).resolve().parents[3] / "config"

BASE: dict[str, Any] = {
    "trips_plus": {"royal_flush": 100, "straight_flush": 40, "three_of_a_kind": 3},
    "odds_win": {"royal_flush": 500, "flush": "3:2", "straight": 1},
    "odds_lose": {"straight_flush": 500, "straight": 4},
    "pocket_bonus": [
        {"name": "A-A", "pays": 30, "hands": "AA"},
        {"name": "pairs", "pays": 5, "hands": "22-KK"},
    ],
    "sweet16": {"sweet_16": 160, "mixed_colour_16": 6},
}


def doc(**changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            del d[key]
        else:
            d[key] = value
    return d


def refused(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_paytables(data, "tables.toml")
    assert info.value.source == "tables.toml"
    assert str(info.value).startswith("tables.toml: ")
    return info.value


def test_a_valid_document_is_read_exactly() -> None:
    pt = parse_paytables(doc(), "tables.toml")
    assert pt.source == "tables.toml"
    assert dict(pt.trips_plus.pays) == {
        Category.ROYAL_FLUSH: Pay(100), Category.STRAIGHT_FLUSH: Pay(40),
        Category.THREE_OF_A_KIND: Pay(3),
    }
    assert pt.odds_win.pays[Category.FLUSH] == Pay(3, 2)
    assert pt.odds_win.line(Category.FULL_HOUSE) is None  # absent category does not pay
    assert [ln.name for ln in pt.pocket_bonus] == ["A-A", "pairs"]
    assert pt.pocket_bonus[1].hands == frozenset(
        ["22", "33", "44", "55", "66", "77", "88", "99", "TT", "JJ", "QQ", "KK"]
    )
    assert pt.pocket_bonus[0].dealer is None
    assert not pt.pocket_needs_dealer
    assert dict(pt.sweet16.pays) == {"sweet_16": Pay(160), "mixed_colour_16": Pay(6)}


def test_shipped_paytables_are_the_ones_in_force() -> None:
    """rules.md §0: Trips Plus 100-40-30-8-7-4-3, Odds §6.1/§6.2, Pocket Bonus A, Sweet 16."""
    data = tomllib.loads((CONFIG / "paytables.toml").read_text(encoding="utf-8"))
    pt = parse_paytables(data, "paytables.toml")
    c = Category
    assert dict(pt.trips_plus.pays) == {
        c.ROYAL_FLUSH: Pay(100), c.STRAIGHT_FLUSH: Pay(40), c.FOUR_OF_A_KIND: Pay(30),
        c.FULL_HOUSE: Pay(8), c.FLUSH: Pay(7), c.STRAIGHT: Pay(4), c.THREE_OF_A_KIND: Pay(3),
    }
    assert dict(pt.odds_win.pays) == {
        c.ROYAL_FLUSH: Pay(500), c.STRAIGHT_FLUSH: Pay(50), c.FOUR_OF_A_KIND: Pay(10),
        c.FULL_HOUSE: Pay(3), c.FLUSH: Pay(3, 2), c.STRAIGHT: Pay(1),
    }
    assert dict(pt.odds_lose.pays) == {
        c.STRAIGHT_FLUSH: Pay(500), c.FOUR_OF_A_KIND: Pay(25), c.FULL_HOUSE: Pay(6),
        c.FLUSH: Pay(5), c.STRAIGHT: Pay(4),
    }
    pairs = {r * 2 for r in "23456789TJQK"}
    assert [(ln.pays, set(ln.hands), ln.dealer) for ln in pt.pocket_bonus] == [
        (Pay(30), {"AA"}, None),
        (Pay(20), {"AKs", "AQs", "AJs"}, None),
        (Pay(10), {"AKo", "AQo", "AJo"}, None),
        (Pay(5), pairs, None),
    ]
    assert dict(pt.sweet16.pays) == {
        "sweet_16": Pay(160), "suited_16": Pay(16), "same_colour_16": Pay(12),
        "mixed_colour_16": Pay(6),
    }


def test_shipped_table_c_has_the_dealer_line_first() -> None:
    """rules.md §7.2 table C: 1000 (both A-A) / 30 / 25 / 20 / 15 / 10 / 5 / 3."""
    data = tomllib.loads((CONFIG / "paytables-pocket-c.toml").read_text(encoding="utf-8"))
    pt = parse_paytables(data, "paytables-pocket-c.toml")
    got = [(ln.pays.to_win, set(ln.hands), ln.dealer) for ln in pt.pocket_bonus]
    assert got == [
        (1000, {"AA"}, frozenset({"AA"})),
        (30, {"AA"}, None),
        (25, {"AKs"}, None),
        (20, {"AQs", "AJs"}, None),
        (15, {"AKo"}, None),
        (10, {"JJ", "QQ", "KK"}, None),
        (5, {"AQo", "AJo"}, None),
        (3, {r * 2 for r in "23456789T"}, None),
    ]
    assert pt.pocket_needs_dealer
    shipped = tomllib.loads((CONFIG / "paytables.toml").read_text(encoding="utf-8"))
    assert {k: v for k, v in data.items() if k != "pocket_bonus"} == {
        k: v for k, v in shipped.items() if k != "pocket_bonus"
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, Pay(1)), (1000, Pay(1000)), ("3:2", Pay(3, 2)), (" 6 : 5 ", Pay(6, 5)),
     ("4:1", Pay(4)), ("10:4", Pay(10, 4))],
)
def test_pay_notation(value: object, expected: Pay) -> None:
    assert parse_pay(value, "f", "k") == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (0, "positive"), (-3, "positive"), (1.5, '"A:B"'), (True, '"A:B"'), ("3/2", '"A:B"'),
        ("3:0", "positive"), ("0:1", "positive"), ("-3:2", '"A:B"'), ("3:2:1", '"A:B"'),
        ("5", '"A:B"'), ("", '"A:B"'), ([3, 2], '"A:B"'), ({"a": 1}, '"A:B"'),
        ("1.5:1", '"A:B"'),
    ],
)
def test_bad_pays_are_refused_with_the_key(value: object, reason: str) -> None:
    err = refused(doc(trips_plus={"flush": value}))
    assert err.key == "trips_plus.flush"
    assert reason in err.reason


@given(st.one_of(st.integers(), st.text(max_size=12), st.floats(), st.booleans(), st.none()))
def test_any_pay_value_is_accepted_or_refused_cleanly(value: object) -> None:
    try:
        pay = parse_pay(value, "f", "k")
    except ConfigError as exc:
        assert exc.key == "k"
        return
    assert pay.to_win > 0
    assert pay.per > 0


@pytest.mark.parametrize(
    ("changes", "key", "reason"),
    [
        ({"bonus": {"x": 1}}, "bonus", "unknown section"),
        ({"meta": {"name": "x"}}, "meta", "unknown section"),
        ({"trips_plus": None}, "trips_plus", "missing"),
        ({"odds_win": None}, "odds_win", "missing"),
        ({"odds_lose": None}, "odds_lose", "missing"),
        ({"pocket_bonus": None}, "pocket_bonus", "missing"),
        ({"sweet16": None}, "sweet16", "missing"),
        ({"trips_plus": 5}, "trips_plus", "table"),
        ({"trips_plus": {}}, "trips_plus", "no paying line"),
        ({"sweet16": {}}, "sweet16", "no paying line"),
        ({"pocket_bonus": []}, "pocket_bonus", "no paying line"),
        ({"trips_plus": {"royal": 100}}, "trips_plus.royal", "unknown hand category"),
        ({"odds_win": {"Flush": 1}}, "odds_win.Flush", "unknown hand category"),
        ({"odds_lose": {"royal_flush": 1000}}, "odds_lose.royal_flush", "never lose"),
        ({"sweet16": {"sweet16": 160}}, "sweet16.sweet16", "unknown line"),
        ({"sweet16": {"suited_16": 0}}, "sweet16.suited_16", "positive"),
        ({"pocket_bonus": {"name": "A-A", "pays": 30, "hands": "AA"}}, "pocket_bonus",
         "array of tables"),
        ({"pocket_bonus": ["AA"]}, "pocket_bonus[1]", "table"),
    ],
)
def test_document_mistakes_are_refused_by_key(
    changes: dict[str, Any], key: str, reason: str
) -> None:
    err = refused(doc(**changes))
    assert err.key == key
    assert reason in err.reason
    assert key in str(err)


def test_an_empty_odds_table_is_allowed_and_never_pays() -> None:
    pt = parse_paytables(doc(odds_lose={}), "t")
    assert dict(pt.odds_lose.pays) == {}


def line(name: str, pays: object, hands: object, dealer: object = None) -> dict[str, object]:
    out = {"name": name, "pays": pays, "hands": hands}
    if dealer is not None:
        out["dealer"] = dealer
    return out


@pytest.mark.parametrize(
    ("lines", "key", "reason"),
    [
        ([line("A-A", 30, "AA"), line("pairs", 5, "22-KKx")], "pocket_bonus[2].hands",
         "malformed range"),
        ([line("A-A", 30, "")], "pocket_bonus[1].hands", "empty"),
        ([line("A-A", 30, 22)], "pocket_bonus[1].hands", "string"),
        ([line("A-A", 30, "AA", "AAx")], "pocket_bonus[1].dealer", "malformed range"),
        ([line("A-A", -30, "AA")], "pocket_bonus[1].pays", "positive"),
        ([line("A-A", 30, "AA"), line("A-A", 5, "KK")], "pocket_bonus[2].name", "duplicate"),
        ([line("", 30, "AA")], "pocket_bonus[1].name", "non-empty"),
        ([line("x", 30, "AA") | {"payout": 3}], "pocket_bonus[1].payout", "unknown key"),
        ([{"pays": 30, "hands": "AA"}], "pocket_bonus[1].name", "missing"),
        ([{"name": "x", "hands": "AA"}], "pocket_bonus[1].pays", "missing"),
        ([{"name": "x", "pays": 3}], "pocket_bonus[1].hands", "missing"),
        # a later line overlapping an earlier line without a dealer condition never pays there
        ([line("pairs", 5, "22+"), line("A-A", 30, "AA")], "pocket_bonus[2].hands",
         "never pay for AA"),
        ([line("A-K", 20, "AK"), line("A-K suited", 25, "AKs,AQs")], "pocket_bonus[2].hands",
         "never pay for AKs"),
        # a dealer line after the unconditional line for the same hands is dead too
        ([line("A-A", 30, "AA"), line("both A-A", 1000, "AA", "AA")], "pocket_bonus[2].hands",
         "never pay"),
        # two dealer lines for the same seat hands sharing dealer hands
        ([line("both A-A", 1000, "AA", "AA"), line("A-A v K-K+", 500, "AA", "KK+")],
         "pocket_bonus[2].dealer", "overlaps"),
    ],
)
def test_pocket_bonus_mistakes_are_refused_by_line(
    lines: list[dict[str, object]], key: str, reason: str
) -> None:
    err = refused(doc(pocket_bonus=lines))
    assert err.key == key
    assert reason in err.reason


def test_a_fallback_after_a_dealer_line_is_legitimate() -> None:
    lines = [
        line("both A-A", 1000, "AA", "AA"),
        line("A-A v K-K", 200, "AA", "KK"),
        line("A-A", 30, "AA"),
        line("K-K v A-A", 50, "KK", "AA"),
        line("pairs", 5, "22-KK"),
    ]
    pt = parse_paytables(doc(pocket_bonus=lines), "t")
    assert [ln.name for ln in pt.pocket_bonus] == [
        "both A-A", "A-A v K-K", "A-A", "K-K v A-A", "pairs",
    ]
    assert pt.pocket_bonus[1].dealer == frozenset({"KK"})
    assert pt.pocket_needs_dealer


def test_dealer_lines_covering_every_dealer_hand_make_a_later_line_dead() -> None:
    lines = [
        line("A-A v pairs", 100, "AA", "22+"),
        line("A-A v rest", 50, "AA", "32+,42+,52+,62+,72+,82+,92+,T2+,J2+,Q2+,K2+,A2+"),
        line("A-A", 30, "AA"),
    ]
    err = refused(doc(pocket_bonus=lines))
    assert err.key == "pocket_bonus[3].hands"
    assert "never pay for AA" in err.reason
