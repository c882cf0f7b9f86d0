"""A heat's opening and closing chip counts at one table (the table inventory slip: New Jersey
N.J.A.C. 13:69D-1.21, Maryland COMAR): the dealer counts the tray by hand, chip value by chip
value; a supervisor confirms the count under their own credential; the difference from what
the table expected is reported, and a difference over the house's tolerance is an alert.

What the table expects (D375): the chips of the set in play that its RFID float holds (in the
tray, issued to no entry), value by value, when the table has a chip registry for that set;
without one, at closing the heat's confirmed opening count, at opening the last confirmed
closing count at this table; with neither, nothing is expected (no difference is reported).

Pure: the counts, the people and the times come in as arguments; `CountBook` is rebuilt by
replaying the same journaled inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from game.errors import GameError
from game.money import format_rand

__all__ = [
    "CONFIRM_ROLES",
    "COUNT_ROLES",
    "MAX_CHIPS_OF_ONE_VALUE",
    "STAGES",
    "ChipCount",
    "CountBook",
    "CountRefused",
    "Stage",
    "expected_of",
    "over_tolerance",
    "read_counted",
    "total_of",
]

Stage = Literal["opening", "closing"]
STAGES: Final[tuple[Stage, ...]] = ("opening", "closing")
COUNT_ROLES: Final = frozenset({"dealer", "supervisor", "manager"})  # who may count
CONFIRM_ROLES: Final = frozenset({"supervisor", "manager"})  # who may confirm a count
MAX_CHIPS_OF_ONE_VALUE: Final = 100_000  # far more than any tray holds
MAX_VALUE_CENTS: Final = 100_000_000  # R1,000,000: no chip is worth more

Counted = tuple[tuple[int, int], ...]  # (value in cents, how many), by value


class CountRefused(GameError):
    """A count or confirmation that cannot be taken; the message says why."""


def read_counted(raw: object, values: frozenset[int] | None = None) -> Counted:
    """A hand count as the dealer gives it: chip value in cents (a whole number, or its text)
    -> how many; ``values``: the chip set's values (None: any). ValueError says what is wrong."""
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError("counted: give how many chips of each value were counted, as an"
                         " object of value in cents -> count")
    if len(raw) > 100:
        raise ValueError("counted: at most 100 chip values")
    out: dict[int, int] = {}
    for key, quantity in raw.items():
        value = _value(key)
        if values is not None and value not in values:
            shown = ", ".join(format_rand(v) for v in sorted(values))
            raise ValueError(f"counted: {format_rand(value)} is not a chip value of the set in"
                             f" play ({shown})")
        if value in out:
            raise ValueError(f"counted: {format_rand(value)} is given twice")
        if isinstance(quantity, bool) or not isinstance(quantity, int):
            raise ValueError(f"counted: the count of {format_rand(value)} chips must be a whole"
                             f" number, not {quantity!r}"[:200])
        if not 0 <= quantity <= MAX_CHIPS_OF_ONE_VALUE:
            raise ValueError(f"counted: the count of {format_rand(value)} chips must be 0 to"
                             f" {MAX_CHIPS_OF_ONE_VALUE}, not {quantity}")
        out[value] = quantity
    return tuple(sorted(out.items()))


def _value(key: object) -> int:
    if isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 12:
        key = int(key)
    if isinstance(key, bool) or not isinstance(key, int) or not 0 < key <= MAX_VALUE_CENTS:
        raise ValueError(f"counted: {str(key)[:40]!r} is not a chip value in whole cents")
    return key


def total_of(counted: Counted) -> int:
    """Cents of a count: the sum of value x quantity."""
    return sum(value * quantity for value, quantity in counted)


def expected_of(chip_values: Mapping[int, int] | None, *, stage: Stage,
                opening: ChipCount | None, last_closing: ChipCount | None) -> Counted | None:
    """What the table expects in the tray (D375): its float by value (``chip_values``: value ->
    chips in the float; None: no registry for the set in play), else the opening count (at
    closing) or the last closing count (at opening); None when nothing is known."""
    if chip_values is not None:
        return tuple(sorted((v, n) for v, n in chip_values.items() if n))
    earlier = opening if stage == "closing" else last_closing
    return None if earlier is None else earlier.counted


