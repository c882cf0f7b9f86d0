"""The hand's phases and the one table of transitions between them.

Rule 1 (after h11): everything that moves the phase lives here, in `TRANSITIONS`,
`DECISION_AT`, `GATES` and `CONSOLE_PHASES` (and the reveal and board-card tables); the
machine's methods only decide which trigger fires.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final, Literal

from game.hand.events import Street

__all__ = [
    "BOARD_TRIGGERS",
    "CONSOLE_PHASES",
    "DECISION_AT",
    "GATES",
    "REVEAL",
    "TERMINAL",
    "TRANSITIONS",
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
REVEAL: Final[
    Mapping[Phase, tuple[Literal["flop", "turn_river"], tuple[Trigger, Trigger], int]]
] = {
    Phase.PREFLOP_DECISIONS: ("flop", (Trigger.FLOP_DRAWN, Trigger.FLOP_DONE), 3),
    Phase.FLOP_DECISIONS: ("turn_river", (Trigger.TURN_RIVER_DRAWN, Trigger.BOARD_DONE), 5),
}
# Face-up boards: the board card (by index) whose placing fires each trigger.
BOARD_TRIGGERS: Final[Mapping[int, Trigger]] = {
    0: Trigger.FLOP_DRAWN,
    2: Trigger.FLOP_DONE,
    3: Trigger.TURN_RIVER_DRAWN,
    4: Trigger.BOARD_DONE,
}
