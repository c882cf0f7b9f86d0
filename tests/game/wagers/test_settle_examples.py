"""rules.md §10: every worked settlement example, row by row, at Ante = R25 (2500 cents).

The table gives nets in units of the Ante (Odds = 1 unit, Play = k units, each side bet 1 unit);
they are scaled by 2500 here. "-" in the table (no Play for a fold) means no result at all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import pytest

from game.paytables.lines import Paytables
from game.wagers.settle import SeatWagers
from tests.game.settle_helpers import TABLES_A, TABLES_C, by_wager, hand, nets, side_only

U = 2_500  # one unit: the Ante (R25)


def wagers(k: int) -> SeatWagers:
    """Ante, Odds, a Play of k units (0 = fold) and 1 unit on each side bet."""
    return SeatWagers(ante=U, odds=U, play=k * U, trips_plus=U, pocket_bonus=U, sweet16=U)


def units(**row: int) -> dict[str, int]:
    return {name: value * U for name, value in row.items()}


EX_1_2_DEALER, EX_1_2_BOARD = "Kc 4c", "3h 8c 4h 8h 4s"
EX_3_4_DEALER, EX_3_4_BOARD = "Td 3c", "Ad Kd 9c 4h 2c"

class Row(NamedTuple):
    """One row of the §10 table: the cards, the Play multiple (0 = fold) and the nets."""

    example: str
    dealer: str
    board: str
    hole: str
    k: int
    outcome: str
    expected: dict[str, int]


ROWS = [
    Row("1", EX_1_2_DEALER, EX_1_2_BOARD, "Th 2h", 1, "lose",
     units(ante=-1, odds=5, play=-1, trips_plus=7, pocket_bonus=-1, sweet16=-1)),
    Row("2", EX_1_2_DEALER, EX_1_2_BOARD, "8d 8s", 3, "win",
     units(ante=1, odds=10, play=3, trips_plus=30, pocket_bonus=5, sweet16=6)),
    Row("3", EX_3_4_DEALER, EX_3_4_BOARD, "Tc 7s", 1, "win",
     units(ante=0, odds=0, play=1, trips_plus=-1, pocket_bonus=-1, sweet16=-1)),
    Row("4", EX_3_4_DEALER, EX_3_4_BOARD, "8c 7s", 1, "lose",
     units(ante=0, odds=-1, play=-1, trips_plus=-1, pocket_bonus=-1, sweet16=-1)),
    Row("5", "Tc 2d", "5s 6d 7c 8h 9s", "Kh Kd", 3, "lose",
     units(ante=-1, odds=4, play=-3, trips_plus=4, pocket_bonus=5, sweet16=-1)),
    Row("6", "4h 5c", "As Ah Kd Kc Qs", "2c 3d", 1, "tie",
     units(ante=0, odds=0, play=0, trips_plus=-1, pocket_bonus=-1, sweet16=-1)),
    # Example 7 ("any" cards, checked twice, then folds): here on example 1's cards. The side
    # bets are settled on the final hand: 8♦8♠ has four eights (Trips Plus 30), a pair
    # (Pocket A 5) and is mixed colour 16 (6); T♥2♥ has a flush (7) and nothing else.
    Row("7 (8d 8s)", EX_1_2_DEALER, EX_1_2_BOARD, "8d 8s", 0, "fold",
     units(ante=-1, odds=-1, trips_plus=30, pocket_bonus=5, sweet16=6)),
    Row("7 (Th 2h)", EX_1_2_DEALER, EX_1_2_BOARD, "Th 2h", 0, "fold",
     units(ante=-1, odds=-1, trips_plus=7, pocket_bonus=-1, sweet16=-1)),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.example for r in ROWS])
def test_worked_example(row: Row) -> None:
    s = hand(row.dealer, row.board, (row.hole, wagers(row.k))).seats[0]
    assert s.outcome == row.outcome
    assert nets(s) == row.expected
    assert s.net_cents == sum(row.expected.values())


def test_examples_1_and_2_at_one_table() -> None:
    settled = hand(EX_1_2_DEALER, EX_1_2_BOARD, ("Th 2h", wagers(1)), ("8d 8s", wagers(3)))
    assert settled.dealer_opens
    assert settled.dealer_hand.name == "Full house, fours over eights"
    first, second = settled.seats
    assert first.hand.name == "Flush, ten high"
    assert second.hand.name == "Four of a kind, eights, four kicker"
    assert nets(first) == ROWS[0].expected
    assert nets(second) == ROWS[1].expected
    assert by_wager(first)["odds"].line == "flush"
    assert by_wager(second)["sweet16"].line == "mixed_colour_16"


@pytest.mark.parametrize(("tables", "pocket"), [(TABLES_A, 30), (TABLES_C, 1000)],
                         ids=["table A", "table C"])
def test_example_8_aces_against_aces(tables: Paytables, pocket: int) -> None:
    w = replace(wagers(1), trips_plus=0)
    s = side_only("Ah As", w, dealer="Ac Ad", board="2c 7d 9h Js 3s", tables=tables)
    r = by_wager(s)
    assert r["pocket_bonus"].net_cents == pocket * U
    assert r["sweet16"].net_cents == -U  # A+A = 22 (or 12): not 16


def test_example_9_sweet16_lines() -> None:
    w = SeatWagers(ante=U, odds=U, play=U, sweet16=U)
    holes = ["Ah 5h", "Ad 5d", "Ks 6c", "Qh 6s", "8h 8d"]
    settled = hand("2c 3c", "4c 7d 9h Js Td", *((h, w) for h in holes))
    assert [by_wager(s)["sweet16"].net_cents for s in settled.seats] == [
        160 * U, 16 * U, 12 * U, 6 * U, 12 * U]
    assert [by_wager(s)["sweet16"].line for s in settled.seats] == [
        "sweet_16", "suited_16", "same_colour_16", "mixed_colour_16", "same_colour_16"]
