"""The heads-up hand state machine: `Hand`, its phases and the transition table.

`phases` holds the phases and every table that moves them (Rule 1), `seats` the per-seat
record and the checks on a seat's spots, `decisions` what the spots mean at each decision
point and the alerts, `machine` the `Hand` itself with its verify/can/act triads.
"""

from game.hand.machine import Hand
from game.hand.phases import (
    CONSOLE_PHASES,
    DECISION_AT,
    GATES,
    TERMINAL,
    TRANSITIONS,
    Phase,
    Trigger,
)
from game.hand.state import HandState

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
