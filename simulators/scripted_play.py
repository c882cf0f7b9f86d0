"""Scripted play for a rehearsal of one table (`showdown simulate table`): a deck whose cards
are listed hand by hand, and a seat whose wagers and decisions are listed hand by hand.

When a script runs out, play goes on as a virtual patron (simulators.players) and a seeded
shuffle would: a short script rehearses the hands that matter and the heat still finishes.
Also the two small interfaces the virtual dealer (simulators.table_play) takes: `SeatPlayer`
(what sits at a seat) and `Decks` (where the decks come from).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, get_args

from game.errors import InvalidWager
from game.poker.cards import DECK, Card
from game.wagers.house_limits import HouseRules, check_play, check_wagers
from game.wagers.settle import SeatWagers
from simulators.players import VirtualPlayer

__all__ = ["DECISIONS", "Decision", "Decks", "HandScript", "ScriptError", "ScriptedDeck",
           "ScriptedPlayer", "SeatPlayer"]

Decision = Literal["preflop", "flop", "river", "fold"]
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)
_MULTIPLE: Final = {"preflop": 3, "flop": 2, "river": 1}


class SeatPlayer(Protocol):
    """What sits at a seat: a virtual patron (simulators.players) or a scripted one."""

    def wagers(self, *, seat: int, balance_cents: int, markers_left: int,
               rules: HouseRules) -> SeatWagers:
        """The opening wagers for this hand."""
        ...

    def play(self, *, seat: int, street: str, hole: Sequence[Card], board: Sequence[Card],
             wagers: SeatWagers, balance_cents: int) -> int:
        """Chips on Play at this decision (0: check, or fold at the river)."""
        ...


class Decks(Protocol):
    """Where the dealer's decks come from (simulators.decks.DeckSource, or a script)."""

    def next_deck(self) -> list[Card]:
        """The next hand's cards, top card first."""
        ...


class ScriptError(ValueError):
    """A scripted wager or decision the house rules do not allow (names seat and hand)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HandScript:
    """One seat's hand: Ante (Odds is the same), side bets, and where it plays (or folds).
    An Ante of 0 sits the hand out."""

    ante_cents: int
    side_bets: dict[str, int] = field(default_factory=dict)  # trips_plus, pocket_bonus, sweet16
    decision: Decision = "river"

    def wagers(self) -> SeatWagers:
        """The opening wagers as the chips lie."""
        if not self.ante_cents:
            return SeatWagers()
        sides = self.side_bets
        return SeatWagers(ante=self.ante_cents, odds=self.ante_cents,
                          trips_plus=sides.get("trips_plus", 0),
                          pocket_bonus=sides.get("pocket_bonus", 0),
                          sweet16=sides.get("sweet16", 0))


class ScriptedPlayer:
    """A seat that plays its script hand by hand, then as the virtual patron ``after``."""

    def __init__(self, *, seat: int, script: Sequence[HandScript], after: VirtualPlayer) -> None:
        self.seat = seat
        self.script = list(script)
        self.after = after
        self.hand = 0  # hands this seat was asked to wager on
        self._current: HandScript | None = None

    def wagers(self, *, seat: int, balance_cents: int, markers_left: int,
               rules: HouseRules) -> SeatWagers:
        """This hand's scripted wagers (ScriptError if the house rules refuse them)."""
        self.hand += 1
        if self.hand > len(self.script):
            self._current = None
            return self.after.wagers(seat=seat, balance_cents=balance_cents,
                                     markers_left=markers_left, rules=rules)
        self._current = self.script[self.hand - 1]
        wagers = self._current.wagers()
        if wagers.staked_cents:
            try:
                check_wagers(seat=seat, wagers=wagers, balance_cents=balance_cents,
                             markers_left=markers_left, rules=rules)
            except InvalidWager as exc:
                raise ScriptError(f"seat {seat} hand {self.hand}: the scripted wagers are"
                                  f" refused by the house rules: {exc}") from None
        return wagers

    def play(self, *, seat: int, street: str, hole: Sequence[Card], board: Sequence[Card],
             wagers: SeatWagers, balance_cents: int) -> int:
        """The scripted Play at its street (ScriptError if it cannot be afforded)."""
        current = self._current
        if current is None:
            return self.after.play(seat=seat, street=street, hole=hole, board=board,
                                   wagers=wagers, balance_cents=balance_cents)
        if current.decision != street:
            return 0  # check, or fold at the river
        multiple = _MULTIPLE[street]
        try:
            check_play(seat=seat, ante_cents=wagers.ante, multiple=multiple,
                       available_cents=balance_cents - wagers.staked_cents)
        except InvalidWager as exc:
            raise ScriptError(f"seat {seat} hand {self.hand}: the scripted {street} Play"
                              f" cannot be made: {exc}") from None
        return multiple * wagers.ante


class ScriptedDeck:
    """Each hand's listed cards first (in the order the shoe delivers them), the rest of
    the deck in a seeded shuffle under them; past the script, ``after``'s decks."""

    def __init__(self, hands: Sequence[Sequence[Card]], *, rng: random.Random,
                 after: Decks) -> None:
        self.hands = [list(h) for h in hands]
        self.rng = rng
        self.after = after
        self.dealt = 0

    def next_deck(self) -> list[Card]:
        """The next hand's 52 cards, top card first."""
        self.dealt += 1
        if self.dealt > len(self.hands):
            return self.after.next_deck()
        top = self.hands[self.dealt - 1]
        rest = [c for c in DECK if c not in set(top)]
        self.rng.shuffle(rest)
        return [*top, *rest]
