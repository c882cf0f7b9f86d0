"""The ids the desk makes and checks: entry ids by stage, heat ids, and table ids."""

from __future__ import annotations

import secrets
from typing import Final

from game.tournament.entries import Stage
from leaderboard.desk.errors import DeskError
from wire.topics import TopicError, validate_id

__all__ = ["ENTRY_PREFIX", "FINAL_HEAT", "checked_table_id", "new_id", "semi_heat_id"]

# Entry ids are opaque: "E-" and 16 hex digits for a buy-in; a semi-final place won by entry
# E-x is S-x and a Final place won by S-x is F-x, so the chain of places can be followed
# without a patron's identity.
ENTRY_PREFIX: Final = {Stage.QUALIFYING: "E-", Stage.SEMI_FINAL: "S-", Stage.FINAL: "F-"}
FINAL_HEAT: Final = "final-1"


def new_id(prefix: str) -> str:
    """A new opaque id: `prefix` and 16 random hex digits."""
    return f"{prefix}{secrets.token_hex(8)}"


def semi_heat_id(heat: int) -> str:
    """The heat id of semi-final heat `heat` (1, 2): what the table's heat is opened with."""
    return f"semi-final-{heat}"


def checked_table_id(table: str) -> str:
    """A table id as the topics accept it, or DeskError saying what is wrong with it."""
    try:
        return validate_id("table", table)
    except TopicError as exc:
        raise DeskError(str(exc)) from None
