"""`showdown desk commands` and `showdown desk check-tables`: the desk's table commands with
what each table answered (sent, held, accepted, refused and why, no answer yet), and the
desk's view of each table against what the table reports (docs/desk-commands.md).

Both ask the central service's desk API (the ingest there writes the tables' answers).
`check-tables` exits 1 when a table disagrees with the desk (each difference printed), 0 when
all agree.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from cli.desk import api
from cli.desk.actions import show
from cli.errors import CommandError
from leaderboard.projections.command_results import STATES

__all__ = ["register", "run_check_tables", "run_commands"]

_LABELS = {"recorded": "recorded, not sent", "sent": "sent, no answer yet",
           "send_failed": "NOT DELIVERED", "held": "held by the table",
           "accepted": "accepted", "refused": "REFUSED"}


def register(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add `commands` and `check-tables` to `showdown desk` (``add`` as in desk.py)."""
    a = add("commands", "the desk's table commands and the tables' answers (newest first)")
    which = a.add_mutually_exclusive_group()
    which.add_argument("--pending", action="store_true",
                       help="only those with no final answer yet (sent, held, not delivered)")
    which.add_argument("--refused", action="store_true", help="only those a table refused")
    which.add_argument("--state", choices=STATES, default=None)
    a.add_argument("--table", default=None)
    a.add_argument("--entry", metavar="ID", default=None,
                   help="the commands that seated or unseated this entry (and why a table"
                        " refused one)")
    a.add_argument("--seq", type=int, default=None, help="one command")
    a.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="with --seq: wait up to this long for the table's answer")
    a.add_argument("--limit", type=int, default=50)
    a.set_defaults(handler=run_commands)

    a = add("check-tables", "compare the desk's open heat and seated entries with each"
            " table's own report; exit 1 if any differ")
    a.add_argument("--table", default=None)
    a.set_defaults(handler=run_check_tables)


def _line(v: dict[str, Any]) -> str:
    label = _LABELS.get(v["state"], v["state"])
    why = f": {v['reason']}" if v.get("reason") else ""
    given = v.get("args") or {}
    args = " ".join(f"{k}={given[k]}" for k in ("heat_id", "entry_id", "seat") if k in given)
    return (f"seq {v['seq']}  {v['table']}  {v['command']}{' ' + args if args else ''}  by"
            f" {v['actor']}  {label}{why}")


def _views(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.seq is not None:
        answer = api.exchange(args, "GET", api.path("commands", args.seq), accept=(404,))
        return [] if answer.status == 404 else [answer.body]
    data = api.call(args, "GET", "commands" + api.query(
        state="refused" if args.refused else args.state, pending=args.pending,
        table=args.table, entry=args.entry, limit=max(1, min(args.limit, 10_000))))
    views: list[dict[str, Any]] = data["commands"]
    return views


def run_commands(args: argparse.Namespace) -> int:
    """List the desk's commands and their state."""
    deadline = time.monotonic() + max(0.0, args.wait)
    views = _views(args)
    while (args.seq is not None and views and views[0]["state"] not in ("accepted", "refused")
           and time.monotonic() < deadline):
        time.sleep(0.1)
        views = _views(args)
    if args.seq is not None and not views:
        raise CommandError(f"no desk command with seq {args.seq} (one recorded before"
                           " revision 0005 has no state: see `showdown desk audit`)")
    show(args, views, [_line(v) for v in views] or ["no commands"])
    return 0


def run_check_tables(args: argparse.Namespace) -> int:
    """Compare the desk's view of each table with the table's; 1 if they differ."""
    data = api.call(args, "GET", "table-check" + api.query(table=args.table))
    views, findings = data["tables"], data["findings"]
    lines = [f"{v['table']}: heat {v.get('table_heat') or 'none'},"
             f" {len(v.get('table_seated') or [])} seated"
             + (f"; {len(v['awaiting'])} commands awaiting an answer" if v.get("awaiting")
                else "")
             + ("" if v.get("findings") else "; agrees with the desk") for v in views]
    lines += [f"DISAGREES: {f['message']}" for f in findings]
    show(args, data, lines or ["no tables"])
    return 1 if findings else 0
