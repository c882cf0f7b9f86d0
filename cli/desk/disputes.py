"""`showdown desk dispute raise|rule|close|show|list`: disputes as records (rules 22, 37, 53;
leaderboard.desk.dispute_records, docs/disputes.md).

    showdown desk dispute raise --entry E-... --hand t01-000003 --claim "odds paid short"
    showdown desk dispute rule 7 --void-hand [--hand H] --why "..."
    showdown desk dispute rule 7 --correct-hand --net=-R25 [--hand H] --why "..."
    showdown desk dispute rule 7 --dismiss --why "the footage shows it was paid right"
    showdown desk dispute close 7 --outcome "told at the desk: hand voided, R75 taken back"
    showdown desk dispute show 7       showdown desk dispute list [--status open|ruled|closed]

A ruling on a hand whose entry still plays at its table has the central service send the
table a signed ``correct_hand`` command (the command line waits for its answer, as every
sending action does); once the entry's score is recorded the ruling corrects the score beside
it and nothing is sent.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.arguments import signed_rand
from cli.desk import actions as act
from cli.desk import api
from cli.desk.table_answers import send
from cli.errors import CommandError
from game.money import format_rand
from game.words import spoken
from leaderboard.desk import dispute_records as records

__all__ = ["register"]


def register(dispute_actions: Any, common: argparse.ArgumentParser,
             sending: argparse.ArgumentParser) -> None:
    """Add raise, rule, close, show and list to `showdown desk dispute`."""
    def sub(name: str, text: str, parents: list[argparse.ArgumentParser]
            ) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = dispute_actions.add_parser(
            name, help=text, description=text, parents=parents)
        return a

    a = sub("raise", "record a participant's dispute at the desk (refused once the entry's"
            " round is over)", [common])
    a.add_argument("--entry", metavar="ID", required=True)
    a.add_argument("--hand", metavar="HAND_ID", action="append", default=[],
                   help="a hand disputed (repeat for several; needed before a score exists)")
    a.add_argument("--claim", metavar="TEXT", required=True, help="what the participant says")
    a.set_defaults(handler=run_raise)

    a = sub("rule", "a supervisor's ruling on an open dispute (--why is required); a hand"
            " ruled on while its entry plays is corrected at the table", [common, sending])
    a.add_argument("dispute_id", metavar="ID", type=int)
    kind = a.add_mutually_exclusive_group(required=True)
    kind.add_argument("--dismiss", dest="ruling", action="store_const", const="dismissed")
    kind.add_argument("--void-hand", dest="ruling", action="store_const", const="hand_voided")
    kind.add_argument("--correct-hand", dest="ruling", action="store_const",
                      const="hand_corrected")
    a.add_argument("--hand", metavar="HAND_ID", default=None,
                   help="the hand ruled on (default: the dispute's only hand)")
    a.add_argument("--net", metavar="AMOUNT", default=None,
                   help="--correct-hand: the entry's corrected net for the hand, e.g. R100,"
                   " or --net=-R25 for a loss")
    a.set_defaults(handler=run_rule)

    a = sub("close", "close a ruled dispute with what the participant was told", [common])
    a.add_argument("dispute_id", metavar="ID", type=int)
    a.add_argument("--outcome", metavar="TEXT", required=True)
    a.set_defaults(handler=run_close)

    a = sub("show", "a dispute with its hands, its score and its ruling", [common])
    a.add_argument("dispute_id", metavar="ID", type=int)
    a.set_defaults(handler=run_show)

    a = sub("list", "the disputes, oldest first", [common])
    a.add_argument("--status", choices=records.DISPUTE_STATUSES, default=None)
    a.add_argument("--entry", metavar="ID", default=None)
    a.set_defaults(handler=run_list)


def _rand(cents: int | None) -> str:
    return "none" if cents is None else format_rand(cents)


def _at(text: str | None) -> str:
    value = act.moment(text)
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M}"


def _line(d: dict[str, Any]) -> str:
    hands = ", ".join(h["hand_id"] for h in d["hands"]) or "no hand"
    ruled = f" - {d['ruling']} by {d['ruled_by']}" if d["ruling"] else ""
    return (f"{d['dispute_id']:>5} {_at(d['at'])} {d['status']:<6} {d['entry_id']} raised by"
            f" {d['raised_by_role']} {d['raised_by'] or ''} ({hands}): {d['claim']!r}{ruled}")


def _lines(d: dict[str, Any]) -> list[str]:
    where = f"table {d['table']} message {d['seq']}" if d["seq"] is not None else (
        f"the desk, recorded by {d['recorded_by']}")
    out = [f"dispute {d['dispute_id']}: {d['status']}",
           f"  entry {d['entry_id']} ({spoken(d['stage'] or '-')}, heat {d['heat_id']});"
           f" raised {_at(d['at'])} by {d['raised_by_role']} {d['raised_by'] or ''} at {where}",
           f"  claim: {d['claim']}",
           f"  score disputed {_rand(d['score_cents'])}; counted now"
           f" {_rand(d['counted_cents'])}"]
    for h in d["hands"]:
        out.append(f"  hand {h['hand_id']} at {h['table']} (seq {h['seq']}, {h['status']}):"
                   f" seat {h['seat']} net {_rand(h['net_cents'])}")
        out.extend(f"    corrected by table message {c['seq']}: {c['ruling']}, chips"
                   f" {format_rand(c['balance_before'])} -> {format_rand(c['balance_after'])}"
                   f" ({c['reason']})" for c in h["corrections"])
    if d["ruling"] is not None and d["ruled_at"] is not None:
        out.append(f"  ruled {d['ruling']} by {d['ruled_by']} at {_at(d['ruled_at'])}:"
                   f" {d['ruling_reason']}")
        detail = d["ruling_detail"] or {}
        if detail.get("applied") == "score":
            out.append(f"    score corrected {format_rand(detail['score_before'])} ->"
                       f" {format_rand(detail['score_after'])}")
        elif detail.get("applied") == "table":
            out.append(f"    sent to table {detail.get('table')} as command"
                       f" {detail.get('command_seq')}")
    if d["closed_at"] is not None:
        out.append(f"  closed by {d['closed_by']} at {_at(d['closed_at'])}: {d['outcome']}")
    return out


def _record(dispute_id: int, *rest: str) -> str:
    return api.path("dispute-records", dispute_id, *rest)


def run_raise(args: argparse.Namespace) -> int:
    """Record a participant's dispute at the desk."""
    d = api.call(args, "POST", "dispute-records", {"entry_id": args.entry, "claim": args.claim,
                                                   "hand_ids": list(args.hand)})
    act.show(args, d, [f"dispute {d['dispute_id']} raised for entry {d['entry_id']}"])
    return 0


