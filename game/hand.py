"""The hand state machine: what the table sees goes in, past-tense events come out.

Rule 1 (after h11): everything that moves the phase lives in `TRANSITIONS`, `DECISION_AT`,
`GATES` and `CONSOLE_PHASES` below; the methods only decide which trigger fires.

Inputs are what the table sees: wager snapshots per seat (RFID), cards in shoe order (placed
by the `DealSequence`), and the dealer's console (no more bets, reveal, settle, corrections,
alert resolutions, void). Each input has a triad: ``verify_x`` raises when the input must be
refused, ``can_x`` says whether it would be accepted, ``x`` records it and returns its event.
Anything the table saw that breaks the rules is not refused but recorded as an `AlertRaised`
that pauses the hand until the dealer corrects it; the machine never guesses. The machine is
pure: it never reads the clock (a timestamp may be passed in) and never draws a card.

Semantics, every input, event and alert: docs/hand-state-machine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Final, Literal, TypeVar

from game.cards import Card
from game.deal import DealSequence, Target
from game.errors import DuplicateCard, GameError, IllegalAction, InvalidCard, InvalidWager
from game.events import (
    CARD_ALERTS,
    DECISION_ALERTS,
    MULTIPLES,
    AlertKind,
    AlertRaised,
    AlertResolved,
    BetsClosed,
    CardCorrected,
    CardDealt,
    CardRead,
    CardSource,
    Event,
    HandOpened,
    HandSettled,
    HandVoided,
    PlayMade,
    SeatChecked,
    SeatFolded,
    SeatStart,
    SettleRequested,
    Street,
    StreetRevealed,
    WagersLocked,
    WagerSource,
    WagersSeen,
)
from game.house import HouseRules, check_play, check_wagers
from game.money import format_rand
from game.paytables import Paytables
from game.settle import SIDE_BETS, WAGERS, HandSettlement, SeatHand, SeatWagers, settle_hand

__all__ = [
    "CONSOLE_PHASES",
    "DECISION_AT",
    "GATES",
    "TERMINAL",
    "TRANSITIONS",
    "Hand",
    "HandState",
    "Phase",
    "Trigger",
]


class Phase(StrEnum):
    """Where the hand is; `VOID` and `SETTLED` are final. A pause is an overlay, not a phase."""

    WAGERS_OPEN = "wagers_open"
    BETS_CLOSED = "bets_closed"
    HOLE_CARDS = "hole_cards"
    PREFLOP_DECISIONS = "preflop_decisions"
    FLOP = "flop"
    FLOP_DECISIONS = "flop_decisions"
    TURN_RIVER = "turn_river"
    RIVER_DECISIONS = "river_decisions"
    SHOWDOWN = "showdown"
    SETTLED = "settled"
    VOID = "void"


class Trigger(StrEnum):
    """What moves the phase on."""

    CLOSE_BETS = "close_bets"  # console: no more bets
    HOLES_START = "holes_start"  # the first hole card is placed
    HOLES_DONE = "holes_done"  # the last hole card is placed
    FLOP_DRAWN = "flop_drawn"  # first flop card placed (or flop revealed): preflop decisions
    FLOP_DONE = "flop_done"  # third flop card placed (or flop revealed)
    TURN_RIVER_DRAWN = "turn_river_drawn"  # turn placed (or revealed): flop decisions
    BOARD_DONE = "board_done"  # river placed (or revealed): all cards are in
    DECISIONS_CLOSED = "decisions_closed"  # console: settle; river decisions (Play 1x or fold)
    SETTLE = "settle"  # the hand settled
    VOID = "void"  # console: void


_P = Phase
_T = Trigger
TRANSITIONS: Final[Mapping[Phase, Mapping[Trigger, Phase]]] = {
    _P.WAGERS_OPEN: {_T.CLOSE_BETS: _P.BETS_CLOSED, _T.VOID: _P.VOID},
    _P.BETS_CLOSED: {_T.HOLES_START: _P.HOLE_CARDS, _T.VOID: _P.VOID},
    _P.HOLE_CARDS: {_T.HOLES_DONE: _P.PREFLOP_DECISIONS, _T.VOID: _P.VOID},
    _P.PREFLOP_DECISIONS: {_T.FLOP_DRAWN: _P.FLOP, _T.VOID: _P.VOID},
    _P.FLOP: {_T.FLOP_DONE: _P.FLOP_DECISIONS, _T.VOID: _P.VOID},
    _P.FLOP_DECISIONS: {_T.TURN_RIVER_DRAWN: _P.TURN_RIVER, _T.VOID: _P.VOID},
    _P.TURN_RIVER: {_T.BOARD_DONE: _P.RIVER_DECISIONS, _T.VOID: _P.VOID},
    _P.RIVER_DECISIONS: {_T.DECISIONS_CLOSED: _P.SHOWDOWN, _T.VOID: _P.VOID},
    _P.SHOWDOWN: {_T.SETTLE: _P.SETTLED, _T.VOID: _P.VOID},
    _P.SETTLED: {},
    _P.VOID: {},
}
TERMINAL: Final = frozenset({Phase.SETTLED, Phase.VOID})
DECISION_AT: Final[Mapping[Trigger, Street]] = {
    Trigger.FLOP_DRAWN: "preflop",
    Trigger.TURN_RIVER_DRAWN: "flop",
    Trigger.DECISIONS_CLOSED: "river",
}
# A card that would fire one of these is held (not placed) while the hand is paused.
GATES: Final = frozenset({Trigger.HOLES_START, Trigger.FLOP_DRAWN, Trigger.TURN_RIVER_DRAWN})
# Console actions that move the hand, and the phases they are allowed in (never while paused).
CONSOLE_PHASES: Final[Mapping[str, frozenset[Phase]]] = {
    "no_more_bets": frozenset({Phase.WAGERS_OPEN}),
    "reveal": frozenset({Phase.PREFLOP_DECISIONS, Phase.FLOP_DECISIONS}),
    "settle": frozenset({Phase.RIVER_DECISIONS, Phase.SHOWDOWN}),
}
# Face-down boards: the street a reveal turns over, its triggers, and the board cards it needs.
_REVEAL: Final[
    Mapping[Phase, tuple[Literal["flop", "turn_river"], tuple[Trigger, Trigger], int]]
] = {
    Phase.PREFLOP_DECISIONS: ("flop", (Trigger.FLOP_DRAWN, Trigger.FLOP_DONE), 3),
    Phase.FLOP_DECISIONS: ("turn_river", (Trigger.TURN_RIVER_DRAWN, Trigger.BOARD_DONE), 5),
}
_BOARD_TRIGGERS: Final[Mapping[int, Trigger]] = {
    0: Trigger.FLOP_DRAWN,
    2: Trigger.FLOP_DONE,
    3: Trigger.TURN_RIVER_DRAWN,
    4: Trigger.BOARD_DONE,
}
_LABELS: Final = {
    "ante": "Ante",
    "odds": "Odds",
    "play": "Play",
    "trips_plus": "Trips Plus",
    "pocket_bonus": "Pocket Bonus",
    "sweet16": "Sweet 16",
    "markers": "markers",
}
_STREET_WHEN: Final = {
    "preflop": "when the flop was drawn",
    "flop": "when the turn was drawn",
    "river": "at settle",
}
_NO_WAGERS: Final = SeatWagers()
_E = TypeVar("_E", bound=Event)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandState:
    """A canonical snapshot of everything the hand holds; equal states mean identical hands."""

    hand_id: str
    phase: Phase
    paused: bool
    seats_in_hand: tuple[int, ...]
    cards: tuple[tuple[int, Target, Card], ...]
    seen: tuple[tuple[int, SeatWagers], ...]
    locked: tuple[tuple[int, SeatWagers], ...]
    plays: tuple[PlayMade, ...]
    checks: tuple[SeatChecked, ...]
    folded: tuple[int, ...]
    alerts: tuple[AlertRaised, ...]
    resolutions: tuple[AlertResolved, ...]
    settlement: HandSettlement | None
    void_reason: str | None


def _is_empty(w: SeatWagers) -> bool:
    return w.staked_cents == 0 and not w.markers


def _changed_fields(seen: SeatWagers, locked: SeatWagers, play: int | None) -> list[str]:
    """Spots that differ from the locked wagers (Play only when it is locked, ``play``)."""
    out = [n for n in WAGERS if n != "play" and seen.amount(n) != locked.amount(n)]
    if play is not None and seen.play != play:
        out.append("play")
    if seen.markers != locked.markers:
        out.append("markers")
    return out


def _describe_change(
    seen: SeatWagers, locked: SeatWagers, play: int | None, names: list[str]
) -> str:
    parts = []
    for name in names:
        if name == "markers":
            was = ", ".join(sorted(locked.markers)) or "none"
            now = ", ".join(sorted(seen.markers)) or "none"
            parts.append(f"markers {was} -> {now}")
        else:
            was_cents = play if name == "play" and play is not None else locked.amount(name)
            parts.append(
                f"{_LABELS[name]} {format_rand(was_cents)} -> {format_rand(seen.amount(name))}"
            )
    return "; ".join(parts)


class Hand:
    """One hand at one table, from wagers open to settled or void (see the module docstring)."""

    def __init__(
        self,
        *,
        hand_id: str,
        seats: Sequence[SeatStart],
        rules: HouseRules,
        paytables: Paytables,
        deal: DealSequence,
        at: datetime | None = None,
    ) -> None:
        if not isinstance(hand_id, str) or not hand_id.strip():
            raise IllegalAction("a hand needs a hand id")
        starts = tuple(seats)
        if not starts or not all(isinstance(s, SeatStart) for s in starts):
            raise IllegalAction("a hand needs its seats, each a SeatStart")
        deal.targets([s.seat for s in starts])  # seats 1..6, distinct, in seat order
        for s in starts:
            for name, value in (("balance", s.balance_cents), ("markers_left", s.markers_left)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise IllegalAction(f"seat {s.seat}: {name} must be a whole number >= 0")
        self._starts: dict[int, SeatStart] = {s.seat: s for s in starts}
        self._rules = rules
        self._paytables = paytables
        self._deal = deal
        self._hand_id = hand_id
        self._phase = Phase.WAGERS_OPEN
        self._events: list[Event] = []
        self._seen: dict[int, SeatWagers] = {}
        self._locked: dict[int, SeatWagers] = {}
        self._targets: tuple[Target, ...] | None = None
        self._cards: list[Card] = []
        self._plays: dict[int, PlayMade] = {}
        self._checks: list[SeatChecked] = []
        self._folded: set[int] = set()
        self._alerts: dict[int, AlertRaised] = {}
        self._resolved: dict[int, AlertResolved] = {}
        self._settlement: HandSettlement | None = None
        self._void_reason: str | None = None
        self._emit(HandOpened(hand_id=hand_id, seats=starts, rules=rules, deal=deal, at=at))

    # ---- read-only views -------------------------------------------------------------------

    @property
    def hand_id(self) -> str:
        """The hand's id."""
        return self._hand_id

    @property
    def phase(self) -> Phase:
        """The current phase."""
        return self._phase

    @property
    def paused(self) -> bool:
        """True while an alert is open: the hand waits for the dealer to correct it."""
        return len(self._alerts) > len(self._resolved)

    @property
    def events(self) -> tuple[Event, ...]:
        """The hand's record, in order; an action's consequences follow its input event."""
        return tuple(self._events)

    @property
    def paytables(self) -> Paytables:
        """The paytables the hand settles with."""
        return self._paytables

    @property
    def open_alerts(self) -> tuple[AlertRaised, ...]:
        """Alerts not yet resolved, oldest first."""
        return tuple(a for i, a in self._alerts.items() if i not in self._resolved)

    @property
    def seats(self) -> tuple[int, ...]:
        """The seats the hand was opened with."""
        return tuple(self._starts)

    @property
    def seats_in_hand(self) -> tuple[int, ...]:
        """Seats whose wagers were locked at no more bets (in seat order)."""
        return tuple(sorted(self._locked))

    @property
    def settlement(self) -> HandSettlement | None:
        """The settlement, once the hand has settled."""
        return self._settlement

    @property
    def next_target(self) -> Target | None:
        """Where the next card read would go (None before no more bets or when all are in)."""
        targets = self._current_targets()
        if targets is None or len(self._cards) >= len(targets):
            return None
        return targets[len(self._cards)]

    def cards(self) -> tuple[tuple[Target, Card], ...]:
        """Cards placed so far, by target, in shoe order."""
        targets = self._current_targets() or ()
        return tuple(zip(targets, self._cards, strict=False))

    def wagers(self, seat: int) -> SeatWagers | None:
        """A seat's locked wagers with its Play as it stands (None when not in the hand)."""
        locked = self._locked.get(seat)
        if locked is None:
            return None
        play = self._plays.get(seat)
        return replace(locked, play=play.amount_cents if play else 0)

    def nets_cents(self) -> dict[int, int]:
        """Each seat's chip change: from the settlement, or 0 for every seat when void."""
        if self._phase is Phase.VOID:
            return dict.fromkeys(self._starts, 0)
        if self._settlement is None:
            raise IllegalAction(f"hand {self._hand_id} is not settled")
        return {s.seat: s.net_cents for s in self._settlement.seats}

    def state(self) -> HandState:
        """The canonical snapshot used to compare a hand with its replay."""
        return HandState(
            hand_id=self._hand_id,
            phase=self._phase,
            paused=self.paused,
            seats_in_hand=self.seats_in_hand,
            cards=tuple((i, t, c) for i, (t, c) in enumerate(self.cards())),
            seen=tuple(sorted(self._seen.items())),
            locked=tuple(sorted(self._locked.items())),
            plays=tuple(self._plays[s] for s in sorted(self._plays)),
            checks=tuple(self._checks),
            folded=tuple(sorted(self._folded)),
            alerts=tuple(self._alerts.values()),
            resolutions=tuple(self._resolved.values()),
            settlement=self._settlement,
            void_reason=self._void_reason,
        )

    # ---- wager snapshots (RFID or keyed by hand) --------------------------------------------

    def verify_see_wagers(
        self, seat: int, wagers: SeatWagers, *, source: WagerSource = "rfid"
    ) -> None:
        """Refuse a malformed snapshot or one for a closed hand or an unknown seat."""
        self._verify_open()
        if seat not in self._starts:
            raise IllegalAction(f"seat {seat!r} is not at this hand (seats {list(self._starts)})")
        if source not in ("rfid", "manual"):
            raise IllegalAction(f"unknown wager source {source!r}; expected 'rfid' or 'manual'")
        if not isinstance(wagers, SeatWagers):
            raise InvalidWager(seat, "wagers", "a snapshot is a SeatWagers of amounts in cents")
        for f in fields(SeatWagers):
            if f.name == "markers":
                continue
            value = getattr(wagers, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidWager(seat, f.name, f"{value!r} is not a whole number of cents >= 0")
        if not isinstance(wagers.markers, frozenset) or not wagers.markers <= set(SIDE_BETS):
            raise InvalidWager(
                seat, "markers", f"markers go on side bets only ({', '.join(SIDE_BETS)})"
            )

    def can_see_wagers(
        self, seat: int, wagers: SeatWagers, *, source: WagerSource = "rfid"
    ) -> bool:
        """True when the snapshot would be recorded."""
        return _can(lambda: self.verify_see_wagers(seat, wagers, source=source))

    def see_wagers(
        self,
        seat: int,
        wagers: SeatWagers,
        *,
        source: WagerSource = "rfid",
        at: datetime | None = None,
    ) -> WagersSeen:
        """Record what lies on a seat's spots; after no more bets, a change is an alert."""
        self.verify_see_wagers(seat, wagers, source=source)
        event = self._emit(WagersSeen(seat=seat, wagers=wagers, source=source, at=at))
        if self._phase is Phase.WAGERS_OPEN:
            return event
        open_kinds = {a.kind for a in self.open_alerts if a.seat == seat}
        if seat in self._locked:
            if seat in self._folded or "wager_changed" in open_kinds:
                return event
            play = self._plays.get(seat)
            locked_play = play.amount_cents if play else None
            changed = _changed_fields(wagers, self._locked[seat], locked_play)
            if changed:
                detail = _describe_change(wagers, self._locked[seat], locked_play, changed)
                self._alert(
                    "wager_changed",
                    f"seat {seat}: wager changed after no more bets ({detail})",
                    seat=seat,
                    field=changed[0],
                )
        elif not _is_empty(wagers) and not open_kinds & {"wager_invalid", "late_wager"}:
            self._alert(
                "late_wager",
                f"seat {seat} is not in this hand but chips appeared on its spots "
                "after no more bets",
                seat=seat,
                field=next((n for n in WAGERS if wagers.amount(n)), "markers"),
            )
        return event

    # ---- no more bets -----------------------------------------------------------------------

    def verify_no_more_bets(self) -> None:
        """Refuse no more bets outside wagers open, while paused, or with nothing wagered."""
        self._verify_console("no_more_bets")
        if all(_is_empty(w) for w in self._seen.values()):
            raise IllegalAction("no seat has a wager: there is nothing to deal")

    def can_no_more_bets(self) -> bool:
        """True when no more bets would be accepted."""
        return _can(self.verify_no_more_bets)

    def no_more_bets(self, *, at: datetime | None = None) -> BetsClosed:
        """Close the bets: each seat with chips is checked and locked, or alerted."""
        self.verify_no_more_bets()
        event = self._emit(BetsClosed(at=at))
        for seat in self._starts:
            seen = self._seen.get(seat, _NO_WAGERS)
            if _is_empty(seen):
                continue
            try:
                candidate = self._checked_opening(seat, seen)
            except InvalidWager as exc:
                self._alert("wager_invalid", str(exc), seat=seat, field=exc.field)
            else:
                self._emit(WagersLocked(seat=seat, wagers=candidate))
        return event

    # ---- cards ------------------------------------------------------------------------------

    def verify_read_card(self, card: Card, *, source: CardSource = "shoe") -> None:
        """Refuse a card that is not a card, or any card once the hand is settled or void."""
        self._verify_open()
        if not isinstance(card, Card):
            raise InvalidCard(card, "the shoe must report a Card")
        if source not in ("shoe", "manual"):
            raise IllegalAction(f"unknown card source {source!r}; expected 'shoe' or 'manual'")

    def can_read_card(self, card: Card, *, source: CardSource = "shoe") -> bool:
        """True when the card read would be recorded (placed, or alerted)."""
        return _can(lambda: self.verify_read_card(card, source=source))

    def read_card(
        self, card: Card, *, source: CardSource = "shoe", at: datetime | None = None
    ) -> CardRead:
        """Record the next card out of the shoe and place it by the deal sequence, or alert."""
        self.verify_read_card(card, source=source)
        event = self._emit(CardRead(card=card, source=source, at=at))
        position = len(self._cards)
        targets = self._current_targets()
        if targets is None:
            self._alert(
                "card_before_bets",
                f"{card} was read before no more bets: no hand is open for cards",
                card=card,
            )
            return event
        if card in self._cards:
            where = targets[self._cards.index(card)]
            self._alert(
                "duplicate_card",
                f"{card} was read again; it is already the {where}",
                card=card,
                position=position,
            )
            return event
        if position >= len(targets):
            self._alert(
                "extra_card",
                f"{card} was read after all {len(targets)} cards of the deal sequence",
                card=card,
                position=position,
            )
            return event
        target = targets[position]
        triggers = self._card_triggers(position, target)
        if self.paused and (
            any(a.kind in CARD_ALERTS for a in self.open_alerts) or GATES & set(triggers)
        ):
            self._alert(
                "card_held",
                f"{card} was read while the hand is paused; it would be the {target}",
                card=card,
                position=position,
            )
            return event
        self._emit(CardDealt(position=position, target=target, card=card))
        for trigger in triggers:
            street = DECISION_AT.get(trigger)
            if street is not None:
                self._decide_all(street)
        return event

    # ---- face-down boards: the dealer reveals each street -----------------------------------

    def verify_reveal(self) -> None:
        """Refuse a reveal unless the board is read face down and the street's cards are in."""
        self._verify_console("reveal")
        if not self._deal.face_down:
            raise IllegalAction("this deal sequence draws each street by reading its first card")
        street, _, needed = _REVEAL[self._phase]
        read = sum(
            1 for t in (self._current_targets() or ())[: len(self._cards)] if t.kind == "board"
        )
        if read < needed:
            raise IllegalAction(f"the {street.replace('_', ' and ')} cards are not all read yet")

    def can_reveal(self) -> bool:
        """True when a reveal would be accepted."""
        return _can(self.verify_reveal)

    def reveal(self, *, at: datetime | None = None) -> StreetRevealed:
        """Turn over the next face-down street; its decisions are taken from the Play spots."""
        self.verify_reveal()
        street, triggers, _ = _REVEAL[self._phase]
        event = self._emit(StreetRevealed(street=street, at=at))
        self._decide_all(DECISION_AT[triggers[0]])
        return event

    # ---- settle -----------------------------------------------------------------------------

    def verify_settle(self) -> None:
        """Refuse settle before every card is in, or while the hand is paused."""
        self._verify_console("settle")

    def can_settle(self) -> bool:
        """True when settle would be accepted."""
        return _can(self.verify_settle)

    def settle(self, *, at: datetime | None = None) -> SettleRequested:
        """Close the decisions (Play 1x or fold) and settle the hand if no alert is raised."""
        self.verify_settle()
        river: list[tuple[int, PlayMade | SeatChecked | SeatFolded | AlertRaised]] = []
        if self._phase is Phase.RIVER_DECISIONS:
            river = [(s, self._decision(s, "river")) for s in self._undecided()]
        settlement = None
        if not any(isinstance(e, AlertRaised) for _, e in river):
            settlement = self._compute_settlement(dict(river))
        event = self._emit(SettleRequested(at=at))
        for _, decision in river:
            self._emit_decision(decision)
        if settlement is not None:
            self._emit(HandSettled(settlement=settlement))
        return event

    # ---- corrections --------------------------------------------------------------------------

    def verify_correct_card(self, position: int, card: Card, reason: str) -> None:
        """Refuse a correction of a position not yet placed, a duplicate, or one without reason."""
        self._verify_open()
        if (
            isinstance(position, bool)
            or not isinstance(position, int)
            or not (0 <= position < len(self._cards))
        ):
            raise IllegalAction(
                f"position {position!r} holds no card; positions 0..{len(self._cards) - 1} do"
                if self._cards
                else "no card has been placed yet"
            )
        if not isinstance(card, Card):
            raise InvalidCard(card, "a correction names a Card")
        _need_reason(reason)
        if self._cards[position] == card:
            raise IllegalAction(f"position {position} already holds {card}")
        if card in self._cards:
            raise DuplicateCard(card)

    def can_correct_card(self, position: int, card: Card, reason: str) -> bool:
        """True when the correction would be accepted."""
        return _can(lambda: self.verify_correct_card(position, card, reason))

    def correct_card(
        self,
        position: int,
        card: Card,
        reason: str,
        *,
        by: str | None = None,
        at: datetime | None = None,
    ) -> CardCorrected:
        """Replace a misread card at a placed position; the original read stays in the record."""
        self.verify_correct_card(position, card, reason)
        targets = self._current_targets() or ()
        return self._emit(
            CardCorrected(
                position=position,
                target=targets[position],
                card=card,
                replaced=self._cards[position],
                reason=reason,
                by=by,
                at=at,
            )
        )

    def verify_resolve_alert(self, alert_id: int, reason: str) -> None:
        """Refuse resolving an unknown or closed alert, without reason, or before it is fixed."""
        self._verify_open()
        alert = self._alerts.get(alert_id)
        if alert is None:
            raise IllegalAction(f"there is no alert {alert_id!r} in this hand")
        if alert_id in self._resolved:
            raise IllegalAction(f"alert {alert_id} is already resolved")
        _need_reason(reason)
        self._resolution_consequence(alert)

    def can_resolve_alert(self, alert_id: int, reason: str) -> bool:
        """True when the alert could be resolved now."""
        return _can(lambda: self.verify_resolve_alert(alert_id, reason))

    def resolve_alert(
        self, alert_id: int, reason: str, *, by: str | None = None, at: datetime | None = None
    ) -> AlertResolved:
        """Close an alert once the table shows the fix (a card alert's read is discarded)."""
        self.verify_resolve_alert(alert_id, reason)
        consequence = self._resolution_consequence(self._alerts[alert_id])
        event = self._emit(AlertResolved(alert_id=alert_id, reason=reason, by=by, at=at))
        if consequence is not None:
            self._emit(consequence)
        return event

    # ---- void -------------------------------------------------------------------------------

    def verify_void(self, reason: str) -> None:
        """Refuse a void of a settled or void hand, or one without a reason."""
        self._verify_open()
        _need_reason(reason)

    def can_void(self, reason: str) -> bool:
        """True when the void would be accepted."""
        return _can(lambda: self.verify_void(reason))

    def void(self, reason: str, *, by: str | None = None, at: datetime | None = None) -> HandVoided:
        """Void the hand from any phase but settled: every wager is returned."""
        self.verify_void(reason)
        return self._emit(HandVoided(reason=reason, by=by, at=at))

    # ---- internals --------------------------------------------------------------------------

    def _verify_open(self) -> None:
        if self._phase in TERMINAL:
            raise IllegalAction(
                f"hand {self._hand_id} is {self._phase.value}; it takes no more input"
            )

    def _verify_console(self, action: str) -> None:
        self._verify_open()
        if self._phase not in CONSOLE_PHASES[action]:
            allowed = ", ".join(sorted(p.value for p in CONSOLE_PHASES[action]))
            raise IllegalAction(
                f"{action.replace('_', ' ')} is not allowed in phase {self._phase.value} "
                f"(only in {allowed})"
            )
        if self.paused:
            ids = ", ".join(str(a.alert_id) for a in self.open_alerts)
            raise IllegalAction(f"the hand is paused: resolve alert(s) {ids} first")

    def _current_targets(self) -> tuple[Target, ...] | None:
        if self._targets is not None:
            return self._targets
        if self._phase is Phase.WAGERS_OPEN:
            return None
        return self._deal.targets(self.seats_in_hand)

    def _card_triggers(self, position: int, target: Target) -> tuple[Trigger, ...]:
        out: list[Trigger] = []
        if position == 0:
            out.append(Trigger.HOLES_START)
        holes = 2 * (len(self._locked) + 1)
        if position == holes - 1:
            out.append(Trigger.HOLES_DONE)
        if target.kind == "board" and not self._deal.face_down and target.index in _BOARD_TRIGGERS:
            out.append(_BOARD_TRIGGERS[target.index])
        return tuple(out)

    def _checked_opening(self, seat: int, seen: SeatWagers) -> SeatWagers:
        candidate = replace(seen, play=0)
        start = self._starts[seat]
        check_wagers(
            seat=seat,
            wagers=candidate,
            balance_cents=start.balance_cents,
            markers_left=start.markers_left,
            rules=self._rules,
        )
        return candidate

    def _undecided(self) -> list[int]:
        pending = {a.seat for a in self.open_alerts if a.kind in DECISION_ALERTS}
        return [
            s
            for s in self.seats_in_hand
            if s not in self._plays
            and s not in self._folded
            and s not in pending
            and self._locked[s].ante > 0  # side bets only (if the house allows): no decisions
        ]

    def _decision(
        self, seat: int, street: Street
    ) -> PlayMade | SeatChecked | SeatFolded | AlertRaised:
        """What the seat's Play spot means at this decision point (an alert if not legal)."""
        locked = self._locked[seat]
        seen = self._seen.get(seat, _NO_WAGERS)
        multiple = MULTIPLES[street]
        needed = multiple * locked.ante
        when = _STREET_WHEN[street]
        if seen.play == 0:
            if street == "river":
                return SeatFolded(seat=seat)
            return SeatChecked(seat=seat, street=street)
        if seen.play != needed:
            return self._new_alert(
                "play_size",
                f"seat {seat}: Play {format_rand(seen.play)} seen {when}; it must be 0 or "
                f"{format_rand(needed)} ({multiple}x the Ante of {format_rand(locked.ante)})",
                seat=seat,
                field="play",
                street=street,
            )
        try:
            check_play(
                seat=seat,
                ante_cents=locked.ante,
                multiple=multiple,
                available_cents=self._starts[seat].balance_cents - locked.staked_cents,
            )
        except InvalidWager as exc:
            return self._new_alert(
                "play_unaffordable",
                f"seat {seat}: Play {format_rand(seen.play)} seen {when} is more than the seat "
                f"can cover ({exc.reason})",
                seat=seat,
                field="play",
                street=street,
            )
        return PlayMade(seat=seat, street=street, multiple=multiple, amount_cents=needed)

    def _decide_all(self, street: Street) -> None:
        for seat in self._undecided():
            self._emit_decision(self._decision(seat, street))

    def _emit_decision(self, decision: PlayMade | SeatChecked | SeatFolded | AlertRaised) -> None:
        if isinstance(decision, AlertRaised):
            decision = replace(decision, alert_id=len(self._alerts) + 1)
        self._emit(decision)

    def _resolution_consequence(
        self, alert: AlertRaised
    ) -> WagersLocked | PlayMade | SeatChecked | SeatFolded | None:
        """What resolving this alert adds (verifies the fix: raises if the table is not right)."""
        kind, seat = alert.kind, alert.seat
        if kind in CARD_ALERTS:
            return None
        assert seat is not None
        seen = self._seen.get(seat, _NO_WAGERS)
        if kind == "wager_invalid":
            if _is_empty(seen):
                return None
            return WagersLocked(seat=seat, wagers=self._checked_opening(seat, seen))
        if kind == "late_wager":
            if not _is_empty(seen):
                raise IllegalAction(
                    f"seat {seat} is not in this hand and still has chips on its spots"
                )
            return None
        play = self._plays.get(seat)
        locked = self._locked[seat]
        changed = _changed_fields(seen, locked, play.amount_cents if play else None)
        if changed:
            detail = _describe_change(seen, locked, play.amount_cents if play else None, changed)
            raise IllegalAction(
                f"seat {seat}: the spots still differ from the locked wagers ({detail})"
            )
        if kind == "wager_changed":
            return None
        assert alert.street is not None
        decision = self._decision(seat, alert.street)
        if isinstance(decision, AlertRaised):
            raise IllegalAction(f"not fixed yet: {decision.message}")
        return decision

    def _compute_settlement(
        self, river: Mapping[int, PlayMade | SeatChecked | SeatFolded | AlertRaised]
    ) -> HandSettlement:
        targets = self._current_targets() or ()
        placed = dict(zip(targets, self._cards, strict=False))
        seats = []
        for seat in self.seats_in_hand:
            play = self._plays.get(seat)
            decided = river.get(seat)
            amount = play.amount_cents if play else 0
            if isinstance(decided, PlayMade):
                amount = decided.amount_cents
            seats.append(
                SeatHand(
                    seat=seat,
                    hole=(
                        placed[Target(kind="seat", index=0, seat=seat)],
                        placed[Target(kind="seat", index=1, seat=seat)],
                    ),
                    wagers=replace(self._locked[seat], play=amount),
                )
            )
        board = tuple(placed[Target(kind="board", index=i)] for i in range(5))
        assert len(board) == 5
        return settle_hand(
            dealer=(placed[Target(kind="dealer", index=0)], placed[Target(kind="dealer", index=1)]),
            board=(board[0], board[1], board[2], board[3], board[4]),
            seats=seats,
            paytables=self._paytables,
            marker_value_cents=self._rules.marker_value_cents,
        )

    def _new_alert(
        self,
        kind: AlertKind,
        message: str,
        *,
        seat: int | None = None,
        field: str | None = None,
        card: Card | None = None,
        position: int | None = None,
        street: Street | None = None,
    ) -> AlertRaised:
        return AlertRaised(
            alert_id=len(self._alerts) + 1,
            kind=kind,
            message=message,
            seat=seat,
            field=field,
            card=card,
            position=position,
            street=street,
        )

    def _alert(
        self,
        kind: AlertKind,
        message: str,
        *,
        seat: int | None = None,
        field: str | None = None,
        card: Card | None = None,
        position: int | None = None,
    ) -> AlertRaised:
        return self._emit(
            self._new_alert(kind, message, seat=seat, field=field, card=card, position=position)
        )

    def _fire(self, trigger: Trigger) -> None:
        nxt = TRANSITIONS[self._phase].get(trigger)
        if nxt is None:  # a bug, never an input error: inputs are verified first
            raise IllegalAction(f"no transition from {self._phase.value} on {trigger.value}")
        self._phase = nxt

    def _emit(self, event: _E) -> _E:
        """Append the event and apply it to the state: the one place where state changes."""
        self._apply(event)
        self._events.append(event)
        return event

    def _apply(self, event: Event) -> None:
        if isinstance(event, WagersSeen):
            self._seen[event.seat] = event.wagers
        elif isinstance(event, BetsClosed):
            self._fire(Trigger.CLOSE_BETS)
        elif isinstance(event, WagersLocked):
            self._locked[event.seat] = event.wagers
        elif isinstance(event, CardDealt):
            targets = self._current_targets()
            assert targets is not None
            self._targets = targets
            triggers = self._card_triggers(event.position, event.target)
            self._cards.append(event.card)
            for trigger in triggers:
                self._fire(trigger)
        elif isinstance(event, StreetRevealed):
            for trigger in _REVEAL[self._phase][1]:
                self._fire(trigger)
        elif isinstance(event, SettleRequested):
            if self._phase is Phase.RIVER_DECISIONS:
                self._fire(Trigger.DECISIONS_CLOSED)
        elif isinstance(event, PlayMade):
            self._plays[event.seat] = event
        elif isinstance(event, SeatChecked):
            self._checks.append(event)
        elif isinstance(event, SeatFolded):
            self._folded.add(event.seat)
        elif isinstance(event, AlertRaised):
            self._alerts[event.alert_id] = event
        elif isinstance(event, AlertResolved):
            self._resolved[event.alert_id] = event
        elif isinstance(event, CardCorrected):
            self._cards[event.position] = event.card
        elif isinstance(event, HandSettled):
            self._settlement = event.settlement
            self._fire(Trigger.SETTLE)
        elif isinstance(event, HandVoided):
            self._void_reason = event.reason
            self._fire(Trigger.VOID)
        # CardRead and HandOpened change nothing by themselves.


def _need_reason(reason: str) -> None:
    if not isinstance(reason, str) or not reason.strip():
        raise IllegalAction("a correction, resolution or void needs a reason")


def _can(check: Callable[[], None]) -> bool:
    try:
        check()
    except GameError:
        return False
    return True
