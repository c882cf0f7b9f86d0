"""Helpers the settlement tests share: the rules.md paytables (tables A and C) and hands as text.

The paytables are built directly from rules.md §0 (Trips Plus 100-40-30-8-7-4-3, Odds §6,
Pocket Bonus table A and table C of §7.2, Sweet 16 160/16/12/6), independent of the config files.
"""

from __future__ import annotations

from game.paytables.lines import CategoryTable, Pay, Paytables, PocketLine, Sweet16Table
from game.poker.cards import DECK, Card, parse_cards
from game.poker.evaluate import Category
from game.wagers.settle import (
    HandSettlement,
    SeatHand,
    SeatSettlement,
    SeatWagers,
    WagerResult,
    settle_hand,
)

ANTE = 2_500  # R25: amounts in rules.md are per unit of Ante
MARKER = 50_000  # R500 Final bonus marker (tournament.md)

C = Category


def _pairs(ranks: str) -> frozenset[str]:
    return frozenset(r * 2 for r in ranks)


def _tables(pocket: tuple[PocketLine, ...]) -> Paytables:
    return Paytables(
        trips_plus=CategoryTable("trips_plus", {
            C.ROYAL_FLUSH: Pay(100), C.STRAIGHT_FLUSH: Pay(40), C.FOUR_OF_A_KIND: Pay(30),
            C.FULL_HOUSE: Pay(8), C.FLUSH: Pay(7), C.STRAIGHT: Pay(4),
            C.THREE_OF_A_KIND: Pay(3),
        }),
        odds_win=CategoryTable("odds_win", {
            C.ROYAL_FLUSH: Pay(500), C.STRAIGHT_FLUSH: Pay(50), C.FOUR_OF_A_KIND: Pay(10),
            C.FULL_HOUSE: Pay(3), C.FLUSH: Pay(3, 2), C.STRAIGHT: Pay(1),
        }),
        odds_lose=CategoryTable("odds_lose", {
            C.STRAIGHT_FLUSH: Pay(500), C.FOUR_OF_A_KIND: Pay(25), C.FULL_HOUSE: Pay(6),
            C.FLUSH: Pay(5), C.STRAIGHT: Pay(4),
        }),
        pocket_bonus=pocket,
        sweet16=Sweet16Table({"sweet_16": Pay(160), "suited_16": Pay(16),
                              "same_colour_16": Pay(12), "mixed_colour_16": Pay(6)}),
        source="rules.md §0 (test)",
    )


def paytables_a() -> Paytables:
    """rules.md §0 tables with Pocket Bonus table A (§7.2)."""
    return _tables((
        PocketLine("AA", Pay(30), frozenset({"AA"})),
        PocketLine("AJs-AKs", Pay(20), frozenset({"AKs", "AQs", "AJs"})),
        PocketLine("AJo-AKo", Pay(10), frozenset({"AKo", "AQo", "AJo"})),
        PocketLine("22-KK", Pay(5), _pairs("23456789TJQK")),
    ))


def paytables_c() -> Paytables:
    """rules.md §0 tables with Pocket Bonus table C (§7.2), the dealer A-A line first."""
    return _tables((
        PocketLine("AA+dealer AA", Pay(1000), frozenset({"AA"}), frozenset({"AA"})),
        PocketLine("AA", Pay(30), frozenset({"AA"})),
        PocketLine("AKs", Pay(25), frozenset({"AKs"})),
        PocketLine("AQs/AJs", Pay(20), frozenset({"AQs", "AJs"})),
        PocketLine("AKo", Pay(15), frozenset({"AKo"})),
        PocketLine("JJ-KK", Pay(10), _pairs("JQK")),
        PocketLine("AQo/AJo", Pay(5), frozenset({"AQo", "AJo"})),
        PocketLine("22-TT", Pay(3), _pairs("23456789T")),
    ))


TABLES_A = paytables_a()
TABLES_C = paytables_c()


def spare(used: str | tuple[Card, ...], n: int) -> tuple[Card, ...]:
    """The first n cards of the deck (by index) not in `used`: filler for irrelevant cards."""
    taken = set(parse_cards(used) if isinstance(used, str) else used)
    return tuple(c for c in DECK if c not in taken)[:n]


def hand(
    dealer: str, board: str, *seats: tuple[str, SeatWagers], tables: Paytables = TABLES_A,
    marker_value_cents: int = MARKER,
) -> HandSettlement:
    """Settle a hand given as text; seats are numbered 1, 2, ... in the order given."""
    d, b = parse_cards(dealer), parse_cards(board)
    return settle_hand(
        dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
        seats=[SeatHand(seat=i, hole=two(hole), wagers=w)
               for i, (hole, w) in enumerate(seats, start=1)],
        paytables=tables, marker_value_cents=marker_value_cents,
    )


def one(dealer: str, board: str, hole: str, wagers: SeatWagers, **kw: object) -> SeatSettlement:
    """Settle a single seat."""
    return hand(dealer, board, (hole, wagers), **kw).seats[0]  # type: ignore[arg-type]


def side_only(hole: str, wagers: SeatWagers, *, dealer: str | None = None,
              board: str | None = None, tables: Paytables = TABLES_A) -> SeatSettlement:
    """Settle a seat where only the hole cards (and maybe the dealer's) matter."""
    used = hole + " " + (dealer or "")
    if dealer is None:
        dealer = " ".join(map(str, spare(used, 2)))
        used += " " + dealer
    if board is None:
        board = " ".join(map(str, spare(used, 5)))
    return one(dealer, board, hole, wagers, tables=tables)


def two(text: str) -> tuple[Card, Card]:
    """Two cards from text, as a hole."""
    a, b = parse_cards(text)
    return a, b


def main_wagers(k: int, ante: int = ANTE) -> SeatWagers:
    """Ante and Odds with a Play of k x Ante (k = 0: the seat folded)."""
    return SeatWagers(ante=ante, odds=ante, play=k * ante)


def by_wager(s: SeatSettlement) -> dict[str, WagerResult]:
    return {r.wager: r for r in s.results}


def nets(s: SeatSettlement) -> dict[str, int]:
    return {r.wager: r.net_cents for r in s.results}
