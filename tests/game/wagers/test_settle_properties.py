"""Settlement properties (hypothesis): well-formed results, folds, seat order, suit symmetry.

Every expected amount is worked out by hand from the rules (in units of the Ante or of the
side-bet stake) and scaled here; nothing is taken from running the code. Paytables:
settle_helpers (built from rules.md §0, independent of the config files).
"""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from game.paytables.lines import Paytables
from game.poker.cards import DECK, Card, card_from_index
from game.poker.evaluate import evaluate
from game.wagers.settle import (
    SIDE_BETS,
    WAGERS,
    HandSettlement,
    SeatHand,
    SeatWagers,
    settle_hand,
)
from tests.game.settle_helpers import (
    MARKER,
    TABLES_A,
    TABLES_C,
    C,
    by_wager,
)


@st.composite
def hands(draw: st.DrawFn) -> tuple[tuple[Card, ...], list[SeatHand], Paytables]:
    """A random deal (1 to 6 seats) with random legal wagers, some seats folded."""
    deck = draw(st.permutations(DECK))
    n = draw(st.integers(1, 6))
    seats = []
    for i in range(n):
        ante = draw(st.integers(1, 60_000))
        w = SeatWagers(
            ante=ante, odds=ante, play=draw(st.sampled_from([0, 1, 2, 3])) * ante,
            trips_plus=draw(st.integers(0, 30_000)), pocket_bonus=draw(st.integers(0, 30_000)),
            sweet16=draw(st.integers(0, 30_000)),
            markers=frozenset(draw(st.sets(st.sampled_from(SIDE_BETS)))),
        )
        seats.append(SeatHand(seat=i + 1, hole=(deck[7 + 2 * i], deck[8 + 2 * i]), wagers=w))
    return tuple(deck[:7]), seats, draw(st.sampled_from([TABLES_A, TABLES_C]))


def _settle(cards: tuple[Card, ...], seats: list[SeatHand], tables: Paytables) -> HandSettlement:
    return settle_hand(dealer=(cards[0], cards[1]),
                       board=(cards[2], cards[3], cards[4], cards[5], cards[6]),
                       seats=seats, paytables=tables, marker_value_cents=MARKER)


def _main_reference(seat: SeatHand, cards: tuple[Card, ...]) -> dict[str, Fraction]:
    """rules.md §5/§6 written out once more, as nets per wager (exact fractions of a cent)."""
    w = seat.wagers
    if w.play == 0:
        return {"ante": Fraction(-w.ante), "odds": Fraction(-w.odds)}
    mine, dealer = evaluate((*seat.hole, *cards[2:])), evaluate(cards)
    opens = dealer.category >= C.PAIR
    win_pay = {C.ROYAL_FLUSH: 500, C.STRAIGHT_FLUSH: 50, C.FOUR_OF_A_KIND: 10,
               C.FULL_HOUSE: 3, C.FLUSH: Fraction(3, 2), C.STRAIGHT: 1}
    lose_pay = {C.STRAIGHT_FLUSH: 500, C.FOUR_OF_A_KIND: 25, C.FULL_HOUSE: 6, C.FLUSH: 5,
                C.STRAIGHT: 4}
    if mine.value == dealer.value:
        return {"ante": Fraction(0), "odds": Fraction(0), "play": Fraction(0)}
    if mine.value > dealer.value:
        return {"ante": Fraction(w.ante if opens else 0),
                "odds": Fraction(w.odds) * win_pay.get(mine.category, 0),
                "play": Fraction(w.play)}
    bad_beat = lose_pay.get(mine.category) if opens else None
    return {"ante": Fraction(-w.ante if opens else 0),
            "odds": Fraction(-w.odds) if bad_beat is None else Fraction(w.odds) * bad_beat,
            "play": Fraction(-w.play)}


