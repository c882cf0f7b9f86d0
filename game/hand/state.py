"""What a hand holds, and the one place where it changes.

`HandCore` keeps the seats (one `SeatState` each), the cards placed, the decisions and the
alerts, and applies each event to them in `_emit`; `game.hand.machine.Hand` adds the inputs
(the verify/can/act triads) that decide which events to emit. `HandState` is the canonical
snapshot a hand and its replay are compared by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

from game.errors import IllegalAction
from game.hand.deal import DealSequence, Target
from game.hand.events import (
    AlertRaised,
    AlertResolved,
    BetsClosed,
    CardCorrected,
    CardDealt,
    Event,
    HandOpened,
    HandSettled,
    HandVoided,
    PlayMade,
    SeatChecked,
    SeatFolded,
    SeatStart,
    SettleRequested,
    StreetRevealed,
    WagersLocked,
    WagersSeen,
)
from game.hand.phases import BOARD_TRIGGERS, REVEAL, TRANSITIONS, Phase, Trigger
from game.hand.seats import SeatState
from game.paytables.lines import Paytables
from game.poker.cards import Card
from game.wagers.house_limits import HouseRules
from game.wagers.settle import HandSettlement, SeatWagers

__all__ = ["HandCore", "HandState"]

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


class HandCore:
    """What a hand holds, and the one place it changes: `_emit` applies each event."""

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
        self._seats: dict[int, SeatState] = {s.seat: SeatState(start=s) for s in starts}
        self._rules = rules
        self._paytables = paytables
        self._deal = deal
        self._hand_id = hand_id
        self._phase = Phase.WAGERS_OPEN
        self._events: list[Event] = []
        self._targets: tuple[Target, ...] | None = None
        self._cards: list[Card] = []
        self._checks: list[SeatChecked] = []
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
        return tuple(self._seats)

    @property
    def seats_in_hand(self) -> tuple[int, ...]:
        """Seats whose wagers were locked at no more bets (in seat order)."""
        return tuple(sorted(s for s, st in self._seats.items() if st.locked is not None))

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
        st = self._seats.get(seat)
        if st is None or st.locked is None:
            return None
        return replace(st.locked, play=st.play.amount_cents if st.play else 0)

    def nets_cents(self) -> dict[int, int]:
        """Each seat's chip change: from the settlement, or 0 for every seat when void."""
        if self._phase is Phase.VOID:
            return dict.fromkeys(self._seats, 0)
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
            seen=tuple((s, st.seen) for s, st in self._by_seat() if st.seen is not None),
            locked=tuple((s, st.locked) for s, st in self._by_seat() if st.locked is not None),
            plays=tuple(st.play for _, st in self._by_seat() if st.play is not None),
            checks=tuple(self._checks),
            folded=tuple(s for s, st in self._by_seat() if st.folded),
            alerts=tuple(self._alerts.values()),
            resolutions=tuple(self._resolved.values()),
            settlement=self._settlement,
            void_reason=self._void_reason,
        )

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
        holes = 2 * (len(self.seats_in_hand) + 1)
        if position == holes - 1:
            out.append(Trigger.HOLES_DONE)
        if target.kind == "board" and not self._deal.face_down and target.index in BOARD_TRIGGERS:
            out.append(BOARD_TRIGGERS[target.index])
        return tuple(out)

    def _by_seat(self) -> list[tuple[int, SeatState]]:
        return sorted(self._seats.items())

    def _next_alert_id(self) -> int:
        return len(self._alerts) + 1

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
            self._seats[event.seat].seen = event.wagers
        elif isinstance(event, BetsClosed):
            self._fire(Trigger.CLOSE_BETS)
        elif isinstance(event, WagersLocked):
            self._seats[event.seat].locked = event.wagers
        elif isinstance(event, CardDealt):
            targets = self._current_targets()
            assert targets is not None
            self._targets = targets
            triggers = self._card_triggers(event.position, event.target)
            self._cards.append(event.card)
            for trigger in triggers:
                self._fire(trigger)
        elif isinstance(event, StreetRevealed):
            for trigger in REVEAL[self._phase][1]:
                self._fire(trigger)
        elif isinstance(event, SettleRequested):
            if self._phase is Phase.RIVER_DECISIONS:
                self._fire(Trigger.DECISIONS_CLOSED)
        elif isinstance(event, PlayMade):
            self._seats[event.seat].play = event
        elif isinstance(event, SeatChecked):
            self._checks.append(event)
        elif isinstance(event, SeatFolded):
            self._seats[event.seat].folded = True
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
