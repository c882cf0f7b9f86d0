"""`showdown chips inventory`: the tournament chip inventory before and after play (Maryland
COMAR 36.05.02.06: by chip set and denomination, issued, returned, missing), as CSV or JSON.

Two views: a table's, from its journal (the ``chips.reconciled`` messages in its outbox; the
journal is opened read-only, the daemon need not run), and the central one, from the
reconciliations stored in the leaderboard database (opened to read only: a database that does
not exist is an error, never created). ``--registry`` (the cage's export) gives the "before"
side and the denominations; without it only counts are known.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from cli.errors import CommandError
from controller.chip_registry_files import read_registry
from controller.journal import Journal, JournalError
from game.chips.inventory import Inventory, build_inventory, reports_of
from game.chips.registry import ChipRegistry
from game.messages.chips import ChipsReconciled
from game.messages.fields import MessageError
from leaderboard.chip_reports import stored_reconciliations
from leaderboard.db import make_engine

__all__ = ["inventory", "register", "run_inventory"]

_ALL: int = 1_000_000  # every reconciliation a journal holds (one per entry and heat)


def register(sub: Any) -> None:
    """Add the `chips` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "chips", help="the tournament chip float: inventory before and after play",
        description="Chips of the tournament float (promotion rule 19).")
    chips = p.add_subparsers(dest="chips_command", metavar="ACTION", required=True)
    inv = chips.add_parser(
        "inventory", help="export the chip inventory (CSV or JSON)",
        description="The chip inventory by chip set and denomination: registered (before),"
                    " issued to entries, held at the end of their heat, returned to the"
                    " float, missing (every missing UID is named in the JSON form).")
    where = inv.add_mutually_exclusive_group(required=True)
    where.add_argument("--journal", type=Path, metavar="PATH",
                       help="a table's journal file (that table's reconciliations)")
    where.add_argument("--db", metavar="URL",
                       help="the leaderboard database (every table's stored reconciliations)")
    inv.add_argument("--registry", type=Path, metavar="FILE",
                     help="the chip registry export (.csv or .toml): the 'before' side and"
                          " the denominations")
    inv.add_argument("--chip-set", metavar="NAME",
                     help="the chip set in play, when the registry holds several")
    inv.add_argument("--format", choices=("csv", "json"), default="csv",
                     help="output format (default csv)")
    inv.add_argument("--json", dest="format", action="store_const", const="json",
                     help="the same as --format json")
    inv.add_argument("--out", type=Path, metavar="FILE",
                     help="write to FILE instead of standard output")
    inv.set_defaults(handler=run_inventory)


def _journal_reports(path: Path) -> list[tuple[str, int, ChipsReconciled]]:
    try:
        journal = Journal.open(path, read_only=True, create=False)
    except JournalError as exc:
        raise CommandError(str(exc)) from None
    found: list[tuple[str, int, ChipsReconciled]] = []
    with journal:
        try:
            messages = journal.latest_messages((ChipsReconciled.TYPE,), _ALL)
        except JournalError as exc:
            raise CommandError(str(exc)) from None
    for m in messages:
        if m.problems or m.body is None:
            raise CommandError(f"{path}: outbox message {m.seq} ({m.type}) is damaged:"
                               f" {'; '.join(m.problems) or 'no body'}")
        try:
            found.append((str(path), m.seq, ChipsReconciled.decode(m.body)))
        except MessageError as exc:
            raise CommandError(f"{path}: outbox message {m.seq}: {exc}") from None
    return found


def _db_reports(url: str) -> list[tuple[str, int, ChipsReconciled]]:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise CommandError(f"--db {url!r} is not a database URL") from None
    shown = parsed.render_as_string()
    if parsed.get_backend_name() == "sqlite":
        name = parsed.database
        if not name or name == ":memory:" or not Path(name).is_file():
            raise CommandError(f"database {shown}: no such database file (nothing created)")
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return stored_reconciliations(connection)
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        detail = " ".join(str(orig if orig is not None else exc).split())
        if "chip_reconciliations" in detail:
            detail = ("it has no chip_reconciliations table: migrate it first"
                      f" (revision 0005_chips) [{detail[:200]}]")
        raise CommandError(f"database {shown}: {detail[:300]}") from None
    finally:
        engine.dispose()


def inventory(args: argparse.Namespace) -> Inventory:
    """The inventory the arguments ask for."""
    registry: ChipRegistry | None = None
    if args.registry is not None:
        registry = read_registry(args.registry, chip_set=args.chip_set)
    if args.journal is not None:
        items, source = _journal_reports(args.journal), f"journal {args.journal}"
    else:
        items = _db_reports(args.db)
        source = f"database {make_url(args.db).render_as_string()}"
    return build_inventory(reports_of(items), registry=registry, source=source)


def run_inventory(args: argparse.Namespace) -> int:
    """Print or write the inventory."""
    found = inventory(args)
    text = (found.as_csv() if args.format == "csv"
            else json.dumps(found.as_json(), indent=2, ensure_ascii=False) + "\n")
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"{args.out}: {exc.strerror or exc}") from None
    missing = found.totals()["missing"]
    print(f"wrote {args.out}: {len(found.rows)} rows, {len(found.entries)} reconciliations,"
          f" {missing} chips missing")
    return 0
