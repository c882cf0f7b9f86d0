"""What a seat's spots mean at each decision point, and the alerts the hand raises.

Pure functions of one seat's `SeatState`: the opening check at no more bets, the Play spot
read at a decision point (check, Play, fold, or an alert when it is not legal), and what
resolving an alert adds once the table shows the fix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from game.errors import IllegalAction, InvalidWager
from game.hand.events import (
    CARD_ALERTS,
    MULTIPLES,
    AlertKind,
    AlertRaised,
    PlayMade,
    SeatChecked,
    SeatFolded,
    Street,
    WagersLocked,
)
from game.hand.seats import SeatState, changed_fields, describe_change, is_empty
from game.money import format_rand
from game.poker.cards import Card
from game.wagers.house_limits import HouseRules, check_play, check_wagers
from game.wagers.settle import SeatWagers

__all__ = ["Decision", "checked_opening", "decide", "new_alert", "resolution_consequence"]

Decision = PlayMade | SeatChecked | SeatFolded | AlertRaised
_STREET_WHEN: Final = {
    "preflop": "when the flop was drawn",
    "flop": "when the turn was drawn",
    "river": "at settle",
}


def new_alert(
    alert_id: int,
    kind: AlertKind,
    message: str,
    *,
    seat: int | None = None,
    field: str | None = None,
    card: Card | None = None,
    position: int | None = None,
    street: Street | None = None,
) -> AlertRaised:
    """An alert with its id and what it is about."""
    return AlertRaised(
        alert_id=alert_id,
        kind=kind,
        message=message,
        seat=seat,
        field=field,
        card=card,
        position=position,
        street=street,
    )


def checked_opening(state: SeatState, rules: HouseRules) -> SeatWagers:
    """The seat's spots as they would be locked at no more bets (raises InvalidWager)."""
    candidate = replace(state.spots, play=0)
    check_wagers(
        seat=state.seat,
        wagers=candidate,
        balance_cents=state.start.balance_cents,
        markers_left=state.start.markers_left,
        rules=rules,
    )
    return candidate


def decide(state: SeatState, street: Street, *, alert_id: int) -> Decision:
    """What the seat's Play spot means at this decision point (an alert if not legal)."""
    seat = state.seat
    locked = state.locked
    assert locked is not None
    seen = state.spots
    multiple = MULTIPLES[street]
    needed = multiple * locked.ante
    when = _STREET_WHEN[street]
    if seen.play == 0:
        if street == "river":
            return SeatFolded(seat=seat)
        return SeatChecked(seat=seat, street=street)
    if seen.play != needed:
        return new_alert(
            alert_id,
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
            available_cents=state.start.balance_cents - locked.staked_cents,
        )
    except InvalidWager as exc:
        return new_alert(
            alert_id,
            "play_unaffordable",
            f"seat {seat}: Play {format_rand(seen.play)} seen {when} is more than the seat "
            f"can cover ({exc.reason})",
            seat=seat,
            field="play",
            street=street,
        )
    return PlayMade(seat=seat, street=street, multiple=multiple, amount_cents=needed)


def resolution_consequence(
    alert: AlertRaised, state: SeatState | None, rules: HouseRules, *, alert_id: int
) -> WagersLocked | PlayMade | SeatChecked | SeatFolded | None:
    """What resolving this alert adds (verifies the fix: raises if the table is not right)."""
    kind = alert.kind
    if kind in CARD_ALERTS:
        return None
    assert state is not None
    seat, seen = state.seat, state.spots
    if kind == "wager_invalid":
        if is_empty(seen):
            return None
        return WagersLocked(seat=seat, wagers=checked_opening(state, rules))
    if kind == "late_wager":
        if not is_empty(seen):
            raise IllegalAction(
                f"seat {seat} is not in this hand and still has chips on its spots"
            )
        return None
    locked = state.locked
    assert locked is not None
    play = state.locked_play_cents
    changed = changed_fields(seen, locked, play)
    if changed:
        detail = describe_change(seen, locked, play, changed)
        raise IllegalAction(
            f"seat {seat}: the spots still differ from the locked wagers ({detail})"
        )
    if kind == "wager_changed":
        return None
    assert alert.street is not None
    decision = decide(state, alert.street, alert_id=alert_id)
    if isinstance(decision, AlertRaised):
        raise IllegalAction(f"not fixed yet: {decision.message}")
    return decision