def run_rule(args: argparse.Namespace) -> int:
    """A supervisor's ruling; the service sends the table its correcting command if any."""
    net = None if args.net is None else signed_rand(args.net)
    if not (args.why or "").strip():
        raise CommandError("say why the dispute is ruled so (--why): the participant is told")
    sent = send(args, "POST", _record(args.dispute_id, "ruling"),
                {"ruling": args.ruling, "why": args.why or "", "hand_id": args.hand,
                 "net": net})
    d = sent.body
    if not sent.confirmed and not args.json:
        act.show(args, d, _lines(d))
    return act.finish(args, sent, _lines(d))


def run_close(args: argparse.Namespace) -> int:
    """Close a ruled dispute."""
    d = api.call(args, "POST", _record(args.dispute_id, "closing"), {"outcome": args.outcome})
    act.show(args, d, _lines(d))
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print one dispute with its hands, score and ruling."""
    d = api.call(args, "GET", _record(args.dispute_id))
    act.show(args, d, _lines(d))
    return 0


def run_list(args: argparse.Namespace) -> int:
    """List the disputes by status and/or entry."""
    rows = api.call(args, "GET", "dispute-records" + api.query(
        status=args.status, entry_id=args.entry))["disputes"]
    act.show(args, rows, [_line(d) for d in rows] or ["no disputes"])
    return 0
