"""Where a simulated dealer's decks come from, so tests and technicians can rehearse the deck
checks (docs/deck-integrity.md): ``shuffled`` (a seeded shuffle per hand, the default),
``factory`` (every deck in new-deck order), ``riffle`` (a new deck riffled once,
Gilbert-Shannon-Reeds) and ``repeated`` (one seeded shuffle dealt again every hand).

A source given no generator makes one from ``seed`` (drawn when not given) and logs it; one
given a generator leaves the logging to its owner. The same seed gives the same decks. ``shuffled``
draws exactly as the dealers always did (``rng.shuffle(list(DECK))``), so a given generator
deals the same cards as before.
"""

from __future__ import annotations

import random
from typing import Final, Literal, get_args

import structlog

from game.poker.cards import DECK, Card

__all__ = ["DECK_MODES", "FACTORY_ORDER", "DeckMode", "DeckSource", "riffle"]

DeckMode = Literal["shuffled", "factory", "riffle", "repeated"]
DECK_MODES: Final[tuple[DeckMode, ...]] = get_args(DeckMode)
_SUITS_AKKA: Final = ((3, False), (1, False), (0, True), (2, True))  # s, d ascending; c, h down
_log = structlog.get_logger("simulators.decks")


def _factory() -> tuple[Card, ...]:
    """The usual US new-deck order ("A-K-K-A"): spades A..K, diamonds A..K, clubs K..A,
    hearts K..A (ace low in the box)."""
    ranks = [12, *range(12)]  # A, 2 .. K as rank numbers
    out: list[Card] = []
    for suit, down in _SUITS_AKKA:
        for rank in reversed(ranks) if down else ranks:
            out.append(DECK[rank * 4 + suit])
    return tuple(out)


FACTORY_ORDER: Final[tuple[Card, ...]] = _factory()


def riffle(deck: list[Card], rng: random.Random) -> list[Card]:
    """One Gilbert-Shannon-Reeds riffle: cut binomially, then drop from each packet with
    chance proportional to its size."""
    cut = sum(rng.random() < 0.5 for _ in deck)
    left, right = deck[:cut], deck[cut:]
    out: list[Card] = []
    i = j = 0
    while i < len(left) or j < len(right):
        rest_l, rest_r = len(left) - i, len(right) - j
        if rng.random() * (rest_l + rest_r) < rest_l:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


class DeckSource:
    """Decks for a simulated dealer, one per hand, in the chosen mode (see the module)."""

    def __init__(self, mode: DeckMode = "shuffled", *, rng: random.Random | None = None,
                 seed: int | None = None) -> None:
        if mode not in DECK_MODES:
            raise ValueError(f"deck mode {mode!r} is not one of {', '.join(DECK_MODES)}")
        self.mode: DeckMode = mode
        self.seed = seed
        self._repeated: list[Card] | None = None
        if rng is None:  # its own generator: the seed is logged so the decks can be dealt again
            self.seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
            rng = random.Random(self.seed)
            _log.info("deck_source", mode=mode, seed=self.seed)
        self.rng = rng

    def next_deck(self) -> list[Card]:
        """The next hand's 52 cards, top card first."""
        if self.mode == "factory":
            return list(FACTORY_ORDER)
        if self.mode == "riffle":
            return riffle(list(FACTORY_ORDER), self.rng)
        if self.mode == "repeated":
            if self._repeated is None:
                self._repeated = self._shuffled()
            return list(self._repeated)
        return self._shuffled()

    def _shuffled(self) -> list[Card]:
        deck = list(DECK)
        self.rng.shuffle(deck)
        return deck
