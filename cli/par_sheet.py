"""`showdown par-sheet`: the exact return of every side-bet paytable in force, line by line."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from game.paytables.lines import CategoryTable, Paytables
from game.poker.evaluate import Category
from game.poker.ranges import format_range
from runtime.settings_files import read_paytables

if TYPE_CHECKING:  # game.paytables.parsheet brings numpy: imported by `run`, not to parse arguments
    from game.paytables.parsheet import ParSheet

__all__ = ["register", "render_json", "render_text", "run"]

_ODDS_NOTE = "paytable in force; its return is not computed (it depends on the player's strategy)"


def register(sub: Any) -> None:
    """Add the `par-sheet` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "par-sheet",
        help="exact return to player and house edge of each side-bet paytable",
        description=(
            "Print the exact par sheet (single 52-card deck, full enumeration) of Trips Plus, "
            "Pocket Bonus and Sweet 16 for the paytables in force, and the Odds tables. "
            "The paytables come from --paytables FILE, else $SHOWDOWN_PAYTABLES, else "
            "the shipped paytables.toml."
        ),
    )
    p.add_argument("--paytables", type=Path, metavar="FILE",
                   help="paytable file to evaluate (TOML, see docs/paytables.md)")
    p.add_argument("--json", action="store_true", help="print JSON with exact fractions")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read the paytables, compute every par sheet exactly and print them."""
    paytables = read_paytables(args.paytables)
    from game.paytables.parsheet import par_sheets  # noqa: PLC0415

    sheets = par_sheets(paytables)
    if args.json:
        print(json.dumps(render_json(paytables, sheets), indent=2, ensure_ascii=False))
    else:
        print(render_text(paytables, sheets))
    return 0


def _fraction(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _decimal(value: Fraction, places: int) -> str:
    """``value`` rounded half up to ``places`` decimals, exactly (no float)."""
    scaled = value * 10**places
    units = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), 10**places)
    return f"{sign}{whole}.{frac:0{places}d}" if places else f"{sign}{whole}"


def _percent(value: Fraction) -> str:
    return _decimal(value * 100, 4) + "%"


def _high_first(table: CategoryTable) -> list[Category]:
    return sorted(table.pays, reverse=True)


def _odds_json(table: CategoryTable) -> dict[str, Any]:
    return {
        "note": _ODDS_NOTE,
        "lines": [{"name": c.key, "pays": str(table.pays[c])} for c in _high_first(table)],
    }


def render_json(paytables: Paytables, sheets: tuple[ParSheet, ...]) -> dict[str, Any]:
    """The par sheets as a JSON-ready object keyed by bet, fractions as "p/q" strings."""
    out: dict[str, Any] = {}
    for sheet in sheets:
        out[sheet.bet] = {
            "return": _fraction(sheet.return_to_player),
            "house_edge": _fraction(sheet.house_edge),
            "outcomes": sheet.outcomes,
            "lines": [
                {
                    "name": ln.name,
                    "pays": str(ln.pays),
                    "combinations": ln.combinations,
                    "probability": _fraction(ln.probability),
                    "contribution": _fraction(ln.contribution),
                }
                for ln in sheet.lines
            ],
        }
    out["odds_win"] = _odds_json(paytables.odds_win)
    out["odds_lose"] = _odds_json(paytables.odds_lose)
    out["source"] = paytables.source
    return out


_UNIVERSE = {
    "trips_plus": "all C(52,7) seven-card hands of the seat",
    "pocket_bonus": "the seat's C(52,2) two-card hands",
    "sweet16": "the seat's C(52,2) two-card hands",
}


def _sheet_text(sheet: ParSheet, paytables: Paytables) -> list[str]:
    universe = _UNIVERSE[sheet.bet]
    if sheet.bet == "pocket_bonus" and paytables.pocket_needs_dealer:
        universe += " x the dealer's C(50,2) hands"
    rows = [
        (ln.label, str(ln.pays), f"{ln.combinations:,}", _decimal(ln.probability, 10),
         _decimal(ln.contribution, 10))
        for ln in sheet.lines
    ]
    rows.append(("no win", "loses", f"{sheet.losing_combinations:,}",
                 _decimal(Fraction(sheet.losing_combinations, sheet.outcomes), 10),
                 _decimal(Fraction(0), 10)))
    rows.append(("total", "", f"{sheet.outcomes:,}", _decimal(Fraction(1), 10),
                 _decimal(sheet.return_to_player, 10)))
    head = ("line", "pays", "combinations", "probability", "contribution")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]

    def fmt(row: tuple[str, ...]) -> str:
        return "  " + "  ".join(
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    out = [f"{sheet.title}: {sheet.outcomes:,} equally likely outcomes ({universe})"]
    if sheet.bet == "pocket_bonus":
        out += [f"  {ln.name}: {format_range(ln.hands)}"
                + (f" with dealer {format_range(ln.dealer)}" if ln.dealer is not None else "")
                for ln in paytables.pocket_bonus]
        out.append("  (lines are tried in order; the first match pays)")
    out += [fmt(head), *(fmt(r) for r in rows)]
    rtp, edge = sheet.return_to_player, sheet.house_edge
    out.append(f"  return to player  {_percent(rtp):>9}  = {_fraction(rtp)}")
    out.append(f"  house edge        {_percent(edge):>9}  = {_fraction(edge)}")
    return out


def _odds_text(table: CategoryTable, otherwise: str) -> list[str]:
    out = [f"{table.name}: {_ODDS_NOTE}"]
    out += [f"  {c.label:<16} {table.pays[c]}" for c in _high_first(table)]
    if len(table.pays) < len(Category):
        out.append(f"  {'all other':<16} {otherwise}")
    return out


def render_text(paytables: Paytables, sheets: tuple[ParSheet, ...]) -> str:
    """The par sheets as a readable report, with the Odds tables in force."""
    out = [
        f"Par sheets for {paytables.source}",
        "Single 52-card deck, exact enumeration. A line's contribution is "
        "P(line) x (pay + 1): the stake comes back on a win.",
        "",
    ]
    for sheet in sheets:
        out += [*_sheet_text(sheet, paytables), ""]
    out += _odds_text(paytables.odds_win, "push")
    out += ["", *_odds_text(paytables.odds_lose, "lose (a royal flush never loses)")]
    return "\n".join(out)
