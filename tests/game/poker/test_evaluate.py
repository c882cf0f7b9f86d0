"""The evaluator against an independent oracle, on named hands, random hands and all hands."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.errors import DuplicateCard, InvalidCard, InvalidHand
from game.poker.cards import DECK, Card, parse_cards
from game.poker.evaluate import Category, category_of, evaluate, hand_value
from game.poker.evaluate_batch import evaluate_batch, seven_card_category_counts
from game.poker.hand_ranks import RANK_KEYS, rank_multisets
from tests.game.reference import best_of

# Textbook counts (e.g. Wikipedia "Poker probability"); royal flush counted apart.
FIVE_CARD_COUNTS = {
    Category.ROYAL_FLUSH: 4, Category.STRAIGHT_FLUSH: 36, Category.FOUR_OF_A_KIND: 624,
    Category.FULL_HOUSE: 3_744, Category.FLUSH: 5_108, Category.STRAIGHT: 10_200,
    Category.THREE_OF_A_KIND: 54_912, Category.TWO_PAIR: 123_552, Category.PAIR: 1_098_240,
    Category.HIGH_CARD: 1_302_540,
}
SEVEN_CARD_COUNTS = {
    Category.ROYAL_FLUSH: 4_324, Category.STRAIGHT_FLUSH: 37_260,
    Category.FOUR_OF_A_KIND: 224_848, Category.FULL_HOUSE: 3_473_184,
    Category.FLUSH: 4_047_644, Category.STRAIGHT: 6_180_020,
    Category.THREE_OF_A_KIND: 6_461_620, Category.TWO_PAIR: 31_433_400,
    Category.PAIR: 58_627_800, Category.HIGH_CARD: 23_294_460,
}

hands7 = st.lists(st.sampled_from(DECK), min_size=7, max_size=7, unique=True)
hands5to7 = st.integers(5, 7).flatmap(
    lambda n: st.lists(st.sampled_from(DECK), min_size=n, max_size=n, unique=True)
)


@pytest.mark.parametrize(
    ("cards", "category", "name", "best"),
    [
        ("Kc 4c 3h 8c 4h 8h 4s", Category.FULL_HOUSE, "Full house, fours over eights",
         "4s 4h 4c 8h 8c"),
        ("Ah Kh Qh Jh Th 2c 3d", Category.ROYAL_FLUSH, "Royal flush", "Ah Kh Qh Jh Th"),
        ("5d 4d 3d 2d Ad Kd Qd", Category.STRAIGHT_FLUSH, "Straight flush, five high",
         "5d 4d 3d 2d Ad"),
        ("As 2d 3c 4h 5s 9c Kd", Category.STRAIGHT, "Straight, five high", "5s 4h 3c 2d As"),
        ("Th 2h 3h 8c 4h 8h 4s", Category.FLUSH, "Flush, ten high", "Th 8h 4h 3h 2h"),
        ("8d 8s 3h 8c 4h 8h 4s", Category.FOUR_OF_A_KIND, "Four of a kind, eights, four kicker",
         "8s 8h 8d 8c 4s"),
        ("Ks Kd Qs Qd Js Jd 2c", Category.TWO_PAIR, "Two pair, kings and queens, jack kicker",
         "Ks Kd Qs Qd Js"),
        ("7s 7d 7c 2h 9d Kc 4s", Category.THREE_OF_A_KIND, "Three of a kind, sevens",
         "7s 7d 7c Kc 9d"),
        ("As Ad 9c 7h 5d 3c 2s", Category.PAIR, "Pair of aces", "As Ad 9c 7h 5d"),
        ("As Jd 9c 7h 5d 3c 2s", Category.HIGH_CARD, "High card, ace", "As Jd 9c 7h 5d"),
        ("Th 9h 8h 7h 6h", Category.STRAIGHT_FLUSH, "Straight flush, ten high", "Th 9h 8h 7h 6h"),
        ("Ac Ad Ah Ks Kd Kh 2c", Category.FULL_HOUSE, "Full house, aces over kings",
         "Ah Ad Ac Ks Kh"),
    ],
)
def test_named_hands(cards: str, category: Category, name: str, best: str) -> None:
    hand = evaluate(cards)
    assert hand.category is category
    assert hand.name == name
    assert sorted(str(c) for c in hand.best_five) == sorted(best.split())
    assert evaluate(hand.best_five) == hand  # the best five alone are worth the same



def test_wheel_is_the_lowest_straight_and_no_wrap_around() -> None:
    wheel = evaluate("Ac 2d 3h 4s 5c")
    six_high = evaluate("2d 3h 4s 5c 6d")
    assert wheel.category is Category.STRAIGHT and wheel < six_high
    assert evaluate("Qc Kd Ah 2s 3c").category is Category.HIGH_CARD


def test_rank_keys_separate_every_seven_card_rank_multiset() -> None:
    sums = Counter()
    for combo in itertools.combinations_with_replacement(range(13), 7):
        if max(Counter(combo).values()) <= 4:
            sums[sum(RANK_KEYS[r] for r in combo)] += 1
    assert len(sums) == 49_205
    assert max(sums.values()) == 1


@settings(max_examples=400, deadline=None)
@given(hands7, hands7)
def test_seven_card_order_agrees_with_brute_force_best_of_21(a: list[Card], b: list[Card]) -> None:
    ours_a, ours_b = evaluate(a), evaluate(b)
    ref_a, ref_b = best_of(a), best_of(b)
    assert int(ours_a.category) == ref_a[0]
    assert (ours_a > ours_b) == (ref_a > ref_b)
    assert (ours_a == ours_b) == (ref_a == ref_b)


def test_board_played_hands_split_and_kickers_count_only_within_five() -> None:
    board = "As Ah Kd Kc Qs"
    assert evaluate(f"2c 3d {board}") == evaluate(f"4h 5c {board}")
    assert evaluate(f"Jd 3d {board}") == evaluate(f"Td 9d {board}")  # the board queen plays
    assert evaluate(f"Ad 3d {board}") > evaluate(f"Kh 9d {board}")  # aces full beat kings full


@settings(max_examples=300, deadline=None)
@given(hands5to7)
def test_five_and_six_card_hands_agree_with_brute_force(cards: list[Card]) -> None:
    hand = evaluate(cards)
    assert int(hand.category) == best_of(cards)[0]
    assert best_of(hand.best_five) == best_of(cards)


def test_ordering_is_a_total_order_on_a_sample() -> None:
    rng = random.Random(7)
    hands = [evaluate(rng.sample(DECK, 7)) for _ in range(300)]
    refs = {id(h): best_of(h.cards) for h in hands}
    for x, y in itertools.combinations(hands[:120], 2):
        assert (x < y) == (refs[id(x)] < refs[id(y)])
        assert (x < y) != (y < x) or x == y  # antisymmetry
    ordered = sorted(hands)
    for lo, mid, hi in zip(ordered, ordered[1:], ordered[2:], strict=False):
        assert lo <= mid <= hi and lo <= hi  # transitivity along the chain


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(InvalidHand, match="5, 6 or 7"):
        evaluate("Ah Kh Qh Jh")
    with pytest.raises(InvalidHand):
        evaluate(parse_cards("Ah Kh Qh Jh Th 9h 8h 7h"))
    with pytest.raises(DuplicateCard, match="Ah"):
        hand_value([*parse_cards("Ah Kh Qh Jh"), parse_cards("Ah")[0]])
    with pytest.raises(InvalidCard):
        hand_value(["Ah", "Kh", "Qh", "Jh", "Th"])  # type: ignore[list-item]


def test_batch_agrees_with_per_call_on_random_hands() -> None:
    rng = np.random.default_rng(2026)
    idx = np.argsort(rng.random((20_000, 52)), axis=1)[:, :7]
    batch = evaluate_batch(idx)
    single = np.array([hand_value([DECK[i] for i in row]) for row in idx.tolist()])
    assert np.array_equal(batch, single)
    assert np.array_equal(evaluate_batch(idx, check=False), batch)
    assert evaluate_batch(np.empty((0, 7), dtype=np.int64)).shape == (0,)


def test_batch_refuses_bad_arrays() -> None:
    with pytest.raises(InvalidHand):
        evaluate_batch(np.zeros((3, 6), dtype=np.int64))
    with pytest.raises(InvalidCard):
        evaluate_batch([[0, 1, 2, 3, 4, 5, 52]])
    with pytest.raises(DuplicateCard, match="row 1"):
        evaluate_batch([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 5]])
    with pytest.raises(InvalidCard):
        evaluate_batch(np.zeros((1, 7), dtype=np.float64))


@pytest.mark.soak  # exhaustive: make test-soak (D387)
@pytest.mark.slow
def test_all_five_card_hands_by_category() -> None:
    counts: Counter[Category] = Counter()
    values = set()
    for five in itertools.combinations(DECK, 5):
        v = hand_value(five)
        values.add(v)
        counts[category_of(v)] += 1
    assert dict(counts) == FIVE_CARD_COUNTS
    assert len(values) == 7_462  # the number of distinct five-card hand strengths


@pytest.mark.soak  # exhaustive: make test-soak (D387)
@pytest.mark.slow
def test_all_seven_card_hands_by_category() -> None:
    counts = seven_card_category_counts()
    assert counts == SEVEN_CARD_COUNTS
    assert sum(counts.values()) == 133_784_560


def _spread_suits(counts: tuple[int, ...]) -> list[Card]:
    """Cards with these rank counts, suits dealt round-robin: at most 2 of a suit in 7 cards
    (no flush), and a rank's cards all of different suits."""
    cards: list[Card] = []
    for rank, count in enumerate(counts):
        start = len(cards)
        cards.extend(DECK[rank * 4 + (start + k) % 4] for k in range(count))
    return cards


def test_values_computed_on_first_use_equal_the_dense_rank_table_for_every_multiset() -> None:
    # hand_value keeps each rank key's value as it is met (its counts read back from the
    # key); evaluate_batch reads its own dense table: both, for all 49,205 seven-card multisets
    hands = [_spread_suits(c) for c in rank_multisets(7)]
    ours = [hand_value(h) for h in hands]
    dense = evaluate_batch([[c.index for c in h] for h in hands])
    assert ours == dense.tolist()


def test_six_card_values_are_the_best_of_their_five_card_subsets() -> None:
    for counts in rank_multisets(6):
        hand = _spread_suits(counts)
        best = max(hand_value(list(five)) for five in itertools.combinations(hand, 5))
        assert hand_value(hand) == best
