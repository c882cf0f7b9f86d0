"""The game core's exceptions, one tree so callers catch at the right level.

    GameError
    ├── InvalidCard          a card token that is not a card ("1x", "Zz")
    ├── DuplicateCard        the same card twice where one deck is in play
    ├── InvalidHand          a hand of the wrong size for the operation
    ├── InvalidWager         a wager that breaks the rules (names the seat and the field)
    ├── Refusal              an action the rules (or a person's credential) refuse
    │   └── IllegalAction    an action the hand's current phase does not allow
    └── ConfigError          a settings or paytable file that breaks its format
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DuplicateCard",
    "GameError",
    "IllegalAction",
    "InvalidCard",
    "InvalidHand",
    "InvalidWager",
    "Refusal",
]


class GameError(Exception):
    """Root of every error raised by the pure game core."""


class InvalidCard(GameError, ValueError):
    """A card token could not be read as a card."""

    def __init__(self, token: object, why: str = "") -> None:
        self.token = token
        detail = f": {why}" if why else ""
        super().__init__(f"invalid card {token!r}{detail}")


class DuplicateCard(GameError, ValueError):
    """The same card appears twice in what must be one deck."""

    def __init__(self, card: object) -> None:
        self.card = card
        super().__init__(f"duplicate card {card}")


class InvalidHand(GameError, ValueError):
    """A set of cards that does not fit the operation (wrong size, etc.)."""


class InvalidWager(GameError, ValueError):
    """A wager that breaks the rules; names the seat and the wager (field)."""

    def __init__(self, seat: int | None, field: str, reason: str) -> None:
        self.seat = seat
        self.field = field
        self.reason = reason
        who = f"seat {seat}: " if seat is not None else ""
        super().__init__(f"{who}{field}: {reason}")


class Refusal(GameError):
    """Well-formed, but refused by the rules or for a person's credential (the command line's
    exit code 3): a seat taken, a window closed, a person not eligible."""


class IllegalAction(Refusal):
    """An action that the current phase of the hand (or stage) does not allow."""


class ConfigError(GameError, ValueError):
    """A configuration or paytable file that is wrong; names the file, key and reason."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {reason}")
