"""Poker hand evaluation: the best five of 5, 6 or 7 cards, as an orderable value.

`evaluate(cards)` returns a `HandValue`: higher is stronger, equal means a split. Its integer
``value`` packs the category in bits 20-23 and up to five deciding ranks (4 bits each) below,
so values order hands exactly (game/poker/hand_ranks.py). `game.poker.evaluate_batch` gives the same
integers for an (N, 7) array of card indices with numpy, for par sheets and simulations.

How it works: without a flush, a hand's value depends only on its multiset of ranks, looked up
by a base-5 key (the sum of 5^rank over the cards); with five or more cards of one suit the
hand is valued by that suit's 13-bit rank mask instead; with seven cards a flush always beats
what the ranks alone make, so the two never need comparing. Each value is computed the first
time its key is met and kept: a process pays only for the hands it values (a few microseconds
each, 73,775 rank keys and 8,192 masks at most), never for building whole tables at start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from game.errors import DuplicateCard, InvalidCard, InvalidHand
from game.poker.cards import RANK_NAMES, RANK_PLURALS, Card, parse_cards
from game.poker.hand_ranks import (
    FLUSH_SUIT,
    POW5,
    SUIT_BIT,
    SUIT_COUNT,
    Category,
    category_of,
    deciding_ranks,
    flush_value,
    rank_counts,
    ranks_value,
)

__all__ = ["Category", "HandValue", "category_of", "evaluate", "hand_value"]

_ACE: Final = 12
# Memoised values, filled on first use: base-5 rank key -> value, and suit mask -> value (0:
# not yet computed; no hand is worth 0).
_BY_RANKS: Final[dict[int, int]] = {}
_FLUSHES: Final[list[int]] = [0] * (1 << 13)


def _rank_value(key: int) -> int:
    value = _BY_RANKS[key] = ranks_value(rank_counts(key))
    return value


def _flush_value(mask: int) -> int:
    value = _FLUSHES[mask] = flush_value(mask)
    return value


def hand_value(cards: Sequence[Card]) -> int:
    """The packed integer value of the best five of 5, 6 or 7 distinct cards (fast path)."""
    n = len(cards)
    if n < 5 or n > 7:
        raise InvalidHand(f"a hand is 5, 6 or 7 cards, not {n}")
    key = suits = bits = 0
    try:
        for card in cards:
            i = card.index
            key += POW5[i]
            suits += SUIT_COUNT[i]
            bits |= SUIT_BIT[i]
    except (AttributeError, TypeError):
        bad = next((c for c in cards if not isinstance(c, Card)), cards)
        raise InvalidCard(bad, "expected a Card; use game.poker.cards.parse_card") from None
    if bits.bit_count() != n:
        seen: set[Card] = set()
        dup = next(c for c in cards if c in seen or seen.add(c))  # type: ignore[func-returns-value]
        raise DuplicateCard(dup)
    suit = FLUSH_SUIT[suits]
    if suit >= 0:
        mask = (bits >> (13 * suit)) & 0x1FFF
        return _FLUSHES[mask] or _flush_value(mask)
    try:
        return _BY_RANKS[key]
    except KeyError:
        return _rank_value(key)


class HandValue:
    """An evaluated hand: compares by strength; also names itself and shows its best five cards."""

    __slots__ = ("cards", "value")

    value: int
    cards: tuple[Card, ...]

    def __init__(self, value: int, cards: Sequence[Card]) -> None:
        self.value = value
        self.cards = tuple(cards)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HandValue) and self.value == other.value

    def __hash__(self) -> int:
        return self.value

    def __lt__(self, other: HandValue) -> bool:
        return self.value < other.value

    def __le__(self, other: HandValue) -> bool:
        return self.value <= other.value

    def __gt__(self, other: HandValue) -> bool:
        return self.value > other.value

    def __ge__(self, other: HandValue) -> bool:
        return self.value >= other.value

    def __repr__(self) -> str:
        return f"<HandValue {self.name} [{' '.join(str(c) for c in self.best_five)}]>"

    @property
    def category(self) -> Category:
        """The hand's category (royal flush distinguished from straight flush)."""
        return category_of(self.value)

    @property
    def name(self) -> str:
        """A name for displays and disputes, e.g. "Full house, fours over eights"."""
        return _describe(self.value)

    @property
    def best_five(self) -> tuple[Card, ...]:
        """The five cards that make the hand, strongest first."""
        return _best_five(self.value, self.cards)


def evaluate(cards: Sequence[Card] | str) -> HandValue:
    """Evaluate the best five of 5, 6 or 7 distinct cards (Card objects or text "Ah Kd ...")."""
    if isinstance(cards, str):
        cards = parse_cards(cards)
    return HandValue(hand_value(cards), cards)


def _describe(value: int) -> str:
    cat = category_of(value)
    r = deciding_ranks(value)
    if cat is Category.ROYAL_FLUSH:
        return "Royal flush"
    if cat in (Category.STRAIGHT_FLUSH, Category.STRAIGHT):
        return f"{cat.label}, {RANK_NAMES[r[0]]} high"
    if cat is Category.FOUR_OF_A_KIND:
        return f"Four of a kind, {RANK_PLURALS[r[0]]}, {RANK_NAMES[r[1]]} kicker"
    if cat is Category.FULL_HOUSE:
        return f"Full house, {RANK_PLURALS[r[0]]} over {RANK_PLURALS[r[1]]}"
    if cat is Category.FLUSH:
        return f"Flush, {RANK_NAMES[r[0]]} high"
    if cat is Category.THREE_OF_A_KIND:
        return f"Three of a kind, {RANK_PLURALS[r[0]]}"
    if cat is Category.TWO_PAIR:
        return f"Two pair, {RANK_PLURALS[r[0]]} and {RANK_PLURALS[r[1]]}, {RANK_NAMES[r[2]]} kicker"
    if cat is Category.PAIR:
        return f"Pair of {RANK_PLURALS[r[0]]}"
    return f"High card, {RANK_NAMES[r[0]]}"


_GROUPS: Final = {  # how many cards of each deciding rank, in order
    Category.HIGH_CARD: (1, 1, 1, 1, 1),
    Category.PAIR: (2, 1, 1, 1),
    Category.TWO_PAIR: (2, 2, 1),
    Category.THREE_OF_A_KIND: (3, 1, 1),
    Category.FULL_HOUSE: (3, 2),
    Category.FOUR_OF_A_KIND: (4, 1),
}


def _best_five(value: int, cards: Sequence[Card]) -> tuple[Card, ...]:
    cat = category_of(value)
    ranks = deciding_ranks(value)
    pool = sorted(cards, key=lambda c: (-c.rank, -c.suit))
    if cat in (Category.FLUSH, Category.STRAIGHT_FLUSH, Category.ROYAL_FLUSH):
        suit = max(range(4), key=lambda s: sum(c.suit == s for c in cards))
        pool = [c for c in pool if c.suit == suit]
    if cat in (Category.STRAIGHT, Category.STRAIGHT_FLUSH, Category.ROYAL_FLUSH):
        top = ranks[0]
        wanted = [top - i for i in range(5)] if top > 3 else [3, 2, 1, 0, _ACE]
        return tuple(next(c for c in pool if c.rank == w) for w in wanted)
    if cat is Category.FLUSH:
        return tuple(pool[:5])
    chosen: list[Card] = []
    for rank, count in zip(ranks, _GROUPS[cat], strict=False):
        chosen.extend([c for c in pool if c.rank == rank][:count])
    return tuple(chosen)
