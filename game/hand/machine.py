"""The hand state machine: what the table sees goes in, past-tense events come out.

Inputs are what the table sees: wager snapshots per seat (RFID), cards in shoe order (placed
by the `DealSequence`), and the dealer's console (no more bets, reveal, settle, corrections,
alert resolutions, void). Each input has a triad: ``verify_x`` raises when the input must be
refused, ``can_x`` says whether it would be accepted, ``x`` records it and returns its event.
Anything the table saw that breaks the rules is not refused but recorded as an `AlertRaised`
that pauses the hand until the dealer corrects it; the machine never guesses. The machine is
pure: it never reads the clock (a timestamp may be passed in) and never draws a card. The
phase moves only by the tables of `game.hand.phases` (Rule 1).

Semantics, every input, event and alert: docs/hand-state-machine.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime

from game.errors import DuplicateCard, GameError, IllegalAction, InvalidCard, InvalidWager
from game.hand.deal import Target
from game.hand.decisions import (
    Decision,
    checked_opening,
    decide,
    new_alert,
    resolution_consequence,
)
from game.hand.events import (
    CARD_ALERTS,
    DECISION_ALERTS,
    AlertKind,
    AlertRaised,
    AlertResolved,
    BetsClosed,
    CardCorrected,
    CardDealt,
    CardRead,
    CardSource,
    HandSettled,
    HandVoided,
    PlayMade,
    SeatChecked,
    SeatFolded,
    SettleRequested,
    Street,
    StreetRevealed,
    WagersLocked,
    WagerSource,
    WagersSeen,
)
from game.hand.phases import (
    CONSOLE_PHASES,
    DECISION_AT,
    GATES,
    REVEAL,
    TERMINAL,
    Phase,
)
from game.hand.seats import (
    changed_fields,
    describe_change,
    is_empty,
    verify_snapshot,
)
from game.hand.state import HandCore
from game.poker.cards import Card
from game.wagers.settle import WAGERS, HandSettlement, SeatHand, SeatWagers, settle_hand

__all__ = ["Hand"]


class Hand(HandCore):
    """One hand at one table, from wagers open to settled or void (see the module docstring)."""

    def verify_see_wagers(
        self, seat: int, wagers: SeatWagers, *, source: WagerSource = "rfid"
    ) -> None:
        """Refuse a malformed snapshot or one for a closed hand or an unknown seat."""
        self._verify_open()
        if seat not in self._seats:
            raise IllegalAction(f"seat {seat!r} is not at this hand (seats {list(self._seats)})")
        if source not in ("rfid", "manual"):
            raise IllegalAction(f"unknown wager source {source!r}; expected 'rfid' or 'manual'")
        verify_snapshot(seat, wagers)

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
        st = self._seats[seat]
        if st.locked is not None:
            if st.folded or "wager_changed" in open_kinds:
                return event
            locked_play = st.locked_play_cents
            changed = changed_fields(wagers, st.locked, locked_play)
            if changed:
                detail = describe_change(wagers, st.locked, locked_play, changed)
                self._alert(
                    "wager_changed",
                    f"seat {seat}: wager changed after no more bets ({detail})",
                    seat=seat,
                    field=changed[0],
                )
        elif not is_empty(wagers) and not open_kinds & {"wager_invalid", "late_wager"}:
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
        if all(is_empty(st.spots) for st in self._seats.values()):
            raise IllegalAction("no seat has a wager: there is nothing to deal")

    def can_no_more_bets(self) -> bool:
        """True when no more bets would be accepted."""
        return _can(self.verify_no_more_bets)

    def no_more_bets(self, *, at: datetime | None = None) -> BetsClosed:
        """Close the bets: each seat with chips is checked and locked, or alerted."""
        self.verify_no_more_bets()
        event = self._emit(BetsClosed(at=at))
        for seat, st in self._seats.items():
            if is_empty(st.spots):
                continue
            try:
                candidate = checked_opening(st, self._rules)
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
        street, _, needed = REVEAL[self._phase]
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
        street, triggers, _ = REVEAL[self._phase]
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
        river: list[tuple[int, Decision]] = []
        if self._phase is Phase.RIVER_DECISIONS:
            river = [
                (s, decide(self._seats[s], "river", alert_id=self._next_alert_id()))
                for s in self._undecided()
            ]
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
        self._consequence(alert)

    def can_resolve_alert(self, alert_id: int, reason: str) -> bool:
        """True when the alert could be resolved now."""
        return _can(lambda: self.verify_resolve_alert(alert_id, reason))

    def resolve_alert(
        self, alert_id: int, reason: str, *, by: str | None = None, at: datetime | None = None
    ) -> AlertResolved:
        """Close an alert once the table shows the fix (a card alert's read is discarded)."""
        self.verify_resolve_alert(alert_id, reason)
        consequence = self._consequence(self._alerts[alert_id])
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

    def _undecided(self) -> list[int]:
        pending = {a.seat for a in self.open_alerts if a.kind in DECISION_ALERTS}
        out = []
        for s in self.seats_in_hand:
            st = self._seats[s]
            assert st.locked is not None
            if (
                st.play is None
                and not st.folded
                and s not in pending
                and st.locked.ante > 0  # side bets only (if the house allows): no decisions
            ):
                out.append(s)
        return out

    def _decide_all(self, street: Street) -> None:
        for seat in self._undecided():
            self._emit_decision(decide(self._seats[seat], street, alert_id=self._next_alert_id()))

    def _emit_decision(self, decision: Decision) -> None:
        if isinstance(decision, AlertRaised):
            decision = replace(decision, alert_id=self._next_alert_id())
        self._emit(decision)

    def _consequence(
        self, alert: AlertRaised
    ) -> WagersLocked | PlayMade | SeatChecked | SeatFolded | None:
        state = None if alert.seat is None else self._seats[alert.seat]
        return resolution_consequence(
            alert, state, self._rules, alert_id=self._next_alert_id()
        )

    def _compute_settlement(self, river: Mapping[int, Decision]) -> HandSettlement:
        targets = self._current_targets() or ()
        placed = dict(zip(targets, self._cards, strict=False))
        seats = []
        for seat in self.seats_in_hand:
            st = self._seats[seat]
            assert st.locked is not None
            decided = river.get(seat)
            amount = st.play.amount_cents if st.play else 0
            if isinstance(decided, PlayMade):
                amount = decided.amount_cents
            seats.append(
                SeatHand(
                    seat=seat,
                    hole=(
                        placed[Target(kind="seat", index=0, seat=seat)],
                        placed[Target(kind="seat", index=1, seat=seat)],
                    ),
                    wagers=replace(st.locked, play=amount),
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
            new_alert(
                self._next_alert_id(),
                kind,
                message,
                seat=seat,
                field=field,
                card=card,
                position=position,
            )
        )

def _need_reason(reason: str) -> None:
    if not isinstance(reason, str) or not reason.strip():
        raise IllegalAction("a correction, resolution or void needs a reason")


def _can(check: Callable[[], None]) -> bool:
    try:
        check()
    except GameError:
        return False
    return True
