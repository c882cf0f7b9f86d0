"""Settlement of every wager (game/settle.py) against rules.md §5-§7, §9 and the marker rule.

Every expected amount is worked out by hand from the rules (in units of the Ante or of the
side-bet stake) and scaled here; nothing is taken from running the code. The paytables are
built directly from rules.md §0 (Trips Plus 100-40-30-8-7-4-3, Odds §6, Pocket Bonus table A
and table C of §7.2, Sweet 16 160/16/12/6), independent of the config files.
"""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.cards import DECK, Card, card_from_index, parse_cards
from game.errors import DuplicateCard, InvalidHand, InvalidWager
from game.evaluate import Category, evaluate
from game.paytables import CategoryTable, Pay, Paytables, PocketLine, Sweet16Table
from game.settle import (
    SIDE_BETS,
    WAGERS,
    HandSettlement,
    SeatHand,
    SeatSettlement,
    SeatWagers,
    WagerResult,
    check_seat,
    settle_hand,
)

ANTE = 2_500  # R25: amounts in rules.md are per unit of Ante
MARKER = 50_000  # R500 Final bonus marker (tournament.md)

C = Category


def _pairs(ranks: str) -> frozenset[str]:
    return frozenset(r * 2 for r in ranks)


def _tables(pocket: tuple[PocketLine, ...]) -> Paytables:
    return Paytables(
        trips_plus=CategoryTable("trips_plus", {
            C.ROYAL_FLUSH: Pay(100), C.STRAIGHT_FLUSH: Pay(40), C.FOUR_OF_A_KIND: Pay(30),
            C.FULL_HOUSE: Pay(8), C.FLUSH: Pay(7), C.STRAIGHT: Pay(4),
            C.THREE_OF_A_KIND: Pay(3),
        }),
        odds_win=CategoryTable("odds_win", {
            C.ROYAL_FLUSH: Pay(500), C.STRAIGHT_FLUSH: Pay(50), C.FOUR_OF_A_KIND: Pay(10),
            C.FULL_HOUSE: Pay(3), C.FLUSH: Pay(3, 2), C.STRAIGHT: Pay(1),
        }),
        odds_lose=CategoryTable("odds_lose", {
            C.STRAIGHT_FLUSH: Pay(500), C.FOUR_OF_A_KIND: Pay(25), C.FULL_HOUSE: Pay(6),
            C.FLUSH: Pay(5), C.STRAIGHT: Pay(4),
        }),
        pocket_bonus=pocket,
        sweet16=Sweet16Table({"sweet_16": Pay(160), "suited_16": Pay(16),
                              "same_colour_16": Pay(12), "mixed_colour_16": Pay(6)}),
        source="rules.md §0 (test)",
    )


def paytables_a() -> Paytables:
    """rules.md §0 tables with Pocket Bonus table A (§7.2)."""
    return _tables((
        PocketLine("AA", Pay(30), frozenset({"AA"})),
        PocketLine("AJs-AKs", Pay(20), frozenset({"AKs", "AQs", "AJs"})),
        PocketLine("AJo-AKo", Pay(10), frozenset({"AKo", "AQo", "AJo"})),
        PocketLine("22-KK", Pay(5), _pairs("23456789TJQK")),
    ))


def paytables_c() -> Paytables:
    """rules.md §0 tables with Pocket Bonus table C (§7.2), the dealer A-A line first."""
    return _tables((
        PocketLine("AA+dealer AA", Pay(1000), frozenset({"AA"}), frozenset({"AA"})),
        PocketLine("AA", Pay(30), frozenset({"AA"})),
        PocketLine("AKs", Pay(25), frozenset({"AKs"})),
        PocketLine("AQs/AJs", Pay(20), frozenset({"AQs", "AJs"})),
        PocketLine("AKo", Pay(15), frozenset({"AKo"})),
        PocketLine("JJ-KK", Pay(10), _pairs("JQK")),
        PocketLine("AQo/AJo", Pay(5), frozenset({"AQo", "AJo"})),
        PocketLine("22-TT", Pay(3), _pairs("23456789T")),
    ))


TABLES_A = paytables_a()
TABLES_C = paytables_c()


