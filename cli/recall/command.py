"""`showdown recall`: the last hands of a table, read from its journal (R1, game recall).

Opens the journal read-only: it needs neither the daemon nor its lock, and works while the
table is in its error state (the open faults are shown first). Each hand is an outbox message
of type hand.settled or hand.voided, shown oldest first with its stored body laid out
generically (the body schema belongs to game/hand/record.py), or one screen a hand with
``--compact`` (cli/recall/compact.py); ``--hand``/``--entry``/``--heat`` select.
The whole journal is checked as `showdown journal verify` does: damage is reported first and
the exit code is 1; a message whose checksum does not match is flagged, never hidden.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cli.errors import CommandError
from cli.recall.compact import damage_lines, render_compact
from controller.journal import (
    CheckedMessage,
    Fault,
    IntegrityProblem,
    Journal,
    JournalError,
    canonical_json,
)
from controller.journal.rotation import journal_files
from game.money import format_rand
from wire.messages import HandSettled, HandVoided

__all__ = ["DEFAULT_LAST", "EXIT_DAMAGED", "HAND_TYPES", "Recall", "Selection", "recall",
           "register", "render_text", "run"]

HAND_TYPES = (HandSettled.TYPE, HandVoided.TYPE)
DEFAULT_LAST = 10
EXIT_DAMAGED = 1  # docs/exit-codes.md: a check ran and found problems
# Keys shown first, in this order, wherever they appear; the rest follow alphabetically, and
# the keys in _LAST after them (game.hand.record's "settle" repeats the cards and wagers).
_FIRST = ("hand_id", "status", "table", "heat_id", "stage", "opened_at", "settled_at",
          "voided_at", "void", "seat", "entry_id", "hole", "hand", "outcome", "position",
          "cards", "card", "target", "replaced", "dealer", "board", "burns", "seats", "wagers",
          "decision", "settlement", "result", "stake", "net", "nets", "reason", "by", "at",
          "corrections", "alerts", "resolutions", "reads")
_LAST = ("settle", "v")
# Amounts in integer cents shown as rand: these keys, any key ending in _cents, and the
# whole-number values inside these mappings (e.g. "wagers": {"ante": 2500}).
_MONEY_KEYS = frozenset({"net", "stake", "amount", "score"})
_MONEY_MAPS = frozenset({"wagers", "nets"})
_COMPACT = 96  # a mapping of scalars shorter than this goes on one line


def register(sub: Any) -> None:
    """Add the `recall` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "recall",
        help="show the last hands from a table's journal (works in the error state)",
        description="Game recall: print the last N hands stored in a table's journal, oldest "
                    "first: cards in read order, wagers per seat and spot, results, nets, "
                    "corrections. Read-only; the daemon need not run.",
    )
    p.add_argument("--journal", required=True, type=Path, metavar="PATH",
                   help="the table's journal file")
    p.add_argument("--last", type=_positive, default=None, metavar="N",
                   help="how many hands (default 10; with --hand/--entry/--heat, all)")
    p.add_argument("--hand", metavar="ID", help="only the hand with this hand id")
    p.add_argument("--entry", metavar="ID", help="only the hands this entry played")
    p.add_argument("--heat", metavar="ID", help="only the hands of this heat")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print JSON instead of text")
    shown.add_argument("--compact", action="store_true",
                       help="one screen a hand, for a dispute (times in --tz)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the whole-journal integrity check (faster on a long journal; "
                        "each shown hand is still checked, and the output says so)")
    p.add_argument("--tz", type=_zone, default=None, metavar="ZONE",
                   help="the venue's IANA time zone for --compact (default: UTC, labelled)")
    p.set_defaults(handler=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _zone(text: str) -> ZoneInfo:
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"unknown time zone {text!r} (an IANA name such as Africa/Johannesburg)") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which hands to show: one hand id, one entry's, one heat's (all given must match)."""

    hand: str | None = None
    entry: str | None = None
    heat: str | None = None

    def given(self) -> dict[str, str]:
        """The selectors given, by body key."""
        keys = {"hand_id": self.hand, "entry_id": self.entry, "heat_id": self.heat}
        return {k: v for k, v in keys.items() if v is not None}

    def needle(self) -> str | None:
        """Text every selected body's stored JSON contains (a first filter for the database)."""
        given = self.given()
        if not given:
            return None
        key, value = next(iter(given.items()))
        return f"{canonical_json(key)}:{canonical_json(value)}"

    def keeps(self, hand: CheckedMessage) -> bool:
        """Whether the hand matches every selector given (a body that cannot be read: no)."""
        body = hand.body
        if body is None:
            return not self.given()
        if self.hand is not None and body.get("hand_id") != self.hand:
            return False
        if self.heat is not None and body.get("heat_id") != self.heat:
            return False
        seats = body.get("seats")
        return self.entry is None or (isinstance(seats, list) and any(
            isinstance(s, Mapping) and s.get("entry_id") == self.entry for s in seats))


