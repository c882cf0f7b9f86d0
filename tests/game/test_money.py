"""game.money: rand formatting, exact parsing and round-down splits (tournament.md "Money")."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.errors import GameError
from game.money import (
    InvalidAmount,
    format_rand,
    is_multiple,
    parse_percent,
    parse_rand,
    split_round_down,
)


@pytest.mark.parametrize(
    ("cents", "text"),
    [
        (0, "R0.00"),
        (5, "R0.05"),
        (2_500, "R25.00"),
        (3_750, "R37.50"),
        (123_450, "R1,234.50"),
        (200_000, "R2,000.00"),
        (123_456_789, "R1,234,567.89"),
        (-2_500, "-R25.00"),
        (-5, "-R0.05"),
    ],
)
def test_format_rand(cents: int, text: str) -> None:
    assert format_rand(cents) == text


@pytest.mark.parametrize("bad", [1.5, "100", True, None])
def test_format_rand_refuses_non_int(bad: object) -> None:
    with pytest.raises(TypeError):
        format_rand(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("R1,234.50", 123_450),
        ("1234.50", 123_450),
        ("1234", 123_400),
        ("R2,000", 200_000),
        ("R25", 2_500),
        ("R37.5", 3_750),
        ("R0.05", 5),
        ("-R25.00", -2_500),
        ("  R100  ", 10_000),
        ("R1,234,567.89", 123_456_789),
        # 0.1 + 0.2 style float traps: parsed exactly, digit by digit
        ("0.29", 29),
        ("1000000000000000.01", 100_000_000_000_000_001),
    ],
)
def test_parse_rand(text: str, cents: int) -> None:
    assert parse_rand(text) == cents


@pytest.mark.parametrize(
    "text",
    ["", "R", "R1,23", "R12,34.00", "1.234", "R1.2.3", "R-25", "twenty", "R25c", "1e3", "R 1 000",
     "R1,2345"],
)
def test_parse_rand_refuses(text: str) -> None:
    with pytest.raises(InvalidAmount) as info:
        parse_rand(text)
    assert isinstance(info.value, GameError)
    assert repr(text) in str(info.value)


def test_parse_rand_refuses_non_text() -> None:
    with pytest.raises(InvalidAmount):
        parse_rand(12.5)  # type: ignore[arg-type]


@given(st.integers(min_value=-10**12, max_value=10**12))
def test_format_then_parse_round_trips(cents: int) -> None:
    assert parse_rand(format_rand(cents)) == cents


@pytest.mark.parametrize(
    ("value", "expected"),
    [(60, Fraction(60)), ("12.5", Fraction(25, 2)), ("7%", Fraction(7)),
     (Fraction(1, 3), Fraction(1, 3)), ("0", Fraction(0)), (100, Fraction(100))],
)
def test_parse_percent(value: int | str | Fraction, expected: Fraction) -> None:
    assert parse_percent(value) == expected


@pytest.mark.parametrize("value", [101, -1, "abc", "1/3", 12.5, True, "100.01"])
def test_parse_percent_refuses(value: object) -> None:
    with pytest.raises(InvalidAmount):
        parse_percent(value)  # type: ignore[arg-type]


def test_is_multiple() -> None:
    assert is_multiple(5_000, 2_500)
    assert is_multiple(0, 2_500)
    assert not is_multiple(3_750, 2_500)
    with pytest.raises(ValueError, match="positive"):
        is_multiple(100, 0)


def test_split_final_pool_by_hand() -> None:
    # Final Prize Pool R1,000.01 split 60/10/9/8/7/6 [52]: 600.006 -> 600.00, 100.001 -> 100.00,
    # 90.0009 -> 90.00, 80.0008 -> 80.00, 70.0007 -> 70.00, 60.0006 -> 60.00; 1 cent left over.
    shares, remainder = split_round_down(100_001, [60, 10, 9, 8, 7, 6])
    assert shares == (60_000, 10_000, 9_000, 8_000, 7_000, 6_000)
    assert remainder == 1


def test_split_buy_ins_80_20() -> None:
    # 37 buy-ins of R100 = R3,700: 80% = R2,960, 20% = R740 exactly.
    assert split_round_down(370_000, [80, 20]) == ((296_000, 74_000), 0)


def test_split_thirds_with_fractions() -> None:
    # 100 cents in thirds: 33.33.. each -> 33, 33, 33 and 1 cent left.
    third = Fraction(100, 3)
    assert split_round_down(100, [third, third, third]) == ((33, 33, 33), 1)


def test_split_top_score_60_25_15() -> None:
    # R740.05 = 74,005 cents: 44,403 / 18,501.25 -> 18,501 / 11,100.75 -> 11,100; 1 cent left.
    assert split_round_down(74_005, [60, 25, 15]) == ((44_403, 18_501, 11_100), 1)


@pytest.mark.parametrize(
    ("total", "percents", "error"),
    [
        (100, [60, 30], ValueError),         # adds to 90
        (100, [60, 50], ValueError),         # adds to 110
        (100, [], ValueError),
        (-1, [100], ValueError),
        (100, [-10, 110], ValueError),
        (100, [50.0, 50.0], TypeError),      # floats refused
        (100, [True, 99], TypeError),
        (1.0, [100], TypeError),
    ],
)
def test_split_refuses(total: object, percents: list[object], error: type[Exception]) -> None:
    with pytest.raises(error):
        split_round_down(total, percents)  # type: ignore[arg-type]


@given(
    st.integers(min_value=0, max_value=10**12),
    st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=8),
)
def test_split_never_loses_a_cent(total: int, weights: list[int]) -> None:
    scale = Fraction(100, sum(weights))
    percents = [w * scale for w in weights]
    shares, remainder = split_round_down(total, percents)
    assert sum(shares) + remainder == total
    assert 0 <= remainder < len(percents)
    for share, p in zip(shares, percents, strict=True):
        exact = total * p / 100
        assert share <= exact < share + 1