def spare(used: str | tuple[Card, ...], n: int) -> tuple[Card, ...]:
    """The first n cards of the deck (by index) not in `used`: filler for irrelevant cards."""
    taken = set(parse_cards(used) if isinstance(used, str) else used)
    return tuple(c for c in DECK if c not in taken)[:n]


def hand(
    dealer: str, board: str, *seats: tuple[str, SeatWagers], tables: Paytables = TABLES_A,
    marker_value_cents: int = MARKER,
) -> HandSettlement:
    """Settle a hand given as text; seats are numbered 1, 2, ... in the order given."""
    d, b = parse_cards(dealer), parse_cards(board)
    return settle_hand(
        dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
        seats=[SeatHand(seat=i, hole=_two(hole), wagers=w)
               for i, (hole, w) in enumerate(seats, start=1)],
        paytables=tables, marker_value_cents=marker_value_cents,
    )


def one(dealer: str, board: str, hole: str, wagers: SeatWagers, **kw: object) -> SeatSettlement:
    """Settle a single seat."""
    return hand(dealer, board, (hole, wagers), **kw).seats[0]  # type: ignore[arg-type]


def side_only(hole: str, wagers: SeatWagers, *, dealer: str | None = None,
              board: str | None = None, tables: Paytables = TABLES_A) -> SeatSettlement:
    """Settle a seat where only the hole cards (and maybe the dealer's) matter."""
    used = hole + " " + (dealer or "")
    if dealer is None:
        dealer = " ".join(map(str, spare(used, 2)))
        used += " " + dealer
    if board is None:
        board = " ".join(map(str, spare(used, 5)))
    return one(dealer, board, hole, wagers, tables=tables)


def _two(text: str) -> tuple[Card, Card]:
    a, b = parse_cards(text)
    return a, b


def main_wagers(k: int, ante: int = ANTE) -> SeatWagers:
    """Ante and Odds with a Play of k x Ante (k = 0: the seat folded)."""
    return SeatWagers(ante=ante, odds=ante, play=k * ante)


def by_wager(s: SeatSettlement) -> dict[str, WagerResult]:
    return {r.wager: r for r in s.results}


def nets(s: SeatSettlement) -> dict[str, int]:
    return {r.wager: r.net_cents for r in s.results}


# -- rules.md §5: the main-wager table, for every Play size ------------------------------------

class MainCase(NamedTuple):
    """One row of rules.md §5; nets in units of the Ante (Play: units of the Play bet)."""

    case: str
    board: str
    dealer: str
    hole: str
    outcome: str
    opens: bool
    ante: int
    play: int
    odds: Fraction


MAIN_CASES = [
    MainCase("seat wins, dealer opens, below a straight: Odds pushes",
             "9c 8d 5h 2c Kd", "Ks Qs", "9h 9s", "win", True, 1, 1, Fraction(0)),
    MainCase("seat wins, dealer opens, straight: Odds 1 to 1",
             "9c 8d 7h 2c Kd", "Ks Qs", "Ts 6s", "win", True, 1, 1, Fraction(1)),
    MainCase("seat wins, dealer does not open, high card: Ante and Odds push",
             "Ad Kd 9c 4h 2c", "Td 3c", "Tc 7s", "win", False, 0, 1, Fraction(0)),
    MainCase("seat wins, dealer does not open, flush: Ante pushes, Odds 3 to 2",
             "Ah 8h 4h 2c Kd", "Qs Js", "Th 3h", "win", False, 0, 1, Fraction(3, 2)),
    MainCase("tie: everything pushes",
             "As Ah Kd Kc Qs", "4h 5c", "2c 3d", "tie", True, 0, 0, Fraction(0)),
    MainCase("dealer wins and opens, seat below a straight: all lose",
             "9c 8d 5h 2c Kd", "Kh Ks", "9h 9s", "lose", True, -1, -1, Fraction(-1)),
    MainCase("dealer wins and opens, seat has a straight: bad beat 4 to 1",
             "9c 8d 7h 2c Kd", "Jh Tc", "Ts 6s", "lose", True, -1, -1, Fraction(4)),
    MainCase("dealer wins without opening: Ante pushes, Play and Odds lose",
             "Ad Kd 9c 4h 2c", "Td 3c", "8c 7s", "lose", False, 0, -1, Fraction(-1)),
]


