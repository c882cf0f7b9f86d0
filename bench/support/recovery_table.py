"""The recovery-time table of bench/recovery.py: one row a failure, its goal, and the check.

A row says how long the system took to serve again after the failure (or, for the rebuild,
its rate), the same run's baseline or peer beside it, the messages lost and doubled, and the
goal's PASS or MISS (never a failed run). A row whose result is wrong (a message lost or
doubled, a service that never came back) carries ``wrong``: the run then exits 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Goal", "Options", "Outcome", "Row", "print_outcomes"]


@dataclass(frozen=True, slots=True)
class Goal:
    """The issue's goal for a row: at most ``limit`` seconds, or at least ``limit`` msg/s."""

    limit: float
    unit: str  # "s" (at most) or "msg/s" (at least)

    def met(self, value: float) -> bool:
        """Whether ``value`` meets the goal."""
        return value <= self.limit if self.unit == "s" else value >= self.limit

    def text(self) -> str:
        """The goal as printed: "< 2 s", ">= 10,000 msg/s"."""
        return f"< {self.limit:g} s" if self.unit == "s" else f">= {self.limit:,.0f} msg/s"


@dataclass(slots=True)
class Outcome:
    """One row of the table (a row function may give several, e.g. table and centre)."""

    failure: str
    measure: str = ""  # what "time to serve again" is, in a few words
    value: float | None = None  # seconds (or msg/s for a rate goal); None: not measured
    baseline: str = ""  # the same run's baseline or peer, as printed
    lost: int | None = None
    doubled: int | None = None
    goal: Goal | None = None
    note: str = ""  # "not measured: needs ..." or a remark
    wrong: str | None = None  # a wrong result: the run exits 1
    details: list[str] = field(default_factory=list)  # lines printed under the table

    @property
    def verdict(self) -> str:
        """PASS, MISS, or "-" when not measured or without a goal."""
        if self.value is None or self.goal is None:
            return "-"
        return "PASS" if self.goal.met(self.value) else "MISS"

    def value_text(self) -> str:
        """The measured figure as printed."""
        if self.value is None:
            return "-"
        if self.goal is not None and self.goal.unit == "msg/s":
            return f"{self.value:,.0f} msg/s"
        return f"{self.value:.2f} s"


@dataclass(frozen=True, slots=True)
class Options:
    """What every row function is given."""

    quick: bool
    scratch: Path  # a temporary folder of the run's own
    repeats: int  # kills per broker row (a p99 over them)
    args: argparse.Namespace


RowFunction = Callable[[Options], Awaitable[list[Outcome]]]


@dataclass(frozen=True, slots=True)
class Row:
    """A row of the registry: its name for ``--rows`` and the function that measures it."""

    name: str
    about: str
    measure: RowFunction


def _cell(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def print_outcomes(outcomes: Sequence[Outcome]) -> None:
    """The table, then each row's details, then the goal lines."""
    width = max([len(o.failure) for o in outcomes] + [7])
    head = (f"{'failure':<{width}}  {'time to serve again':>20}  {'lost':>5}  {'doubled':>7}  "
            f"{'goal':>16}  {'':<4}  baseline / peer (same run)")
    print(head)
    print("-" * len(head))
    for o in outcomes:
        goal = o.goal.text() if o.goal else "-"
        print(f"{o.failure:<{width}}  {o.value_text():>20}  {_cell(o.lost):>5}  "
              f"{_cell(o.doubled):>7}  {goal:>16}  {o.verdict:<4}  {o.baseline}")
    print()
    for o in outcomes:
        lines = [f"  {o.measure}" if o.measure else "", *(f"  {d}" for d in o.details),
                 f"  note: {o.note}" if o.note else "",
                 f"  WRONG: {o.wrong}" if o.wrong else ""]
        lines = [line for line in lines if line]
        if lines:
            print(f"{o.failure}:")
            print("\n".join(lines))
    print()
    for o in outcomes:
        if o.goal is not None and o.value is not None:
            print(f"goal {o.failure}: {o.goal.text()}: {o.verdict} ({o.value_text()})")
        elif o.goal is not None:
            print(f"goal {o.failure}: {o.goal.text()}: not measured")
        if o.lost is not None or o.doubled is not None:
            ok = not o.lost and not o.doubled
            print(f"goal {o.failure}: 0 lost and 0 doubled: {'PASS' if ok else 'MISS'} "
                  f"(lost {_cell(o.lost)}, doubled {_cell(o.doubled)})")
