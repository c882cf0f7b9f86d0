"""Deck integrity checks (game.decks.check, game.decks.statistics): composition, new-deck order,
repeated decks and the chi-square window, on decks built here (pure, no table)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.decks.check import DeckLimits, DeckWatch, Shuffle
from game.decks.statistics import (
    chi2_sf,
    chi_square_by_position,
    longest_common_run,
    poisson_tail,
    run_chance,
    same_positions,
    successions,
)
from game.errors import IllegalAction
from game.poker.cards import DECK, Card, parse_cards
from simulators.decks import FACTORY_ORDER

PER_DECK = {"succession_suit", "succession_rank", "repeated_run", "repeated_positions"}


def shuffled(seed: int) -> list[Card]:
    deck = list(DECK)
    random.Random(seed).shuffle(deck)
    return deck


def names_of(found: tuple[object, ...]) -> set[str]:
    return {f.test for f in found}  # type: ignore[attr-defined]


# ---- composition ---------------------------------------------------------------------------


@given(st.permutations(DECK), st.integers(min_value=0, max_value=52))
def test_a_random_permutation_never_breaks_composition(deck: list[Card], n: int) -> None:
    found = DeckWatch().check(Shuffle(hand_id="H1", cards=tuple(deck[:n])))
    assert "composition" not in names_of(found)


def test_a_repeated_read_set_aside_is_a_composition_alert_naming_the_card() -> None:
    cards = tuple(shuffled(1)[:21])
    watch = DeckWatch()
    [found] = watch.check(Shuffle(hand_id="H1", cards=cards, strays=(cards[4],)))
    assert (found.kind, found.test, found.blocking) == ("deck_suspect", "composition", True)
    assert found.evidence["duplicates"] == [str(cards[4])]
    assert found.evidence["hand_ids"] == ["H1"] and found.evidence["cards_out"] == 22
    assert watch.held


def test_more_than_52_cards_out_of_one_shuffle_is_a_composition_alert() -> None:
    deck = shuffled(2)
    found = DeckWatch().check(Shuffle(hand_id="H1", cards=tuple(deck), strays=(deck[0],)))
    assert [f.evidence["cards_out"] for f in found if f.test == "composition"] == [53, 53]


# ---- new-deck order -------------------------------------------------------------------------


@given(cut=st.integers(min_value=0, max_value=51), n=st.integers(min_value=9, max_value=21),
       backwards=st.booleans(), by_rank=st.booleans())
def test_an_ordered_deck_is_always_caught(cut: int, n: int, backwards: bool,
                                          by_rank: bool) -> None:
    """A new deck (A-K-K-A, or sorted by rank), cut anywhere, dealt either way up."""
    deck = list(DECK if by_rank else FACTORY_ORDER)
    deck = deck[cut:] + deck[:cut]
    if backwards:
        deck.reverse()
    found = DeckWatch().check(Shuffle(hand_id="H1", cards=tuple(deck[:n])))
    expected = "succession_rank" if by_rank else "succession_suit"
    [hit] = [f for f in found if f.test == expected]
    assert hit.blocking and hit.evidence["p_value"] < 1e-5
    assert hit.evidence["statistic"] >= n - 3  # nearly every neighbour pair, the suit breaks off
    first = hit.evidence["pairs"][0]
    assert first["cards"] == [str(deck[first["positions"][0]]), str(deck[first["positions"][1]])]


def test_successions_count_near_neighbours_in_either_order() -> None:
    cards = parse_cards("Ah Kh 9c Qh 2c 3d")  # Ah-Kh (1), Kh-Qh (2 apart), 2c: none near
    suit = successions(cards, "suit", gap=3)
    assert suit.pairs == ((0, 1), (1, 3))
    assert suit.expected == pytest.approx((5 + 4 + 3) * 2 / 51)
    rank = successions(parse_cards("2c 2d 9s 2h"), "rank", gap=3)
    assert rank.pairs == ((0, 1), (1, 3))


def test_a_shuffled_deck_passes_every_per_deck_test() -> None:
    watch = DeckWatch()
    for seed in range(200):
        found = watch.check(Shuffle(hand_id=f"H{seed}", cards=tuple(shuffled(seed)[:21])))
        assert not names_of(found) & PER_DECK, found
    assert not watch.held


# ---- repeated decks -----------------------------------------------------------------------


def test_the_same_order_again_is_a_repeated_deck_naming_both_hands() -> None:
    watch = DeckWatch()
    deck = tuple(shuffled(7)[:21])
    assert watch.check(Shuffle(hand_id="H1", cards=deck)) == ()
    watch.check(Shuffle(hand_id="H2", cards=tuple(shuffled(8)[:21])))
    [found] = watch.check(Shuffle(hand_id="H3", cards=deck))
    assert found.test == "repeated_run"
    assert found.evidence["hand_ids"] == ["H3", "H1"]
    assert found.evidence["statistic"] == 21 and found.evidence["positions"] == [0, 0]
    assert found.evidence["cards"] == [str(c) for c in deck]


def test_a_stacked_deck_with_the_same_cards_at_the_same_places_is_caught() -> None:
    first = shuffled(11)[:21]
    kept = {i: first[i] for i in range(0, 21, 3)}  # 7 places stacked as in the first deck
    rest = [c for c in shuffled(12) if c not in kept.values()]
    stacked = [kept[i] if i in kept else rest.pop() for i in range(21)]
    watch = DeckWatch()
    watch.check(Shuffle(hand_id="H1", cards=tuple(first)))
    [found] = watch.check(Shuffle(hand_id="H2", cards=tuple(stacked)))
    assert found.test == "repeated_positions"
    assert set(found.evidence["positions"]) >= set(kept)
    assert found.evidence["hand_ids"] == ["H2", "H1"]


def test_common_runs_and_their_chance() -> None:
    a = parse_cards("Ah 2c 3d 4s 5h 6c")
    b = parse_cards("9s 2c 3d 4s Kd Ah")
    run = longest_common_run(a, b)
    assert (run.length, run.start, run.earlier_start) == (3, 1, 1)
    assert same_positions(a, b) == (1, 2, 3)
    assert run_chance(3, 6, 6) == pytest.approx(16 / (52 * 51 * 50))
    assert longest_common_run(a, parse_cards("Kd Qd")).length == 0


# ---- the chi-square window ---------------------------------------------------------------


def test_chi_square_tail_matches_the_tables() -> None:
    for x, df in ((3.841, 1), (18.307, 10), (124.342, 100), (133.257, 108)):
        assert chi2_sf(x, df) == pytest.approx(0.05, abs=1e-4)
    assert chi2_sf(0.0, 5) == 1.0
    assert chi2_sf(1000.0, 10) < 1e-100
    with pytest.raises(ValueError, match="degrees of freedom"):
        chi2_sf(1.0, 0)


def test_poisson_tail_matches_the_sum() -> None:
    for k, mean in ((0, 1.0), (3, 2.2), (12, 2.2), (30, 1.0)):
        direct = 1 - sum(math.exp(-mean) * mean**i / math.factorial(i) for i in range(k))
        tail = sum(math.exp(-mean) * mean**i / math.factorial(i) for i in range(k, k + 80))
        assert poisson_tail(k, mean) == pytest.approx(tail if k > 8 else direct, rel=1e-9)


def test_rank_by_position_counts_what_was_dealt() -> None:
    decks = [tuple(shuffled(s)) for s in range(26)]
    result = chi_square_by_position(decks, 2)
    assert result.df == 24
    sorted_decks = [tuple(DECK)] * 26  # every deck starts 2c 2d: all twos at both places
    worst = chi_square_by_position(sorted_decks, 2).worst[0]
    assert worst[1:] == (0, 26, 2.0)
    with pytest.raises(ValueError, match="at least 9 cards"):
        chi_square_by_position([tuple(DECK[:5])], 9)


def test_one_failing_window_is_a_review_two_in_a_row_hold_the_table() -> None:
    limits = DeckLimits(chi_window=20, repeat_window=1, alarm_p=1e-300)  # chi-square only
    watch = DeckWatch(limits)
    found: list[tuple[str, str]] = []
    for n in range(40):
        deck = tuple(FACTORY_ORDER[:21])
        found += [(f.kind, f.test) for f in watch.check(Shuffle(hand_id=f"H{n}", cards=deck))]
    assert found == [("deck_review", "chi_square"), ("deck_suspect", "chi_square")]
    assert watch.status()["held"] == ["chi_square"] and watch.status()["failed_in_row"] == 2
    assert watch.last_window is not None and watch.last_window["hand_ids"] == ["H20", "H39"]
    assert [f.test for f in watch.clear()] == ["chi_square"]
    assert watch.status()["held"] == []
    with pytest.raises(IllegalAction, match="no 'deck' hold is open"):
        watch.clear()


def test_shuffled_windows_fail_about_one_in_twenty() -> None:
    watch = DeckWatch(DeckLimits(chi_window=100))
    for n in range(4_000):
        watch.check(Shuffle(hand_id=f"H{n}", cards=tuple(shuffled(10_000 + n)[:9])))
    assert watch.windows_tested == 40
    assert watch.windows_failed <= 8  # 5% of 40 is 2; 8 or more has chance below 0.1%


def test_a_short_void_hand_counts_for_the_per_deck_tests_only() -> None:
    watch = DeckWatch()
    watch.check(Shuffle(hand_id="H1", cards=tuple(shuffled(3)[:4])))
    assert watch.status()["window_fill"] == 0 and watch.shuffles == 1
