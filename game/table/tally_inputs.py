"""The console inputs of the table's tallies (`game.table.tallies`): a heat's chip count by the
dealer and its confirmation by a supervisor (`game.chips.counts`), and the steps of the deck
inventory (`game.decks.inventory`), each journaled as a ``dealer`` input with its ``action``.

A supervisor's confirmation and a destruction's witness prove themselves with their own PIN
or card at the console before the input is journaled (the daemon checks it, as at sign-in);
the journal names them in ``by`` (the confirmation) and ``witness``, and the screen's signed-in
person in ``via``. The daemon adds the house's count tolerance to a confirmation
(``tolerance_cents``, from ``[chips] count_tolerance_cents``) so replay decides alike.

A field that breaks a rule is a `TallyFieldError` naming it (the console refuses it at the door
with that field, nothing journaled).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from game.chips.counts import STAGES, Counted, Stage, read_counted
from game.decks.inventory import KINDS, MAX_DECKS, Kind, read_seals

__all__ = [
    "DECK_ACTIONS",
    "TALLY_ACTIONS",
    "TALLY_FIELDS",
    "VOUCHED_ACTIONS",
    "ConfirmCount",
    "CountChips",
    "DeckStepped",
    "TallyFieldError",
    "TallyInput",
    "read_tally",
]

DECK_ACTIONS: Final[Mapping[str, Kind]] = {f"decks_{k}": k for k in KINDS}
TALLY_ACTIONS: Final = frozenset({"count_chips", "confirm_count", *DECK_ACTIONS})
# Actions a second person vouches for with their own credential: who, and the field naming them
VOUCHED_ACTIONS: Final[Mapping[str, Literal["by", "witness"]]] = {
    "confirm_count": "by", "decks_destroyed": "witness"}
# The fields each action takes from the console (the vouching person's credential apart)
TALLY_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "count_chips": frozenset({"stage", "counted"}),
    "confirm_count": frozenset({"stage"}),
    **{a: frozenset({"decks", "seals", "lot", "source", "note"}) for a in DECK_ACTIONS},
}
_MAX_TEXT: Final = 1000


class TallyFieldError(ValueError):
    """A bad field of a tally input: ``field`` names it."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CountChips:
    """The dealer's hand count of the tray at the heat's opening or closing."""

    stage: Stage
    counted: Counted
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmCount:
    """A supervisor (``by``, who proved their credential) confirms the pending count."""

    stage: Stage
    by: str | None = None
    via: str | None = None  # the screen's signed-in person
    method: str = "pin"
    tolerance_cents: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeckStepped:
    """A step of the deck inventory, by the signed-in person (and a destruction's witness)."""

    kind: Kind
    decks: int
    seals: tuple[str, ...] = ()
    lot: str | None = None
    source: str | None = None
    note: str | None = None
    by: str | None = None
    witness: str | None = None
    method: str | None = None  # how the witness proved their credential


TallyInput = CountChips | ConfirmCount | DeckStepped


def _stage(p: Mapping[str, Any]) -> Stage:
    stage = p.get("stage")
    if stage == "opening":
        return "opening"
    if stage == "closing":
        return "closing"
    raise TallyFieldError("stage", f"{str(stage)[:40]!r} is not a count stage; one of"
                                   f" {', '.join(STAGES)}")


def _opt_text(p: Mapping[str, Any], name: str, limit: int) -> str | None:
    value = p.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise TallyFieldError(name, f"text of 1 to {limit} characters")
    return value.strip()


def _person(p: Mapping[str, Any], name: str) -> str | None:
    value = p.get(name)
    return None if value is None else str(value)


def _count(p: Mapping[str, Any]) -> CountChips:
    try:
        counted = read_counted(p.get("counted"))
    except ValueError as exc:
        raise TallyFieldError("counted", str(exc).partition(": ")[2]) from None
    return CountChips(stage=_stage(p), counted=counted, by=_person(p, "by"))


def _confirm(p: Mapping[str, Any]) -> ConfirmCount:
    tolerance = p.get("tolerance_cents", 0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise TallyFieldError("tolerance_cents", "a whole number of cents, 0 or more")
    return ConfirmCount(stage=_stage(p), by=_person(p, "by"), via=_person(p, "via"),
                        method=str(p.get("method", "pin")), tolerance_cents=tolerance)


def _deck(kind: Kind) -> Callable[[Mapping[str, Any]], DeckStepped]:
    def read(p: Mapping[str, Any]) -> DeckStepped:
        decks = p.get("decks")
        if isinstance(decks, bool) or not isinstance(decks, int) or not 0 < decks <= MAX_DECKS:
            raise TallyFieldError("decks", f"how many decks: a whole number 1 to {MAX_DECKS}")
        try:
            seals = read_seals(p.get("seals"), decks)
        except ValueError as exc:
            raise TallyFieldError("seals", str(exc).partition(": ")[2]) from None
        lot = _opt_text(p, "lot", 40)
        if lot is not None and kind != "received":
            raise TallyFieldError("lot", "a lot number is given when decks are received")
        source = _opt_text(p, "source", 100)
        if source is not None and kind != "received":
            raise TallyFieldError("source", "where decks came from is given when they are"
                                            " received")
        return DeckStepped(kind=kind, decks=decks, seals=seals, lot=lot, source=source,
                           note=_opt_text(p, "note", _MAX_TEXT), by=_person(p, "by"),
                           witness=_person(p, "witness"), method=_person(p, "method"))
    return read


_READERS: Final[Mapping[str, Callable[[Mapping[str, Any]], TallyInput]]] = {
    "count_chips": _count, "confirm_count": _confirm,
    **{action: _deck(kind) for action, kind in DECK_ACTIONS.items()},
}


def read_tally(action: str, payload: Mapping[str, Any]) -> TallyInput:
    """The typed input of a tally action's payload (TallyFieldError naming a bad field)."""
    return _READERS[action](payload)
