"""`showdown desk` actions for identities (issue 13): another document for a patron, the
possible list matches held for a supervisor and their decision, a rule 57 disqualification
(the seated entries' `unseat` commands sent), and the entry fees by payment method.

The arguments are defined here and registered by `cli.desk.command`; the shared
plumbing (the desk API, printing) is `cli.desk.api`'s and `cli.desk.actions`'.
Decisions are a supervisor's (leaderboard.desk.roles).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

from cli.desk import actions as act
from cli.desk import api
from cli.desk.table_answers import send
from game.money import format_rand
from leaderboard.desk import PAYMENT_METHODS
from leaderboard.eligibility import ID_KINDS

__all__ = [
    "PAYMENT_CHOICES",
    "add_actions",
    "run_disqualify",
    "run_document_add",
    "run_fees",
    "run_hold_decision",
    "run_holds",
]

PAYMENT_CHOICES: Final = PAYMENT_METHODS


def _hold_line(v: dict[str, Any]) -> str:
    names = ", ".join(f"{m.get('list_name')!r} on the {m.get('list_kind')} list"
                      f" ({m.get('how')})" for m in v["matches"])
    state = ("OPEN" if v["open"] else
             f"{v['decision']} by {v['decided_by']} at"
             f" {act.moment(v['decided_at']):%Y-%m-%d %H:%M} UTC: {v['reason']}")
    return f"hold {v['hold_id']} patron {v['patron_id']} ({v['context']}): {names}; {state}"


def run_document_add(args: argparse.Namespace) -> int:
    """Record another document a patron presents (checked against the lists at once)."""
    row = api.call(args, "POST", api.path("patrons", args.patron, "documents"),
                   {"kind": args.kind, "number": args.number, "why": args.why})
    act.show(args, row, [f"{row['kind']} {row['number']} recorded for patron"
                         f" {row['patron_id']}"])
    return 0


def run_holds(args: argparse.Namespace) -> int:
    """List the holds (possible list matches) and their decisions."""
    views = api.call(args, "GET", "holds" + api.query(open=args.open,
                                                      patron_id=args.patron))["holds"]
    act.show(args, views, [_hold_line(v) for v in views] or ["no holds"])
    return 0


def run_hold_decision(args: argparse.Namespace) -> int:
    """A supervisor approves or refuses a possible list match."""
    view = api.call(args, "POST", api.path("holds", args.hold_id, args.hold_action),
                    {"why": args.why})
    act.show(args, view, [_hold_line(view)])
    return 0


def run_disqualify(args: argparse.Namespace) -> int:
    """Disqualify a patron (rule 57); the service sends each seated entry's unseat."""
    sent = send(args, "POST", "disqualifications", {"patron_id": args.patron, "why": args.why})
    r = sent.body
    lines = [f"patron {r['patron_id']} disqualified (rule 57): {r['reason']}"]
    lines += [f"entry {e} disqualified: its score no longer counts" for e in r["entries"]]
    lines += [f"entry {e} to leave its seat (unseat sent)" for e in r["unseated"]]
    lines += [f"prize award {a} withheld" for a in r["withheld_awards"]]
    if not sent.confirmed and not args.json:
        act.show(args, r, lines)
    return act.finish(args, sent, lines)


def run_fees(args: argparse.Namespace) -> int:
    """The qualifying entry fees kept, by payment method."""
    data = api.call(args, "GET", "fees")
    fees = data["fees"]
    act.show(args, fees, [f"{f['payment']}: {f['entries']} entries, {format_rand(f['cents'])}"
                          for f in fees] + [f"total: {format_rand(data['total_cents'])}"])
    return 0


def _positive(text: str) -> int:
    if not text.isdecimal() or not 0 < int(text) < 2**31:
        raise argparse.ArgumentTypeError(f"{text!r} is not a hold id (a positive number)")
    return int(text)


def add_actions(add: Callable[..., argparse.ArgumentParser],
                common: argparse.ArgumentParser) -> None:
    """Add the identity actions to `showdown desk` (``add`` as desk.py defines it)."""
    group = add("document", "another document a patron presents (ID, passport, licence,"
                " rewards card)", group=True)
    sub = group.add_subparsers(dest="document_action", metavar="DOCUMENT_ACTION",
                               required=True)
    a = sub.add_parser("add", parents=[common], help="record another document of a patron",
                       description="record another document of a patron; it is checked"
                       " against the lists at once")
    a.add_argument("--patron", metavar="ID", required=True)
    a.add_argument("--kind", required=True, choices=ID_KINDS)
    a.add_argument("--number", required=True)
    a.set_defaults(handler=run_document_add)

    a = add("holds", "list the possible list matches held for a supervisor's decision")
    a.add_argument("--open", action="store_true", help="only those not decided yet")
    a.add_argument("--patron", metavar="ID", default=None)
    a.set_defaults(handler=run_holds)
    group = add("hold", "a supervisor's decision on a possible list match", group=True)
    sub = group.add_subparsers(dest="hold_action", metavar="HOLD_ACTION", required=True)
    for name, what in (("approve", "not the listed person: the patron may play"),
                       ("refuse", "the listed person: the patron is refused")):
        a = sub.add_parser(name, parents=[common], help=f"{name} a hold ({what}); --why",
                           description=f"{name} a hold ({what}); --why is required")
        a.add_argument("hold_id", metavar="HOLD_ID", type=_positive)
        a.set_defaults(handler=run_hold_decision)

    a = add("disqualify", "disqualify a patron (rule 57): every entry, scores gone from the"
            " standings, seated entries unseated, unclaimed prizes withheld; --why", send=True)
    a.add_argument("--patron", metavar="ID", required=True)
    a.set_defaults(handler=run_disqualify)

    a = add("fees", "the qualifying entry fees kept, by payment method (rule 6)")
    a.set_defaults(handler=run_fees)
