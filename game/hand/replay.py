"""Rebuild a hand from its record: re-run every input event, re-derive every consequence.

The record's first event is `HandOpened` (hand id, seats, house rules, deal sequence); the
paytables are passed in. Each later input event is fed back to a fresh `Hand` through the same
verify/act path the table used, and the events that come out must equal the recorded ones,
one for one. Anything else (an unknown or out-of-place event, a consequence that differs, an
input the hand refuses) is a `ReplayMismatch` naming the event. Used by tests, the CLI and
disputes.
"""

from __future__ import annotations

from collections.abc import Sequence

from game.errors import GameError
from game.hand import Hand
from game.hand.events import (
    INPUT_EVENTS,
    AlertResolved,
    BetsClosed,
    CardCorrected,
    CardRead,
    Event,
    HandOpened,
    HandVoided,
    SettleRequested,
    StreetRevealed,
    WagersSeen,
)
from game.paytables.lines import Paytables

__all__ = ["ReplayMismatch", "replay"]


class ReplayMismatch(GameError):
    """A hand's record does not replay to itself; names the event (0-based index) and why."""

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"event {index}: {reason}")


def replay(events: Sequence[Event], *, paytables: Paytables) -> Hand:
    """Rebuild the hand from its record; raises ReplayMismatch if the record is not its own."""
    if not events or not isinstance(events[0], HandOpened):
        raise ReplayMismatch(0, "a hand's record starts with HandOpened")
    opened = events[0]
    try:
        hand = Hand(
            hand_id=opened.hand_id,
            seats=opened.seats,
            rules=opened.rules,
            paytables=paytables,
            deal=opened.deal,
            at=opened.at,
        )
    except GameError as exc:
        raise ReplayMismatch(0, f"the hand cannot be opened: {exc}") from exc
    if hand.events[0] != opened:
        raise ReplayMismatch(0, "HandOpened does not match the hand it opens")
    index = 1
    while index < len(events):
        event = events[index]
        if not isinstance(event, INPUT_EVENTS) or isinstance(event, HandOpened):
            raise ReplayMismatch(
                index,
                f"expected an input event, found {type(event).__name__} (a consequence "
                "that the previous input did not produce)",
            )
        before = len(hand.events)
        try:
            _feed(hand, event)
        except GameError as exc:
            raise ReplayMismatch(index, f"{type(event).__name__} refused: {exc}") from exc
        produced = hand.events[before:]
        recorded = tuple(events[index : index + len(produced)])
        if produced != recorded:
            at = next(
                (i for i, (p, r) in enumerate(zip(produced, recorded, strict=False)) if p != r),
                len(recorded),
            )
            got = type(recorded[at]).__name__ if at < len(recorded) else "the end of the record"
            raise ReplayMismatch(
                index + at,
                f"replay produced {type(produced[at]).__name__}, the record has {got}"
                + (f": {produced[at]!r} != {recorded[at]!r}" if at < len(recorded) else ""),
            )
        index += len(produced)
    return hand


def _feed(hand: Hand, event: Event) -> None:
    """Give the hand the input an event records."""
    if isinstance(event, WagersSeen):
        hand.see_wagers(event.seat, event.wagers, source=event.source, at=event.at)
    elif isinstance(event, BetsClosed):
        hand.no_more_bets(at=event.at)
    elif isinstance(event, CardRead):
        hand.read_card(event.card, source=event.source, at=event.at)
    elif isinstance(event, StreetRevealed):
        hand.reveal(at=event.at)  # the street revealed is compared with the record
    elif isinstance(event, SettleRequested):
        hand.settle(at=event.at)
    elif isinstance(event, CardCorrected):
        hand.correct_card(event.position, event.card, event.reason, by=event.by, at=event.at)
    elif isinstance(event, AlertResolved):
        hand.resolve_alert(event.alert_id, event.reason, by=event.by, at=event.at)
    elif isinstance(event, HandVoided):
        hand.void(event.reason, by=event.by, at=event.at)