@pytest.mark.parametrize("k", [3, 2, 1])
@pytest.mark.parametrize("c", MAIN_CASES, ids=[c.case for c in MAIN_CASES])
def test_main_wagers(k: int, c: MainCase) -> None:
    settled = hand(c.dealer, c.board, (c.hole, main_wagers(k)))
    s = settled.seats[0]
    assert settled.dealer_opens is c.opens
    assert s.outcome == c.outcome
    odds = c.odds * ANTE
    assert odds.denominator == 1
    assert nets(s) == {"ante": c.ante * ANTE, "odds": int(odds), "play": c.play * k * ANTE}
    assert s.net_cents == (c.ante + c.play * k) * ANTE + int(odds)
    results = by_wager(s)
    assert results["play"].stake_cents == k * ANTE
    for r in s.results:
        expected = "win" if r.net_cents > 0 else "lose" if r.net_cents < 0 else "push"
        assert r.result == expected


@pytest.mark.parametrize("c", MAIN_CASES, ids=[c.case for c in MAIN_CASES])
def test_fold_loses_ante_and_odds_whatever_the_cards(c: MainCase) -> None:
    s = one(c.dealer, c.board, c.hole, main_wagers(0))
    assert s.outcome == "fold"
    assert nets(s) == {"ante": -ANTE, "odds": -ANTE}  # no Play result: none was placed
    assert all(r.result == "lose" for r in s.results)
    assert "folded" in by_wager(s)["ante"].reason


def test_reasons_name_the_hands_and_the_pay() -> None:
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", main_wagers(1))
    r = by_wager(s)
    assert r["ante"].reason.startswith(
        "dealer opens with full house, fours over eights; seat's flush, ten high loses to it:"
        " Ante loses")
    assert r["odds"].reason.startswith("bad beat: ")
    assert "5 to 1" in r["odds"].reason and "flush line" in r["odds"].reason
    assert r["odds"].line == "flush"
    win = one("Ks Qs", "9c 8d 5h 2c Kd", "9h 9s", main_wagers(3))
    assert by_wager(win)["ante"].reason.startswith(
        "dealer opens with pair of kings; seat's three of a kind, nines beats it: Ante wins 1 to 1")
    assert "three of a kind is not on the winning Odds table" in by_wager(win)["odds"].reason
    assert "Play (3x the Ante) wins 1 to 1" in by_wager(win)["play"].reason
    no_open = one("Td 3c", "Ad Kd 9c 4h 2c", "Tc 7s", main_wagers(1))
    assert by_wager(no_open)["ante"].reason.startswith("dealer does not open (high card, ace)")


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


# -- Final bonus markers (tournament.md) ---------------------------------------------------------

def test_marker_win_pays_on_chips_plus_marker() -> None:
    # Example 1's seat: flush, Trips Plus 7 to 1 on R25 + R500 = R525 -> +R3,675.
    w = replace(main_wagers(1), trips_plus=ANTE, markers=frozenset({"trips_plus"}))
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", w)
    trips = by_wager(s)["trips_plus"]
    assert (trips.result, trips.stake_cents, trips.net_cents, trips.line, trips.marker) == (
        "win", ANTE, 7 * (ANTE + MARKER), "flush", True)
    assert "the marker is removed" in trips.reason
    assert s.markers_used == frozenset({"trips_plus"})


def test_marker_loss_costs_only_the_chips() -> None:
    w = replace(main_wagers(1), pocket_bonus=ANTE, markers=frozenset({"pocket_bonus"}))
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", w)
    pocket = by_wager(s)["pocket_bonus"]
    assert (pocket.result, pocket.net_cents, pocket.marker) == ("lose", -ANTE, True)
    assert "marker is used up" in pocket.reason
    assert s.markers_used == frozenset({"pocket_bonus"})


