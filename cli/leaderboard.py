"""`showdown leaderboard ...`: run the central service, print the standings from its database,
back it up, audit its stored messages (leaderboard.audit) against the tables' enrolled keys,
or list its significant events (leaderboard.event_feed)."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cli.arguments import add_renamed
from cli.certifier import register_certifier
from cli.errors import CommandError
from game.tournament.entries import Stage
from runtime.errors import one_line
from runtime.logs import configure_logging
from runtime.settings_files import read_tournament

if TYPE_CHECKING:
    from sqlalchemy import Engine, Inspector

    from wire.signing import PublicKey

__all__ = ["AUDIT_FAILED", "register"]

# exit status of `audit` when a stored message fails verification, and of `audit --verify`
# when the audit trail shows tampering (D359)
AUDIT_FAILED: Final = 1


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
                         " the shipped tournament.toml)")
    st.add_argument("--rows", type=int, default=20, help="rows of the board (default 20)")
    st.add_argument("--venue", default="", help="venue id shown in the JSON")
    st.add_argument("--stage", choices=["qualifying", "semi_final", "final"],
                    help="the board to print (default: the current stage)")
    st.add_argument("--at", metavar="TIME",
                    help="as of this venue-local time, e.g. 2026-07-10T21:00 (default: now;"
                         " decides the current stage and week)")
    st.add_argument("--json", action="store_true", help="print the JSON document of the API")
    st.set_defaults(handler=_standings)
    au = lsub.add_parser(
        "audit", help="verify every stored message again, or (--verify) the audit trail",
        description="Verify every stored message again: its signed envelope against the"
                    " table's enrolled Ed25519 key (or a key the audit log shows it had when"
                    " the message arrived), the SHA-256 of the payload, and the stored row"
                    " against the envelope. Exit status 1 if any message fails. With"
                    " --verify: check the audit trail instead (docs/audit-trail.md): every"
                    " row's hash and link, the ids, every signed head against the central"
                    " key, the writes made outside the service, every staff member's"
                    " enrolment. Exit status 1 if it shows tampering.")
    au.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    au.add_argument("--verify", action="store_true",
                    help="check the audit trail (needs --config or --public-key)")
    au.add_argument("--config", type=Path,
                    help="with --verify: the service's config; its [keys] signing_key gives"
                         " the central public key")
    au.add_argument("--public-key", metavar="'KEY_ID BASE64'",
                    help="with --verify: the central public key as `showdown keys show`"
                         " prints it")
    au.add_argument("--json", action="store_true", help="print the result as JSON")
    au.set_defaults(handler=_audit)
    bk = lsub.add_parser(
        "backup", help="copy the SQLite database while the service runs, and check the copy",
        description="A consistent, checked copy of the leaderboard's SQLite database, safe"
                    " while the service runs (PostgreSQL: pg_dump). Never overwrites a file.")
    bk.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    bk.add_argument("--out", type=Path, required=True,
                    help="the backup file, or a directory for leaderboard-<UTC time>.sqlite3")
    add_renamed(bk, "--keep-last", was="--keep", dest="keep", type=int, metavar="N",
                help="with a directory: keep only the newest N backups there")
    bk.add_argument("--json", action="store_true", help="print the result as JSON")
    retain = bk.add_mutually_exclusive_group()
    retain.add_argument("--retain-years", type=int, metavar="N",
                        help="with --keep-last: never remove a backup younger than N years"
                             " (default: 3, the records' retention, or the config's)")
    retain.add_argument("--config", type=Path, metavar="FILE",
                        help="leaderboard config: its [retention] backups_years")
    bk.set_defaults(handler=_backup)
    _register_events(lsub)
    _register_tallies(lsub)
    register_certifier(lsub)
    from cli.leaderboard_init import add_init  # noqa: PLC0415 (was `showdown desk init`)

    add_init(lsub)


def _backup(args: argparse.Namespace) -> int:
    from leaderboard.backup import BackupError, backup_sqlite, sqlite_file  # noqa: PLC0415

    try:
        report = backup_sqlite(sqlite_file(args.db), args.out, keep=args.keep,
                               retain_days=_backup_retention_days(args))
    except BackupError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps({"path": str(report.path), "size_bytes": report.size_bytes,
                          "sha256": report.sha256, "schema": report.schema,
                          "rows": report.rows, "seconds": round(report.seconds, 3),
                          "removed": [str(p) for p in report.removed]}, sort_keys=True))
        return 0
    rows = ", ".join(f"{n:,} {table}" for table, n in report.rows.items())
    print(f"backup {report.path}: {rows}; integrity ok; schema {report.schema};"
          f" {report.size_bytes:,} bytes in {report.seconds:.2f} s; sha256 {report.sha256}")
    for path in report.removed:
        print(f"removed older backup {path}")
    return 0


def _backup_retention_days(args: argparse.Namespace) -> int:
    """How long a backup is kept whatever --keep-last says: --retain-years, the config's
    [retention] backups_years, else the regulation's 3 years (D381)."""
    from leaderboard.config import (  # noqa: PLC0415
        REGULATION_YEARS,
        RetentionConfig,
        read_leaderboard_config,
    )

    if args.retain_years is not None:
        if not 1 <= args.retain_years <= 100:
            raise CommandError(f"--retain-years must be 1..100, got {args.retain_years}")
        return RetentionConfig(backups_years=args.retain_years).backups_days
    if args.config is not None:
        return read_leaderboard_config(args.config).retention.backups_days
    return RetentionConfig(backups_years=REGULATION_YEARS).backups_days


