"""`showdown report tables|dealers|heats|economics|scores`: the reports a casino reads.

The first four read the central database (``--db URL``, else the desk config's
``desk.database``; opened only if it exists and is migrated, never created or written) and
count with `leaderboard.reports`; times are in the venue's time zone (the tournament
settings' ``venue.timezone``), amounts in rand. ``scores`` simulates a qualifying campaign
(cli.report.scores).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from sqlalchemy.orm import Session

from cli.desk.context import desk_config
from cli.errors import CommandError
from cli.report import scores as report_scores
from game.tournament.schema import TournamentSettings
from leaderboard.db import DatabaseNotReady, database_answers, open_existing, shown
from leaderboard.reports.economics import economics, read_economics
from leaderboard.reports.play import GroupBy, play_report
from leaderboard.reports.reading import UnknownVenue, read_play_facts
from leaderboard.reports.render import (
    economics_csv,
    economics_json,
    economics_text,
    play_csv,
    play_json,
    play_text,
)
from leaderboard.reports.window import ReportWindow, parse_day
from runtime.settings_files import read_tournament

__all__ = ["register", "run_economics", "run_play", "write_out"]

_PLAY: Final[dict[str, tuple[GroupBy, str]]] = {
    "tables": ("table", "per table: hands, hands and decisions per hour, side bets, alerts,"
                        " manual entries"),
    "dealers": ("dealer", "the same per dealer (who was signed in at the console when each"
                          " hand opened)"),
    "heats": ("heat", "the same per heat (its tables' dealing time added up)"),
}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL",
                   help="the central database (required)")
    p.add_argument("--config", metavar="FILE", type=Path,
                   help="the desk config (default $SHOWDOWN_DESK_CONFIG, else the shipped"
                        " desk.toml)")
    p.add_argument("--tournament", metavar="FILE", type=Path,
                   help="tournament settings (default: the desk config's, else the shipped"
                        " ones): the venue's time zone and the pools' shares")
    p.add_argument("--from", dest="first", metavar="DATE",
                   help="first venue day included, YYYY-MM-DD (default: the start)")
    p.add_argument("--to", dest="last", metavar="DATE",
                   help="last venue day included, YYYY-MM-DD (default: up to now)")
    p.add_argument("--venue", metavar="V", help="only the tables enrolled at venue V")
    p.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text for people (default), json or csv (amounts in _cents and"
                        " _rand columns)")
    p.add_argument("--json", dest="format", action="store_const", const="json",
                   help="the same as --format json")
    p.add_argument("--out", metavar="FILE", type=Path,
                   help="write the report to FILE instead of standard output")


def register(sub: Any) -> None:
    """Add the `report` subcommand and its reports."""
    p: argparse.ArgumentParser = sub.add_parser(
        "report", help="reports: tables, dealers, heats, economics; simulated score spread",
        description="Reports from the central database (tables, dealers, heats, economics)"
                    " and from a simulated qualifying campaign (scores).")
    reports = p.add_subparsers(dest="report", metavar="REPORT", required=True)
    for name, (by, text) in _PLAY.items():
        q = reports.add_parser(name, help=text, description=f"The {name} report: {text}.")
        _common(q)
        q.set_defaults(handler=run_play, group_by=by)
    e = reports.add_parser(
        "economics", help="entry fees by payment, pools, prizes awarded and claimed",
        description="Tournament economics: entry fees collected (cash, value chips), refunds,"
                    " the Final Prize Pool and Top Score Progressive to date with what was"
                    " awarded and what remains, prizes by kind and claim state.")
    _common(e)
    e.set_defaults(handler=run_economics)
    report_scores.register(reports)


def _settings(args: argparse.Namespace) -> TournamentSettings:
    given = args.tournament
    return read_tournament(given if given is not None else desk_config(args).tournament)


def _window(args: argparse.Namespace, settings: TournamentSettings) -> ReportWindow:
    try:
        first = parse_day(args.first, "--from") if args.first else None
        last = parse_day(args.last, "--to") if args.last else None
        return ReportWindow(tz=settings.tz, first=first, last=last, venue=args.venue)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def write_out(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` (through a temporary file, renamed) or standard output."""
    if out is None:
        sys.stdout.write(text)
        return
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CommandError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    print(f"report written to {out}", file=sys.stderr)


def _read(args: argparse.Namespace, read: Callable[[Session], Any]) -> Any:
    given = getattr(args, "db", None)
    if not given:  # a desk workstation's config names no database any more (issue 33)
        raise CommandError("--db URL is required: reports read the central database (run"
                           " them on the central server)")
    source, key = f"--db {shown(str(given))}", ""
    try:
        engine = open_existing(str(given), create_with="showdown leaderboard init",
                               source=source, key=key)
    except DatabaseNotReady as exc:
        raise CommandError(str(exc)) from None
    try:
        with database_answers(source, key), Session(engine) as session:
            return read(session)
    finally:
        engine.dispose()


def run_play(args: argparse.Namespace) -> int:
    """The tables, dealers or heats report."""
    settings = _settings(args)
    window = _window(args, settings)
    try:
        facts = _read(args, lambda s: read_play_facts(s, window))
    except UnknownVenue as exc:
        raise CommandError(f"--venue: {exc}") from None
    report = play_report(facts, args.group_by)
    tz = settings.timezone
    text = {"text": lambda: play_text(report, window, tz),
            "json": lambda: play_json(report, window, tz),
            "csv": lambda: play_csv(report, window)}[args.format]()
    write_out(text, args.out)
    return 0


def run_economics(args: argparse.Namespace) -> int:
    """The economics report."""
    settings = _settings(args)
    window = _window(args, settings)
    if window.venue is not None:
        raise CommandError("--venue: the economics are the tournament's (one set of pools,"
                           " fees taken at the desk), not a venue's: leave --venue out")
    now = datetime.now(UTC)
    entries, awards = _read(args, lambda s: read_economics(s, now))
    eco = economics(entries, awards, settings, window, now)
    tz = settings.timezone
    text = {"text": lambda: economics_text(eco, window, tz),
            "json": lambda: economics_json(eco, window, tz),
            "csv": lambda: economics_csv(eco, window)}[args.format]()
    write_out(text, args.out)
    return 0