def test_marker_alone_without_chips() -> None:
    # Q♥6♠ is mixed colour 16 (6 to 1) on the R500 marker alone; Trips Plus loses (pair).
    w = replace(main_wagers(0), markers=frozenset({"sweet16", "trips_plus"}))
    s = one("2c 3c", "9c 8d 5h 4c Kd", "Qh 6s", w)
    r = by_wager(s)
    assert (r["sweet16"].result, r["sweet16"].stake_cents, r["sweet16"].net_cents) == (
        "win", 0, 6 * MARKER)
    assert (r["trips_plus"].result, r["trips_plus"].net_cents) == ("lose", 0)
    assert s.markers_used == frozenset({"sweet16", "trips_plus"})
    assert "pocket_bonus" not in r
    assert s.net_cents == -2 * ANTE + 6 * MARKER


def test_marker_value_is_a_parameter() -> None:
    w = replace(main_wagers(1), sweet16=ANTE, markers=frozenset({"sweet16"}))
    s = hand("2c 3c", "9c 8d 5h 4c Kd", ("Qh 6s", w), marker_value_cents=10_000).seats[0]
    assert by_wager(s)["sweet16"].net_cents == 6 * (ANTE + 10_000)


def test_no_marker_no_markers_used() -> None:
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", replace(main_wagers(1), trips_plus=ANTE))
    assert s.markers_used == frozenset()
    assert not any(r.marker for r in s.results)


# -- rules.md §0 item 6, §9.1: fractional pays -------------------------------------------------

def test_three_to_two_on_r25_is_exact() -> None:
    s = one("As Qs", "Ah 8h 4h 2c Kd", "Th 3h", main_wagers(1))
    odds = by_wager(s)["odds"]
    assert odds.net_cents == 3_750  # R37.50 exactly
    assert "rounded" not in odds.reason
    assert "+R37.50" in odds.reason


def test_fraction_of_a_cent_is_rounded_down_and_said() -> None:
    s = one("As Qs", "Ah 8h 4h 2c Kd", "Th 3h", main_wagers(1, ante=2_501))
    odds = by_wager(s)["odds"]
    assert odds.net_cents == 3_751  # 2501 x 3/2 = 3751.5 cents
    assert "exact pay 3751 1/2 cents, rounded down to 3751 cents" in odds.reason


# -- rules.md §9: board plays, royal flush on the board -----------------------------------------

def test_both_play_the_board_straight_tie() -> None:
    w = replace(main_wagers(3), trips_plus=ANTE)
    settled = hand("2h 3s", "5s 6d 7c 8h 9s", ("2c 3d", w))
    s = settled.seats[0]
    assert s.outcome == "tie"
    assert nets(s) == {"ante": 0, "odds": 0, "play": 0, "trips_plus": 4 * ANTE}


def test_both_play_the_board_flush_tie() -> None:
    w = replace(main_wagers(2), trips_plus=ANTE)
    s = one("3c 4c", "2h 5h 8h Jh Kh", "6d 7d", w)
    assert s.outcome == "tie"
    assert nets(s) == {"ante": 0, "odds": 0, "play": 0, "trips_plus": 7 * ANTE}


def test_board_straight_beaten_collects_the_bad_beat() -> None:
    s = one("Tc 2d", "5s 6d 7c 8h 9s", "Kh Kd", main_wagers(3))
    assert s.outcome == "lose"
    assert nets(s) == {"ante": -ANTE, "odds": 4 * ANTE, "play": -3 * ANTE}


def test_royal_flush_on_the_board() -> None:
    trips = {"trips_plus": ANTE}
    settled = hand(
        "2d 3d", "Ah Kh Qh Jh Th",
        ("2c 3c", SeatWagers(ante=ANTE, odds=ANTE, play=3 * ANTE, **trips)),
        ("Ac Kc", SeatWagers(ante=ANTE, odds=ANTE, play=ANTE, **trips)),
        ("9h 8h", SeatWagers(ante=ANTE, odds=ANTE, play=0, **trips)),
    )
    assert settled.dealer_opens
    played, folded = settled.seats[:2], settled.seats[2]
    for s in played:
        assert s.outcome == "tie"
        assert s.hand.category is C.ROYAL_FLUSH
        assert nets(s) == {"ante": 0, "odds": 0, "play": 0, "trips_plus": 100 * ANTE}
    assert folded.outcome == "fold"
    assert nets(folded) == {"ante": -ANTE, "odds": -ANTE, "trips_plus": 100 * ANTE}


