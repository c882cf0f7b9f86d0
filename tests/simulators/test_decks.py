"""The simulators' deck modes (simulators.decks): shuffled as before, factory order, one
Gilbert-Shannon-Reeds riffle, the same order every hand."""

from __future__ import annotations

import random

import pytest

from game.poker.cards import DECK, Card, parse_cards
from simulators.dealer import VirtualDealer
from simulators.decks import DECK_MODES, FACTORY_ORDER, DeckSource, riffle
from simulators.shoe import ShoeSimulator


def rising_sequences(deck: list[Card]) -> int:
    """How many rising runs of FACTORY_ORDER positions the deck splits into (Bayer-Diaconis)."""
    where = {c: i for i, c in enumerate(deck)}
    return 1 + sum(where[FACTORY_ORDER[i + 1]] < where[FACTORY_ORDER[i]] for i in range(51))


def test_shuffled_is_the_draw_the_dealers_always_made() -> None:
    before = list(DECK)
    random.Random(42).shuffle(before)
    assert DeckSource("shuffled", rng=random.Random(42)).next_deck() == before
    assert VirtualDealer(rng=random.Random(42)).shuffled_deck() == before
    again = DeckSource("shuffled", seed=9)
    assert again.seed == 9 and again.next_deck() == DeckSource(seed=9).next_deck()


def test_factory_order_is_the_a_k_k_a_new_deck() -> None:
    assert DeckSource("factory", seed=1).next_deck() == list(FACTORY_ORDER)
    assert FACTORY_ORDER[:3] == parse_cards("As 2s 3s")
    assert FACTORY_ORDER[12:15] == parse_cards("Ks Ad 2d")
    assert FACTORY_ORDER[26:28] == parse_cards("Kc Qc")
    assert FACTORY_ORDER[-1] == parse_cards("Ah")[0]
    assert sorted(FACTORY_ORDER) == list(DECK)


def test_one_riffle_is_a_permutation_of_at_most_two_rising_sequences() -> None:
    rng = random.Random(5)
    counts = set()
    for _ in range(200):
        deck = riffle(list(FACTORY_ORDER), rng)
        assert sorted(deck) == list(DECK)
        counts.add(rising_sequences(deck))
    assert counts <= {1, 2} and 2 in counts
    source = DeckSource("riffle", seed=3)
    first, second = source.next_deck(), source.next_deck()
    assert first != second and rising_sequences(first) <= 2


def test_repeated_deals_one_shuffled_order_every_hand() -> None:
    source = DeckSource("repeated", seed=11)
    first = source.next_deck()
    assert first != list(DECK) and sorted(first) == list(DECK)
    assert source.next_deck() == first == DeckSource("repeated", seed=11).next_deck()


def test_every_mode_gives_52_distinct_cards_and_a_bad_mode_is_refused() -> None:
    for mode in DECK_MODES:
        assert sorted(DeckSource(mode, seed=2).next_deck()) == list(DECK)
    with pytest.raises(ValueError, match="deck mode 'stacked' is not one of shuffled"):
        DeckSource("stacked")  # type: ignore[arg-type]


def test_the_virtual_dealer_deals_from_its_deck_source() -> None:
    dealer = VirtualDealer(rng=random.Random(1), decks=DeckSource("factory", seed=1))
    assert dealer.shuffled_deck() == list(FACTORY_ORDER)


def test_the_shoe_simulator_loads_decks_of_a_mode_and_keeps_its_own_shuffle_by_default() -> None:
    factory = ShoeSimulator(seed=4, deck_mode="factory")  # not started: the caller's thread
    assert factory.deal(52) == list(FACTORY_ORDER)
    factory.load()
    assert factory.deal(3) == list(FACTORY_ORDER[:3])
    repeated = ShoeSimulator(seed=4, deck_mode="repeated", decks=2, queue_capacity=200)
    first = repeated.deal(104)
    assert first[:52] == first[52:] and sorted(first[:52]) == list(DECK)
    expected = list(DECK)
    random.Random(4).shuffle(expected)
    assert ShoeSimulator(seed=4).deal(52) == expected == ShoeSimulator(
        seed=4, deck_mode="shuffled").deal(52)
