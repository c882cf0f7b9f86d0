"""Helpers the hand state machine tests share: the spec paytables, a hand, snapshots, reads.

The shoe orders in the tests are written out by hand for the default sequence (rules.md §0
item 5): pass 1 seats then dealer, pass 2 the same, burn, flop, burn, turn, river.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TypeVar

from game.hand import Hand
from game.hand.deal import DEFAULT_DEAL, DealSequence
from game.hand.events import (
    AlertRaised,
    Event,
    SeatStart,
)
from game.paytables.lines import CategoryTable, Pay, Paytables, PocketLine, Sweet16Table
from game.poker.cards import parse_cards
from game.poker.evaluate import Category
from game.wagers.house_limits import HouseRules
from game.wagers.settle import SeatWagers

U = 2_500  # R25: one unit (the minimum Ante)
START = 200_000  # R2,000



def spec_paytables() -> Paytables:
    """rules.md §0: Odds §6.1/§6.2, Trips Plus 100-40-30-8-7-4-3, Pocket Bonus table A, Sweet 16."""
    c = Category
    pairs = frozenset(r * 2 for r in "23456789TJQK")
    return Paytables(
        trips_plus=CategoryTable("trips_plus", {
            c.ROYAL_FLUSH: Pay(100), c.STRAIGHT_FLUSH: Pay(40), c.FOUR_OF_A_KIND: Pay(30),
            c.FULL_HOUSE: Pay(8), c.FLUSH: Pay(7), c.STRAIGHT: Pay(4), c.THREE_OF_A_KIND: Pay(3),
        }),
        odds_win=CategoryTable("odds_win", {
            c.ROYAL_FLUSH: Pay(500), c.STRAIGHT_FLUSH: Pay(50), c.FOUR_OF_A_KIND: Pay(10),
            c.FULL_HOUSE: Pay(3), c.FLUSH: Pay(3, 2), c.STRAIGHT: Pay(1),
        }),
        odds_lose=CategoryTable("odds_lose", {
            c.STRAIGHT_FLUSH: Pay(500), c.FOUR_OF_A_KIND: Pay(25), c.FULL_HOUSE: Pay(6),
            c.FLUSH: Pay(5), c.STRAIGHT: Pay(4),
        }),
        pocket_bonus=(
            PocketLine("A-A", Pay(30), frozenset({"AA"})),
            PocketLine("A-K/Q/J suited", Pay(20), frozenset({"AKs", "AQs", "AJs"})),
            PocketLine("A-K/Q/J offsuit", Pay(10), frozenset({"AKo", "AQo", "AJo"})),
            PocketLine("other pair", Pay(5), pairs),
        ),
        sweet16=Sweet16Table({
            "sweet_16": Pay(160), "suited_16": Pay(16),
            "same_colour_16": Pay(12), "mixed_colour_16": Pay(6),
        }),
        source="rules.md §0",
    )


PAYTABLES = spec_paytables()


def new_hand(
    seats: Iterable[int],
    *,
    balance: int = START,
    markers_left: int = 0,
    rules: HouseRules | None = None,
    deal: DealSequence = DEFAULT_DEAL,
    hand_id: str = "T1-H1",
) -> Hand:
    """A hand at a table with these seats occupied, each with the same balance."""
    return Hand(
        hand_id=hand_id,
        seats=[SeatStart(seat=s, balance_cents=balance, markers_left=markers_left) for s in seats],
        rules=rules or HouseRules(),
        paytables=PAYTABLES,
        deal=deal,
    )


def bet(ante: int = U, *, play: int = 0, trips: int = 0, pocket: int = 0, sweet: int = 0,
        odds: int | None = None, markers: Iterable[str] = ()) -> SeatWagers:
    """A snapshot of one seat's spots (Odds = Ante unless given)."""
    return SeatWagers(ante=ante, odds=ante if odds is None else odds, play=play, trips_plus=trips,
                      pocket_bonus=pocket, sweet16=sweet, markers=frozenset(markers))


def all_sides(ante: int = U, play: int = 0) -> SeatWagers:
    return bet(ante, play=play, trips=ante, pocket=ante, sweet=ante)


def read(hand: Hand, cards: str) -> None:
    for card in parse_cards(cards):
        hand.read_card(card)


E = TypeVar("E", bound=Event)


def of(hand: Hand, kind: type[E]) -> list[E]:
    """The hand's events of one type, in order."""
    return [e for e in hand.events if isinstance(e, kind)]


def alerts(hand: Hand) -> list[AlertRaised]:
    return [e for e in hand.events if isinstance(e, AlertRaised)]


def set_play(hand: Hand, seat: int, amount: int) -> None:
    locked = hand.wagers(seat)
    assert locked is not None
    hand.see_wagers(seat, dataclasses.replace(locked, play=amount))


def to_preflop(seats: Iterable[int] = (1,), balance: int = START) -> Hand:
    """A hand of these seats at preflop decisions: R25 Ante and Odds each, holes dealt."""
    hand = new_hand(seats, balance=balance)
    for s in hand.seats:
        hand.see_wagers(s, bet())
    hand.no_more_bets()
    n = len(hand.seats) + 1
    deck = iter(parse_cards("2c 3c 4c 5c 6c 7c 8c 9c Tc Jc Qc Kc Ac 2d 3d 4d"))
    for _ in range(2 * n):
        hand.read_card(next(deck))
    return hand

