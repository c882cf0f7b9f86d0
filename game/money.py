"""Rand amounts as integer cents: formatting, exact parsing and round-down splits.

No floats: "R1,234.50" parses to 123450 exactly, and a split never loses a cent (the
remainder is reported beside the shares).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction

from game.errors import GameError

__all__ = [
    "InvalidAmount",
    "format_rand",
    "is_multiple",
    "parse_amount",
    "parse_percent",
    "parse_rand",
    "split_round_down",
]

# Optional minus, optional "R", then either plain digits or digits grouped by commas in
# threes, then optionally a point and one or two decimals.
_AMOUNT = re.compile(
    r"""
    (?P<sign>-)?
    (?P<symbol>R)?
    \s*
    (?P<units>\d{1,3}(?:,\d{3})+|\d+)
    (?:\.(?P<cents>\d{1,2}))?
    """,
    re.VERBOSE,
)
_DECIMALS = re.compile(r"R?\s*[\d,]+\.(?P<cents>\d+)")
_PERCENT = re.compile(r"(?P<whole>\d+)(?:\.(?P<frac>\d+))?")


class InvalidAmount(GameError, ValueError):
    """A text that is not an exact rand amount or percentage (names the text and why)."""

    def __init__(self, text: object, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"{text!r} is not an amount: {reason}")


def format_rand(cents: int) -> str:
    """Format cents as rand with thousands separators: 123450 -> "R1,234.50", -2500 -> "-R25.00"."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise TypeError(f"amounts are integer cents, not {type(cents).__name__}")
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), 100)
    return f"{sign}R{units:,}.{rest:02d}"


def parse_rand(text: str) -> int:
    """Parse "R1,234.50", "1234.50", "1234" or "-R25" to integer cents, exactly (no float)."""
    if not isinstance(text, str):
        raise InvalidAmount(text, f"expected text such as \"R1,234.50\", got {type(text).__name__}")
    match = _AMOUNT.fullmatch(text.strip())
    if match is None:
        raise InvalidAmount(
            text, 'write it as R1,234.50, 1234.50 or 1234 (at most two decimals, commas in threes)'
        )
    units = int(match["units"].replace(",", ""))
    cents = int((match["cents"] or "0").ljust(2, "0"))
    value = units * 100 + cents
    return -value if match["sign"] else value


def parse_amount(text: str) -> int:
    """Parse an amount a person typed ("150", "150.00", "R150", "1,250.50") to integer cents:
    never negative, never a fraction of a cent; the error says which rule the text broke."""
    if isinstance(text, str):
        plain = text.strip()
        if plain.startswith("-"):
            raise InvalidAmount(text, "an amount cannot be negative")
        decimals = _DECIMALS.fullmatch(plain)
        if decimals is not None and len(decimals["cents"]) > 2:
            raise InvalidAmount(text, "a fraction of a cent (at most two decimals)")
    return parse_rand(text)


def parse_percent(value: int | str | Fraction) -> Fraction:
    """Read a percentage given as an int (60), a decimal string ("12.5") or a Fraction, exactly."""
    if isinstance(value, bool):
        raise InvalidAmount(value, "a percentage is a number, not true/false")
    if isinstance(value, int | Fraction):
        result = Fraction(value)
    elif isinstance(value, str):
        match = _PERCENT.fullmatch(value.strip().removesuffix("%").strip())
        if match is None:
            raise InvalidAmount(value, 'write a percentage as 60 or "12.5"')
        frac = match["frac"] or ""
        result = Fraction(int(match["whole"] + frac), 10 ** len(frac))
    else:
        raise InvalidAmount(
            value, f"a percentage is an integer or a decimal string, not {type(value).__name__}"
        )
    if not 0 <= result <= 100:
        raise InvalidAmount(value, "a percentage must be between 0 and 100")
    return result


def is_multiple(amount_cents: int, unit_cents: int) -> bool:
    """Whether an amount is a whole number of units (e.g. of the R25 table denomination)."""
    if unit_cents <= 0:
        raise ValueError(f"the unit must be positive, got {unit_cents}")
    return amount_cents % unit_cents == 0


def split_round_down(
    total_cents: int, percents: Sequence[int | Fraction]
) -> tuple[tuple[int, ...], int]:
    """Split cents by percentages adding to 100; each share rounds down, the remainder is returned.

    Returns (shares, remainder) with sum(shares) + remainder == total_cents.
    """
    if isinstance(total_cents, bool) or not isinstance(total_cents, int):
        raise TypeError(f"amounts are integer cents, not {type(total_cents).__name__}")
    if total_cents < 0:
        raise ValueError(f"cannot split a negative amount ({format_rand(total_cents)})")
    fractions: list[Fraction] = []
    for p in percents:
        if isinstance(p, bool) or not isinstance(p, int | Fraction):
            raise TypeError(f"percentages are ints or Fractions, not {type(p).__name__}")
        if p < 0:
            raise ValueError(f"a percentage cannot be negative ({p})")
        fractions.append(Fraction(p))
    if sum(fractions) != 100:
        raise ValueError(f"percentages must add up to 100, they add up to {sum(fractions)}")
    # Floor division of Fractions is exact and yields int: no float anywhere.
    shares = tuple((total_cents * f) // 100 for f in fractions)
    return shares, total_cents - sum(shares)