def over_tolerance(difference_cents: int | None, tolerance_cents: int) -> bool:
    """True when a difference (either way) is more than the house's tolerance."""
    return difference_cents is not None and abs(difference_cents) > tolerance_cents


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipCount:
    """One hand count of the tray at a heat's opening or closing, and its confirmation."""

    heat_id: str
    stage: Stage
    counted: Counted
    expected: Counted | None
    dealer_id: str
    counted_at: str
    supervisor_id: str | None = None
    confirmed_at: str | None = None
    tolerance_cents: int = 0

    @property
    def total_cents(self) -> int:
        """What the count is worth."""
        return total_of(self.counted)

    @property
    def expected_cents(self) -> int | None:
        """What the table expected (None: nothing known)."""
        return None if self.expected is None else total_of(self.expected)

    @property
    def difference_cents(self) -> int | None:
        """Counted minus expected (None when nothing was expected)."""
        expected = self.expected_cents
        return None if expected is None else self.total_cents - expected

    @property
    def over(self) -> bool:
        """True when the difference is over the tolerance the confirmation was taken with."""
        return over_tolerance(self.difference_cents, self.tolerance_cents)

    def differences(self) -> tuple[tuple[int, int], ...]:
        """Per value, counted minus expected, where they differ (empty when nothing known)."""
        if self.expected is None:
            return ()
        counted, expected = dict(self.counted), dict(self.expected)
        return tuple((v, counted.get(v, 0) - expected.get(v, 0))
                     for v in sorted(set(counted) | set(expected))
                     if counted.get(v, 0) != expected.get(v, 0))

    def summary(self) -> str:
        """One line for the supervisor."""
        words = (f"{self.stage} count of heat {self.heat_id}: {format_rand(self.total_cents)}"
                 f" counted by {self.dealer_id}")
        if self.expected is None:
            return words + ", nothing expected to compare with"
        diff = self.difference_cents or 0
        words += f", {format_rand(self.expected_cents or 0)} expected"
        if not diff:
            return words + ", no difference"
        each = "; ".join(f"{format_rand(v)} x {n:+d}" for v, n in self.differences())
        return words + f", difference {'+' if diff > 0 else ''}{format_rand(diff)} ({each})"

    def state(self) -> dict[str, Any]:
        """Plain data, for the table's snapshot."""
        return {"heat_id": self.heat_id, "stage": self.stage,
                "counted": [list(p) for p in self.counted],
                "expected": None if self.expected is None else [list(p) for p in self.expected],
                "dealer_id": self.dealer_id, "counted_at": self.counted_at,
                "supervisor_id": self.supervisor_id, "confirmed_at": self.confirmed_at,
                "tolerance_cents": self.tolerance_cents}

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> ChipCount:
        """Read `state`'s data back (ValueError naming what is wrong)."""
        stage = data["stage"]
        if stage not in STAGES:
            raise ValueError(f"stage {stage!r} is not opening or closing")
        expected = data["expected"]
        return cls(heat_id=str(data["heat_id"]), stage=stage,
                   counted=_pairs(data["counted"]),
                   expected=None if expected is None else _pairs(expected),
                   dealer_id=str(data["dealer_id"]), counted_at=str(data["counted_at"]),
                   supervisor_id=_opt(data["supervisor_id"]),
                   confirmed_at=_opt(data["confirmed_at"]),
                   tolerance_cents=int(data["tolerance_cents"]))


def _pairs(raw: object) -> Counted:
    if not isinstance(raw, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(type(x) is int and x >= 0 for x in p)
            for p in raw):
        raise ValueError("a count must be a list of [value, quantity] pairs")
    return tuple((p[0], p[1]) for p in raw)


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


