"""Which chips make an amount: the fewest chips, the largest values first, as a dealer
counts a wager or a payout out of a stack. Pure: chips are (uid, value) pairs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["choose_chips"]


def choose_chips(cents: int, chips: Iterable[tuple[bytes, int]]) -> list[bytes] | None:
    """UIDs of `chips` worth exactly `cents` (the largest values first, fewest chips), or
    None when these chips cannot make it."""
    by_value: dict[int, list[bytes]] = {}
    for uid, value in chips:
        if value > 0:
            by_value.setdefault(value, []).append(uid)
    values = sorted(by_value, reverse=True)
    counts = _counts(cents, values, [len(by_value[v]) for v in values])
    if counts is None:
        return None
    return [uid for value, n in zip(values, counts, strict=True) for uid in by_value[value][:n]]


def _counts(cents: int, values: Sequence[int], available: Sequence[int]) -> list[int] | None:
    """How many of each value make `cents` (depth first, most of the largest value first;
    states that failed once are not tried again)."""
    failed: set[tuple[int, int]] = set()

    def go(i: int, rest: int) -> list[int] | None:
        if rest == 0:
            return [0] * (len(values) - i)
        if i == len(values) or (i, rest) in failed:
            return None
        value = values[i]
        for n in range(min(available[i], rest // value), -1, -1):
            found = go(i + 1, rest - n * value)
            if found is not None:
                return [n, *found]
        failed.add((i, rest))
        return None

    return go(0, cents) if cents > 0 else None