@dataclass(frozen=True, slots=True, kw_only=True)
class Recall:
    """What recall read: the hands (oldest first), open faults, and the integrity check."""

    hands: list[CheckedMessage]
    faults: list[Fault]
    fault_error: str | None
    problems: list[IntegrityProblem] | None  # None: the whole-journal check was skipped

    @property
    def damaged(self) -> bool:
        """The check found problems, or a shown hand fails its own checksum."""
        return bool(self.problems) or any(h.problems for h in self.hands)


def recall(path: Path, last: int | None, selection: Selection | None = None, *,
           check: bool = True) -> Recall:
    """The selected hands (the last `last`, None: all), the open faults, and (when `check`)
    the whole-journal integrity check."""
    selection = selection or Selection()
    try:
        journal = Journal.open(path, read_only=True)
    except JournalError as e:
        raise CommandError(str(e)) from e
    with journal:
        try:
            hands = _hands(journal, last, selection)
        except JournalError as e:
            raise CommandError(str(e)) from e
        faults: list[Fault] = []
        fault_error = None
        try:
            faults = journal.open_faults()
        except JournalError as e:
            fault_error = str(e)
        problems = journal.verify() if check else None
    return Recall(hands=hands, faults=faults, fault_error=fault_error, problems=problems)


def _hands(journal: Journal, last: int | None, selection: Selection) -> list[CheckedMessage]:
    """The selected hands, oldest first, from this journal and, when it does not hold enough
    of them, from the files it continues (docs/journal.md, Rotation)."""
    wanted = last if last is not None or selection.given() else DEFAULT_LAST
    hands: list[CheckedMessage] = []
    for path in journal_files(journal.path):
        with Journal.open(path, read_only=True) as part:
            if selection.given():
                found = [h for h in part.latest_messages(HAND_TYPES, None, selection.needle())
                         if selection.keeps(h)]
            else:
                found = part.latest_messages(HAND_TYPES, wanted - len(hands) if wanted else None)
        hands = found + hands
        if wanted is not None and len(hands) >= wanted:
            return hands[-wanted:]
    return hands


def run(args: argparse.Namespace) -> int:
    """Print the recall; exit 1 (a check found problems) when the journal is damaged."""
    selection = Selection(hand=args.hand, entry=args.entry, heat=args.heat)
    last = args.last if args.last is not None or selection.given() else DEFAULT_LAST
    got = recall(args.journal, last, selection, check=not args.no_check)
    if args.json:
        print(json.dumps({
            "journal": str(args.journal),
            "requested": last,
            "selected": selection.given(),
            "damaged": got.damaged,
            "checked": got.problems is not None,
            "integrity_problems": [{"area": p.area, "code": p.code, "seq": p.seq,
                                    "detail": p.detail} for p in got.problems or ()],
            "open_faults": [{"seq": f.seq, "kind": f.kind, "detail": f.detail,
                             "wall": f.wall.isoformat()} for f in got.faults],
            "faults_unreadable": got.fault_error,
            "hands": [{"seq": h.seq, "type": h.type, "topic_suffix": h.topic_suffix,
                       "wall": h.wall, "boot_id": h.boot_id, "delivered": h.delivered,
                       "intact": not h.problems, "problems": list(h.problems),
                       "body": h.body} for h in got.hands],
        }, indent=2, ensure_ascii=False))
    elif args.compact:
        tz = args.tz or ZoneInfo("UTC")
        zone = args.tz.key if args.tz else "UTC (no --tz given)"
        chosen = ", ".join(f"{k} {v}" for k, v in selection.given().items())
        banner = (f"GAME RECALL (read-only, compact) - journal {args.journal}"
                  + (f" - {chosen}" if chosen else ""))
        print(render_compact(got.hands, tz=tz, zone=zone, banner=banner, faults=got.faults,
                             fault_error=got.fault_error, problems=got.problems))
    else:
        print(render_text(args.journal, last, got.hands, got.faults, got.fault_error,
                          problems=got.problems))
    return EXIT_DAMAGED if got.damaged else 0


