"""`showdown install table|central|desk`: set up a table PC, the central server or the desk
workstation from production templates, idempotently.

    showdown install table --venue casino-1 --table t03 --credentials t03.toml --ca venue-ca.pem \\
        [--broker mqtt1.casino.lan:8883 --broker mqtt2.casino.lan:8883]
    showdown install central --venue casino-1 --tables t01,t02 --enrol t01.pub --enrol t02.pub \\
        --broker-host broker.casino.lan --http-host 10.20.0.5
    showdown install desk --venue casino-1 --api-url https://10.20.0.5:8443/ --ca venue-ca.pem \\
        [--terminal desk-1] [--screen-url https://10.20.0.5:8443/?kiosk=1]

``--dry-run`` prints every step in order and whether it would change anything; ``--root DIR``
installs under a prefix (tests, image builders); ``--json`` prints the plan as JSON. A second
run changes nothing and says so. The plan is deploy.plan's; deploy.execute carries it out.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from cli.main import build_parser
from deploy.database import postgres_setup_command
from deploy.execute import Executor, InstallError, Outcome
from deploy.plan import (
    CentralRequest,
    DeskRequest,
    TableRequest,
    plan_central,
    plan_desk,
    plan_table,
)
from deploy.sources import read_templates
from deploy.steps import Step, describe, step_json
from drivers.rfid_messages import DEFAULT_PRODUCT_ID, DEFAULT_VENDOR_ID
from runtime.config_paths import config_database_url
from runtime.settings_files import read_text
from wire.mqtt_section import MAX_BROKERS, parse_address
from wire.signing import KeyFormatError, parse_public_key
from wire.topics import TopicError, validate_id

__all__ = ["register", "run_install"]

SHOE_ADAPTER = (0x0403, 0x6001)  # FTDI FT232R, the shoe's USB serial adapter (systemd/README.md)


def register(sub: Any) -> None:
    """Add the `install` command with `table`, `central` and `desk`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "install", help="set up a table PC, the central server or the desk workstation",
        description="Install a machine's user, directories, configuration (from production"
        " templates), keys, certificates, units and udev rules. Idempotent: a second run"
        " changes nothing and says so.",
    )
    roles = p.add_subparsers(dest="role", metavar="ROLE", required=True)
    table = _role(roles, "table", "a table PC: daemon, devices, key, broker account")
    table.add_argument("--table", required=True, help="the table id (a-z 0-9 '-')")
    table.add_argument("--broker", action="append", default=[], metavar="HOST:PORT",
                       help="the venue broker, or a cluster node (repeatable, or a comma"
                            " list; tried in order; default: the credentials file's)")
    table.add_argument("--credentials", type=Path, default=None, metavar="FILE",
                       help="this table's credentials from `showdown broker config`"
                            " (installed as /etc/showdown/mqtt-table.toml)")
    table.add_argument("--ca", type=Path, default=None, metavar="FILE",
                       help="the venue CA certificate (venue-ca.pem)")
    table.add_argument("--chips", type=Path, default=None, metavar="FILE",
                       help="the chip registry to install (.csv)")
    table.add_argument("--desk-key", type=Path, action="append", default=[], metavar="FILE",
                       help="an enrolment file ('<name> <base64>') of a desk or the"
                            " leaderboard to enrol at this table (repeatable)")
    table.add_argument("--reader-id", type=_usb_id, default=(DEFAULT_VENDOR_ID,
                                                              DEFAULT_PRODUCT_ID),
                       metavar="VID:PID", help="the chip reader's USB id (default"
                       f" {DEFAULT_VENDOR_ID:04x}:{DEFAULT_PRODUCT_ID:04x})")
    table.add_argument("--shoe-id", type=_usb_id, default=SHOE_ADAPTER, metavar="VID:PID",
                       help="the shoe's USB serial adapter (default 0403:6001, FTDI FT232R)")
    table.add_argument("--insecure-plaintext", action="store_true",
                       help="no TLS to the broker (an isolated network or a test only)")
    central = _role(roles, "central", "the central server: CA, broker, leaderboard service")
    central.add_argument("--tables", required=True, metavar="T1,T2,...", help="table ids")
    central.add_argument("--enrol", type=Path, action="append", default=[], metavar="FILE",
                         help="a table's enrolment file from its install (repeatable)")
    central.add_argument("--broker-host", required=True, metavar="NAME",
                         help="the broker's name as clients reach it")
    central.add_argument("--broker-name", action="append", default=[], metavar="NAME",
                         help="another DNS name or IP address of the broker (repeatable)")
    central.add_argument("--http-host", default="127.0.0.1", metavar="ADDRESS",
                         help="the address the page and desk API listen on")
    central.add_argument("--http-port", type=int, default=8443, metavar="PORT",
                         help="the port the page and desk API listen on (default 8443)")
    central.add_argument("--http-name", action="append", default=[], metavar="NAME",
                         help="a name or address of the desk API's HTTPS certificate"
                              " (default: the --http-host)")
    central.add_argument("--db", dest="database", default=None, metavar="URL",
                         help="the leaderboard database (default SQLite in its state dir)")
    desk = _role(roles, "desk", "the desk workstation (and a room screen's kiosk)")
    desk.add_argument("--api-url", required=True, metavar="URL",
                      help="the central service's desk API (https:// off the loopback)")
    desk.add_argument("--ca", type=Path, required=True, metavar="FILE",
                      help="the venue CA certificate (venue-ca.pem)")
    desk.add_argument("--terminal", default=None, metavar="NAME",
                      help="this desk PC's name, recorded with each session (default: its"
                           " host name)")
    for retired in ("--db", "--broker", "--credentials", "--desk-user"):
        desk.add_argument(retired, action=_Retired, nargs=1, help=argparse.SUPPRESS)
    desk.add_argument("--screen-url", default=None, metavar="URL",
                      help="also install a room screen's kiosk showing this page"
                           " (the page's kiosk mode: .../?kiosk=1)")