def _serve(args: argparse.Namespace) -> int:
    from leaderboard.app import LeaderboardService, run_service  # noqa: PLC0415
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

    config = read_leaderboard_config(args.config)
    configure_logging(fmt=config.log_format, level=config.log_level)
    return asyncio.run(run_service(LeaderboardService(config)))


@contextmanager
def _leaderboard_database(url: str, table: str) -> Iterator[tuple[Engine, Inspector]]:
    """An engine on the leaderboard database at ``url`` that has ``table``, and its
    inspector; a database that cannot be used or read is a one-line CommandError."""
    from sqlalchemy import inspect  # noqa: PLC0415
    from sqlalchemy.exc import SQLAlchemyError  # noqa: PLC0415

    from leaderboard.db import (  # noqa: PLC0415
        database_answers,
        make_engine,
        missing_sqlite_file,
        shown,
    )

    try:
        missing = missing_sqlite_file(url)
        if missing is not None:  # opening it would create an empty file
            raise CommandError(f"database {url}: no such SQLite file {missing} (a mistyped"
                               " URL?)")
        engine = make_engine(url)
    except (SQLAlchemyError, ValueError) as exc:
        raise CommandError(f"cannot use database {url!r}: {exc}") from exc
    try:
        try:
            # refused or timed out: try again (exit 69); not a database: the URL named
            with database_answers(f"--db {shown(url)}", ""):
                inspector = inspect(engine)
                has_table = inspector.has_table(table)
            if not has_table:
                raise CommandError(f"{url} has no leaderboard tables: start the service"
                                   " on it once (it migrates the database)")
            yield engine, inspector
        except SQLAlchemyError as exc:
            raise CommandError(f"cannot read {url}: {one_line(exc)}") from exc
    finally:
        engine.dispose()


def _standings(args: argparse.Namespace) -> int:
    from leaderboard.standings.view import ViewOptions, format_text, standings  # noqa: PLC0415

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
    with _leaderboard_database(args.db, "scores") as (engine, _):
        doc = standings(engine, settings,
                        ViewOptions(venue=args.venue, title=settings.venue_name,
                                    rows=args.rows,
                                    stage=Stage(args.stage) if args.stage else None),
                        now=now)
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(format_text(doc))
    return 0


# ---- audit ----------------------------------------------------------------------------------


def _central_key(args: argparse.Namespace) -> PublicKey:
    """The central public key --verify checks the signed heads against."""
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415
    from wire.signing import KeyFormatError, load_configured_key, parse_public_key  # noqa: PLC0415

    if (args.config is None) == (args.public_key is None):
        raise CommandError("--verify needs the central public key: give --config (the"
                           " service's config) or --public-key 'KEY_ID BASE64', one of them")
    if args.config is not None:
        config = read_leaderboard_config(args.config)
        return load_configured_key(config.signing_key, source=config.source,
                                   key="keys.signing_key").public_key
    parts = str(args.public_key).split()
    if len(parts) != 2:
        raise CommandError(f"--public-key {args.public_key!r}: give the key id and the base64"
                           " key, as `showdown keys show` prints them ('leaderboard AAAA...=')")
    try:
        return parse_public_key(parts[0], parts[1])
    except KeyFormatError as exc:
        raise CommandError(f"--public-key: {exc}") from None


