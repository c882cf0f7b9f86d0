"""Poker hand-range notation: "AA", "AKs,AQs", "AKo", "AK", "22-KK", "QQ+", "A2s-A5s", "ATs+".

A range is a set of starting-hand classes: a pair ("AA", 6 combinations), a suited hand
("AKs", 4) or an offsuit hand ("AKo", 12), the higher rank always first. `parse_range` reads
the usual comma-separated notation into a frozenset of classes; `format_range` writes a set
back compactly, and `class_combos` lists the concrete card pairs of a class.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from functools import cache
from typing import Final

from game.errors import GameError
from game.poker.cards import DECK, RANK_CHARS, Card

__all__ = [
    "ALL_CLASSES",
    "InvalidRange",
    "class_combos",
    "combos",
    "format_range",
    "is_class",
    "parse_range",
    "sort_classes",
]


class InvalidRange(GameError, ValueError):
    """A hand-range text that does not follow the notation; names the bad token."""

    def __init__(self, token: str, reason: str) -> None:
        self.token = token
        self.reason = reason
        super().__init__(f"bad range item {token!r}: {reason}")


def _pair(rank: int) -> str:
    return RANK_CHARS[rank] * 2


def _unpaired(high: int, low: int, suffix: str) -> str:
    return RANK_CHARS[high] + RANK_CHARS[low] + suffix


# Every class, strongest-looking first: pairs AA..22, then by top card and kicker, s before o.
ALL_CLASSES: Final[tuple[str, ...]] = (
    *(_pair(r) for r in range(12, -1, -1)),
    *(
        _unpaired(hi, lo, sfx)
        for hi in range(12, 0, -1)
        for lo in range(hi - 1, -1, -1)
        for sfx in ("s", "o")
    ),
)
_CLASS_SET: Final = frozenset(ALL_CLASSES)
_ORDER: Final = {cls: i for i, cls in enumerate(ALL_CLASSES)}

# One hand: two ranks and an optional s/o suffix, all case-insensitive.
_HAND: Final = "([2-9TJQKA])([2-9TJQKA])([SO]?)"
_SINGLE: Final = re.compile(_HAND)
_PLUS: Final = re.compile(_HAND + r"\+")
_SPAN: Final = re.compile(_HAND + "-" + _HAND)


def is_class(text: str) -> bool:
    """True when ``text`` is exactly one class in canonical form ("AA", "AKs", "AKo")."""
    return text in _CLASS_SET


def combos(hand_class: str) -> int:
    """How many two-card combinations a class has: pair 6, suited 4, offsuit 12."""
    if not is_class(hand_class):
        raise InvalidRange(hand_class, "not a hand class such as AA, AKs or AKo")
    if len(hand_class) == 2:
        return 6
    return 4 if hand_class[2] == "s" else 12


@cache
def class_combos(hand_class: str) -> tuple[tuple[Card, Card], ...]:
    """The concrete card pairs (higher card first) of a class, in deck order."""
    count = combos(hand_class)  # validates
    hi, lo = RANK_CHARS.index(hand_class[0]), RANK_CHARS.index(hand_class[1])
    pairs: list[tuple[Card, Card]] = []
    for a, b in itertools.combinations(DECK, 2):
        top, bottom = (b, a) if b.rank >= a.rank else (a, b)
        if top.rank != hi or bottom.rank != lo:
            continue
        suited = top.suit == bottom.suit
        if len(hand_class) == 3 and suited != (hand_class[2] == "s"):
            continue
        pairs.append((top, bottom))
    assert len(pairs) == count
    return tuple(pairs)


def _classes(token: str, high: int, low: int, suffix: str) -> list[str]:
    """The classes of one hand written as ranks + suffix ("AK" is both AKs and AKo)."""
    if high == low:
        if suffix:
            raise InvalidRange(token, "a pair cannot be suited or offsuit")
        return [_pair(high)]
    if high < low:
        raise InvalidRange(
            token, f"write the higher rank first ({RANK_CHARS[low]}{RANK_CHARS[high]})"
        )
    return [_unpaired(high, low, sfx) for sfx in ((suffix,) if suffix else ("s", "o"))]


def _ranks(match: re.Match[str], offset: int = 0) -> tuple[int, int, str]:
    hi = RANK_CHARS.index(match.group(offset + 1))
    lo = RANK_CHARS.index(match.group(offset + 2))
    return hi, lo, match.group(offset + 3).lower()


def _expand(token: str, text: str) -> list[str]:
    """Expand one comma-separated item (whitespace already removed, upper-cased)."""
    if m := _SINGLE.fullmatch(text):
        return _classes(token, *_ranks(m))
    if m := _PLUS.fullmatch(text):
        hi, lo, sfx = _ranks(m)
        _classes(token, hi, lo, sfx)  # validates the starting hand
        if hi == lo:
            return [_pair(r) for r in range(lo, 13)]
        return [c for k in range(lo, hi) for c in _classes(token, hi, k, sfx)]
    if m := _SPAN.fullmatch(text):
        hi1, lo1, sfx1 = _ranks(m)
        hi2, lo2, sfx2 = _ranks(m, 3)
        _classes(token, hi1, lo1, sfx1)
        _classes(token, hi2, lo2, sfx2)
        if hi1 == lo1 and hi2 == lo2:
            first, last = sorted((hi1, hi2))
            return [_pair(r) for r in range(first, last + 1)]
        if hi1 == lo1 or hi2 == lo2:
            raise InvalidRange(token, "a range joins two pairs or two hands of one top card")
        if hi1 != hi2:
            raise InvalidRange(token, "both ends of a range must have the same top card")
        if sfx1 != sfx2:
            raise InvalidRange(token, "both ends of a range must have the same suffix (s, o)")
        first, last = sorted((lo1, lo2))
        return [c for k in range(first, last + 1) for c in _classes(token, hi1, k, sfx1)]
    raise InvalidRange(
        token, "expected a hand like AA, AKs, AKo or AK, a span like 22-KK or A2s-A5s, "
        "or a plus like QQ+ or ATs+"
    )


def parse_range(text: str) -> frozenset[str]:
    """Parse comma-separated range notation into the set of classes it names.

    Whitespace is ignored and ranks and suffixes are case-insensitive; an empty range, an
    empty item (",,") or anything not in the notation raises `InvalidRange` naming the item.
    """
    if not text.strip():
        raise InvalidRange(text, "the range is empty")
    out: set[str] = set()
    for item in text.split(","):
        token = item.strip()
        if not token:
            raise InvalidRange(item, "empty item (two commas, or a comma at an end)")
        if not token.isascii():
            raise InvalidRange(token, "only the characters 2-9 T J Q K A s o + - may be used")
        out.update(_expand(token, "".join(token.split()).upper()))
    return frozenset(out)


def _runs(values: Iterable[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers, as (first, last), ascending."""
    runs: list[tuple[int, int]] = []
    for v in sorted(values):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def format_range(classes: Iterable[str]) -> str:
    """Write a set of classes back in compact notation ("QQ+, 22-TT, ATs+, AKo").

    ``parse_range(format_range(s)) == s`` for every set of valid classes.
    """
    chosen = set(classes)
    for c in chosen:
        combos(c)  # validates
    items: list[str] = []
    pairs = [RANK_CHARS.index(c[0]) for c in chosen if len(c) == 2]
    for first, last in reversed(_runs(pairs)):
        if last == 12 and first < last:
            items.append(_pair(first) + "+")
        elif first == last:
            items.append(_pair(first))
        else:
            items.append(f"{_pair(first)}-{_pair(last)}")
    for hi in range(12, 0, -1):
        for sfx in ("s", "o"):
            kickers = [RANK_CHARS.index(c[1]) for c in chosen
                       if len(c) == 3 and c[0] == RANK_CHARS[hi] and c[2] == sfx]
            for first, last in reversed(_runs(kickers)):
                if last == hi - 1 and first < last:
                    items.append(_unpaired(hi, first, sfx) + "+")
                elif first == last:
                    items.append(_unpaired(hi, first, sfx))
                else:
                    items.append(f"{_unpaired(hi, first, sfx)}-{_unpaired(hi, last, sfx)}")
    return ", ".join(items)


def sort_classes(classes: Iterable[str]) -> list[str]:
    """Classes in the order of `ALL_CLASSES` (pairs high to low, then by top card)."""
    return sorted(classes, key=_ORDER.__getitem__)
