"""Virtual players: seeded, explainable choices of wagers and Play decisions.

They stand in for patrons in the demo, in simulated tables and in tests. A player sees only
what a patron sees (its own hole cards and the board so far) and never breaks the house rules:
every wager it makes passes `game.wagers.house_limits.check_wagers`, every Play is affordable.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from game.errors import InvalidWager
from game.poker.cards import Card
from game.poker.evaluate import Category, evaluate
from game.wagers.house_limits import HouseRules, check_play, check_wagers, least_stake_cents
from game.wagers.settle import SIDE_BETS, SeatWagers

__all__ = ["PlayerStyle", "VirtualPlayer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerStyle:
    """How a virtual player bets: Ante in minimum units, side-bet appetite, boldness."""

    ante_units: tuple[int, ...] = (1, 1, 2, 4)  # multiples of the minimum Ante, drawn at random
    side_bet_chance: float = 0.35  # per side bet per hand
    side_bet_units: tuple[int, ...] = (1, 2, 4)  # multiples of the denomination
    bold: bool = False  # plays 3x on more hands


class VirtualPlayer:
    """One seat's virtual patron, deciding with its own seeded random generator."""

    def __init__(self, *, name: str, rng: random.Random, style: PlayerStyle | None = None) -> None:
        self.name = name
        self.rng = rng
        self.style = style or PlayerStyle()

    def wagers(
        self, *, seat: int, balance_cents: int, markers_left: int, rules: HouseRules
    ) -> SeatWagers:
        """Opening wagers this player can afford under the house rules (none if it cannot play)."""
        if balance_cents < least_stake_cents(rules):
            return SeatWagers()
        ante = rules.min_ante_cents * self.rng.choice(self.style.ante_units)
        sides: dict[str, int] = {}
        markers: set[str] = set()
        for bet in SIDE_BETS:
            if self.rng.random() < self.style.side_bet_chance:
                units = self.rng.choice(self.style.side_bet_units)
                sides[bet] = min(rules.side_bet_max_cents, rules.denomination_cents * units)
            if markers_left > len(markers) and self.rng.random() < 0.3:
                markers.add(bet)
        while True:  # shrink until affordable: drop side bets first, then halve the Ante
            wagers = SeatWagers(ante=ante, odds=ante, markers=frozenset(markers), **sides)
            try:
                check_wagers(seat=seat, wagers=wagers, balance_cents=balance_cents,
                             markers_left=markers_left, rules=rules)
            except InvalidWager:  # refused: make the bet smaller
                if sides:
                    sides.popitem()
                elif ante > rules.min_ante_cents:
                    half = ante // 2 // rules.denomination_cents * rules.denomination_cents
                    ante = max(rules.min_ante_cents, half)
                elif markers:
                    markers.pop()
                else:
                    return SeatWagers()
            else:
                return wagers

    def play(
        self, *, seat: int, street: str, hole: Sequence[Card], board: Sequence[Card],
        wagers: SeatWagers, balance_cents: int,
    ) -> int:
        """Chips to put on Play at this decision ("preflop", "flop", "river"): 0 to check/fold."""
        multiple = {"preflop": 3, "flop": 2, "river": 1}[street]
        if not self._wants_to_play(street, hole, board):
            return 0
        available = balance_cents - wagers.staked_cents
        try:
            check_play(seat=seat, ante_cents=wagers.ante, multiple=multiple,
                       available_cents=available)
        except InvalidWager:  # cannot afford it: check, or fold at the river
            return 0
        return multiple * wagers.ante

    def _wants_to_play(self, street: str, hole: Sequence[Card], board: Sequence[Card]) -> bool:
        hi, lo = sorted((c.rank for c in hole), reverse=True)
        if street == "preflop":
            if hi in (lo, 12):  # any pair, any ace
                return True
            return self.style.bold and hi >= 10 and lo >= 8
        mine = evaluate([*hole, *board])
        if street == "flop":
            board_pairs = len(board) - len({c.rank for c in board})
            return mine.category >= Category.TWO_PAIR or (
                mine.category == Category.PAIR and board_pairs == 0
            )
        board_only = evaluate(list(board))
        return mine > board_only or mine.category >= Category.STRAIGHT or hi >= 11
