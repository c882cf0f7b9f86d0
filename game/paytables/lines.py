"""Paytables as data, and the pure functions that find which line of a paytable a hand hits.

A paytable file (format in docs/paytables.md) is turned into a `Paytables` by
`game.paytables.schema.parse_paytables`; nothing about a pay is hard-coded in settlement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from game.poker.cards import RANK_CHARS, Card
from game.poker.evaluate import Category, HandValue

__all__ = [
    "SWEET16_LINES",
    "CategoryTable",
    "Pay",
    "Paytables",
    "PocketLine",
    "Sweet16Table",
    "hole_class",
    "sweet16_line_name",
]

SWEET16_LINES: Final = ("sweet_16", "suited_16", "same_colour_16", "mixed_colour_16")


@dataclass(frozen=True, slots=True)
class Pay:
    """A pay of ``to_win`` to ``per`` (e.g. 3 to 2); a winning stake is returned plus the pay."""

    to_win: int
    per: int = 1

    @property
    def ratio(self) -> Fraction:
        """The pay per unit staked, exactly."""
        return Fraction(self.to_win, self.per)

    def __str__(self) -> str:
        return f"{self.to_win} to {self.per}"


@dataclass(frozen=True, slots=True)
class CategoryTable:
    """A paytable by hand category (Trips Plus, Odds win, Odds lose); absent categories lose."""

    name: str
    pays: Mapping[Category, Pay]

    def line(self, hand: HandValue | Category) -> tuple[Category, Pay] | None:
        """The paying line for this hand or category, or None when it does not pay."""
        category = hand if isinstance(hand, Category) else hand.category
        pay = self.pays.get(category)
        return None if pay is None else (category, pay)


@dataclass(frozen=True, slots=True)
class PocketLine:
    """One Pocket Bonus line: hole-card classes ("AA", "AKs", "AKo") and optionally the dealer's."""

    name: str
    pays: Pay
    hands: frozenset[str]
    dealer: frozenset[str] | None = None

    def matches(self, hole: tuple[Card, Card], dealer_hole: tuple[Card, Card] | None) -> bool:
        """True when the seat's hole cards (and the dealer's, for a dealer line) fit this line."""
        if hole_class(*hole) not in self.hands:
            return False
        if self.dealer is None:
            return True
        return dealer_hole is not None and hole_class(*dealer_hole) in self.dealer


@dataclass(frozen=True, slots=True)
class Sweet16Table:
    """Sweet 16 pays by line name (one of SWEET16_LINES); absent lines lose."""

    pays: Mapping[str, Pay]

    def line(self, hole: tuple[Card, Card]) -> tuple[str, Pay] | None:
        """The paying line for these two cards, or None."""
        name = sweet16_line_name(*hole)
        if name is None or name not in self.pays:
            return None
        return name, self.pays[name]


@dataclass(frozen=True, slots=True)
class Paytables:
    """Every paytable in force: Trips Plus, Odds (win and lose), Pocket Bonus and Sweet 16."""

    trips_plus: CategoryTable
    odds_win: CategoryTable
    odds_lose: CategoryTable
    pocket_bonus: tuple[PocketLine, ...]
    sweet16: Sweet16Table
    source: str = field(default="<paytables>", compare=False)

    def pocket_line(
        self, hole: tuple[Card, Card], dealer_hole: tuple[Card, Card] | None
    ) -> PocketLine | None:
        """The first Pocket Bonus line the hole cards hit (first match pays), or None."""
        return next((ln for ln in self.pocket_bonus if ln.matches(hole, dealer_hole)), None)

    @property
    def pocket_needs_dealer(self) -> bool:
        """True when some Pocket Bonus line depends on the dealer's hole cards."""
        return any(ln.dealer is not None for ln in self.pocket_bonus)


def hole_class(a: Card, b: Card) -> str:
    """The starting-hand class of two cards: "AA", "AKs" (suited) or "AKo" (offsuit)."""

    hi, lo = (a, b) if a.rank >= b.rank else (b, a)
    if hi.rank == lo.rank:
        return RANK_CHARS[hi.rank] * 2
    return RANK_CHARS[hi.rank] + RANK_CHARS[lo.rank] + ("s" if hi.suit == lo.suit else "o")


_ACE_HEARTS_FIVE_HEARTS: Final = frozenset({"Ah", "5h"})


def _blackjack_value(card: Card) -> int:
    rank = card.rank + 2  # 2..14
    if rank == 14:
        return 11
    return min(rank, 10)


def sweet16_line_name(a: Card, b: Card) -> str | None:
    """Which Sweet 16 line two cards make (ace counts 11, T-K count 10), or None if not 16."""
    if _blackjack_value(a) + _blackjack_value(b) != 16:
        return None
    if {str(a), str(b)} == _ACE_HEARTS_FIVE_HEARTS:
        return "sweet_16"
    if a.suit == b.suit:
        return "suited_16"
    if a.is_red == b.is_red:
        return "same_colour_16"
    return "mixed_colour_16"
