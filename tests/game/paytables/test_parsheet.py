"""Exact par sheets against the published figures (rules.md) and hand counts."""

from __future__ import annotations

import itertools
import tomllib
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.paytables.lines import CategoryTable, Pay, Paytables, PocketLine, Sweet16Table, hole_class
from game.paytables.parsheet import (
    ParSheet,
    par_sheets,
    pocket_bonus_par_sheet,
    sweet16_par_sheet,
    trips_plus_par_sheet,
)
from game.paytables.schema import parse_paytables
from game.poker.cards import DECK
from game.poker.evaluate import Category
from game.poker.ranges import ALL_CLASSES, parse_range

CONFIG = Path(__file__).resolve().parents[3] / "config"

# The textbook counts of the 133,784,560 seven-card hands by category (best five of seven).
SEVEN_CARD_COUNTS = {
    Category.ROYAL_FLUSH: 4_324,
    Category.STRAIGHT_FLUSH: 37_260,
    Category.FOUR_OF_A_KIND: 224_848,
    Category.FULL_HOUSE: 3_473_184,
    Category.FLUSH: 4_047_644,
    Category.STRAIGHT: 6_180_020,
    Category.THREE_OF_A_KIND: 6_461_620,
    Category.TWO_PAIR: 31_433_400,
    Category.PAIR: 58_627_800,
    Category.HIGH_CARD: 23_294_460,
}


def load(name: str) -> Paytables:
    data = tomllib.loads((CONFIG / name).read_text(encoding="utf-8"))
    return parse_paytables(data, name)


def percent(value: Fraction, places: int) -> str:
    """Half-up rounding of a fraction as a percentage, exactly."""
    scaled = value * 100 * 10**places
    units = int(scaled + Fraction(1, 2)) if scaled >= 0 else -int(-scaled + Fraction(1, 2))
    return f"{units // 10**places}.{units % 10**places:0{places}d}"


def combos_of(sheet: ParSheet) -> dict[str, int]:
    return {ln.name: ln.combinations for ln in sheet.lines}


def check_consistent(sheet: ParSheet) -> None:
    assert sheet.return_to_player == sum(
        Fraction(ln.combinations, sheet.outcomes) * (ln.pays.ratio + 1) for ln in sheet.lines
    )
    assert sheet.house_edge == 1 - sheet.return_to_player
    assert 0 <= sheet.winning_combinations <= sheet.outcomes
    assert sheet.losing_combinations == sheet.outcomes - sheet.winning_combinations
    for ln in sheet.lines:
        assert ln.probability == Fraction(ln.combinations, sheet.outcomes)


# --- Trips Plus ---------------------------------------------------------------------------

def test_trips_plus_reproduces_the_published_return_exactly() -> None:
    """rules.md §7.1: 100-40-30-8-7-4-3 gives 96.66% (computed 96.6637%). Full enumeration."""
    sheet = trips_plus_par_sheet(load("paytables.toml").trips_plus)
    assert sheet.outcomes == comb(52, 7) == 133_784_560
    pays = {"royal_flush": 100, "straight_flush": 40, "four_of_a_kind": 30, "full_house": 8,
            "flush": 7, "straight": 4, "three_of_a_kind": 3}
    assert combos_of(sheet) == {c.key: SEVEN_CARD_COUNTS[c] for c in SEVEN_CARD_COUNTS
                                if c.key in pays}
    returned = sum(SEVEN_CARD_COUNTS[c] * (pays[c.key] + 1) for c in SEVEN_CARD_COUNTS
                   if c.key in pays)
    assert returned == 129_321_060
    assert sheet.return_to_player == Fraction(returned, 133_784_560)
    assert percent(sheet.return_to_player, 4) == "96.6637"
    assert percent(sheet.return_to_player, 2) == "96.66"
    assert [ln.name for ln in sheet.lines] == list(pays)  # highest line first
    check_consistent(sheet)


