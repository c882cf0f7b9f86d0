"""The statistics behind the deck checks (`game.decks.check`): pure maths on card sequences.

* **Successions**: pairs of cards dealt close together (at most ``gap`` positions apart) that
  are neighbours in a new-deck order. Two orders are tested: ``suit`` (same suit, ranks one
  apart, the ace next to both the two and the king: every maker's new-deck order, A-K or K-A
  by suit, in any suit sequence, dealt forwards or backwards) and ``rank`` (card indices one
  apart, 2c 2d 2h 2s 3c ...: a deck sorted by rank). For two distinct random cards the chance
  of being neighbours is exactly 2/51 in either order, so in a shuffled deck the count is
  close to Poisson with mean ``pairs x 2/51``; the p-value is that Poisson tail.
* **Repeats**: the longest run of cards dealt in the same order as an earlier shuffle, and the
  positions holding the same card as in an earlier shuffle, each with the chance of so much
  agreement between two shuffled decks.
* **Chi-square**: rank by position over a window of shuffles (each position's ranks uniform),
  with its p-value from the regularized incomplete gamma function (no SciPy needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from game.poker.cards import Card

__all__ = [
    "ORDERS",
    "RANKS",
    "ChiSquare",
    "Order",
    "Repeat",
    "Successions",
    "chi2_sf",
    "chi_square_by_position",
    "longest_common_run",
    "neighbours",
    "poisson_tail",
    "run_chance",
    "same_positions",
    "same_positions_chance",
    "successions",
]

Order = Literal["suit", "rank"]
ORDERS: Final[tuple[Order, ...]] = ("suit", "rank")
RANKS: Final = 13
_CARDS: Final = 52
_NEIGHBOUR_CHANCE: Final = 2 / 51  # two of the 51 other cards are a card's neighbours


def neighbours(order: Order, a: Card, b: Card) -> bool:
    """True when ``a`` and ``b`` sit next to each other in a new deck sorted by ``order``."""
    if order == "suit":
        return a.suit == b.suit and (a.rank - b.rank) % RANKS in (1, RANKS - 1)
    return (a.index - b.index) % _CARDS in (1, _CARDS - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Successions:
    """How many near pairs of a sequence are neighbours in one order, against chance."""

    order: Order
    gap: int
    count: int
    pairs: tuple[tuple[int, int], ...]  # the positions (i, j), i < j <= i + gap
    expected: float
    p_value: float


def successions(cards: Sequence[Card], order: Order, *, gap: int) -> Successions:
    """Count the pairs at most ``gap`` positions apart that are ``order`` neighbours."""
    n = len(cards)
    found = tuple((i, j) for i in range(n) for j in range(i + 1, min(n, i + gap + 1))
                  if neighbours(order, cards[i], cards[j]))
    expected = sum(max(0, n - d) for d in range(1, gap + 1)) * _NEIGHBOUR_CHANCE
    return Successions(order=order, gap=gap, count=len(found), pairs=found, expected=expected,
                       p_value=poisson_tail(len(found), expected))


def poisson_tail(k: int, mean: float) -> float:
    """P(X >= k) for X Poisson with this mean."""
    if k <= 0:
        return 1.0
    term = math.exp(-mean)
    below = 0.0
    for i in range(k):
        below += term
        term *= mean / (i + 1)
    return max(0.0, 1.0 - below) if below < 0.999 else _upper(k, mean)


def _upper(k: int, mean: float) -> float:
    # The tail summed directly: 1 - (sum below) loses every digit when the tail is tiny.
    term = math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1)) if mean > 0 else 0.0
    total, i = 0.0, k
    while term > 1e-300 and (total == 0.0 or term > total * 1e-16):
        total += term
        i += 1
        term *= mean / i
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class Repeat:
    """The longest run of cards one sequence shares, in order, with another."""

    length: int
    start: int  # where it begins in the new sequence
    earlier_start: int  # and in the earlier one


def longest_common_run(new: Sequence[Card], earlier: Sequence[Card]) -> Repeat:
    """The longest run of consecutive cards dealt in the same order in both sequences."""
    # by card index (a Card is equal to another of the same index): plain int lookups
    where = {card.index: i for i, card in enumerate(earlier)}
    best = Repeat(length=0, start=0, earlier_start=0)
    length = 0
    previous: int | None = None  # where.get of the card before
    for i, card in enumerate(new):
        j = where.get(card.index)
        run_on = j is not None and length and i > 0 and previous == j - 1
        previous = j
        if run_on:
            length += 1
        else:
            length = 1 if j is not None else 0
        if length > best.length:
            assert j is not None
            best = Repeat(length=length, start=i - length + 1, earlier_start=j - length + 1)
    return best


def run_chance(length: int, n: int, m: int) -> float:
    """A bound on the chance that two shuffled sequences of ``n`` and ``m`` cards share a
    run of ``length`` cards: the expected number of such runs (starts x 1/(52)_length)."""
    if length <= 0:
        return 1.0
    starts = max(0, n - length + 1) * max(0, m - length + 1)
    falling = math.prod(range(_CARDS - length + 1, _CARDS + 1)) if length <= _CARDS else math.inf
    return min(1.0, starts / falling)


def same_positions(new: Sequence[Card], earlier: Sequence[Card]) -> tuple[int, ...]:
    """The positions holding the same card in both sequences."""
    return tuple(i for i, (a, b) in enumerate(zip(new, earlier, strict=False))
                 if a.index == b.index)


def same_positions_chance(count: int, n: int, m: int) -> float:
    """The chance (Poisson, mean min(n, m)/52) of ``count`` or more positions agreeing."""
    return poisson_tail(count, min(n, m) / _CARDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChiSquare:
    """A chi-square goodness-of-fit result: the statistic, its degrees of freedom, p-value,
    and the cells that contribute most, as (position, rank, observed, expected)."""

    statistic: float
    df: int
    p_value: float
    worst: tuple[tuple[int, int, int, float], ...]


def chi_square_by_position(sequences: Sequence[Sequence[Card]], positions: int) -> ChiSquare:
    """Rank by position over these shuffles (each holds at least ``positions`` cards): for
    each of the first positions, the ranks seen against 1/13 each; df = positions x 12."""
    if not sequences or any(len(s) < positions for s in sequences) or positions < 1:
        raise ValueError(f"every sequence needs at least {positions} cards")
    expected = len(sequences) / RANKS
    counts = [[0] * RANKS for _ in range(positions)]
    for seq in sequences:
        for p in range(positions):
            counts[p][seq[p].rank] += 1
    cells = [((o - expected) ** 2 / expected, p, r, o)
             for p, row in enumerate(counts) for r, o in enumerate(row)]
    statistic = sum(c[0] for c in cells)
    df = positions * (RANKS - 1)
    worst = tuple((p, r, o, expected) for _, p, r, o in sorted(cells, reverse=True)[:5])
    return ChiSquare(statistic=statistic, df=df, p_value=chi2_sf(statistic, df), worst=worst)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if x <= 0:
        return 1.0
    return _gamma_q(df / 2, x / 2)


def _gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma Q(a, x) (series or continued fraction)."""
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:  # the series for P converges fast here
        term = total = 1 / a
        n = a
        for _ in range(10_000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # Lentz's continued fraction for Q
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)
