"""DeckWatch's repeat checks skip an earlier shuffle only where the full comparison could
find nothing (no pair of successive cards in common, no card at the same position): over
random windows with planted repeats, stacked positions, duplicates and short voids, at
several alarm levels, every finding is the one the full comparison of every earlier
shuffle gives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from game.decks.check import DeckFinding, DeckLimits, DeckWatch, Shuffle, _sig, _suspect
from game.decks.statistics import (
    longest_common_run,
    run_chance,
    same_positions,
    same_positions_chance,
)
from game.poker.cards import DECK, Card


def full_repeats(watch: DeckWatch, shuffle: Shuffle) -> list[DeckFinding]:
    """The repeat checks as first written: every earlier shuffle compared in full."""
    cards, alarm, window = shuffle.cards, watch.limits.alarm_p, len(watch.recent)
    for earlier in reversed(watch.recent):
        run = longest_common_run(cards, earlier.cards)
        chance = window * run_chance(run.length, len(cards), len(earlier.cards))
        if run.length and chance < alarm:
            return [_suspect(
                "repeated_run", f"{run.length} cards dealt in the same order as hand"
                f" {earlier.hand_id} (chance {chance:.2g}): a preset or repeated deck",
                shuffle, earlier, statistic=run.length, p_value=_sig(chance),
                threshold=alarm, cards=[str(c) for c in cards[run.start:run.start + run.length]],
                positions=[run.start, run.earlier_start])]
        same = same_positions(cards, earlier.cards)
        chance = window * same_positions_chance(len(same), len(cards), len(earlier.cards))
        if same and chance < alarm:
            return [_suspect(
                "repeated_positions", f"{len(same)} positions hold the same cards as in"
                f" hand {earlier.hand_id} (chance {chance:.2g}): a stacked deck",
                shuffle, earlier, statistic=len(same), p_value=_sig(chance),
                threshold=alarm, positions=list(same), cards=[str(cards[i]) for i in same])]
    return []


def shuffles(seed: int, count: int) -> list[Shuffle]:
    """Shuffles of a window: fresh decks, some repeating part of an earlier one in order,
    some with cards at an earlier one's positions, some short, some with a card twice."""
    rng = random.Random(seed)
    made: list[tuple[Card, ...]] = []
    for _ in range(count):
        deck = list(DECK)
        rng.shuffle(deck)
        cards = deck[:rng.choice((1, 2, 9, 15, 15, 21, 52))]
        trick = rng.random()
        if made and trick < 0.25:  # a run of an earlier deal, in order, somewhere
            earlier = rng.choice(made)
            length = rng.randint(1, len(earlier))
            start = rng.randint(0, len(earlier) - length)
            at = rng.randint(0, max(0, len(cards) - length))
            cards[at:at + length] = earlier[start:start + length]
        elif made and trick < 0.45:  # a stacked deck: an earlier deal's cards in place
            earlier = rng.choice(made)
            for i in rng.sample(range(min(len(cards), len(earlier))),
                                rng.randint(0, min(len(cards), len(earlier)))):
                cards[i] = earlier[i]
        elif trick < 0.5 and len(cards) > 1:
            cards[rng.randrange(len(cards))] = cards[0]  # a card twice
        made.append(tuple(cards))
    return [Shuffle(hand_id=f"H{i}", cards=c) for i, c in enumerate(made)]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([1e-5, 1e-3, 0.05, 0.5, 0.99]),
       st.sampled_from([1, 5, 50]))
def test_the_repeat_findings_are_the_full_comparisons(seed: int, alarm: float,
                                                      window: int) -> None:
    watch = DeckWatch(DeckLimits(alarm_p=alarm, repeat_window=window))
    found = 0
    for shuffle in shuffles(seed, 60):
        expected = full_repeats(watch, shuffle)
        got = [f for f in watch.check(shuffle)
               if f.test in ("repeated_run", "repeated_positions")]
        assert got == expected
        found += len(got)
    assert len(watch._traces) <= 2 * (window + 1) + 1  # the traces kept stay bounded


def test_the_windows_above_do_find_repeats() -> None:
    """The generated windows are not all clean: both kinds of finding occur."""
    kinds: set[str] = set()
    for seed in range(20):
        watch = DeckWatch(DeckLimits(alarm_p=0.05, repeat_window=50))
        for shuffle in shuffles(seed, 60):
            kinds.update(f.test for f in watch.check(shuffle))
    assert {"repeated_run", "repeated_positions"} <= kinds


def test_planted_repeats_are_found_by_both_ways() -> None:
    watch = DeckWatch()
    first = Shuffle(hand_id="A", cards=tuple(DECK[:15]))
    watch.check(first)
    again = Shuffle(hand_id="B", cards=tuple(DECK[:15]))
    assert full_repeats(watch, again)
    assert [f.test for f in watch.check(again) if f.test.startswith("repeated")] \
        == ["repeated_run"]
