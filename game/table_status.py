"""The table core's state as plain data: what `showdown table status`, the status message,
the simulators and the table's screens read (heat, seats, spots, the hand in play, the payout
waiting to be checked, who is signed in, scores waiting for acknowledgement).

Read-only: nothing here changes the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from game.desk_commands import DeskOrder
from game.settle import WAGERS

if TYPE_CHECKING:
    from game.table_rules import TableCore

__all__ = ["core_status", "held_view"]


def core_status(core: TableCore) -> dict[str, Any]:
    """A summary of the core's state (JSON-ready)."""
    hand = core.hand
    session = core.session
    return {
        "heat": core.heat_id,
        "stage": session.rules.stage.value if session else None,
        "seats": {str(s): {"entry_id": e.entry_id, "balance": e.balance_cents,
                           "hands_played": e.hands_played, "markers_left": e.markers_left,
                           "last_hand_at": core.last_hand_at.get(e.entry_id)}
                  for s, e in sorted(session.seats.items())} if session else {},
        "spots": spots_view(core),
        "hand": None if hand is None else {
            "hand_id": hand.hand_id, "phase": hand.phase.value, "paused": hand.paused,
            "seats_in_hand": list(hand.seats_in_hand),
            "cards_read": len(hand.cards()),
            "next_target": None if hand.next_target is None else str(hand.next_target),
            "open_alerts": [{"id": a.alert_id, "kind": a.kind, "message": a.message}
                            for a in hand.open_alerts],
        },
        "payout": None if core.payout is None else core.payout.view(),
        "device_faults": dict(sorted(core.device_faults.items())),
        "deck": core.decks.status(),
        "staff": core.staff.view(),
        "roster_version": None if core.staff.roster is None else core.staff.roster.version,
        "hands_opened": core.hands_opened,
        "alerts": core.alerts_raised,
        "inputs": core.inputs_applied,
        "unacknowledged_scores": sorted(core.unacknowledged),
        "disputed_scores": sorted(core.disputed),
        "held_commands": [held_view(h) for h in core.held],
        "chips": core.chips_view(),
    }


def spots_view(core: TableCore) -> dict[str, dict[str, Any]]:
    """Each seated entry's spots: wager -> cents, and "markers" -> the side bets marked."""
    if core.session is None:
        return {}
    view: dict[str, dict[str, Any]] = {}
    for seat, entry in sorted(core.session.seats.items()):
        wagers, _ = core.spots.wagers(seat, entry.entry_id, report=False)
        view[str(seat)] = {w: wagers.amount(w) for w in WAGERS if wagers.amount(w)}
        if wagers.markers:
            view[str(seat)]["markers"] = sorted(wagers.markers)
    return view


def held_view(order: DeskOrder) -> dict[str, Any]:
    """A desk command held until the hand ends, as the status shows it."""
    shown = {"command": order.name, **order.command.args()}
    return {k: shown[k] for k in ("command", "seat", "entry_id", "hand_id", "reason")
            if shown.get(k) is not None}