def test_trips_plus_arithmetic_with_given_counts() -> None:
    table = CategoryTable("t", {Category.FLUSH: Pay(3, 2), Category.PAIR: Pay(1)})
    sheet = trips_plus_par_sheet(table, SEVEN_CARD_COUNTS)
    assert combos_of(sheet) == {"flush": 4_047_644, "pair": 58_627_800}
    assert sheet.return_to_player == (
        Fraction(4_047_644, 133_784_560) * Fraction(5, 2) + Fraction(58_627_800, 133_784_560) * 2
    )
    with pytest.raises(ValueError, match="C\\(52, 7\\)"):
        trips_plus_par_sheet(table, {**SEVEN_CARD_COUNTS, Category.PAIR: 1})


# --- Pocket Bonus -------------------------------------------------------------------------

def test_pocket_bonus_table_a_is_1266_over_1326() -> None:
    """rules.md §7.2 table A: 95.48% published, 1266/1326 = 95.4751% exactly."""
    sheet = pocket_bonus_par_sheet(load("paytables.toml").pocket_bonus)
    assert sheet.outcomes == 1326
    # by hand: A-A 6 combos; AKs/AQs/AJs 3 x 4; AKo/AQo/AJo 3 x 12; 12 other pairs x 6
    assert [ln.combinations for ln in sheet.lines] == [6, 12, 36, 72]
    assert 6 * 31 + 12 * 21 + 36 * 11 + 72 * 6 == 1266
    assert sheet.return_to_player == Fraction(1266, 1326)
    assert percent(sheet.return_to_player, 4) == "95.4751"
    assert percent(sheet.return_to_player, 2) == "95.48"
    check_consistent(sheet)


def test_pocket_bonus_table_c_with_the_dealer_line() -> None:
    """rules.md §7.2 table C: RTP 91.4594%; both A-A is (6/1326) x (1/1225)."""
    sheet = pocket_bonus_par_sheet(load("paytables-pocket-c.toml").pocket_bonus)
    assert sheet.outcomes == 1326 * 1225
    # by hand, per seat hand x 1225 dealer hands; the dealer holds A-A against a seat A-A in
    # exactly 1 of 1225 ways (the two other aces)
    expected = [6 * 1, 6 * 1224, 4 * 1225, 8 * 1225, 12 * 1225, 18 * 1225, 24 * 1225, 54 * 1225]
    assert [ln.combinations for ln in sheet.lines] == expected
    assert brute_force_pocket(list(load("paytables-pocket-c.toml").pocket_bonus)) == expected
    assert sheet.lines[0].probability == Fraction(1, 270_725)
    pays = [1000, 30, 25, 20, 15, 10, 5, 3]
    assert sheet.return_to_player == Fraction(
        sum(n * (p + 1) for n, p in zip(expected, pays, strict=True)), 1326 * 1225
    )
    assert percent(sheet.return_to_player, 4) == "91.4594"
    check_consistent(sheet)


def brute_force_pocket(lines: list[PocketLine]) -> list[int]:
    """Every (seat, dealer) pair of disjoint two-card hands, first match pays (numpy)."""
    holes = list(itertools.combinations(DECK, 2))
    cls = np.array([ALL_CLASSES.index(hole_class(a, b)) for a, b in holes])
    cards = np.array([[a.index, b.index] for a, b in holes])
    disjoint = ~(
        (cards[:, None, 0] == cards[None, :, 0]) | (cards[:, None, 0] == cards[None, :, 1])
        | (cards[:, None, 1] == cards[None, :, 0]) | (cards[:, None, 1] == cards[None, :, 1])
    )
    open_ = disjoint.copy()
    counts = []
    for ln in lines:
        seat_in = np.isin(cls, [ALL_CLASSES.index(c) for c in ln.hands])
        if ln.dealer is None:
            dealer_in = np.ones(len(holes), dtype=bool)
        else:
            dealer_in = np.isin(cls, [ALL_CLASSES.index(c) for c in ln.dealer])
        hit = open_ & seat_in[:, None] & dealer_in[None, :]
        counts.append(int(hit.sum()))
        open_ &= ~hit
    return counts


