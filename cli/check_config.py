"""`showdown check-config`: validate the tournament settings and paytables before a session."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from game.errors import ConfigError
from game.money import format_rand
from game.tournament.schedule import WEEKDAYS
from game.tournament.schema import ConfigErrors, TournamentSettings
from runtime.settings_files import read_paytables, read_tournament

__all__ = ["register", "run", "tournament_summary"]


def register(sub: Any) -> None:
    """Add the `check-config` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "check-config",
        help="check the tournament settings and paytables, listing every problem",
        description=(
            "Load the tournament settings and the paytables as the table would, refusing"
            " contradictions. Prints 'ok' and a summary, or every problem found (exit code 2)."
            " Without options the files in force are checked ($SHOWDOWN_TOURNAMENT,"
            " $SHOWDOWN_PAYTABLES, else the shipped ones)."
        ),
    )
    p.add_argument("--tournament", metavar="FILE", type=Path,
                   help="tournament settings file (default: the one in force)")
    p.add_argument("--paytables", metavar="FILE", type=Path,
                   help="paytable file (default: the one in force)")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON: ok, the files, the settings, the problems")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check both files; print a summary of each, or every problem; 0 if all is well, else 2."""
    lines: list[str] = []
    problems: list[ConfigError] = []
    settings: TournamentSettings | None = None
    try:
        settings = read_tournament(args.tournament)
    except ConfigErrors as exc:
        problems.extend(exc.errors)
    except ConfigError as exc:
        problems.append(exc)
    else:
        lines += tournament_summary(settings)
    paytable_lines, paytable_problems = _check_paytables(args.paytables)
    lines += paytable_lines
    problems += paytable_problems
    if args.json:
        print(json.dumps({"ok": not problems,
                          "tournament": None if settings is None else tournament_facts(settings),
                          "paytables": paytable_lines[0].split(": ", 1)[1] if paytable_lines
                          else None,
                          "problems": [" ".join(str(p).split()) for p in problems]}, indent=2))
    if problems:
        for problem in problems:
            print(f"error: {' '.join(str(problem).split())}", file=sys.stderr)
        count = len(problems)
        print(f"{count} problem{'s' if count > 1 else ''} found", file=sys.stderr)
        return 2
    if not args.json:
        print("ok")
        for line in lines:
            print(line)
    return 0


def tournament_facts(s: TournamentSettings) -> dict[str, Any]:
    """The settings the summary states, as JSON values (amounts in cents)."""
    h = s.house

    def stage(rules: Any, **more: Any) -> dict[str, Any]:
        return {"hands": rules.hands, "starting_chips_cents": rules.starting_chips_cents,
                "markers": rules.markers, **more}

    return {
        "source": str(s.source), "venue": s.venue_name, "timezone": str(s.timezone),
        "currency": s.currency, "buy_in_cents": s.buy_in_cents,
        "denomination_cents": h.denomination_cents, "min_ante_cents": h.min_ante_cents,
        "max_ante_cents": h.max_ante_cents, "side_bet_max_cents": h.side_bet_max_cents,
        "marker_value_cents": s.marker_value_cents,
        "stages": {
            "qualifying": stage(s.qualifying.rules, advance=s.qualifying.advance),
            "semi_final": stage(s.semi_final.rules, advance=s.semi_final.advance,
                                heats=s.semi_final.heats,
                                seats_per_heat=s.semi_final.seats_per_heat),
            "final": stage(s.final.rules, heats=s.final.heats,
                           seats_per_heat=s.final.seats_per_heat),
        },
    }


def _check_paytables(path: Path | None) -> tuple[list[str], list[ConfigError]]:
    try:
        tables = read_paytables(path)
    except ConfigError as exc:
        return [], [exc]
    pocket = "; ".join(line.name for line in tables.pocket_bonus)
    return [f"paytables: {tables.source}", f"  Pocket Bonus lines: {pocket}"], []


def tournament_summary(s: TournamentSettings) -> list[str]:
    """A few lines stating the settings in force, for the operator to confirm."""
    h = s.house
    q, semi, final, sched = s.qualifying, s.semi_final, s.final, s.schedule
    w, p = s.weekly_prizes, s.prizes

    def pct(value: Fraction) -> str:
        return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"

    def places(values: tuple[Fraction, ...]) -> str:
        return "/".join(pct(v) for v in values)

    def when(stage: Any) -> str:
        return f"{stage.starts_at:%Y-%m-%d %H:%M}" if stage.starts_at else "-"

    return [
        f"tournament: {s.source}",
        f"  venue: {s.venue_name} ({s.timezone}), currency {s.currency},"
        f" buy-in {format_rand(s.buy_in_cents)}",
        f"  wagers: denomination {format_rand(h.denomination_cents)}, Ante"
        f" {format_rand(h.min_ante_cents)} to {format_rand(h.max_ante_cents)} (Ante + Odds at"
        f" least {format_rand(2 * h.min_ante_cents)}), side bets up to"
        f" {format_rand(h.side_bet_max_cents)}",
        f"  qualifying: heats {sched.first_day} to {sched.last_day},"
        f" {sched.window.opens:%H:%M}-{sched.window.closes:%H:%M} (last buy-in"
        f" {sched.window.last_buy_in:%H:%M}), ends {sched.ends_at:%Y-%m-%d %H:%M};"
        f" {q.rules.hands} hands, {format_rand(q.rules.starting_chips_cents)}, top {q.advance}"
        " advance",
        f"  semi-final: {when(semi)}, {semi.heats} heats x {semi.seats_per_heat} seats,"
        f" {semi.rules.hands} hands, {format_rand(semi.rules.starting_chips_cents)},"
        f" top {semi.advance} advance",
        f"  final: {when(final)}, {final.heats} heat x {final.seats_per_heat} seats,"
        f" {final.rules.hands} hands, {format_rand(final.rules.starting_chips_cents)},"
        f" {final.rules.markers} markers x {format_rand(s.marker_value_cents)}"
        f" (unused: {s.unused_markers})",
        f"  prizes: {pct(p.final_pool_percent)}% to the Final Prize Pool"
        f" ({places(p.final_places)}), {pct(p.top_score_percent)}% to the Top Score"
        f" Progressive ({places(p.top_score_places)}),"
        f" weekly prize for {w.weeks} weeks from {WEEKDAYS[w.starts_on]}"
        f" {w.starts_at:%H:%M}, claim within {p.claim_days} days",
        f"  scores: {'only acknowledged scores qualify' if s.acknowledged_only else 'all scores'};"
        f" ties: {s.tie_rule}",
    ]