def test_seats_are_returned_by_seat_number() -> None:
    d, b = parse_cards("2d 3d"), parse_cards("Ah Kh Qh Jh Th")
    seats = [SeatHand(seat=n, hole=spare(("2d 3d Ah Kh Qh Jh Th"), 12)[2 * i: 2 * i + 2],
                      wagers=main_wagers(1))  # type: ignore[arg-type]
             for i, n in enumerate([5, 1, 3])]
    settled = settle_hand(dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
                          seats=seats, paytables=TABLES_A)
    assert [s.seat for s in settled.seats] == [1, 3, 5]


# -- check_seat: the game rules on wagers --------------------------------------------------------

BAD_WAGERS = [
    (SeatWagers(), "ante"),
    (SeatWagers(ante=ANTE), "odds"),
    (SeatWagers(ante=ANTE, odds=2 * ANTE), "odds"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=4 * ANTE), "play"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=ANTE + 1), "play"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=-ANTE), "play"),
    (SeatWagers(trips_plus=ANTE), "trips_plus"),
    (SeatWagers(ante=ANTE, sweet16=ANTE), "odds"),  # the Odds are missing
    (SeatWagers(sweet16=ANTE, pocket_bonus=ANTE), "pocket_bonus"),
    (SeatWagers(markers=frozenset({"pocket_bonus"})), "pocket_bonus"),
    (SeatWagers(ante=ANTE, odds=ANTE, trips_plus=-1), "trips_plus"),
    (SeatWagers(ante=-ANTE, odds=-ANTE), "ante"),
    (SeatWagers(ante=ANTE, odds=ANTE, markers=frozenset({"ante"})), "markers"),
    (SeatWagers(ante=ANTE, odds=ANTE, markers=frozenset({"jackpot"})), "markers"),
    (SeatWagers(ante=2500.0, odds=2500.0), "ante"),  # type: ignore[arg-type]
    (SeatWagers(ante=True, odds=True), "ante"),
    (SeatWagers(ante=ANTE, odds=ANTE, pocket_bonus="25"), "pocket_bonus"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("wagers", "field"), BAD_WAGERS)
def test_check_seat_refuses(wagers: SeatWagers, field: str) -> None:
    with pytest.raises(InvalidWager) as err:
        check_seat(SeatHand(seat=4, hole=_two("Ah Kd"), wagers=wagers))
    assert (err.value.seat, err.value.field) == (4, field)
    assert str(err.value).startswith(f"seat 4: {field}: ")


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_check_seat_accepts(k: int) -> None:
    w = SeatWagers(ante=ANTE, odds=ANTE, play=k * ANTE, trips_plus=1, pocket_bonus=0,
                   sweet16=25_000, markers=frozenset(SIDE_BETS))
    check_seat(SeatHand(seat=1, hole=_two("Ah Kd"), wagers=w))


def test_seat_wagers_amount_and_staked() -> None:
    w = SeatWagers(ante=1, odds=2, play=3, trips_plus=4, pocket_bonus=5, sweet16=6,
                   markers=frozenset({"sweet16"}))
    assert [w.amount(n) for n in WAGERS] == [1, 2, 3, 4, 5, 6]
    assert w.staked_cents == 21  # the marker is not chips
    with pytest.raises(KeyError):
        w.amount("markers")


def test_settle_hand_refuses_bad_cards_and_seats() -> None:
    w = main_wagers(1)
    with pytest.raises(DuplicateCard):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("Ah 9d", w))
    with pytest.raises(DuplicateCard):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", w), ("9d 7h", w))
    d, b = parse_cards("Ah Kd"), parse_cards("2c 3c 4c 5c 6c")
    seat = SeatHand(seat=1, hole=_two("8s 9d"), wagers=w)
    with pytest.raises(InvalidHand, match="seat 1 appears twice"):
        settle_hand(dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
                    seats=[seat, replace(seat, hole=_two("7s 7d"))], paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="board: expected 5 cards"):
        settle_hand(dealer=(d[0], d[1]), board=b[:4], seats=[seat],  # type: ignore[arg-type]
                    paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="dealer: expected 2"):
        settle_hand(dealer=d[:1], board=(b[0], b[1], b[2], b[3], b[4]),  # type: ignore[arg-type]
                    seats=[seat], paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="seat 1: expected 2 hole cards"):
        settle_hand(dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
                    seats=[replace(seat, hole=parse_cards("8s 9d 7d"))],  # type: ignore[arg-type]
                    paytables=TABLES_A)
    with pytest.raises(InvalidWager, match="play"):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", replace(w, play=5 * ANTE)))
    with pytest.raises(InvalidWager, match="marker_value_cents"):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", w), marker_value_cents=0)