def test_pocket_bonus_dealer_lines_agree_with_brute_force() -> None:
    lines = [
        PocketLine(name="both A-A", pays=Pay(1000), hands=parse_range("AA"),
                   dealer=parse_range("AA")),
        PocketLine(name="A-A v K-K/AK", pays=Pay(100), hands=parse_range("AA"),
                   dealer=parse_range("KK,AK")),
        PocketLine(name="A-A", pays=Pay(30), hands=parse_range("AA")),
        PocketLine(name="AKs v any pair", pays=Pay(50), hands=parse_range("AKs,KQs"),
                   dealer=parse_range("22+")),
        PocketLine(name="suited broadway", pays=Pay(10), hands=parse_range("ATs+,KTs+")),
        PocketLine(name="pairs", pays=Pay(5), hands=parse_range("22-KK")),
    ]
    sheet = pocket_bonus_par_sheet(lines)
    assert sheet.outcomes == 1326 * 1225
    assert [ln.combinations for ln in sheet.lines] == brute_force_pocket(lines)
    check_consistent(sheet)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.frozensets(st.sampled_from(ALL_CLASSES), min_size=1), min_size=1,
                max_size=5), st.lists(st.integers(1, 1000), min_size=5, max_size=5))
def test_pocket_bonus_without_dealer_lines_counts_first_matches(
    ranges: list[frozenset[str]], pays: list[int]
) -> None:
    lines = [PocketLine(name=str(i), pays=Pay(p), hands=r)
             for i, (r, p) in enumerate(zip(ranges, pays, strict=False))]
    sheet = pocket_bonus_par_sheet(lines)
    assert sheet.outcomes == 1326
    taken: set[str] = set()
    for ln, got in zip(lines, sheet.lines, strict=True):
        fresh = ln.hands - taken
        taken |= ln.hands
        assert got.combinations == sum(
            6 if len(c) == 2 else 4 if c[2] == "s" else 12 for c in fresh
        )
    check_consistent(sheet)


# --- Sweet 16 -----------------------------------------------------------------------------

def test_sweet16_single_deck_counts_by_hand() -> None:
    """Totals of 16: A+5 (16 combos), 6+T/J/Q/K (64), 7+9 (16), 8+8 (6) = 102 combos.

    Suited (other than A♥5♥): A5 3 + 6-ten 16 + 79 4 = 23. Same colour, different suits:
    A5 4 + 6-ten 16 + 79 4 + 8♥8♦/8♠8♣ 2 = 26. Mixed colour: A5 8 + 6-ten 32 + 79 8 + 88 4 = 52.
    """
    sheet = sweet16_par_sheet(load("paytables.toml").sweet16)
    assert sheet.outcomes == 1326
    assert combos_of(sheet) == {"sweet_16": 1, "suited_16": 23, "same_colour_16": 26,
                                "mixed_colour_16": 52}
    assert sheet.winning_combinations == 16 + 64 + 16 + 6
    assert sheet.return_to_player == Fraction(1 * 161 + 23 * 17 + 26 * 13 + 52 * 7, 1326)
    assert sheet.return_to_player == Fraction(209, 221)
    check_consistent(sheet)


def test_sweet16_absent_lines_do_not_pay() -> None:
    sheet = sweet16_par_sheet(Sweet16Table({"mixed_colour_16": Pay(6)}))
    assert combos_of(sheet) == {"mixed_colour_16": 52}
    assert sheet.return_to_player == Fraction(52 * 7, 1326)


# --- All together -------------------------------------------------------------------------

def test_par_sheets_cover_the_three_side_bets_in_order() -> None:
    sheets = par_sheets(load("paytables.toml"))
    assert [s.bet for s in sheets] == ["trips_plus", "pocket_bonus", "sweet16"]
    assert [s.title for s in sheets] == ["Trips Plus", "Pocket Bonus", "Sweet 16"]
