"""Hand-range notation: parsing, formatting, combinations and concrete card pairs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.errors import GameError
from game.poker.cards import DECK
from game.poker.ranges import (
    ALL_CLASSES,
    InvalidRange,
    class_combos,
    combos,
    format_range,
    is_class,
    parse_range,
    sort_classes,
)

RANKS = "23456789TJQKA"  # low to high, written out here independently of game.poker.cards


def _pair(r: int) -> str:
    return RANKS[r] * 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AA", {"AA"}),
        ("AKs,AQs,AJs", {"AKs", "AQs", "AJs"}),
        ("AKo", {"AKo"}),
        ("AK", {"AKs", "AKo"}),
        ("22-KK", {"22", "33", "44", "55", "66", "77", "88", "99", "TT", "JJ", "QQ", "KK"}),
        ("KK-22", {"22", "33", "44", "55", "66", "77", "88", "99", "TT", "JJ", "QQ", "KK"}),
        ("QQ+", {"QQ", "KK", "AA"}),
        ("A2s-A5s", {"A2s", "A3s", "A4s", "A5s"}),
        ("A5s-A2s", {"A2s", "A3s", "A4s", "A5s"}),
        ("ATs+", {"ATs", "AJs", "AQs", "AKs"}),
        ("KTo+", {"KTo", "KJo", "KQo"}),
        ("AT+", {"ATs", "AJs", "AQs", "AKs", "ATo", "AJo", "AQo", "AKo"}),
        ("T9-T7", {"T9s", "T8s", "T7s", "T9o", "T8o", "T7o"}),
        ("22+", {_pair(r) for r in range(13)}),
        ("32s+", {"32s"}),
        ("  aks ,  qq - kk ,\tJTo ", {"AKs", "QQ", "KK", "JTo"}),
        ("AA,AA,AK,AKs", {"AA", "AKs", "AKo"}),
    ],
)
def test_notation_expands_to_the_right_classes(text: str, expected: set[str]) -> None:
    assert parse_range(text) == frozenset(expected)


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("", ""),
        ("   ", "   "),
        ("AA,", ""),
        ("AA,,KK", ""),
        (",AA", ""),
        ("KAs", "KAs"),
        ("AAs", "AAs"),
        ("QQo+", "QQo+"),
        ("A2s-K5s", "A2s-K5s"),
        ("A2s-A5o", "A2s-A5o"),
        ("22-AKs", "22-AKs"),
        ("XX", "XX"),
        ("AA KK", "AA KK"),
        ("AKx", "AKx"),
        ("A", "A"),
        ("AKs++", "AKs++"),
        ("10s9s", "10s9s"),
        ("AA-", "AA-"),
        ("AK\u017f", "AK\u017f"),  # LONG S upper-cases to "S": refused, not read as suited
        ("AA,KK,Z", "Z"),
    ],
)
def test_malformed_items_are_refused_naming_the_item(text: str, bad: str) -> None:
    with pytest.raises(InvalidRange) as info:
        parse_range(text)
    assert info.value.token == bad
    assert repr(bad) in str(info.value)
    assert isinstance(info.value, GameError)


def test_there_are_169_classes_covering_the_1326_two_card_hands() -> None:
    assert len(ALL_CLASSES) == len(set(ALL_CLASSES)) == 13 + 78 + 78
    assert sum(combos(c) for c in ALL_CLASSES) == 52 * 51 // 2
    seen = set()
    for cls in ALL_CLASSES:
        for a, b in class_combos(cls):
            pair = frozenset((a, b))
            assert pair not in seen
            seen.add(pair)
    assert seen == {frozenset(p) for p in itertools.combinations(DECK, 2)}


@pytest.mark.parametrize(("cls", "count"), [("AA", 6), ("22", 6), ("AKs", 4), ("AKo", 12),
                                            ("32s", 4), ("72o", 12)])
def test_combination_counts(cls: str, count: int) -> None:
    assert combos(cls) == count
    pairs = class_combos(cls)
    assert len(pairs) == count
    for a, b in pairs:
        assert a != b
        assert {RANKS[a.rank], RANKS[b.rank]} == set(cls[:2])
        assert a.rank >= b.rank
        if len(cls) == 3:
            assert (a.suit == b.suit) == (cls[2] == "s")


@pytest.mark.parametrize("bad", ["KA", "AKx", "aks", "AAs", "", "AK s"])
def test_combos_refuses_a_non_class(bad: str) -> None:
    assert not is_class(bad)
    with pytest.raises(InvalidRange):
        combos(bad)


class_sets = st.frozensets(st.sampled_from(ALL_CLASSES))


@given(class_sets.filter(bool))
def test_format_then_parse_round_trips(classes: frozenset[str]) -> None:
    text = format_range(classes)
    assert parse_range(text) == classes
    assert parse_range(",".join(sorted(classes))) == classes


@given(class_sets)
def test_format_is_compact(classes: frozenset[str]) -> None:
    text = format_range(classes)
    assert (text == "") == (not classes)
    if classes:
        assert len(text.split(",")) <= len(classes)


# Independent model of the notation, for generated items.
@st.composite
def items(draw: st.DrawFn) -> tuple[str, set[str]]:
    kind = draw(st.sampled_from(["pair", "pair_span", "pair_plus", "hand", "span", "plus"]))
    if kind.startswith("pair"):
        a, b = sorted(draw(st.lists(st.integers(0, 12), min_size=2, max_size=2)))
        if kind == "pair":
            return _pair(a), {_pair(a)}
        if kind == "pair_plus":
            return _pair(a) + "+", {_pair(r) for r in range(a, 13)}
        lo_first = draw(st.booleans())
        text = f"{_pair(a)}-{_pair(b)}" if lo_first else f"{_pair(b)}-{_pair(a)}"
        return text, {_pair(r) for r in range(a, b + 1)}
    top = draw(st.integers(1, 12))
    sfx = draw(st.sampled_from(["s", "o", ""]))
    kinds = [sfx] if sfx else ["s", "o"]
    k1 = draw(st.integers(0, top - 1))
    if kind == "hand":
        return RANKS[top] + RANKS[k1] + sfx, {RANKS[top] + RANKS[k1] + x for x in kinds}
    if kind == "plus":
        return (RANKS[top] + RANKS[k1] + sfx + "+",
                {RANKS[top] + RANKS[k] + x for k in range(k1, top) for x in kinds})
    k2 = draw(st.integers(0, top - 1))
    text = f"{RANKS[top]}{RANKS[k1]}{sfx}-{RANKS[top]}{RANKS[k2]}{sfx}"
    lo, hi = sorted((k1, k2))
    return text, {RANKS[top] + RANKS[k] + x for k in range(lo, hi + 1) for x in kinds}


@given(st.lists(items(), min_size=1, max_size=6), st.sampled_from([",", ", ", " , "]))
def test_generated_ranges_match_an_independent_model(
    parts: list[tuple[str, set[str]]], sep: str
) -> None:
    text = sep.join(t for t, _ in parts)
    expected = set().union(*(e for _, e in parts))
    got = parse_range(text)
    assert got == expected
    assert sum(combos(c) for c in got) == sum(
        6 if len(c) == 2 else 4 if c.endswith("s") else 12 for c in expected
    )
    assert all(is_class(c) for c in got)


@given(st.text(max_size=30))
def test_garbage_only_ever_raises_invalid_range(text: str) -> None:
    try:
        result = parse_range(text)
    except InvalidRange:
        return
    assert result and all(is_class(c) for c in result)


@given(st.text(alphabet="23456789TJQKAakqjtso+-, ", max_size=20))
def test_near_miss_text_only_ever_raises_invalid_range(text: str) -> None:
    try:
        result = parse_range(text)
    except InvalidRange:
        return
    assert result and all(is_class(c) for c in result)


def test_sort_classes_orders_pairs_first_high_to_low() -> None:
    assert sort_classes(["AKo", "22", "AKs", "AA", "32s"]) == ["AA", "22", "AKs", "AKo", "32s"]