def render_text(path: Path, last: int | None, hands: Sequence[CheckedMessage],
                faults: Sequence[Fault], fault_error: str | None = None, *,
                problems: Sequence[IntegrityProblem] | None = ()) -> str:
    """The readable recall: a banner, damage and open faults, then each hand."""
    lines = [f"GAME RECALL (read-only) - journal {path}"]
    lines += damage_lines(problems, hands)
    if fault_error:
        lines.append(f"ERROR STATE UNKNOWN: the faults cannot be read: {fault_error}")
    elif faults:
        lines.append(f"ERROR STATE: {len(faults)} open fault(s)")
        lines += [f"  fault {f.seq} at {_when(f.wall.isoformat())}: {f.kind}: {f.detail}"
                  for f in faults]
    asked = f"last {last} requested" if last is not None else "all selected"
    lines.append(f"{len(hands)} hand(s), {asked}, oldest first")
    for hand in hands:
        lines.append("")
        lines.append(_hand_header(hand))
        lines += [f"  !! {problem}" for problem in hand.problems]
        if hand.body is None:
            lines.append("  (body unreadable)")
            continue
        for key in _ordered(hand.body):
            _render(key, hand.body[key], 1, lines)
    return "\n".join(lines)


def _hand_header(hand: CheckedMessage) -> str:
    hand_id = hand.body.get("hand_id", "?") if hand.body is not None else "?"
    state = "delivered" if hand.delivered else "NOT YET DELIVERED"
    return (f"=== hand {hand_id}  [{hand.type}, message seq {hand.seq}, {_when(hand.wall)}, "
            f"{state}]")


def _when(wall: str) -> str:
    """RFC 3339 UTC text to "2026-01-01 12:00:00.001 UTC" (unchanged when it is not)."""
    if len(wall) >= 23 and wall.endswith("+00:00") and wall[10] == "T":
        return f"{wall[:10]} {wall[11:23]} UTC"
    return wall


def _ordered(mapping: Mapping[str, Any]) -> list[str]:
    first = [k for k in _FIRST if k in mapping]
    last = [k for k in _LAST if k in mapping]
    return first + sorted(k for k in mapping if k not in _FIRST and k not in _LAST) + last


def _is_money(key: str | None, value: Any, parent: str | None) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return key is not None and (key.endswith("_cents") or key in _MONEY_KEYS
                                or parent in _MONEY_MAPS)


def _scalar(key: str | None, value: Any, parent: str | None = None) -> str:
    if _is_money(key, value, parent):
        return format_rand(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _label(key: str) -> str:
    return key.removesuffix("_cents")


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (Mapping, list))


def _flat(key: str | None, mapping: Mapping[str, Any]) -> str:
    """A mapping of scalars on one line: "ante R25.00, odds R25.00"."""
    return ", ".join(f"{_label(k)} {_scalar(k, mapping[k], key)}" for k in _ordered(mapping))


def _render(key: str | None, value: Any, depth: int, lines: list[str],
            parent: str | None = None) -> None:
    pad = "  " * depth
    head = f"{pad}{_label(key)}:" if key is not None else pad.rstrip()
    if isinstance(value, Mapping):
        if not value:
            lines.append(f"{head} (none)")
            return
        if all(_is_scalar(v) for v in value.values()):
            flat = _flat(key, value)
            if len(pad) + len(flat) <= _COMPACT:
                lines.append(f"{head} {flat}")
                return
        lines.append(head)
        for k in _ordered(value):
            _render(k, value[k], depth + 1, lines, key)
    elif isinstance(value, list):
        if not value:
            lines.append(f"{head} (none)")
        elif all(_is_scalar(v) for v in value):
            lines.append(f"{head} " + " ".join(_scalar(key, v, parent) for v in value))
        else:
            lines.append(head)
            for item in value:
                lines += _list_item(key, item, pad)
    else:
        lines.append(f"{head} {_scalar(key, value, parent)}")


def _list_item(key: str | None, item: Any, pad: str) -> list[str]:
    """One item of a list, as "- ..." lines under the list's key."""
    sub: list[str] = []
    if isinstance(item, Mapping) and item and all(_is_scalar(v) for v in item.values()) \
            and len(pad) + len(_flat(key, item)) <= _COMPACT:
        sub.append(_flat(key, item))
    elif isinstance(item, Mapping) and item:
        for k in _ordered(item):
            _render(k, item[k], 0, sub, key)
    else:
        _render(None, item, 0, sub, key)
    sub = [s for s in sub if s.strip()] or ["-"]
    return [f"{pad}  - {sub[0].lstrip()}"] + [f"{pad}    {s}" for s in sub[1:]]
