"""`showdown doctor`: may this table open? Checks the config, the shoe and the chip reader,
the clock, the broker (a real CONNECT with the configured credentials and TLS), the table's
key against its enrolment, the journal's integrity and the free disk space.

    showdown doctor [--config /etc/showdown/table.toml] [--enrolled tables.pub] [--json]

Each finding is ok, warn or fail, with what was found and what to fix
(docs/operations/doctor.md). Exit 0: the table may open; 1: it may not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from deploy.doctor import Probes, check_table, may_open

__all__ = ["EXIT_MAY_NOT_OPEN", "register", "run_doctor"]

DEFAULT_CONFIG = Path("/etc/showdown/table.toml")
EXIT_MAY_NOT_OPEN = 1
_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def register(sub: Any) -> None:
    """Add the `doctor` command."""
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor", help="check a table PC: may this table open?",
        description="Check the table's config, devices, clock, broker, key, journal and disk;"
        " each finding says what to fix. Exit 0: the table may open; 1: it may not.",
    )
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="FILE",
                   help=f"the table config (default {DEFAULT_CONFIG})")
    p.add_argument("--enrolled", type=Path, default=None, metavar="FILE",
                   help="a copy of the central server's tables.pub to compare the key with")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    """Run every check; print the findings; 0 if the table may open, else 1."""
    findings = check_table(args.config, Probes(enrolled=args.enrolled))
    ok = may_open(findings)
    if args.json:
        print(json.dumps({"config": str(args.config), "may_open": ok,
                          "findings": [{"check": f.check, "status": f.status, "found": f.found,
                                        "fix": f.fix} for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f"{_MARK[f.status]}  {f.check:12} {f.found}")
            if f.fix and f.status != "ok":
                print(f"      {'':12} fix: {f.fix}")
        print("the table may open" if ok else "the table may NOT open: fix every FAIL above")
    return 0 if ok else EXIT_MAY_NOT_OPEN
