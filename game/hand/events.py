"""The hand's record: frozen, past-tense events, plain data a codec can serialise.

Every input to a `game.hand.Hand` is recorded as exactly one *input event* (`INPUT_EVENTS`),
followed by the events it caused (*consequences*: cards placed, decisions, alerts, the
settlement). The input events alone rebuild the hand (`game.hand.replay`); the consequences are
re-derived and must come out identical. Corrections, alert resolutions and voids are new
events with a reason; nothing already recorded is ever changed.

Docs: docs/hand-state-machine.md lists every event with its meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, TypeAlias

from game.hand.deal import DealSequence, Target
from game.poker.cards import Card
from game.wagers.house_limits import HouseRules
from game.wagers.settle import HandSettlement, SeatWagers

__all__ = [
    "ALERT_KINDS",
    "CARD_ALERTS",
    "DECISION_ALERTS",
    "INPUT_EVENTS",
    "MULTIPLES",
    "WAGER_ALERTS",
    "AlertKind",
    "AlertRaised",
    "AlertResolved",
    "BetsClosed",
    "CardCorrected",
    "CardDealt",
    "CardRead",
    "CardSource",
    "Event",
    "HandOpened",
    "HandSettled",
    "HandVoided",
    "InputEvent",
    "PlayMade",
    "SeatChecked",
    "SeatFolded",
    "SeatStart",
    "SettleRequested",
    "Street",
    "StreetRevealed",
    "WagerSource",
    "WagersLocked",
    "WagersSeen",
]

Street = Literal["preflop", "flop", "river"]
MULTIPLES: Final[dict[str, int]] = {"preflop": 3, "flop": 2, "river": 1}
CardSource = Literal["shoe", "manual"]
WagerSource = Literal["rfid", "manual"]

AlertKind = Literal[
    "wager_invalid",  # at no more bets: a seat's wagers break a rule or a house limit
    "late_wager",  # chips appeared on a seat that is not in the hand, after no more bets
    "wager_changed",  # a locked spot (or a Play already made) changed after no more bets
    "play_size",  # the Play spot at a decision point is neither 0 nor the street's size
    "play_unaffordable",  # the Play is the right size but more than the seat's chips allow
    "card_before_bets",  # a card read before no more bets: no hand is open for cards
    "duplicate_card",  # a card already in this hand read again
    "extra_card",  # a card read after the sequence is complete
    "card_held",  # a card read while paused that cannot be placed until the dealer corrects
]
WAGER_ALERTS: Final = frozenset({"wager_invalid", "late_wager", "wager_changed"})
DECISION_ALERTS: Final = frozenset({"play_size", "play_unaffordable"})
CARD_ALERTS: Final = frozenset({"card_before_bets", "duplicate_card", "extra_card", "card_held"})
ALERT_KINDS: Final = WAGER_ALERTS | DECISION_ALERTS | CARD_ALERTS


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatStart:
    """A seat at the start of the hand: its entry's chips and Final bonus markers left."""

    seat: int
    balance_cents: int
    markers_left: int = 0


# ---- input events: one per input, in the order received ----------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HandOpened:
    """The hand was opened with these seats, house rules and deal sequence (paytables aside)."""

    hand_id: str
    seats: tuple[SeatStart, ...]
    rules: HouseRules
    deal: DealSequence
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WagersSeen:
    """A reader (or the dealer, keying by hand) reported what lies on a seat's spots."""

    seat: int
    wagers: SeatWagers
    source: WagerSource = "rfid"
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BetsClosed:
    """The dealer called no more bets."""

    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRead:
    """The shoe (or the dealer, keying by hand) reported the next card out of the shoe."""

    card: Card
    source: CardSource = "shoe"
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreetRevealed:
    """The dealer turned a face-down street over (face-down board sequences only)."""

    street: Literal["flop", "turn_river"]
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SettleRequested:
    """The dealer pressed settle: decisions close, then the hand settles if nothing is open."""

    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardCorrected:
    """A misread card was replaced by the card actually dealt there; the original is kept above."""

    position: int
    target: Target
    card: Card
    replaced: Card
    reason: str
    by: str | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertResolved:
    """The dealer (or supervisor) fixed what an alert named, and said how."""

    alert_id: int
    reason: str
    by: str | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HandVoided:
    """The hand was voided: every wager is returned (every net is 0)."""

    reason: str
    by: str | None = None
    at: datetime | None = None


# ---- consequences: derived from the inputs, re-derived on replay --------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WagersLocked:
    """A seat is in the hand with these wagers (Play 0 here: it is decided later)."""

    seat: int
    wagers: SeatWagers


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDealt:
    """A card read was placed at this position of the deal sequence."""

    position: int
    target: Target
    card: Card


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayMade:
    """A seat's Play was seen at a decision point, the right size: it is now locked."""

    seat: int
    street: Street
    multiple: int
    amount_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatChecked:
    """A seat's Play spot was empty at the preflop or flop decision point."""

    seat: int
    street: Street


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatFolded:
    """A seat's Play spot was empty at settle: the seat folds (Ante and Odds lose)."""

    seat: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertRaised:
    """Something the table saw breaks the rules: the hand pauses until the dealer corrects it.

    ``seat``/``field`` name the wager, ``card``/``position`` the card read, where they apply;
    ``street`` names the decision of a Play alert.
    """

    alert_id: int
    kind: AlertKind
    message: str
    seat: int | None = None
    field: str | None = None
    card: Card | None = None
    position: int | None = None
    street: Street | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HandSettled:
    """Every wager of the hand settled once, in one record."""

    settlement: HandSettlement


InputEvent: TypeAlias = (
    HandOpened
    | WagersSeen
    | BetsClosed
    | CardRead
    | StreetRevealed
    | SettleRequested
    | CardCorrected
    | AlertResolved
    | HandVoided
)
Event: TypeAlias = (
    InputEvent
    | WagersLocked
    | CardDealt
    | PlayMade
    | SeatChecked
    | SeatFolded
    | AlertRaised
    | HandSettled
)
INPUT_EVENTS: Final = (
    HandOpened,
    WagersSeen,
    BetsClosed,
    CardRead,
    StreetRevealed,
    SettleRequested,
    CardCorrected,
    AlertResolved,
    HandVoided,
)
