"""The rules that value a hand, shared by the per-call and the numpy evaluators.

A hand's packed value puts its category in bits 20-23 and up to five deciding ranks (4 bits
each) below, so integer order is hand order. Without a flush the value depends only on the
multiset of ranks (`ranks_value`); with five or more cards of one suit, on that suit's 13-bit
rank mask (`flush_value`). The per-card constants below let an evaluator sum a hand's cards
into a rank key, a suit counter and a card bitset.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from enum import IntEnum
from typing import Final

__all__ = [
    "CATEGORY_SHIFT",
    "FLUSH_SUIT",
    "POW5",
    "RANK_KEYS",
    "SUIT_BIT",
    "SUIT_COUNT",
    "Category",
    "category_of",
    "deciding_ranks",
    "flush_value",
    "rank_counts",
    "rank_multisets",
    "ranks_value",
]


class Category(IntEnum):
    """Hand categories, weakest first; a royal flush is its own category for the paytables."""

    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    ROYAL_FLUSH = 9

    @property
    def key(self) -> str:
        """The name used in config files, e.g. "full_house"."""
        return self.name.lower()

    @property
    def label(self) -> str:
        """The name for people, e.g. "Full house"."""
        return self.name.replace("_", " ").capitalize()


CATEGORY_SHIFT: Final = 20
_ACE: Final = 12
# Additive rank keys: every multiset of 7 ranks (at most 4 of each) has a distinct sum
# (the smallest such keys in increasing order; tests/game/poker/test_evaluate.py re-checks it).
RANK_KEYS: Final = (0, 1, 5, 22, 98, 453, 2031, 8698, 22854, 83661, 262349, 636345, 1479181)
_STRAIGHTS: Final = (
    *((top, 0b11111 << (top - 4)) for top in range(_ACE, 3, -1)),
    (3, (1 << _ACE) | 0b1111),  # the wheel, five high
)
# Per card index (rank x 4 + suit): 5^rank (a base-5 digit per rank), a 3-bit counter per
# suit, and the card's bit in a suit-major 52-bit set.
POW5: Final = tuple(5 ** (i // 4) for i in range(52))
SUIT_COUNT: Final = tuple(1 << (3 * (i % 4)) for i in range(52))
SUIT_BIT: Final = tuple(1 << (13 * (i % 4) + i // 4) for i in range(52))


def _pack(category: Category, ranks: Sequence[int]) -> int:
    value = int(category)
    for i in range(5):
        value = (value << 4) | (ranks[i] if i < len(ranks) else 0)
    return value


def category_of(value: int) -> Category:
    """The category of a packed hand value."""
    return Category(value >> CATEGORY_SHIFT)


def deciding_ranks(value: int) -> tuple[int, ...]:
    """The five deciding ranks of a packed value (0 where the category has fewer)."""
    return tuple((value >> (16 - 4 * i)) & 0xF for i in range(5))


def _straight_top(mask: int) -> int | None:
    for top, pattern in _STRAIGHTS:
        if mask & pattern == pattern:
            return top
    return None


def flush_value(mask: int) -> int:
    """Value of a hand whose best five come from one suit holding the ranks in ``mask``."""
    top = _straight_top(mask)
    if top is not None:
        return _pack(Category.ROYAL_FLUSH if top == _ACE else Category.STRAIGHT_FLUSH, (top,))
    return _pack(Category.FLUSH, [r for r in range(_ACE, -1, -1) if mask >> r & 1][:5])


def ranks_value(counts: Sequence[int]) -> int:
    """Value of a hand from its 13 rank counts alone (no flush possible or considered)."""
    present = [r for r in range(_ACE, -1, -1) if counts[r]]
    quads = [r for r in present if counts[r] == 4]
    trips = [r for r in present if counts[r] == 3]
    pairs = [r for r in present if counts[r] == 2]
    if quads:
        return _pack(Category.FOUR_OF_A_KIND, [quads[0], next(r for r in present if r != quads[0])])
    if trips and (len(trips) > 1 or pairs):
        return _pack(Category.FULL_HOUSE, [trips[0], max(trips[1:] + pairs)])
    top = _straight_top(sum(1 << r for r in present))
    if top is not None:
        return _pack(Category.STRAIGHT, (top,))
    if trips:
        kickers = [r for r in present if r != trips[0]][:2]
        return _pack(Category.THREE_OF_A_KIND, [trips[0], *kickers])
    if len(pairs) > 1:
        high, low = pairs[0], pairs[1]
        kicker = next(r for r in present if r not in (high, low))
        return _pack(Category.TWO_PAIR, (high, low, kicker))
    if pairs:
        return _pack(Category.PAIR, [pairs[0], *[r for r in present if r != pairs[0]][:3]])
    return _pack(Category.HIGH_CARD, present[:5])


def rank_counts(key: int) -> tuple[int, ...]:
    """The 13 rank counts of a base-5 rank key (the sum of `POW5` over a hand's cards)."""
    return tuple((key // 5**r) % 5 for r in range(13))


def rank_multisets(size: int) -> Iterator[tuple[int, ...]]:
    """Every vector of 13 rank counts (each 0..4) adding up to ``size``."""
    for combo in itertools.combinations_with_replacement(range(13), size):
        counts = [0] * 13
        for r in combo:
            counts[r] += 1
        if max(counts) <= 4:
            yield tuple(counts)


def _flush_suit(suit_counts: int) -> int:
    for suit in range(4):
        if (suit_counts >> (3 * suit)) & 7 >= 5:
            return suit
    return -1


# Summed suit counters of up to 7 cards -> the suit holding 5 or more of them, or -1.
FLUSH_SUIT: Final = tuple(_flush_suit(s) for s in range(1 << 12))
