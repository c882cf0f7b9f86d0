"""Playing cards: parse and format the usual text ("Ah", "Td", "10d", "2c"), and card indices.

A card's index is ``rank * 4 + suit`` with ranks 0..12 for 2..A and suits 0..3 for c, d, h, s,
so sorting by index sorts by rank. There are exactly 52 `Card` objects; parsing returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from game.errors import DuplicateCard, InvalidCard

__all__ = [
    "DECK",
    "RANK_CHARS",
    "SUIT_CHARS",
    "Card",
    "card_from_index",
    "card_index",
    "check_distinct",
    "format_cards",
    "parse_card",
    "parse_cards",
]

RANK_CHARS: Final = "23456789TJQKA"
SUIT_CHARS: Final = "cdhs"
RANK_NAMES: Final = (
    "two", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten", "jack", "queen", "king", "ace",
)
RANK_PLURALS: Final = (
    "twos", "threes", "fours", "fives", "sixes", "sevens", "eights",
    "nines", "tens", "jacks", "queens", "kings", "aces",
)
SUIT_NAMES: Final = ("clubs", "diamonds", "hearts", "spades")
_SUIT_SYMBOLS: Final = {"♣": 0, "♦": 1, "♥": 2, "♠": 3, "♧": 0, "♢": 1, "♡": 2, "♤": 3}


class Card:
    """One of the 52 cards; immutable, hashable, ordered by index (rank first)."""

    __slots__ = ("index", "rank", "suit")

    index: int
    rank: int
    suit: int

    def __init__(self, rank: int, suit: int) -> None:
        object.__setattr__(self, "rank", rank)
        object.__setattr__(self, "suit", suit)
        object.__setattr__(self, "index", rank * 4 + suit)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Card is immutable")

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (card_from_index, (self.index,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Card) and other.index == self.index

    def __lt__(self, other: Card) -> bool:
        return self.index < other.index

    def __hash__(self) -> int:
        return self.index

    def __str__(self) -> str:
        return RANK_CHARS[self.rank] + SUIT_CHARS[self.suit]

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"

    @property
    def is_red(self) -> bool:
        """True for diamonds and hearts."""
        return self.suit in (1, 2)

    @property
    def name(self) -> str:
        """Spelled-out name, e.g. "ace of hearts"."""
        return f"{RANK_NAMES[self.rank]} of {SUIT_NAMES[self.suit]}"


DECK: Final[tuple[Card, ...]] = tuple(Card(i // 4, i % 4) for i in range(52))
_BY_TEXT: Final[dict[str, Card]] = {str(c): c for c in DECK}


def card_index(card: Card) -> int:
    """The card's index 0..51 (``rank * 4 + suit``)."""
    return card.index


def card_from_index(index: int) -> Card:
    """The card with index 0..51; anything else is an InvalidCard error."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 52:
        raise InvalidCard(index, "a card index is a whole number 0..51")
    return DECK[index]


def parse_card(token: str) -> Card:
    """Read one card such as "Ah", "Td", "10d", "2c" (case-insensitive; ♠♥♦♣ also accepted)."""
    if not isinstance(token, str):
        raise InvalidCard(token, "a card is text such as 'Ah' or '10d'")
    text = token.strip()
    if len(text) < 2:
        raise InvalidCard(
            token, "a card is a rank (2-9, T or 10, J, Q, K, A) and a suit (c, d, h, s)"
        )
    rank_text, suit_text = text[:-1].upper(), text[-1]
    if rank_text == "10":
        rank_text = "T"
    if len(rank_text) != 1 or rank_text not in RANK_CHARS:
        raise InvalidCard(token, f"unknown rank {text[:-1]!r}; ranks are 2-9, T or 10, J, Q, K, A")
    suit = _SUIT_SYMBOLS.get(suit_text)
    if suit is None:
        lowered = suit_text.lower()
        if lowered not in SUIT_CHARS:
            raise InvalidCard(token, f"unknown suit {suit_text!r}; suits are c, d, h, s")
        suit = SUIT_CHARS.index(lowered)
    return DECK[RANK_CHARS.index(rank_text) * 4 + suit]


def parse_cards(text: str | Iterable[str], *, distinct: bool = True) -> tuple[Card, ...]:
    """Read cards from "Ah Kd 5s" (spaces or commas) or a list of tokens; duplicates refused."""
    tokens = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    cards = tuple(parse_card(t) for t in tokens)
    if distinct:
        check_distinct(cards)
    return cards


def check_distinct(cards: Iterable[Card]) -> None:
    """Raise DuplicateCard naming the first card that appears twice."""
    seen: set[Card] = set()
    for card in cards:
        if card in seen:
            raise DuplicateCard(card)
        seen.add(card)


def format_cards(cards: Sequence[Card]) -> str:
    """Cards as space-separated text, e.g. "Ah Kd 5s"."""
    return " ".join(str(c) for c in cards)
