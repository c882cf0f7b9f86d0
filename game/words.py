"""The words people read for the machine names the commands carry (stages, wagers, alert
kinds): "semi_final" is "Semi-final" on a screen, and stays "semi_final" in JSON, files and
messages. (Prize books have their own names: "final" is the Final Prize Pool there.)
"""

from __future__ import annotations

from typing import Final

from game.hand.seats import WAGER_LABELS

__all__ = ["PRIZE_BOOKS", "WORDS", "book_name", "spoken", "spoken_list"]

WORDS: Final = {
    # stages and the demo's steps
    "qualifying": "Qualifying",
    "semi_final": "Semi-final",
    "final": "Final",
    "prizes": "prizes",
    "claims": "claims",
    # wagers: the game's own labels
    **{name: label for name, label in WAGER_LABELS.items() if name != "markers"},
}


PRIZE_BOOKS: Final = {"weekly": "weekly", "top_score": "Top Score Progressive",
                      "final": "Final Prize Pool"}


def book_name(kind: str) -> str:
    """The name people know a prize book by ("top_score" -> "Top Score Progressive")."""
    return PRIZE_BOOKS.get(kind, spoken(kind))


def spoken(name: str) -> str:
    """The words for a machine name: a known one as listed in WORDS, any other with its
    underscores as spaces ("payout_overpaid" -> "payout overpaid")."""
    return WORDS.get(name, name.replace("_", " "))


def spoken_list(names: list[str]) -> str:
    """Machine names as words, comma-separated (``"none"`` when there are none)."""
    return ", ".join(spoken(n) for n in names) or "none"
