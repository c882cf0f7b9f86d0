"""Every wager line of every recorded hand paid by the paytables in force (rules.md §5-7,
paytables.toml), recomputed from the line's stake and result: a push nets 0, a loss the
chips staked, a winning Ante or Play 1 to 1, a winning Odds or side bet the paytable's odds on
its full value (chips plus a Final marker's R500), rounded down to the cent. Which
line a hand made is the table's reading (hand evaluation is the dispute replay's to check);
what that line pays is checked here, against the table's own paytable file read with tomllib.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.e2e.records import RecordedHand

__all__ = ["Paytables", "payout_problems", "read_paytables", "tables_paytables"]

_EVEN = frozenset({"ante", "play"})


def _ratio(value: Any) -> Fraction:
    """A pay as written: N (N to 1) or "A:B" (A to B)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    a, b = str(value).split(":")
    return Fraction(int(a), int(b))


@dataclass(frozen=True, slots=True, kw_only=True)
class Paytables:
    """Pays by wager and line: odds_win, odds_lose, trips_plus, sweet16, pocket_bonus."""

    lines: Mapping[str, Mapping[str, Fraction]]


def read_paytables(path: Path) -> Paytables:
    """The paytables file a table runs with."""
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    lines: dict[str, dict[str, Fraction]] = {}
    for section in ("odds_win", "odds_lose", "trips_plus", "sweet16"):
        lines[section] = {k: _ratio(v) for k, v in data.get(section, {}).items()}
    lines["pocket_bonus"] = {str(line["name"]): _ratio(line["pays"])
                             for line in data.get("pocket_bonus", [])}
    return Paytables(lines=lines)


def _expected(wager: str, line: Mapping[str, Any], outcome: str | None, tables: Paytables,
              marker_cents: int) -> tuple[int | None, str]:
    stake = int(line["stake"])
    result = line["result"]
    if result == "push":
        return 0, "a push"
    if result == "lose":
        return -stake, "a loss of the chips staked"
    if wager in _EVEN:
        return stake, "1 to 1"
    table = ("odds_lose" if outcome == "lose" else "odds_win") if wager == "odds" else wager
    pay = tables.lines.get(table, {}).get(str(line.get("line")))
    if pay is None:
        return None, f"no line {line.get('line')!r} in [{table}]"
    value = stake + (marker_cents if line.get("marker") else 0)
    return int(value * pay), f"{pay} to 1 on {value} cents ([{table}] {line.get('line')})"


def payout_problems(hand: RecordedHand, tables: Paytables, marker_cents: int) -> list[str]:
    """One line per wager line of `hand` not paid as its paytable says."""
    out: list[str] = []
    for seat in hand.seats:
        for wager, line in seat.lines.items():
            want, why = _expected(wager, line, seat.outcome, tables, marker_cents)
            if want is None or int(line["net"]) != want:
                out.append(f"{hand.table} hand {hand.hand_id} seat {seat.seat} {wager}:"
                           f" {line.get('result')} netted {line['net']}, expected {want} ({why})")
    return out


def tables_paytables(table_files: Mapping[str, Path]) -> dict[str, Paytables]:
    """Each table's paytables, from the file its table.toml names ([files] paytables)."""
    out = {}
    for table, config in table_files.items():
        with config.open("rb") as handle:
            named = Path(tomllib.load(handle)["files"]["paytables"])
        out[table] = read_paytables(named if named.is_absolute() else config.parent / named)
    return out