class CountBook:
    """The counts of one table: the latest unconfirmed count per (heat, stage) and every
    confirmed one; refuses what the rules forbid (see `record` and `confirm`)."""

    def __init__(self) -> None:
        self.pending: dict[tuple[str, Stage], ChipCount] = {}
        self.confirmed: dict[tuple[str, Stage], ChipCount] = {}
        self.last_closing: ChipCount | None = None

    def record(self, *, heat_id: str, stage: Stage, counted: Counted,
               expected: Counted | None, dealer_id: str, role: str | None,
               at: str) -> ChipCount:
        """The dealer's hand count (a second one before confirmation replaces the first);
        CountRefused when the person may not count or the stage is confirmed already."""
        if role is not None and role not in COUNT_ROLES:
            raise CountRefused(f"{dealer_id} is signed in as {role}: a dealer, supervisor or"
                               " manager counts the tray")
        key = (heat_id, stage)
        if key in self.confirmed:
            done = self.confirmed[key]
            raise CountRefused(f"the {stage} count of heat {heat_id} is confirmed already"
                               f" (by {done.supervisor_id} at {done.confirmed_at})")
        count = ChipCount(heat_id=heat_id, stage=stage, counted=counted, expected=expected,
                          dealer_id=dealer_id, counted_at=at)
        self.pending[key] = count
        return count

    def confirm(self, *, heat_id: str, stage: Stage, supervisor_id: str, role: str | None,
                active: bool, tolerance_cents: int, at: str) -> ChipCount:
        """A supervisor's confirmation of the pending count, under their own credential: a
        second person (never the one who counted), a supervisor or manager, enrolled and
        active. CountRefused says why not."""
        key = (heat_id, stage)
        count = self.pending.get(key)
        if count is None:
            if key in self.confirmed:
                raise CountRefused(f"the {stage} count of heat {heat_id} is confirmed already")
            raise CountRefused(f"no {stage} count of heat {heat_id} is waiting for"
                               " confirmation: the dealer counts first")
        if supervisor_id == count.dealer_id:
            raise CountRefused(f"{supervisor_id} counted this tray: a second person (a"
                               " supervisor) confirms the count")
        if role is None:
            raise CountRefused(f"{supervisor_id} is not on this table's staff roster")
        if not active:
            raise CountRefused(f"{supervisor_id}'s credential is disabled")
        if role not in CONFIRM_ROLES:
            raise CountRefused(f"{supervisor_id} is a {role}: a supervisor or manager confirms"
                               " a chip count")
        if tolerance_cents < 0:
            raise CountRefused("the count tolerance cannot be negative")
        done = replace(count, supervisor_id=supervisor_id, confirmed_at=at,
                       tolerance_cents=tolerance_cents)
        del self.pending[key]
        self.confirmed[key] = done
        if stage == "closing":
            self.last_closing = done
        return done

    def of_heat(self, heat_id: str, stage: Stage) -> ChipCount | None:
        """The heat's confirmed count of ``stage``, if any."""
        return self.confirmed.get((heat_id, stage))

    def missing(self, heat_id: str) -> tuple[Stage, ...]:
        """The stages of the heat with no confirmed count."""
        return tuple(s for s in STAGES if (heat_id, s) not in self.confirmed)

    def view(self, heat_id: str | None) -> dict[str, Any]:
        """The counts of a heat for the dealer's screen and the status."""
        out: dict[str, Any] = {}
        for stage in STAGES:
            key = (heat_id or "", stage)
            found = self.confirmed.get(key) or self.pending.get(key)
            out[stage] = None if found is None else {
                "counted": {str(v): n for v, n in found.counted},
                "total_cents": found.total_cents, "total": format_rand(found.total_cents),
                "expected_cents": found.expected_cents,
                "difference_cents": found.difference_cents,
                "dealer_id": found.dealer_id, "supervisor_id": found.supervisor_id,
                "confirmed": found.supervisor_id is not None, "say": found.summary()}
        return out
