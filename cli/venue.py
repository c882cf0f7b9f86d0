"""`showdown venue rehearse`: a whole venue on one machine, as separate processes, for a
technician's rehearsal (docs/operations/rehearsal.md).

    showdown venue rehearse [--dir DIR] [--tables N] [--db URL] [--broker mosquitto|embedded]
                            [--broker-port P] [--http-port P] [--console-port P] [--bench-port P]

lays out DIR (floor.venue_layout; the broker's files with deploy.broker_config and
deploy.certs, cli.venue_broker), enrols the desk's staff as a venue does (floor.venue_desk),
starts a private Mosquitto with TLS and the per-table ACL, the central service and N tables on
simulated devices with their bench and console, sends them the staff roster, prints the
addresses and the staff's credentials, and runs until SIGINT or SIGTERM, restarting a child
that fails (floor.venue_run). Exit 0 when stopped and every child stopped cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any, Final

from cli.errors import CommandError, CommandUnavailable
from cli.extras import require

__all__ = ["register", "run_rehearse"]

MOSQUITTO: Final = ("mosquitto", "/usr/sbin/mosquitto")
APT: Final = "apt-get install mosquitto"
NEEDS: Final = ("the central service's extra 'central' (and 'demo' for --broker embedded,"
                " 'postgres' for a PostgreSQL --db): the 'all' install has them")


def register(sub: Any) -> None:
    """Add the `venue` command with `rehearse`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "venue", help="a whole venue on one machine for a technician's rehearsal",
        description="A venue on one machine as separate processes: broker, central service,"
        " tables on simulated devices, the desk's accounts (docs/operations/rehearsal.md).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r: argparse.ArgumentParser = actions.add_parser(
        "rehearse", help="start a rehearsal venue and run it until Ctrl-C",
        description="Lay out a rehearsal venue in DIR and run it: a private Mosquitto with TLS"
        " and the per-table ACL, the central service (page and desk API), N tables on"
        " simulated devices each with its bench and console, the desk's staff accounts and a"
        " tournament calendar that starts today. Prints the addresses and the staff's"
        " credentials; restarts a process that fails; Ctrl-C (or SIGTERM) stops everything in"
        f" order. Needs {NEEDS}. Run again on the same DIR to reuse its keys, accounts and"
        " database.")
    r.add_argument("--dir", type=Path, default=None, metavar="DIR",
                   help="the venue's directory (created; reused when it exists; default: a new"
                        " directory under the system's temporary directory, printed)")
    r.add_argument("--tables", type=int, default=2, metavar="N",
                   help="how many tables (1 to 20, default 2): t01, t02, ...")
    r.add_argument("--db", default=None, metavar="URL",
                   help="the central database (default: SQLite in DIR), e.g."
                        " postgresql+psycopg://showdown@127.0.0.1/rehearsal")
    r.add_argument("--broker", choices=("mosquitto", "embedded"), default="mosquitto",
                   help="a private Mosquitto with TLS and ACL (default), or the embedded broker"
                        " (no TLS, no ACL: for a machine without Mosquitto)")
    r.add_argument("--own-table", action="append", default=[], metavar="TABLE",
                   help="lay this table out (key, broker account, config) but do not start"
                        " it: you run it yourself, e.g. with a real device"
                        " (docs/operations/rehearsal.md); repeatable")
    r.add_argument("--patrons", type=int, default=0, metavar="N",
                   help="on a new venue, the pit supervisor S1 registers N made-up patrons"
                        " (0 to 6 per table; default 0: you do it at the desk), sells each"
                        " an entry, opens a qualifying heat and seats them, t01 seat 1 first;"
                        " each with the desk's own commands, in S1's name; their rewards"
                        " cards are printed")
    ports = r.add_argument_group("ports on 127.0.0.1 (default: the last run's while free,"
                                 " else any free port)")
    ports.add_argument("--broker-port", type=int, default=None, metavar="PORT",
                       help="the broker (TLS with Mosquitto)")
    ports.add_argument("--http-port", type=int, default=None, metavar="PORT",
                       help="the page and the desk API")
    ports.add_argument("--console-port", type=int, default=None, metavar="PORT",
                       help="t01's console; t02's is PORT+1, ...")
    ports.add_argument("--bench-port", type=int, default=None, metavar="PORT",
                       help="t01's bench; t02's is PORT+1, ...")
    r.set_defaults(handler=run_rehearse)


def _mosquitto() -> str:
    for name in MOSQUITTO:
        found = shutil.which(name)
        if found is not None:
            return found
    raise CommandUnavailable(f"mosquitto is not installed: {APT} (or use --broker embedded,"
                             " which has no TLS and no ACL)")


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.tables <= 20:
        raise CommandError(f"--tables must be 1 to 20, got {args.tables}")
    seats = 6 * (args.tables - len(set(args.own_table)))
    if not 0 <= args.patrons <= seats:
        raise CommandError(f"--patrons must be 0 to {seats} (6 a started table), got"
                           f" {args.patrons}")
    for name in ("broker_port", "http_port", "console_port", "bench_port"):
        value = getattr(args, name)
        if value is not None and not 1024 <= value <= 65535 - args.tables:
            raise CommandError(f"--{name.replace('_', '-')} must be 1024..65535, got {value}")
    if args.db is not None and "://" not in args.db:
        raise CommandError(f"--db {args.db!r}: give a SQLAlchemy URL such as"
                           " postgresql+psycopg://showdown@127.0.0.1/rehearsal")


def run_rehearse(args: argparse.Namespace) -> int:
    """Lay the venue out, start it, print its addresses and run it until stopped."""
    from cli.venue_broker import embedded_broker_files, mosquitto_files  # noqa: PLC0415
    from floor.venue_layout import choose_ports, lay_out, table_ids  # noqa: PLC0415

    _check(args)
    require("alembic")
    if args.broker == "embedded":
        require("amqtt")
        mosquitto = None
    else:
        mosquitto = _mosquitto()
    if args.db is not None and args.db.startswith("postgresql"):
        require("psycopg")
    if args.dir is None:
        directory = Path(tempfile.mkdtemp(prefix="showdown-venue-"))
    else:
        directory = args.dir
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"--dir {directory}: {exc.strerror or exc}") from None
        if not directory.is_dir():
            raise CommandError(f"--dir {directory} is not a directory")
    directory = directory.resolve()
    tables = table_ids(args.tables)
    unknown = sorted(set(args.own_table) - set(tables))
    if unknown:
        raise CommandError(f"--own-table {', '.join(unknown)}: the venue's tables are"
                           f" {', '.join(tables)}")
    ports = choose_ports(directory, args.tables, broker=args.broker_port, http=args.http_port,
                         console_base=args.console_port, bench_base=args.bench_port)
    if mosquitto is None:
        broker = embedded_broker_files(directory, venue="rehearsal", tables=tables,
                                       port=ports.broker)
    else:
        broker = mosquitto_files(directory, venue="rehearsal", tables=tables, port=ports.broker)
    from floor.venue import VenueError, run_venue  # noqa: PLC0415

    try:
        layout = lay_out(directory, tables=tables, ports=ports, database=args.db,
                         broker=broker)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    try:
        return asyncio.run(run_venue(layout, mosquitto=mosquitto, say=_say,
                                     own_tables=tuple(args.own_table),
                                     patrons=args.patrons,
                                     signals=(signal.SIGINT, signal.SIGTERM)))
    except VenueError as exc:
        raise CommandUnavailable(str(exc)) from None


def _say(line: str) -> None:
    print(line, flush=True)
