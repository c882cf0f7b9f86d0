"""An independent, deliberately naive hand ranker used as the oracle for the fast evaluator.

It ranks five cards the textbook way (group ranks by count, look for flush and straight) and
takes the best of every 5-card subset; it shares no code or tables with game.poker.evaluate.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from game.poker.cards import Card


def rank_five(cards: Sequence[Card]) -> tuple[int, tuple[int, ...]]:
    """(category 0..9, tie-break ranks) for exactly five cards; tuples compare like hands."""
    ranks = sorted((c.rank + 2 for c in cards), reverse=True)
    flush = len({c.suit for c in cards}) == 1
    distinct = sorted(set(ranks), reverse=True)
    top = None
    if len(distinct) == 5 and distinct[0] - distinct[4] == 4:
        top = distinct[0]
    elif distinct == [14, 5, 4, 3, 2]:
        top = 5
    counts = Counter(ranks)
    groups = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = [n for _, n in groups]
    by_group = tuple(r for r, _ in groups)
    if top is not None and flush:
        return (9 if top == 14 else 8, (top,))
    if shape[0] == 4:
        return (7, by_group)
    if shape[:2] == [3, 2]:
        return (6, by_group)
    if flush:
        return (5, tuple(ranks))
    if top is not None:
        return (4, (top,))
    if shape[0] == 3:
        return (3, by_group)
    if shape[:2] == [2, 2]:
        return (2, by_group)
    if shape[0] == 2:
        return (1, by_group)
    return (0, tuple(ranks))


def best_of(cards: Sequence[Card]) -> tuple[int, tuple[int, ...]]:
    """The best rank_five over every 5-card subset of 5 to 7 cards."""
    return max(rank_five(five) for five in itertools.combinations(cards, 5))