# -- hypothesis properties ---------------------------------------------------------------------

@st.composite
def hands(draw: st.DrawFn) -> tuple[tuple[Card, ...], list[SeatHand], Paytables]:
    """A random deal (1 to 6 seats) with random legal wagers, some seats folded."""
    deck = draw(st.permutations(DECK))
    n = draw(st.integers(1, 6))
    seats = []
    for i in range(n):
        ante = draw(st.integers(1, 60_000))
        w = SeatWagers(
            ante=ante, odds=ante, play=draw(st.sampled_from([0, 1, 2, 3])) * ante,
            trips_plus=draw(st.integers(0, 30_000)), pocket_bonus=draw(st.integers(0, 30_000)),
            sweet16=draw(st.integers(0, 30_000)),
            markers=frozenset(draw(st.sets(st.sampled_from(SIDE_BETS)))),
        )
        seats.append(SeatHand(seat=i + 1, hole=(deck[7 + 2 * i], deck[8 + 2 * i]), wagers=w))
    return tuple(deck[:7]), seats, draw(st.sampled_from([TABLES_A, TABLES_C]))


def _settle(cards: tuple[Card, ...], seats: list[SeatHand], tables: Paytables) -> HandSettlement:
    return settle_hand(dealer=(cards[0], cards[1]),
                       board=(cards[2], cards[3], cards[4], cards[5], cards[6]),
                       seats=seats, paytables=tables, marker_value_cents=MARKER)


def _main_reference(seat: SeatHand, cards: tuple[Card, ...]) -> dict[str, Fraction]:
    """rules.md §5/§6 written out once more, as nets per wager (exact fractions of a cent)."""
    w = seat.wagers
    if w.play == 0:
        return {"ante": Fraction(-w.ante), "odds": Fraction(-w.odds)}
    mine, dealer = evaluate((*seat.hole, *cards[2:])), evaluate(cards)
    opens = dealer.category >= C.PAIR
    win_pay = {C.ROYAL_FLUSH: 500, C.STRAIGHT_FLUSH: 50, C.FOUR_OF_A_KIND: 10,
               C.FULL_HOUSE: 3, C.FLUSH: Fraction(3, 2), C.STRAIGHT: 1}
    lose_pay = {C.STRAIGHT_FLUSH: 500, C.FOUR_OF_A_KIND: 25, C.FULL_HOUSE: 6, C.FLUSH: 5,
                C.STRAIGHT: 4}
    if mine.value == dealer.value:
        return {"ante": Fraction(0), "odds": Fraction(0), "play": Fraction(0)}
    if mine.value > dealer.value:
        return {"ante": Fraction(w.ante if opens else 0),
                "odds": Fraction(w.odds) * win_pay.get(mine.category, 0),
                "play": Fraction(w.play)}
    bad_beat = lose_pay.get(mine.category) if opens else None
    return {"ante": Fraction(-w.ante if opens else 0),
            "odds": Fraction(-w.odds) if bad_beat is None else Fraction(w.odds) * bad_beat,
            "play": Fraction(-w.play)}


