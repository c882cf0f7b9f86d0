"""`showdown journal`: the technician's tools for a table's journal (R3-R5, docs/journal.md).

- ``verify``: check every checksum, the chains, the head and SQLite's own structure; list the
  open faults. Read-only. Exit 0 when intact, 1 when problems were found. ``--full`` (the
  default) checks everything; ``--table-key`` only what follows the newest verified head
  that key signed, as the daemon's start-up does.
- ``clear-faults``: the explicit, logged operator command that ends the error state: clears
  the open faults and appends a record of who and why. Refused on a damaged journal.
- ``rotate``: start a new journal file that continues this one (cli/journal/rotate.py).
- ``replace``: retire a damaged journal (renamed and kept, never deleted) and start a new one
  that continues the table's message seq; the new journal's first record says what was
  replaced, why and by whom.

The writing commands need the daemon stopped (they take the journal's write lock).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cli.arguments import add_renamed
from cli.errors import CommandError, CommandRefused
from cli.journal.rotate import register_rotate
from controller.journal import (
    Fault,
    IntegrityProblem,
    Journal,
    JournalBusy,
    JournalDamaged,
    JournalError,
    JournalUnreadable,
    replace_journal,
    verify_file,
)
from controller.journal.verified_head import verify
from wire.signing import PublicKey, SigningError, load_private_key

__all__ = ["EXIT_PROBLEMS", "register", "run_clear_faults", "run_replace", "run_verify"]

EXIT_PROBLEMS = 1  # `journal verify` found integrity problems


def register(sub: Any) -> None:
    """Add the `journal` subcommand and its actions."""
    p: argparse.ArgumentParser = sub.add_parser(
        "journal",
        help="verify a table's journal, clear its faults, or replace a damaged one",
        description="Technician tools for a table's journal (docs/journal.md).",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    v = actions.add_parser("verify", help="check the journal's integrity (read-only)",
                           description="Check every checksum and chain; list open faults. "
                                       "With --table-key, only what follows the newest "
                                       "verified head that key signed. "
                                       "Exit 0 when intact, 1 when problems were found.")
    _journal_arg(v)
    v.add_argument("--json", action="store_true", help="print JSON instead of text")
    scope = v.add_mutually_exclusive_group()
    scope.add_argument("--full", action="store_true",
                       help="verify everything: every record and message and SQLite's "
                            "whole-file check (the default without --table-key)")
    scope.add_argument("--table-key", type=Path, metavar="FILE",
                       help="the table's key file: verify only after the newest verified "
                            "head it signed (what the daemon's start-up checks)")
    v.set_defaults(handler=run_verify)

    c = actions.add_parser("clear-faults", help="clear the open faults (logged: who and why)",
                           description="End the error state: clear every open fault and "
                                       "record who did it and why. Stop the daemon first.")
    _journal_arg(c)
    c.add_argument("--operator", required=True, metavar="NAME",
                   help="who is clearing (name or staff number)")
    add_renamed(c, "--why", was="--reason", dest="reason", required=True, metavar="TEXT",
                help="why, in words")
    c.set_defaults(handler=run_clear_faults)

    r = actions.add_parser(
        "replace", help="retire a damaged journal and start a new one (logged)",
        description="Rename a journal that fails verification aside (it is kept for "
                    "investigation) and create a new one whose message seq continues. "
                    "Stop the daemon first.")
    _journal_arg(r)
    r.add_argument("--operator", required=True, metavar="NAME", help="who is replacing it")
    add_renamed(r, "--why", was="--reason", dest="reason", required=True, metavar="TEXT",
                help="why, in words")
    r.add_argument("--last-seq", type=_seq, metavar="N",
                   help="the last message seq the table used (from the leaderboard), "
                        "needed when the damaged file cannot be read")
    r.set_defaults(handler=run_replace)
    register_rotate(actions)


def _journal_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--journal", required=True, type=Path, metavar="PATH",
                   help="the table's journal file")


def _seq(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def run_verify(args: argparse.Namespace) -> int:
    """Verify the journal; print the summary, what was checked, the problems and the faults."""
    key = None
    if args.table_key is not None:
        try:
            key = load_private_key(args.table_key).public_key
        except SigningError as e:
            raise CommandError(str(e)) from e
    problems, scope = _verified(args.journal, key)
    summary: dict[str, Any] | None = None
    faults: list[Fault] = []
    notes: list[str] = []
    try:
        with Journal.open(args.journal, read_only=True) as journal:
            summary = {**journal.counts(), "last_seq": journal.last_seq()}
            faults = journal.open_faults()
    except JournalError as e:
        notes.append(f"details unavailable: {e}")
    if args.json:
        print(json.dumps({
            "journal": str(args.journal),
            "intact": not problems,
            "verification": scope,
            "problems": [_problem_json(p) for p in problems],
            "summary": summary,
            "open_faults": [{"seq": f.seq, "kind": f.kind, "detail": f.detail,
                             "wall": f.wall.isoformat()} for f in faults],
            "notes": notes,
        }, indent=2, ensure_ascii=False))
    else:
        print(f"journal {args.journal}")
        if summary is not None:
            print(f"  {summary['records']} records, {summary['messages']} messages "
                  f"({summary['pending']} not yet delivered), last message seq "
                  f"{summary['last_seq']}")
        for note in notes:
            print(f"  {note}")
        print(f"verification: {scope}")
        if problems:
            print(f"integrity: {len(problems)} PROBLEM(S)")
            for problem in problems:
                print(f"  {problem}")
        else:
            print("integrity: OK")
        if faults:
            print(f"open faults: {len(faults)} (the table stays in its error state)")
            for f in faults:
                print(f"  fault {f.seq} at {f.wall.isoformat()}: {f.kind}: {f.detail}")
        else:
            print("open faults: none")
    return EXIT_PROBLEMS if problems else 0


def _verified(path: Path, key: PublicKey | None) -> tuple[list[IntegrityProblem], str]:
    """The problems and what was checked: everything, or after the newest signed head."""
    try:
        journal = Journal.open(path, read_only=True)
    except JournalError:
        return verify_file(path), "full"
    with journal:
        check = verify(journal, key, full=key is None)
    return check.problems, check.describe()


def _problem_json(p: IntegrityProblem) -> dict[str, Any]:
    return {"area": p.area, "seq": p.seq, "code": p.code, "detail": p.detail}


def run_clear_faults(args: argparse.Namespace) -> int:
    """Clear the open faults, recording the operator and the reason (refused, exit 3, on a
    damaged journal or while the daemon holds it)."""
    try:
        with Journal.open(args.journal, create=False) as journal:
            record = journal.clear_faults(args.operator, args.reason)
    except (JournalDamaged, JournalBusy) as e:
        raise CommandRefused(str(e)) from e
    except JournalUnreadable as e:
        if not Path(args.journal).is_file():
            raise CommandError(str(e)) from e  # a wrong path: fix the command
        raise CommandRefused(f"{e}; faults are not cleared on a damaged journal: replace it"
                             " (docs/journal.md, Recovery)") from e
    except JournalError as e:
        raise CommandError(str(e)) from e
    if record is None:
        print("no open faults: nothing cleared, nothing recorded")
        return 0
    cleared = record.payload["faults"]
    seqs = ", ".join(str(f["seq"]) for f in cleared)
    print(f"cleared {len(cleared)} fault(s) (fault seq {seqs}); recorded as journal seq "
          f"{record.seq} by {record.payload['operator']}: {record.payload['reason']}")
    return 0


def run_replace(args: argparse.Namespace) -> int:
    """Retire the damaged journal and start a new one continuing its message seq."""
    try:
        done = replace_journal(args.journal, operator=args.operator, reason=args.reason,
                               last_seq=args.last_seq)
    except JournalError as e:
        raise CommandError(str(e)) from e
    print(f"retired {args.journal} ({len(done.problems)} problem(s)) as {done.retired}")
    print(f"  sha256 {done.sha256}")
    print(f"new journal {args.journal}: messages continue after seq {done.last_seq}; "
          f"recorded as journal seq {done.record.seq}")
    return 0
