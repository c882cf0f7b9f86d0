"""`showdown doctor`: may this table open? Checks the config, the shoe and the chip reader,
the clock, the broker (a real CONNECT with the configured credentials and TLS), the table's
key against its enrolment, the journal's integrity and the free disk space.

    showdown doctor [--config /etc/showdown/table.toml] [--enrolled tables.pub] [--json]
    showdown doctor --rehearsal [--config ...]
    showdown doctor --central [--config /etc/showdown/leaderboard.toml] [--json]
    showdown doctor --desk [--config /etc/showdown/desk.toml] [--json]
    showdown doctor --central --broker-monitor http://mqtt1:8222 --broker-monitor ...

With --central it checks the central service instead: its config, the database (reachable and
migrated), the broker with the service's credentials, its key, the HTTPS certificate, the clock
and disk. With --broker-monitor (a NATS cluster's monitoring endpoints) it also checks that
the MQTT streams (sessions, queued and retained messages) are replicated on min(3, cluster
size) nodes (cli/doctor/broker_streams.py).

Each finding is ok, warn or fail, with what was found and what to fix
(docs/operations/doctor.md). Exit 0: the table may open; 1: it may not. With --rehearsal,
simulated devices and a clock that is not synchronised are warnings, and a pass says the table
may open for a rehearsal, not for play (D325).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cli.doctor.broker_streams import mqtt_stream_findings
from cli.doctor.table import Probes, check_table, may_open

__all__ = ["EXIT_MAY_NOT_OPEN", "register", "run_doctor"]

DEFAULT_CONFIG = Path("/etc/showdown/table.toml")
DEFAULT_CENTRAL_CONFIG = Path("/etc/showdown/leaderboard.toml")
DEFAULT_DESK_CONFIG = Path("/etc/showdown/desk.toml")
EXIT_MAY_NOT_OPEN = 1
_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def register(sub: Any) -> None:
    """Add the `doctor` command."""
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor", help="check a table PC: may this table open?",
        description="Check the table's config, devices, clock, broker, key, journal and disk;"
        " each finding says what to fix. Exit 0: the table may open; 1: it may not.",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--central", action="store_true",
                       help="check the central leaderboard service instead of a table")
    which.add_argument("--desk", action="store_true",
                       help=f"check the desk workstation (default config {DEFAULT_DESK_CONFIG})")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help=f"the table config (default {DEFAULT_CONFIG}; with --central the"
                        f" service's, default {DEFAULT_CENTRAL_CONFIG})")
    p.add_argument("--enrolled", type=Path, default=None, metavar="FILE",
                   help="a copy of the central server's tables.pub to compare the key with")
    p.add_argument("--rehearsal", action="store_true",
                   help="a rehearsal, not play: simulated devices and a clock that is not"
                        " synchronised are warnings, not failures")
    p.add_argument("--broker-monitor", action="append", default=[], metavar="URL",
                   help="a NATS node's monitoring address, e.g. http://mqtt1:8222 (repeat for"
                        " each node): check that the MQTT streams are replicated on the"
                        " cluster's nodes")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    """Run every check; print the findings; 0 if the table may open (the service may run),
    else 1."""
    probes = Probes(enrolled=args.enrolled, rehearsal=args.rehearsal)
    if args.central:
        config = args.config or DEFAULT_CENTRAL_CONFIG
        # The central server's and the desk's checks need the central extra (its database
        # migrations): imported only here, so a table PC's own install runs the doctor.
        from cli.doctor.central import check_central  # noqa: PLC0415

        findings = check_central(config, probes)
    elif args.desk:
        config = args.config or DEFAULT_DESK_CONFIG
        from cli.doctor.desk import check_desk  # noqa: PLC0415

        findings = check_desk(config, probes)
    else:
        config = args.config or DEFAULT_CONFIG
        findings = check_table(config, probes)
    if args.broker_monitor:
        findings += mqtt_stream_findings(args.broker_monitor)
    ok = may_open(findings)
    subject = ("the central service may run" if args.central else
               "the desk may work" if args.desk else "the table may open")
    if args.rehearsal:
        subject += " for a rehearsal"
    if args.json:
        print(json.dumps({"config": str(config), "may_open": ok, "rehearsal": args.rehearsal,
                          "findings": [{"check": f.check, "status": f.status, "found": f.found,
                                        "fix": f.fix} for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f"{_MARK[f.status]}  {f.check:12} {f.found}")
            if f.fix and f.status != "ok":
                print(f"      {'':12} fix: {f.fix}")
        verdict = (subject if ok else
                   subject.replace(" may ", " may NOT ") + ": fix every FAIL above")
        if ok and args.rehearsal:
            verdict += ", not for play: run `showdown doctor` without --rehearsal before opening"
        print(verdict)
    return 0 if ok else EXIT_MAY_NOT_OPEN