def _verify_trail(args: argparse.Namespace) -> int:
    from leaderboard.audit import verify_trail  # noqa: PLC0415

    key = _central_key(args)
    with _leaderboard_database(args.db, "audit") as (engine, inspector):
        if not inspector.has_table("audit_tip"):
            raise CommandError(f"{args.db} has no audit chain (a schema before revision"
                               " 0018): start the service on it once (it migrates the"
                               " database), then verify")
        report = verify_trail(engine, key)
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.text())
    return 0 if report.intact else AUDIT_FAILED


def _audit(args: argparse.Namespace) -> int:
    from leaderboard.audit import audit_messages, keeps_evidence  # noqa: PLC0415

    if args.verify:
        return _verify_trail(args)
    if args.config is not None or args.public_key is not None:
        raise CommandError("--config and --public-key go with --verify")
    with _leaderboard_database(args.db, "messages") as (engine, inspector):
        if not keeps_evidence(inspector):
            raise CommandError(f"{args.db} is at schema revision 0001, which keeps no"
                               " evidence to verify: start the service on it once (it"
                               " migrates the database), then audit")
        audit = audit_messages(engine)
    print(json.dumps(audit.as_dict(), indent=2) if args.json else audit.text())
    return AUDIT_FAILED if audit.failures else 0


# ---- events (the significant events: docs/significant-events.md) ---------------------------

_FOLLOW_SECONDS: Final = 2.0  # how often --follow reads the database again


def _register_events(lsub: Any) -> None:
    from leaderboard.significant_events import SEVERITIES  # noqa: PLC0415

    ev = lsub.add_parser(
        "events", help="the significant events: audit rows and table messages by severity",
        description="The significant events of the central database (docs/significant-"
                    "events.md), oldest first: every audit row, stored table message and"
                    " refused message with its time (UTC), severity, who (the person, or the"
                    " table), event and detail. --follow keeps printing new ones until"
                    " interrupted.")
    ev.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    ev.add_argument("--since", metavar="TIME",
                    help="from this time on, with its zone, e.g. 2026-07-03T14:00+02:00")
    ev.add_argument("--until", metavar="TIME",
                    help="before this time, with its zone, e.g. 2026-07-04T00:00Z")
    ev.add_argument("--severity", choices=SEVERITIES, default="info",
                    help="this severity and above (default: info, everything)")
    ev.add_argument("--json", action="store_true",
                    help="print JSON: one document, or with --follow one object per line")
    ev.add_argument("--follow", action="store_true",
                    help=f"keep reading: print new events every {_FOLLOW_SECONDS:g} s until"
                         " interrupted (Ctrl-C)")
    ev.set_defaults(handler=_events)


