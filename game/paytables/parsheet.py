"""Exact par sheets of the side bets for one 52-card deck: every line's combinations and return.

Everything is counted exactly (integers and `Fraction`), never simulated. A line's
contribution is P(line) x (pay + 1): the expected amount handed back per unit staked,
counting the stake returned on a win, so the return to player is the sum of the
contributions and the house edge is 1 minus it.

- Trips Plus: the seat's 7 cards are a uniform 7-subset of the deck; all C(52, 7) =
  133,784,560 hands are valued (`game.poker.evaluate_batch.seven_card_category_counts`).
- Pocket Bonus: the seat's 1,326 two-card hands; when a line needs the dealer's hole cards,
  each is paired with the dealer's 1,225 hands from the other 50 cards (1,624,350 outcomes).
- Sweet 16: the seat's 1,326 two-card hands.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from math import comb
from typing import Final

from game.paytables.lines import (
    SWEET16_LINES,
    CategoryTable,
    Pay,
    Paytables,
    PocketLine,
    Sweet16Table,
    hole_class,
    sweet16_line_name,
)
from game.poker.cards import DECK
from game.poker.evaluate import Category
from game.poker.evaluate_batch import seven_card_category_counts
from game.poker.ranges import class_combos

__all__ = [
    "SWEET16_LABELS",
    "ParLine",
    "ParSheet",
    "par_sheets",
    "pocket_bonus_par_sheet",
    "sweet16_par_sheet",
    "trips_plus_par_sheet",
]

SWEET16_LABELS: Final = {
    "sweet_16": "Sweet 16 (A♥ 5♥)",
    "suited_16": "Suited 16",
    "same_colour_16": "Same colour 16",
    "mixed_colour_16": "Mixed colour 16",
}
_HOLES: Final = comb(52, 2)  # 1,326 two-card hands for the seat
_DEALER_HOLES: Final = comb(50, 2)  # 1,225 for the dealer from the other 50 cards


@dataclass(frozen=True, slots=True, kw_only=True)
class ParLine:
    """One paying line: how many equally likely outcomes hit it, and what it returns."""

    name: str
    label: str
    pays: Pay
    combinations: int
    outcomes: int

    @property
    def probability(self) -> Fraction:
        """The chance of hitting this line, exactly."""
        return Fraction(self.combinations, self.outcomes)

    @property
    def contribution(self) -> Fraction:
        """This line's share of the return to player: P(line) x (pay + 1)."""
        return self.probability * (self.pays.ratio + 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParSheet:
    """The par sheet of one side bet: its paying lines over ``outcomes`` equally likely ones."""

    bet: str
    title: str
    outcomes: int
    lines: tuple[ParLine, ...]

    @property
    def winning_combinations(self) -> int:
        """Outcomes that hit some paying line."""
        return sum(ln.combinations for ln in self.lines)

    @property
    def losing_combinations(self) -> int:
        """Outcomes that lose the bet."""
        return self.outcomes - self.winning_combinations

    @property
    def return_to_player(self) -> Fraction:
        """Expected amount returned per unit staked (stake included), exactly."""
        return sum((ln.contribution for ln in self.lines), Fraction(0))

    @property
    def house_edge(self) -> Fraction:
        """1 minus the return to player."""
        return 1 - self.return_to_player


@cache
def _seven_card_counts() -> Mapping[Category, int]:
    return seven_card_category_counts()


def trips_plus_par_sheet(
    table: CategoryTable, counts: Mapping[Category, int] | None = None
) -> ParSheet:
    """Trips Plus over all C(52, 7) seven-card hands (``counts`` by category, if already known)."""
    by_category = _seven_card_counts() if counts is None else counts
    outcomes = comb(52, 7)
    if sum(by_category.values()) != outcomes:
        raise ValueError("seven-card category counts must cover all C(52, 7) hands")
    lines = tuple(
        ParLine(name=c.key, label=c.label, pays=table.pays[c],
                combinations=by_category[c], outcomes=outcomes)
        for c in sorted(table.pays, reverse=True)
    )
    return ParSheet(bet="trips_plus", title="Trips Plus", outcomes=outcomes, lines=lines)


def _dealer_pairs(line: PocketLine) -> tuple[frozenset[int], ...]:
    """The dealer's concrete hands (as card-index pairs) that a dealer line accepts."""
    assert line.dealer is not None
    return tuple(
        frozenset((a.index, b.index)) for cls in line.dealer for a, b in class_combos(cls)
    )


def pocket_bonus_par_sheet(lines: Sequence[PocketLine]) -> ParSheet:
    """Pocket Bonus over the seat's 1,326 hands (x the dealer's 1,225 if a line needs them).

    Lines are tried in order and the first match pays, exactly as in settlement.
    """
    needs_dealer = any(ln.dealer is not None for ln in lines)
    per_seat_hand = _DEALER_HOLES if needs_dealer else 1
    dealer_pairs = {i: _dealer_pairs(ln) for i, ln in enumerate(lines) if ln.dealer is not None}
    counts = [0] * len(lines)
    for a, b in itertools.combinations(DECK, 2):
        cls = hole_class(a, b)
        seat = {a.index, b.index}
        claimed: set[frozenset[int]] = set()  # dealer hands already paid by an earlier line
        for i, line in enumerate(lines):
            if cls not in line.hands:
                continue
            if line.dealer is None:
                counts[i] += per_seat_hand - len(claimed)
                break
            hits = {p for p in dealer_pairs[i] if not p & seat} - claimed
            counts[i] += len(hits)
            claimed |= hits
    outcomes = _HOLES * per_seat_hand
    par_lines = tuple(
        ParLine(name=ln.name, label=ln.name, pays=ln.pays, combinations=n, outcomes=outcomes)
        for ln, n in zip(lines, counts, strict=True)
    )
    return ParSheet(bet="pocket_bonus", title="Pocket Bonus", outcomes=outcomes, lines=par_lines)


def sweet16_par_sheet(table: Sweet16Table) -> ParSheet:
    """Sweet 16 over the seat's 1,326 two-card hands."""
    counts = dict.fromkeys(SWEET16_LINES, 0)
    for a, b in itertools.combinations(DECK, 2):
        name = sweet16_line_name(a, b)
        if name is not None:
            counts[name] += 1
    lines = tuple(
        ParLine(name=name, label=SWEET16_LABELS[name], pays=table.pays[name],
                combinations=counts[name], outcomes=_HOLES)
        for name in SWEET16_LINES if name in table.pays
    )
    return ParSheet(bet="sweet16", title="Sweet 16", outcomes=_HOLES, lines=lines)


def par_sheets(paytables: Paytables) -> tuple[ParSheet, ParSheet, ParSheet]:
    """The par sheets of Trips Plus, Pocket Bonus and Sweet 16, in that order."""
    return (
        trips_plus_par_sheet(paytables.trips_plus),
        pocket_bonus_par_sheet(paytables.pocket_bonus),
        sweet16_par_sheet(paytables.sweet16),
    )

