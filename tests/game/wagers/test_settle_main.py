"""Settlement of the main wagers (rules.md §5), board ties and fractional pays (§0 item 6, §9.1).

Every expected amount is worked out by hand from the rules (in units of the Ante or of the
side-bet stake) and scaled here; nothing is taken from running the code. Paytables:
settle_helpers (built from rules.md §0, independent of the config files).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import NamedTuple

import pytest

from game.poker.cards import parse_cards
from game.wagers.settle import (
    SeatHand,
    SeatWagers,
    settle_hand,
)
from tests.game.settle_helpers import (
    ANTE,
    TABLES_A,
    C,
    by_wager,
    hand,
    main_wagers,
    nets,
    one,
    spare,
)

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
