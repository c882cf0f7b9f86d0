"""Amounts people type on the command line: rand in every accepted spelling, never negative,
never a fraction of a cent (game.money.parse_amount, cli.main.rand_amount)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.arguments import rand_amount
from game.money import InvalidAmount, format_rand, parse_amount


@pytest.mark.parametrize(("text", "cents"), [
    ("150", 15_000), ("150.00", 15_000), ("R150", 15_000), ("1,250.50", 125_050),
    ("R 1,250.5", 125_050), ("0.01", 1), ("  R25 ", 2_500), ("0", 0),
])
def test_each_spelling_of_an_amount(text: str, cents: int) -> None:
    assert parse_amount(text) == cents


@pytest.mark.parametrize(("text", "why"), [
    ("-5", "an amount cannot be negative"),
    ("-R25.00", "an amount cannot be negative"),
    ("1.005", "a fraction of a cent (at most two decimals)"),
    ("R1,250.505", "a fraction of a cent (at most two decimals)"),
    ("1,25", "commas in threes"),
    ("R", "write it as R1,234.50"),
    ("ten", "write it as R1,234.50"),
])
def test_what_is_not_an_amount_says_why(text: str, why: str) -> None:
    with pytest.raises(InvalidAmount) as bad:
        parse_amount(text)
    assert str(bad.value).startswith(f"{text!r} is not an amount: ") and why in str(bad.value)
    with pytest.raises(argparse.ArgumentTypeError, match="is not an amount"):
        rand_amount(text)


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=10**12))
def test_what_is_printed_reads_back(cents: int) -> None:
    assert parse_amount(format_rand(cents)) == cents
    assert rand_amount(format_rand(cents).removeprefix("R").replace(",", "")) == cents