def _moment(option: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(f"{option} {text!r} is not a time such as 2026-07-03T14:00+02:00"
                           ) from None
    if moment.utcoffset() is None:
        raise CommandError(f"{option} {text!r} has no time zone: add one, e.g."
                           f" {moment.isoformat(timespec='minutes')}+02:00 or"
                           f" {moment.isoformat(timespec='minutes')}Z")
    return moment


def _events(args: argparse.Namespace) -> int:
    from leaderboard.event_feed import EventQuery, read_events  # noqa: PLC0415

    query = EventQuery(since=_moment("--since", args.since),
                       until=_moment("--until", args.until), severity=args.severity)
    if args.follow and query.until is not None:
        raise CommandError("--follow prints new events until interrupted: leave out --until")
    if query.since and query.until and query.until <= query.since:
        raise CommandError(f"--until {args.until} is not after --since {args.since}")
    with _leaderboard_database(args.db, "audit") as (engine, _):
        lines, cursor = read_events(engine, query)
        if not args.follow:
            if args.json:
                print(json.dumps({"events": [e.as_dict() for e in lines],
                                  "count": len(lines)}, indent=2, ensure_ascii=False))
            else:
                print("\n".join(e.text() for e in lines) if lines else "no events")
            return 0
        try:
            while True:
                for line in lines:
                    print(json.dumps(line.as_dict(), ensure_ascii=False) if args.json
                          else line.text(), flush=True)
                time.sleep(_FOLLOW_SECONDS)
                lines, cursor = read_events(engine, query, cursor)
        except KeyboardInterrupt:
            return 0
# ---- counts and decks (issue 33 point 5) ----------------------------------------------------


def _register_tallies(lsub: Any) -> None:
    """`counts` and `decks`: the tables' tray counts per heat and deck inventory per day."""
    co = lsub.add_parser(
        "counts", help="each heat's opening and closing chip counts, who counted and"
                       " confirmed, the differences and alerts",
        description="Each heat's opening and closing tray counts as the tables reported them"
                    " (chips.counted): the dealer who counted, the supervisor who confirmed,"
                    " what the table expected, the difference; a difference over the table's"
                    " tolerance, or a heat with no confirmed count, is an alert.")
    co.add_argument("--db", required=True, help="database URL, e.g. sqlite:////var/lib/"
                    "showdown-leaderboard/leaderboard.sqlite3")
    co.add_argument("--table", help="only this table, e.g. t01")
    co.add_argument("--heat", help="only this heat")
    co.add_argument("--json", action="store_true", help="print JSON")
    co.set_defaults(handler=_counts)
    de = lsub.add_parser(
        "decks", help="the deck inventory per table on a day: received, opened, used,"
                      " destroyed and the balance",
        description="Decks received, opened, used and destroyed at each table on a venue day"
                    " (decks.event), with who did each step and the witness of a destruction;"
                    " the balance (received = opened + sealed, opened = used + in play, used ="
                    " destroyed + awaiting destruction) is checked again from the steps.")
    de.add_argument("--db", required=True, help="database URL, e.g. sqlite:////var/lib/"
                    "showdown-leaderboard/leaderboard.sqlite3")
    de.add_argument("--day", required=True, type=_day, metavar="YYYY-MM-DD",
                    help="the venue's day")
    de.add_argument("--table", help="only this table, e.g. t01")
    de.add_argument("--json", action="store_true", help="print JSON")
    de.set_defaults(handler=_decks)


def _day(text: str) -> str:
    """``--day 2026-12-06`` (a usage error names a day that is not one)."""
    from datetime import date  # noqa: PLC0415

    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day such as 2026-12-06") from None


def _counts(args: argparse.Namespace) -> int:
    from leaderboard.tally_reports import heat_counts  # noqa: PLC0415

    with _leaderboard_database(args.db, "chip_counts") as (engine, _), engine.connect() as c:
        heats = heat_counts(c, table=args.table, heat=args.heat)
    if args.json:
        print(json.dumps([h.as_dict() for h in heats], indent=2, sort_keys=True))
        return 0
    if not heats:
        print("no heats reported" + (f" by table {args.table}" if args.table else ""))
        return 0
    for h in heats:
        print(f"{h.table_id} heat {h.heat_id}{'' if h.closed else ' (open)'}")
        for stage in ("opening", "closing"):
            line = h.counts.get(stage)
            print(f"  {stage}: {'none confirmed' if line is None else line.text()}")
        for alert in h.alerts:
            print(f"  ALERT: {alert}")
    return 0


def _decks(args: argparse.Namespace) -> int:
    from leaderboard.tally_reports import deck_days  # noqa: PLC0415

    with _leaderboard_database(args.db, "deck_events") as (engine, _), engine.connect() as c:
        days = deck_days(c, args.day, table=args.table)
    if args.json:
        print(json.dumps([d.as_dict() for d in days], indent=2, sort_keys=True))
        return 0
    if not days:
        print(f"no decks recorded up to {args.day}"
              + (f" at table {args.table}" if args.table else ""))
        return 0
    for d in days:
        end = d.end
        print(f"{d.table_id} {d.day}: received {d.received}, opened {d.opened}, used {d.used},"
              f" destroyed {d.destroyed}; at the end: {end.sealed} sealed, {end.in_play} in"
              f" play, {end.awaiting} awaiting destruction"
              f" ({'balanced' if not d.problems else 'NOT BALANCED'})")
        for step in d.steps:
            seen = f", witness {step['witness']}" if step["witness"] else ""
            seals = f", seals {', '.join(step['seals'])}" if step["seals"] else ""
            print(f"  {step['at']} {step['kind']} {step['decks']} by {step['by']}{seen}{seals}")
        for problem in d.problems:
            print(f"  ALERT: {problem}")
    return 0