@settings(max_examples=150, deadline=None)
@given(hands())
def test_property_every_result_is_well_formed(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    settled = _settle(cards, seats, tables)
    assert settled.dealer_opens == (evaluate(cards).category >= C.PAIR)
    for seat, s in zip(seats, settled.seats, strict=True):
        w = seat.wagers
        placed = [n for n in WAGERS if w.amount(n) > 0 or n in w.markers]
        assert [r.wager for r in s.results] == placed
        for r in s.results:
            assert r.stake_cents == w.amount(r.wager)
            assert r.net_cents >= -r.stake_cents
            assert r.marker == (r.wager in w.markers)
            if r.result == "push":
                assert r.net_cents == 0
            elif r.result == "lose":
                assert r.net_cents == -r.stake_cents
            else:
                assert r.net_cents > 0
            paid_by_table = r.result == "win" and r.wager not in {"ante", "play"}
            assert (r.line is not None) == paid_by_table
        assert s.net_cents == sum(r.net_cents for r in s.results)
        assert s.markers_used == w.markers
        expected = _main_reference(seat, cards)
        got = {r.wager: r.net_cents for r in s.results if r.wager in ("ante", "odds", "play")}
        assert got == {k: int(v) for k, v in expected.items()}  # int() rounds down (v >= 0)


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_a_folded_seat_never_wins_ante_or_odds(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    folded = [replace(s, wagers=replace(s.wagers, play=0)) for s in seats]
    for s in _settle(cards, folded, tables).seats:
        r = by_wager(s)
        assert s.outcome == "fold"
        assert "play" not in r
        assert r["ante"].result == r["odds"].result == "lose"


@settings(max_examples=100, deadline=None)
@given(hands(), st.randoms(use_true_random=False))
def test_property_seat_order_and_other_seats_do_not_matter(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables], rnd: random.Random,
) -> None:
    cards, seats, tables = deal
    base = _settle(cards, seats, tables)
    shuffled = list(seats)
    rnd.shuffle(shuffled)
    assert _settle(cards, shuffled, tables) == base
    for seat, s in zip(seats, base.seats, strict=True):
        assert _settle(cards, [seat], tables).seats == (s,)


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_side_bets_do_not_depend_on_the_play_decision(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    k_seats = [replace(s, wagers=replace(s.wagers, play=s.wagers.ante)) for s in seats]
    folded = [replace(s, wagers=replace(s.wagers, play=0)) for s in seats]

    def side(h: HandSettlement) -> list[tuple[str, str, int, str | None]]:
        return [(r.wager, r.result, r.net_cents, r.line)
                for s in h.seats for r in s.results if r.wager in SIDE_BETS]

    assert side(_settle(cards, k_seats, tables)) == side(_settle(cards, folded, tables))


def _suit_map(cards: tuple[Card, ...], perm: list[int]) -> tuple[Card, ...]:
    return tuple(card_from_index(c.rank * 4 + perm[c.suit]) for c in cards)


@settings(max_examples=100, deadline=None)
@given(hands(), st.permutations(range(4)))
def test_property_a_suit_permutation_changes_only_sweet16_lines(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables], perm: list[int],
) -> None:
    cards, seats, tables = deal
    base = _settle(cards, seats, tables)
    moved = _settle(_suit_map(cards, perm),
                    [replace(s, hole=_suit_map(s.hole, perm)) for s in seats], tables)
    assert moved.dealer_hand == base.dealer_hand
    assert moved.dealer_opens == base.dealer_opens
    for a, b in zip(base.seats, moved.seats, strict=True):
        assert (a.hand, a.outcome) == (b.hand, b.outcome)
        for ra, rb in zip(a.results, b.results, strict=True):
            assert (ra.wager, ra.result, ra.stake_cents) == (rb.wager, rb.result, rb.stake_cents)
            if ra.wager != "sweet16":
                assert (ra.net_cents, ra.line) == (rb.net_cents, rb.line)
            if ra.wager in ("ante", "odds", "play", "trips_plus"):
                assert ra.reason == rb.reason  # hands are named without suits


@settings(max_examples=100, deadline=None)
@given(hands())
def test_property_clubs_spades_swap_changes_nothing(
    deal: tuple[tuple[Card, ...], list[SeatHand], Paytables],
) -> None:
    cards, seats, tables = deal
    perm = [3, 1, 2, 0]  # clubs <-> spades: every colour kept, and the A♥5♥ line too
    base = _settle(cards, seats, tables)
    moved = _settle(_suit_map(cards, perm),
                    [replace(s, hole=_suit_map(s.hole, perm)) for s in seats], tables)
    for a, b in zip(base.seats, moved.seats, strict=True):
        assert [(r.wager, r.result, r.net_cents, r.line) for r in a.results] == [
            (r.wager, r.result, r.net_cents, r.line) for r in b.results]
