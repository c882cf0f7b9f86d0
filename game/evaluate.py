"""Poker hand evaluation: the best five of 5, 6 or 7 cards, as an orderable value.

`evaluate(cards)` returns a `HandValue`: higher is stronger, equal means a split. Its integer
``value`` packs the category in bits 20-23 and up to five deciding ranks (4 bits each) below,
so values order hands exactly. `evaluate_batch` gives the same integers for an (N, 7) array of
card indices with numpy, for par sheets and simulations.

How it works: without a flush, a hand's value depends only on its multiset of ranks, so every
multiset is valued once and looked up by an additive key (one number per rank, chosen so that
no two 7-card multisets share a sum). With five or more cards of one suit the hand is valued by
that suit's 13-bit rank mask instead; with seven cards a flush always beats what the ranks
alone make, so the two never need comparing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from game.cards import RANK_NAMES, RANK_PLURALS, Card, parse_cards
from game.errors import DuplicateCard, InvalidCard, InvalidHand

__all__ = [
    "Category",
    "HandValue",
    "category_of",
    "evaluate",
    "evaluate_batch",
    "hand_value",
    "seven_card_category_counts",
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


_CATEGORY_SHIFT: Final = 20
_ACE: Final = 12
# Additive rank keys: every multiset of 7 ranks (at most 4 of each) has a distinct sum
# (the smallest such keys in increasing order; tests/game/test_evaluate.py re-checks it).
_RANK_KEYS: Final = (0, 1, 5, 22, 98, 453, 2031, 8698, 22854, 83661, 262349, 636345, 1479181)
_STRAIGHTS: Final = (
    *((top, 0b11111 << (top - 4)) for top in range(_ACE, 3, -1)),
    (3, (1 << _ACE) | 0b1111),  # the wheel, five high
)


def _pack(category: Category, ranks: Sequence[int]) -> int:
    value = int(category)
    for i in range(5):
        value = (value << 4) | (ranks[i] if i < len(ranks) else 0)
    return value


def category_of(value: int) -> Category:
    """The category of a packed hand value."""
    return Category(value >> _CATEGORY_SHIFT)


def _deciding_ranks(value: int) -> tuple[int, ...]:
    return tuple((value >> (16 - 4 * i)) & 0xF for i in range(5))


def _straight_top(mask: int) -> int | None:
    for top, pattern in _STRAIGHTS:
        if mask & pattern == pattern:
            return top
    return None


def _flush_value(mask: int) -> int:
    """Value of a hand whose best five come from one suit holding the ranks in ``mask``."""
    top = _straight_top(mask)
    if top is not None:
        return _pack(Category.ROYAL_FLUSH if top == _ACE else Category.STRAIGHT_FLUSH, (top,))
    return _pack(Category.FLUSH, [r for r in range(_ACE, -1, -1) if mask >> r & 1][:5])


def _ranks_value(counts: Sequence[int]) -> int:
    """Value of a hand from its rank counts alone (no flush possible or considered)."""
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


def _rank_multisets(size: int) -> Iterator[tuple[int, ...]]:
    """Every vector of 13 rank counts (each 0..4) adding up to ``size``."""
    for combo in itertools.combinations_with_replacement(range(13), size):
        counts = [0] * 13
        for r in combo:
            counts[r] += 1
        if max(counts) <= 4:
            yield tuple(counts)


@cache
def _tables() -> tuple[dict[int, int], tuple[int, ...]]:
    """Per-call lookups: rank-multiset key (base 5) -> value, and 13-bit suit mask -> value."""
    by_ranks: dict[int, int] = {}
    for size in (5, 6, 7):
        for counts in _rank_multisets(size):
            key = sum(c * 5**r for r, c in enumerate(counts))
            by_ranks[key] = _ranks_value(counts)
    flushes = tuple(_flush_value(m) if m.bit_count() >= 5 else 0 for m in range(1 << 13))
    return by_ranks, flushes


_POW5: Final = tuple(5 ** (i // 4) for i in range(52))
_SUIT_COUNT: Final = tuple(1 << (3 * (i % 4)) for i in range(52))  # 3-bit counter per suit
_SUIT_BIT: Final = tuple(1 << (13 * (i % 4) + i // 4) for i in range(52))  # suit-major bitset


def _flush_suit(suit_counts: int) -> int:
    for suit in range(4):
        if (suit_counts >> (3 * suit)) & 7 >= 5:
            return suit
    return -1


_FLUSH_SUIT: Final = tuple(_flush_suit(s) for s in range(1 << 12))


def hand_value(cards: Sequence[Card]) -> int:
    """The packed integer value of the best five of 5, 6 or 7 distinct cards (fast path)."""
    n = len(cards)
    if n < 5 or n > 7:
        raise InvalidHand(f"a hand is 5, 6 or 7 cards, not {n}")
    by_ranks, flushes = _tables()
    key = suits = bits = 0
    try:
        for card in cards:
            i = card.index
            key += _POW5[i]
            suits += _SUIT_COUNT[i]
            bits |= _SUIT_BIT[i]
    except (AttributeError, TypeError):
        bad = next((c for c in cards if not isinstance(c, Card)), cards)
        raise InvalidCard(bad, "expected a Card; use game.cards.parse_card") from None
    if bits.bit_count() != n:
        seen: set[Card] = set()
        dup = next(c for c in cards if c in seen or seen.add(c))  # type: ignore[func-returns-value]
        raise DuplicateCard(dup)
    suit = _FLUSH_SUIT[suits]
    if suit >= 0:
        return flushes[(bits >> (13 * suit)) & 0x1FFF]
    return by_ranks[key]


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
    r = _deciding_ranks(value)
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
    ranks = _deciding_ranks(value)
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


# ----------------------------------------------------------------------------------------
# Vectorised evaluation (numpy), same integers as hand_value.


@dataclass(frozen=True, slots=True)
class _BatchTables:
    card_key: NDArray[np.int32]  # card index -> additive rank key
    card_suits: NDArray[np.int32]  # card index -> 3-bit suit counter
    card_bits: NDArray[np.int64]  # card index -> bit in a suit-major 52-bit set
    rank_table: NDArray[np.int32]  # summed rank keys of 7 cards -> value
    flush_suit: NDArray[np.int8]  # summed suit counters -> suit with 5+ cards, or -1
    flush_table: NDArray[np.int32]  # 13-bit rank mask of one suit -> value


@cache
def _batch_tables() -> _BatchTables:
    """Build the numpy tables once (about 31 MB, mostly the rank table)."""
    key_of_rank = np.array(_RANK_KEYS, dtype=np.int32)
    largest_key = _RANK_KEYS[-1] * 4 + _RANK_KEYS[-2] * 3  # four aces and three kings
    rank_table = np.zeros(largest_key + 1, dtype=np.int32)
    for counts in _rank_multisets(7):
        key = sum(c * k for c, k in zip(counts, _RANK_KEYS, strict=True))
        rank_table[key] = _ranks_value(counts)
    _, flushes = _tables()
    idx = np.arange(52)
    return _BatchTables(
        card_key=key_of_rank[idx // 4],
        card_suits=np.array(_SUIT_COUNT, dtype=np.int32),
        card_bits=np.array(_SUIT_BIT, dtype=np.int64),
        rank_table=rank_table,
        flush_suit=np.array(_FLUSH_SUIT, dtype=np.int8),
        flush_table=np.array(flushes, dtype=np.int32),
    )


def _values_from_sums(
    key: NDArray[np.int32], suits: NDArray[np.int32], bits: NDArray[np.int64]
) -> NDArray[np.int32]:
    """Hand values of 7-card hands from their summed rank keys, suit counters and card bitsets."""
    t = _batch_tables()
    values: NDArray[np.int32] = t.rank_table[key]
    suit = t.flush_suit[suits]
    rows = np.flatnonzero(suit >= 0)
    if rows.size:
        masks = (bits[rows] >> (13 * suit[rows].astype(np.int64))) & 0x1FFF
        values[rows] = t.flush_table[masks]
    return values


def evaluate_batch(
    indices: NDArray[np.integer] | Sequence[Sequence[int]], *, check: bool = True
) -> NDArray[np.int32]:
    """Values of an (N, 7) array of card indices, equal to `hand_value` of each row.

    With ``check`` (the default) rows are verified to hold 7 distinct indices 0..51.
    """
    hands = np.asarray(indices)
    if hands.ndim != 2 or hands.shape[1] != 7:
        raise InvalidHand(f"need an (N, 7) array of card indices, got {hands.shape}")
    if hands.size and not np.issubdtype(hands.dtype, np.integer):
        raise InvalidCard(hands.dtype, "card indices must be integers 0..51")
    if check and hands.size:
        low, high = int(hands.min()), int(hands.max())
        if low < 0 or high > 51:
            raise InvalidCard(low if low < 0 else high, "a card index is 0..51")
    t = _batch_tables()
    out = np.empty(len(hands), dtype=np.int32)
    chunk = 1 << 16
    for start in range(0, len(hands), chunk):
        part = hands[start : start + chunk]
        bits = np.bitwise_or.reduce(t.card_bits[part], axis=1)
        if check:  # seven distinct cards set seven distinct bits
            dup_rows = np.flatnonzero(np.bitwise_count(bits) != 7)
            if dup_rows.size:
                row = start + int(dup_rows[0])
                raise DuplicateCard(f"in row {row}: {sorted(hands[row].tolist())}")
        out[start : start + chunk] = _values_from_sums(
            t.card_key[part].sum(axis=1, dtype=np.int32),
            t.card_suits[part].sum(axis=1, dtype=np.int32),
            bits,
        )
    return out


def seven_card_category_counts(*, workers: int = 2) -> dict[Category, int]:
    """Count all C(52, 7) = 133,784,560 seven-card hands by category, each fully valued.

    Every 7-card hand is its two lowest cards plus a 5-card combination of higher cards;
    the 5-card partial sums are computed once and the pair added to a whole slice at a time.
    """
    t = _batch_tables()
    combos = np.array(list(itertools.combinations(range(52), 5)), dtype=np.int8)
    key5 = t.card_key[combos].sum(axis=1, dtype=np.int32)
    suits5 = t.card_suits[combos].sum(axis=1, dtype=np.int32)
    bits5 = np.bitwise_or.reduce(t.card_bits[combos], axis=1)
    # first row whose lowest card is > b, for each b
    first = np.searchsorted(combos[:, 0], np.arange(53), side="left")
    del combos

    def count_for_low(a: int) -> NDArray[np.int64]:
        counts = np.zeros(16, dtype=np.int64)
        for b in range(a + 1, 52):
            s = int(first[b + 1])
            if s >= len(key5):
                break
            values = _values_from_sums(
                key5[s:] + (t.card_key[a] + t.card_key[b]),
                suits5[s:] + (t.card_suits[a] + t.card_suits[b]),
                bits5[s:] | (t.card_bits[a] | t.card_bits[b]),
            )
            counts += np.bincount(values >> _CATEGORY_SHIFT, minlength=16)
        return counts

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        total = sum(pool.map(count_for_low, range(52)), np.zeros(16, dtype=np.int64))
    return {cat: int(total[cat]) for cat in Category}
