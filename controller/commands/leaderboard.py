"""`showdown leaderboard ...`: run the central service, or print the standings from its database."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.cli import CommandError
from controller.logs import configure_logging
from controller.tournament_files import read_tournament
from game.tournament import Stage


def register(sub: Any) -> None:
    """Add the `leaderboard` subcommand group."""
    p: argparse.ArgumentParser = sub.add_parser(
        "leaderboard", help="the central service: scores from every table, standings, the page",
        description="The central leaderboard service (docs/leaderboard.md).")
    lsub = p.add_subparsers(dest="leaderboard_command", metavar="ACTION", required=True)
    serve = lsub.add_parser("serve", help="run the service (systemd runs this)")
    serve.add_argument("--config", type=Path, required=True,
                       help="leaderboard config file (TOML, docs/leaderboard.md)")
    serve.set_defaults(handler=_serve)
    st = lsub.add_parser("standings", help="print the current standings from the database")
    st.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    st.add_argument("--tournament", type=Path,
                    help="tournament settings (default: $SHOWDOWN_TOURNAMENT or"
                         " config/tournament.toml)")
    st.add_argument("--rows", type=int, default=20, help="rows of the board (default 20)")
    st.add_argument("--venue", default="", help="venue id shown in the JSON")
    st.add_argument("--stage", choices=["qualifying", "semi_final", "final"],
                    help="the board to print (default: the current stage)")
    st.add_argument("--at", metavar="TIME",
                    help="as of this venue-local time, e.g. 2026-07-10T21:00 (default: now;"
                         " decides the current stage and week)")
    st.add_argument("--json", action="store_true", help="print the JSON document of the API")
    st.set_defaults(handler=_standings)


def _serve(args: argparse.Namespace) -> int:
    from leaderboard.app import LeaderboardService, run_service  # noqa: PLC0415
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

    config = read_leaderboard_config(args.config)
    configure_logging(fmt=config.log_format, level=config.log_level)
    return asyncio.run(run_service(LeaderboardService(config)))


def _standings(args: argparse.Namespace) -> int:
    from sqlalchemy import inspect  # noqa: PLC0415
    from sqlalchemy.exc import SQLAlchemyError  # noqa: PLC0415

    from leaderboard.db import make_engine  # noqa: PLC0415
    from leaderboard.standings_view import ViewOptions, format_text, standings  # noqa: PLC0415

    if not 1 <= args.rows <= 10_000:
        raise CommandError(f"--rows must be 1..10000, got {args.rows}")
    settings = read_tournament(args.tournament)
    now = datetime.now(UTC)
    if args.at is not None:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError as exc:
            raise CommandError(f"--at {args.at!r} is not a time such as 2026-07-10T21:00"
                               ) from exc
        now = at.replace(tzinfo=settings.tz) if at.tzinfo is None else at
    try:
        engine = make_engine(args.db)
    except (SQLAlchemyError, ValueError) as exc:
        raise CommandError(f"cannot use database {args.db!r}: {exc}") from exc
    try:
        try:
            if not inspect(engine).has_table("scores"):
                raise CommandError(f"{args.db} has no leaderboard tables: start the service"
                                   " on it once (it migrates the database)")
            doc = standings(engine, settings,
                            ViewOptions(venue=args.venue, title=settings.venue_name,
                                        rows=args.rows,
                                        stage=Stage(args.stage) if args.stage else None),
                            now=now)
        except SQLAlchemyError as exc:
            raise CommandError(f"cannot read {args.db}: {' '.join(str(exc).split())}") from exc
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(format_text(doc))
    return 0