class _Retired(argparse.Action):
    """What a desk workstation was installed with while it opened the database and signed
    the tables' commands itself: refused, saying why (issue 33, D353)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,  # noqa: ARG002
                 values: Any, option_string: str | None = None) -> None:  # noqa: ARG002
        parser.error(f"{option_string}: a desk workstation holds no database URL, signing key"
                     " or broker account any more: it goes through the central service's"
                     " desk API (--api-url; docs/operations/install.md)")


def _role(roles: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = roles.add_parser(name, help=help_text, description=help_text)
    p.add_argument("--venue", required=True, help="the venue id (a-z 0-9 '-')")
    p.add_argument("--root", type=Path, default=Path("/"), metavar="DIR",
                   help="install under this prefix (default /, the machine itself)")
    p.add_argument("--dry-run", action="store_true",
                   help="print each step and whether it would change anything; change nothing")
    p.add_argument("--json", action="store_true", help="print the plan and outcome as JSON")
    p.set_defaults(handler=run_install)
    return p


def _usb_id(text: str) -> tuple[int, int]:
    vid, sep, pid = text.partition(":")
    try:
        ids = (int(vid, 16), int(pid, 16))
    except ValueError:
        ids = (-1, -1)
    if not sep or not all(0 <= i <= 0xFFFF for i in ids):
        raise argparse.ArgumentTypeError(f"{text!r} is not a USB id VID:PID in hex (0403:6001)")
    return ids


def _ident(what: str, value: str) -> str:
    try:
        return validate_id(what, value)
    except TopicError as exc:
        raise CommandError(str(exc)) from None


def _credentials(path: Path, flag: str) -> dict[str, Any]:
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CommandError(f"{flag} {path}: not a TOML file: {exc}") from None
    mqtt = data.get("mqtt")
    if not isinstance(mqtt, dict) or not isinstance(mqtt.get("username"), str):
        raise CommandError(f"{flag} {path}: not a credentials file of `showdown broker config`"
                           " (no [mqtt] username)")
    return mqtt


def _enrolment(path: Path, flag: str) -> tuple[str, str]:
    words = read_text(path).split()
    try:
        if len(words) != 2:
            raise KeyFormatError("expected one line '<id> <base64>'")
        key = parse_public_key(words[0], words[1])
    except KeyFormatError as exc:
        raise CommandError(f"{flag} {path}: not an enrolment file: {exc}") from None
    return key.key_id, key.base64


def _brokers(given: list[str]) -> tuple[str, ...]:
    """Every --broker (repeated or comma lists) checked as HOST:PORT, in order, once each."""
    brokers: list[str] = []
    for text in (part.strip() for arg in given for part in arg.split(",")):
        if not text:
            continue
        try:
            parse_address(text)
        except ValueError as exc:
            raise CommandError(f"--broker {exc}") from None
        if text in brokers:
            raise CommandError(f"--broker {text!r} is given twice")
        brokers.append(text)
    if len(brokers) > MAX_BROKERS:
        raise CommandError(f"--broker gives {len(brokers)} addresses: at most {MAX_BROKERS}")
    return tuple(brokers)


def _table_plan(args: argparse.Namespace) -> list[Step]:
    table = _ident("table", args.table)
    creds = _credentials(args.credentials, "--credentials") if args.credentials else {}
    if creds and creds["username"] != table:
        raise CommandError(f"--credentials {args.credentials} are {creds['username']!r}'s,"
                           f" not table {table!r}'s")
    brokers = _brokers(args.broker)
    if not brokers:
        if not isinstance(creds.get("host"), str) or not isinstance(creds.get("port"), int):
            raise CommandError("give --broker HOST:PORT (or a credentials file with the host)")
        brokers = _brokers([f"{creds['host']}:{creds['port']}"])
    desk_keys = dict(_enrolment(p, "--desk-key") for p in args.desk_key)
    return plan_table(TableRequest(
        venue=_ident("venue", args.venue), table=table, brokers=brokers,
        tls=not args.insecure_plaintext, rfid_id=args.reader_id, shoe_id=args.shoe_id,
        credentials=read_text(args.credentials) if args.credentials else None,
        credentials_source=str(args.credentials) if args.credentials else None,
        ca_pem=read_text(args.ca) if args.ca else None,
        ca_source=str(args.ca) if args.ca else None,
        chips=read_text(args.chips) if args.chips else None,
        chips_source=str(args.chips) if args.chips else None, desk_keys=desk_keys,
    ), read_templates())


def _central_plan(args: argparse.Namespace) -> list[Step]:
    tables = tuple(_ident("table", t.strip()) for t in args.tables.split(",") if t.strip())
    if not tables:
        raise CommandError("--tables names no table")
    enrolled = dict(_enrolment(p, "--enrol") for p in args.enrol)
    if not enrolled:
        raise CommandError("give each table's enrolment file with --enrol (from"
                           " `showdown install table`: /etc/showdown/enrolment/<table>.pub)")
    unknown = sorted(set(enrolled) - set(tables))
    if unknown:
        raise CommandError(f"--enrol holds {', '.join(unknown)}, not in --tables")
    if not 1 <= args.http_port <= 65535:
        raise CommandError(f"--http-port must be 1..65535, got {args.http_port}")
    database: dict[str, Any] = {"database": _db_url(args.database)} if args.database else {}
    req = CentralRequest(
        venue=_ident("venue", args.venue), tables=tables, enrolled=enrolled,
        broker_host=args.broker_host,
        broker_names=tuple(dict.fromkeys([args.broker_host, *args.broker_name])),
        http_host=args.http_host, http_port=args.http_port,
        http_names=tuple(dict.fromkeys(args.http_name or [args.http_host])),
        **database)
    return plan_central(req, read_templates())


def _db_url(url: str) -> str:
    """A ``--db`` URL as the installed config must hold it: a relative SQLite file made
    absolute against the working directory the command was run in (the config file would
    read it against /etc/showdown, D334)."""
    return config_database_url(url, Path.cwd())


def _desk_plan(args: argparse.Namespace) -> list[Step]:
    return plan_desk(DeskRequest(
        venue=_ident("venue", args.venue), api_url=args.api_url, terminal=args.terminal,
        ca_pem=read_text(args.ca), ca_source=str(args.ca), screen_url=args.screen_url),
        read_templates())


_PLANS = {"table": _table_plan, "central": _central_plan, "desk": _desk_plan}


def _state(outcome: Outcome, dry_run: bool) -> str:
    if dry_run:
        return "would change" if outcome.changed else "already so"
    return "changed" if outcome.changed else "unchanged"


def run_install(args: argparse.Namespace) -> int:
    """Plan the role's installation, carry it out (or only check it), print what happened."""
    steps = _PLANS[args.role](args)
    root: Path = args.root
    if root.resolve() == Path("/") and not args.dry_run and os.geteuid() != 0:
        raise CommandError("installing on this machine needs root: run with sudo, or give"
                           " --root DIR (an image) or --dry-run")
    if not root.is_dir():
        raise CommandError(f"--root {root} is not a directory")
    try:
        outcomes = Executor(root, dry_run=args.dry_run, broker_runner=run_broker_config).run(steps)
    except InstallError as exc:
        raise CommandError(str(exc)) from None
    changed = sum(o.changed for o in outcomes)
    database = postgres_setup_command(args.database) if args.role == "central" and \
        args.database else None
    if args.json:
        print(json.dumps({
            "role": args.role, "root": str(root), "dry_run": args.dry_run,
            "changed": changed, "database_setup": database,
            "steps": [{**step_json(o.step), "state": _state(o, args.dry_run),
                       "notes": list(o.notes)} for o in outcomes],
        }, indent=2))
        return 0
    for n, o in enumerate(outcomes, 1):
        print(f"{n:3}. [{_state(o, args.dry_run)}] {describe(o.step)}")
        for note in o.notes:
            print(f"       {note}")
    verb = "would change" if args.dry_run else "changed"
    if changed == 0:
        print(f"{args.role}: nothing to change; all {len(outcomes)} steps already so")
    else:
        print(f"{args.role}: {verb} {changed} of {len(outcomes)} steps")
    if database is not None:
        print("the database: PostgreSQL's administrator creates the service's role and database"
              " once (then let it sign in: pg_hba.conf, or its password in the"
              " service's .pgpass):")
        print(f"    {database}")
    return 0


def run_broker_config(argv: Sequence[str]) -> None:
    """`showdown broker config` in this process (its listing of what it wrote is dropped)."""
    args = build_parser("broker").parse_args(list(argv))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            args.handler(args)
    except CommandError as exc:
        raise InstallError(f"showdown broker config: {exc}") from None
