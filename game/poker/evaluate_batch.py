"""Vectorised hand evaluation with numpy: the same integers as `game.poker.evaluate.hand_value`.

`evaluate_batch` values an (N, 7) array of card indices (par sheets, simulations);
`seven_card_category_counts` values all C(52, 7) hands. Apart from game/poker/evaluate.py so that a
process valuing a few hands (the CLI, the table daemon) never imports numpy or builds the dense
31 MB rank table this path uses.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

from game.errors import DuplicateCard, InvalidCard, InvalidHand
from game.poker.hand_ranks import (
    CATEGORY_SHIFT,
    FLUSH_SUIT,
    RANK_KEYS,
    SUIT_BIT,
    SUIT_COUNT,
    Category,
    flush_value,
    rank_multisets,
    ranks_value,
)

__all__ = ["evaluate_batch", "seven_card_category_counts"]


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
    key_of_rank = np.array(RANK_KEYS, dtype=np.int32)
    largest_key = RANK_KEYS[-1] * 4 + RANK_KEYS[-2] * 3  # four aces and three kings
    rank_table = np.zeros(largest_key + 1, dtype=np.int32)
    for counts in rank_multisets(7):
        key = sum(c * k for c, k in zip(counts, RANK_KEYS, strict=True))
        rank_table[key] = ranks_value(counts)
    flushes = [flush_value(m) if m.bit_count() >= 5 else 0 for m in range(1 << 13)]
    idx = np.arange(52)
    return _BatchTables(
        card_key=key_of_rank[idx // 4],
        card_suits=np.array(SUIT_COUNT, dtype=np.int32),
        card_bits=np.array(SUIT_BIT, dtype=np.int64),
        rank_table=rank_table,
        flush_suit=np.array(FLUSH_SUIT, dtype=np.int8),
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
            counts += np.bincount(values >> CATEGORY_SHIFT, minlength=16)
        return counts

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        total = sum(pool.map(count_for_low, range(52)), np.zeros(16, dtype=np.int64))
    return {cat: int(total[cat]) for cat in Category}
