"""A virtual dealer: runs hands on a `TableSession` with a seeded shuffled deck and virtual
players, feeding the hand state machine exactly what a real table would (wager snapshots,
cards in shoe order, no more bets, settle)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from game.hand import Hand
from game.hand.events import PlayMade, SeatFolded
from game.poker.cards import Card
from game.table.session import TableSession
from simulators.decks import DeckSource
from simulators.players import VirtualPlayer

__all__ = ["VirtualDealer"]


class VirtualDealer:
    """Deals and runs whole hands; the shuffle comes from its own seeded generator, or the
    decks from ``decks`` (`simulators.decks`: factory order, riffled once, repeated)."""

    def __init__(self, *, rng: random.Random, decks: DeckSource | None = None) -> None:
        self.rng = rng
        self.decks = decks if decks is not None else DeckSource("shuffled", rng=rng)

    def shuffled_deck(self) -> list[Card]:
        """A fresh 52-card deck for the next hand (rules.md §2: reshuffled before every hand)."""
        return self.decks.next_deck()

    def play_hand(
        self, table: TableSession, players: Mapping[int, VirtualPlayer], hand_id: str,
        *, deck: Sequence[Card] | None = None,
    ) -> Hand:
        """Open a hand, take the players' wagers and decisions, deal it out and settle it."""
        hand = table.open_hand(hand_id)
        for seat, entry in sorted(table.seats.items()):
            wagers = players[seat].wagers(seat=seat, balance_cents=entry.balance_cents,
                                          markers_left=entry.markers_left, rules=table.rules.house)
            if wagers.staked_cents or wagers.markers:
                hand.see_wagers(seat, wagers, source="rfid")
        if not any(hand.wagers(s) for s in hand.seats) and not hand.can_no_more_bets():
            hand.void("no seat placed a wager", by="virtual dealer")
            return hand
        hand.no_more_bets()
        cards: Iterator[Card] = iter(deck if deck is not None else self.shuffled_deck())
        asked: set[str] = set()
        while (target := hand.next_target) is not None:
            if target.kind == "board" and target.index in (0, 3):
                street = "preflop" if target.index == 0 else "flop"
                if street not in asked:
                    asked.add(street)
                    self._decide(hand, table, players, street)
            hand.read_card(next(cards), source="shoe")
        self._decide(hand, table, players, "river")
        hand.settle()
        return hand

    def _decide(
        self, hand: Hand, table: TableSession, players: Mapping[int, VirtualPlayer], street: str
    ) -> None:
        decided = {e.seat for e in hand.events if isinstance(e, PlayMade | SeatFolded)}
        placed = hand.cards()
        board = [c for t, c in placed if t.kind == "board"]
        for seat in hand.seats_in_hand:
            wagers = hand.wagers(seat)
            if seat in decided or wagers is None:
                continue
            hole = [c for t, c in placed if t.kind == "seat" and t.seat == seat]
            amount = players[seat].play(
                seat=seat, street=street, hole=hole, board=board, wagers=wagers,
                balance_cents=table.seats[seat].balance_cents,
            )
            if amount:
                hand.see_wagers(seat, replace(wagers, play=amount), source="rfid")
