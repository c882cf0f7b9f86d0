"""Settlement on every paytable line: Odds (rules.md §6), Trips Plus, Pocket Bonus A, C, Sweet 16.

Every expected amount is worked out by hand from the rules (in units of the Ante or of the
side-bet stake) and scaled here; nothing is taken from running the code. Paytables:
settle_helpers (built from rules.md §0, independent of the config files).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from game.paytables.lines import Pay, Sweet16Table
from game.poker.evaluate import Category
from tests.game.settle_helpers import (
    ANTE,
    TABLES_A,
    TABLES_C,
    C,
    by_wager,
    hand,
    main_wagers,
    one,
    side_only,
    spare,
)

# -- rules.md §6: every line of both Odds tables -----------------------------------------------

# (board, dealer, seat hole, seat's category, Odds pay per unit; None = push)
ODDS_WIN = [
    ("Ah Kh Qh 2c 2d", "3s 4s", "Jh Th", C.ROYAL_FLUSH, Fraction(500)),
    ("9h 8h 7h 2c 2d", "As Ks", "6h 5h", C.STRAIGHT_FLUSH, Fraction(50)),
    ("9c 9d 5h 2c 2d", "As Ks", "9h 9s", C.FOUR_OF_A_KIND, Fraction(10)),
    ("9c 9d 5h 2c Kd", "As Ks", "9h 5s", C.FULL_HOUSE, Fraction(3)),
    ("Ah 8h 4h 2c Kd", "As Qs", "Th 3h", C.FLUSH, Fraction(3, 2)),
    ("9c 8d 7h 2c Kd", "Ks Qs", "Ts 6s", C.STRAIGHT, Fraction(1)),
    ("9c 8d 5h 2c Kd", "Ks Qs", "9h 9s", C.THREE_OF_A_KIND, None),
    ("9c 8d 5h 2c Kd", "Ks Qs", "9h 8s", C.TWO_PAIR, None),
    ("9c 8d 5h 2c Kd", "Qs Js", "9h 3s", C.PAIR, None),
    ("Ad Kd 9c 4h 2c", "Td 3c", "Tc 7s", C.HIGH_CARD, None),
]


@pytest.mark.parametrize(("board", "dealer", "hole", "category", "pay"), ODDS_WIN,
                         ids=[c[3].key for c in ODDS_WIN])
def test_odds_winning_table_every_line(board: str, dealer: str, hole: str, category: Category,
                                       pay: Fraction | None) -> None:
    s = one(dealer, board, hole, main_wagers(1))
    assert s.outcome == "win"
    assert s.hand.category is category
    odds = by_wager(s)["odds"]
    if pay is None:
        assert (odds.result, odds.net_cents, odds.line) == ("push", 0, None)
    else:
        assert (odds.result, odds.net_cents, odds.line) == ("win", pay * ANTE, category.key)


# (board, dealer, seat hole, seat's category, bad-beat pay per unit; None = the Odds lose)
ODDS_LOSE = [
    ("9h 8h 7h 6h 2c", "Th Js", "5h Kd", C.STRAIGHT_FLUSH, 500),
    ("9c 9d 2h 2c 5d", "9h 9s", "2d 2s", C.FOUR_OF_A_KIND, 25),
    ("9c 9d 2h 5c Kd", "9h Ks", "2c 2d", C.FULL_HOUSE, 6),
    ("Ah 8h 4h 2c Kd", "Qh 5h", "Th 3h", C.FLUSH, 5),
    ("9c 8d 7h 2c Kd", "Jh Tc", "Ts 6s", C.STRAIGHT, 4),
    ("9c 8d 5h 2c Kd", "Kh Ks", "9h 9s", C.THREE_OF_A_KIND, None),
    ("9c 8d 5h 2c Kd", "Kh Ks", "9h 8s", C.TWO_PAIR, None),
]


@pytest.mark.parametrize(("board", "dealer", "hole", "category", "pay"), ODDS_LOSE,
                         ids=[c[3].key for c in ODDS_LOSE])
def test_odds_bad_beat_table_every_line(board: str, dealer: str, hole: str, category: Category,
                                        pay: int | None) -> None:
    settled = hand(dealer, board, (hole, main_wagers(2)))
    s = settled.seats[0]
    assert settled.dealer_opens
    assert s.outcome == "lose"
    assert s.hand.category is category
    odds = by_wager(s)["odds"]
    assert (by_wager(s)["ante"].net_cents, by_wager(s)["play"].net_cents) == (-ANTE, -2 * ANTE)
    if pay is None:
        assert (odds.result, odds.net_cents, odds.line) == ("lose", -ANTE, None)
        assert "not on the bad-beat table" in odds.reason
    else:
        assert (odds.result, odds.net_cents, odds.line) == ("win", pay * ANTE, category.key)
        assert odds.reason.startswith("bad beat")


# -- rules.md §7.1: Trips Plus, every line, folded or not ---------------------------------------

TRIPS = [
    ("Ah Kh Qh 2c 2d", "Jh Th", C.ROYAL_FLUSH, 100),
    ("9h 8h 7h 2c 2d", "6h 5h", C.STRAIGHT_FLUSH, 40),
    ("9c 9d 5h 2c 2d", "9h 9s", C.FOUR_OF_A_KIND, 30),
    ("9c 9d 5h 2c Kd", "9h 5s", C.FULL_HOUSE, 8),
    ("Ah 8h 4h 2c Kd", "Th 3h", C.FLUSH, 7),
    ("9c 8d 7h 2c Kd", "Ts 6s", C.STRAIGHT, 4),
    ("9c 8d 5h 2c Kd", "9h 9s", C.THREE_OF_A_KIND, 3),
    ("9c 8d 5h 2c Kd", "9h 8s", C.TWO_PAIR, None),
    ("9c 8d 5h 2c Kd", "9h 3s", C.PAIR, None),
    ("9c 8d 5h 2c Kd", "Jh 3s", C.HIGH_CARD, None),
]


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize(("board", "hole", "category", "pay"), TRIPS,
                         ids=[c[2].key for c in TRIPS])
def test_trips_plus_every_line(k: int, board: str, hole: str, category: Category,
                               pay: int | None) -> None:
    dealer = " ".join(map(str, spare(board + " " + hole, 2)))
    w = replace(main_wagers(k), trips_plus=ANTE)
    s = one(dealer, board, hole, w)
    assert s.hand.category is category
    trips = by_wager(s)["trips_plus"]
    if pay is None:
        assert (trips.result, trips.net_cents, trips.line) == ("lose", -ANTE, None)
    else:
        assert (trips.result, trips.net_cents, trips.line) == ("win", pay * ANTE, category.key)
    if k == 0:
        assert s.outcome == "fold"
        assert trips.reason.startswith("seat folded, side bets still settle")


# -- rules.md §7.2: Pocket Bonus tables A and C, every line -------------------------------------

POCKET_A = [
    ("Ah As", "AA", 30),
    ("Ah Kh", "AJs-AKs", 20), ("Ac Qc", "AJs-AKs", 20), ("Ad Jd", "AJs-AKs", 20),
    ("Ah Kc", "AJo-AKo", 10), ("Ac Qd", "AJo-AKo", 10), ("Ad Js", "AJo-AKo", 10),
    *((f"{r}h {r}s", "22-KK", 5) for r in "23456789TJQK"),
    ("Ah Th", None, None), ("Kh Qh", None, None), ("7c 2d", None, None), ("As 2s", None, None),
]


@pytest.mark.parametrize(("hole", "line", "pay"), POCKET_A, ids=[p[0] for p in POCKET_A])
def test_pocket_bonus_table_a_every_line(hole: str, line: str | None, pay: int | None) -> None:
    s = side_only(hole, replace(main_wagers(1), pocket_bonus=ANTE))
    pocket = by_wager(s)["pocket_bonus"]
    if pay is None:
        assert (pocket.result, pocket.net_cents, pocket.line) == ("lose", -ANTE, None)
    else:
        assert (pocket.result, pocket.net_cents, pocket.line) == ("win", pay * ANTE, line)


POCKET_C = [
    ("Ah As", "Ac Ad", "AA+dealer AA", 1000),
    ("Ah As", "Kc Kd", "AA", 30),
    ("Ah As", "Ac Kd", "AA", 30),  # the dealer holds one ace only
    ("Ah Kh", "Ac Ad", "AKs", 25),
    ("Ac Qc", None, "AQs/AJs", 20), ("Ad Jd", None, "AQs/AJs", 20),
    ("Ah Kc", None, "AKo", 15),
    ("Jh Js", None, "JJ-KK", 10), ("Qh Qs", None, "JJ-KK", 10), ("Kh Ks", "Ac Ad", "JJ-KK", 10),
    ("Ac Qd", None, "AQo/AJo", 5), ("Ad Js", None, "AQo/AJo", 5),
    *((f"{r}h {r}s", None, "22-TT", 3) for r in "23456789T"),
    ("Ah Th", None, None, None), ("Kh Qh", None, None, None), ("7c 2d", "Ac Ad", None, None),
]


@pytest.mark.parametrize(("hole", "dealer", "line", "pay"), POCKET_C,
                         ids=[f"{p[0]}-{p[1]}" for p in POCKET_C])
def test_pocket_bonus_table_c_every_line(hole: str, dealer: str | None, line: str | None,
                                         pay: int | None) -> None:
    s = side_only(hole, replace(main_wagers(0), pocket_bonus=ANTE), dealer=dealer,
                  tables=TABLES_C)
    pocket = by_wager(s)["pocket_bonus"]
    if pay is None:
        assert (pocket.result, pocket.net_cents, pocket.line) == ("lose", -ANTE, None)
    else:
        assert (pocket.result, pocket.net_cents, pocket.line) == ("win", pay * ANTE, line)
    if line == "AA+dealer AA":
        assert "with the dealer's Ac Ad (AA)" in pocket.reason


# -- rules.md §7.3: Sweet 16, every line ---------------------------------------------------------

SWEET16 = [
    ("Ah 5h", "sweet_16", 160),
    ("Ad 5d", "suited_16", 16), ("7c 9c", "suited_16", 16), ("Ts 6s", "suited_16", 16),
    ("Ks 6c", "same_colour_16", 12), ("8h 8d", "same_colour_16", 12),
    ("Ah 5d", "same_colour_16", 12), ("8s 8c", "same_colour_16", 12),
    ("Qh 6s", "mixed_colour_16", 6), ("8h 8s", "mixed_colour_16", 6),
    ("As 5h", "mixed_colour_16", 6), ("9d 7c", "mixed_colour_16", 6),
    ("Ah Ad", None, None), ("Th 2h", None, None), ("9c 8c", None, None), ("Ah 6h", None, None),
]


@pytest.mark.parametrize(("hole", "line", "pay"), SWEET16, ids=[p[0] for p in SWEET16])
def test_sweet16_every_line(hole: str, line: str | None, pay: int | None) -> None:
    s = side_only(hole, replace(main_wagers(0), sweet16=ANTE))
    sweet = by_wager(s)["sweet16"]
    if pay is None:
        assert (sweet.result, sweet.net_cents, sweet.line) == ("lose", -ANTE, None)
        assert "not 16" in sweet.reason
    else:
        assert (sweet.result, sweet.net_cents, sweet.line) == ("win", pay * ANTE, line)


def test_sweet16_line_missing_from_the_table_loses() -> None:
    tables = replace(TABLES_A, sweet16=Sweet16Table({"sweet_16": Pay(160)}))
    s = side_only("Qh 6s", replace(main_wagers(1), sweet16=ANTE), tables=tables)
    sweet = by_wager(s)["sweet16"]
    assert (sweet.result, sweet.net_cents) == ("lose", -ANTE)
    assert "not on the Sweet 16 table" in sweet.reason