@settings(max_examples=150, deadline=None)
@given(hands())
def test_property_every_result_is_well_formed(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    settled = _settle(cards, seats, tables)
    assert settled.dealer_opens == (evaluate(cards).category >= C.PAIR)
    for seat, s in zip(seats, settled.seats, strict=True):
        w = seat.wagers
        placed = [n for n in WAGERS if w.amount(n) > 0 or n in w.markers]
        assert [r.wager for r in s.results] == placed
        for r in s.results:
            assert r.stake_cents == w.amount(r.wager)
            assert r.net_cents >= -r.stake_cents
            assert r.marker == (r.wager in w.markers)
            if r.result == "push":
                assert r.net_cents == 0
            elif r.result == "lose":
                assert r.net_cents == -r.stake_cents
            else:
                assert r.net_cents > 0
            paid_by_table = r.result == "win" and r.wager not in {"ante", "play"}
            assert (r.line is not None) == paid_by_table
        assert s.net_cents == sum(r.net_cents for r in s.results)
        assert s.markers_used == w.markers
        expected = _main_reference(seat, cards)
        got = {r.wager: r.net_cents for r in s.results if r.wager in ("ante", "odds", "play")}
        assert got == {k: int(v) for k, v in expected.items()}  # int() rounds down (v >= 0)


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_a_folded_seat_never_wins_ante_or_odds(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    folded = [replace(s, wagers=replace(s.wagers, play=0)) for s in seats]
    for s in _settle(cards, folded, tables).seats:
        r = by_wager(s)
        assert s.outcome == "fold"
        assert "play" not in r
        assert r["ante"].result == r["odds"].result == "lose"


@settings(max_examples=100, deadline=None)
@given(hands(), st.randoms(use_true_random=False))
def test_property_seat_order_and_other_seats_do_not_matter(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables], rnd: random.Random,
) -> None:
    cards, seats, tables = deal
    base = _settle(cards, seats, tables)
    shuffled = list(seats)
    rnd.shuffle(shuffled)
    assert _settle(cards, shuffled, tables) == base
    for seat, s in zip(seats, base.seats, strict=True):
        assert _settle(cards, [seat], tables).seats == (s,)


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_side_bets_do_not_depend_on_the_play_decision(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    k_seats = [replace(s, wagers=replace(s.wagers, play=s.wagers.ante)) for s in seats]
    folded = [replace(s, wagers=replace(s.wagers, play=0)) for s in seats]

    def side(h: HandSettlement) -> list[tuple[str, str, int, str | None]]:
        return [(r.wager, r.result, r.net_cents, r.line)
                for s in h.seats for r in s.results if r.wager in SIDE_BETS]

    assert side(_settle(cards, k_seats, tables)) == side(_settle(cards, folded, tables))


def _suit_map(cards: tuple[Card, ...], perm: list[int]) -> tuple[Card, ...]:
    return tuple(card_from_index(c.rank * 4 + perm[c.suit]) for c in cards)


@settings(max_examples=100, deadline=None)
@given(hands(), st.permutations(range(4)))
def test_property_a_suit_permutation_changes_only_sweet16_lines(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables], perm: list[int],
) -> None:
    cards, seats, tables = deal
    base = _settle(cards, seats, tables)
    moved = _settle(_suit_map(cards, perm),
                    [replace(s, hole=_suit_map(s.hole, perm)) for s in seats], tables)
    assert moved.dealer_hand == base.dealer_hand
    assert moved.dealer_opens == base.dealer_opens
    for a, b in zip(base.seats, moved.seats, strict=True):
        assert (a.hand, a.outcome) == (b.hand, b.outcome)
        for ra, rb in zip(a.results, b.results, strict=True):
            assert (ra.wager, ra.result, ra.stake_cents) == (rb.wager, rb.result, rb.stake_cents)
            if ra.wager != "sweet16":
                assert (ra.net_cents, ra.line) == (rb.net_cents, rb.line)
            if ra.wager in ("ante", "odds", "play", "trips_plus"):
                assert ra.reason == rb.reason  # hands are named without suits


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_clubs_spades_swap_changes_nothing(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    perm = [3, 1, 2, 0]  # clubs <-> spades: every colour kept, and the A♥5♥ line too
    base = _settle(cards, seats, tables)
    moved = _settle(_suit_map(cards, perm),
                    [replace(s, hole=_suit_map(s.hole, perm)) for s in seats], tables)
    for a, b in zip(base.seats, moved.seats, strict=True):
        assert [(r.wager, r.result, r.net_cents, r.line) for r in a.results] == [
            (r.wager, r.result, r.net_cents, r.line) for r in b.results]
