"""`showdown dispute replay FILE`: replay a bundle's hands through the table's own core and
compare them with what the table published and paid, line by line (issue 14).

The bundle is verified first (`wire.dispute_bundle.check`); one that is not whole is refused
and nothing is replayed. The context part (the rules, paytables, chips and earlier records the
export added with ``--config``) builds a `TableCore` as the daemon builds it from its
config; every record is applied as on the daemon's start-up (`wire.dispute_replay`), and the
messages that come out are set beside the published ones (`wire.replay_lines`). With
``--devices`` the recorded card and chip readings first go through the simulators and the
real drivers (`cli.dispute.devices`). Exit 0: every line matches; 1: a line
differs, or the bundle is not whole. docs/disputes.md, "Replaying a bundle".
"""

from __future__ import annotations

import argparse
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cli.dispute.devices import through_devices
from cli.errors import CommandError
from game.chips.registry import Chip, ChipRegistry, parse_uid
from game.errors import ConfigError
from game.hand.deal import DEFAULT_DEAL, parse_deal_sequence
from game.messages.corrections import HandCorrected
from game.paytables.schema import parse_paytables
from game.staff import LockoutPolicy
from game.table.core import TableCore
from game.tournament.schema import TournamentSettings, parse_tournament, timezone_name
from runtime.logs import configure_logging
from wire.dispute_bundle import CONTEXT, HAND_TYPES, check
from wire.dispute_replay import Message, Produced, published, relevant, replay_records
from wire.replay_lines import Line, compare, describe
from wire.signing import KeyRing, SigningError, parse_public_key

__all__ = ["EXIT_DIFFERS", "add_parser", "run_replay"]

EXIT_DIFFERS = 1  # a line differs, or the bundle is not whole
# Lines that repeat others (the placed cards, the `showdown settle` input): shown if they differ.
_QUIET = frozenset(("hand", item) for item in ("cards", "settle", "deal", "v", "table"))


def add_parser(actions: Any) -> None:
    """Add `dispute replay` to the `dispute` command's actions."""
    r: argparse.ArgumentParser = actions.add_parser(
        "replay", help="replay a bundle's hands and compare them with what was paid",
        description="Verify the bundle, replay every hand in it through the table's own core "
                    "(from the journalled inputs) and compare each line with what the table "
                    "published and paid. Exit 0: every line matches; 1: a difference (each "
                    "named) or a bundle that is not whole.")
    r.add_argument("file", type=Path, metavar="FILE", help="the bundle (dispute export --config)")
    keys = r.add_mutually_exclusive_group(required=True)
    keys.add_argument("--keys", type=Path, metavar="TABLES_FILE",
                      help="enrolment file: lines '<table id> <base64 public key>'")
    keys.add_argument("--public-key", metavar="BASE64",
                      help="the table's public key (for the table the manifest names)")
    r.add_argument("--devices", action="store_true",
                   help="first feed the recorded card and chip readings through the "
                        "simulators and the real drivers, and replay from what they report")
    r.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (a table, venue time, rand) or json (for scripts)")
    r.add_argument("--json", dest="format", action="store_const", const="json",
                   help="the same as --format json")
    r.set_defaults(handler=run_replay)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise CommandError(f"{path}: not a JSON dispute bundle: {e}") from e


def _ring(args: argparse.Namespace, bundle: Any) -> KeyRing:
    manifest = bundle.get("manifest") if isinstance(bundle, dict) else None
    table = manifest.get("table") if isinstance(manifest, dict) else None
    try:
        if args.keys is not None:
            return KeyRing.load(args.keys)
        return KeyRing([parse_public_key(str(table), args.public_key)])
    except SigningError as e:
        raise CommandError(f"{'--keys' if args.keys else '--public-key'}: {e}") from e


def _settings(doc: Mapping[str, Any]) -> TournamentSettings:
    source = f"context.tournament ({doc.get('source')})"
    data = tomllib.loads(str(doc["text"]))
    name = timezone_name(data, source)
    try:
        tz = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ConfigError(source, "venue.timezone", f"unknown time zone {name!r}") from e
    return parse_tournament(data, source, tz=tz)


def _backoff(given: Mapping[str, Any]) -> LockoutPolicy:
    """The sign-in back-off of the bundle's table (a bundle from before the back-off, with
    the fixed lock-out's settings: the default back-off; sign-ins decide no hand)."""
    if "free" not in given:
        return LockoutPolicy()
    return LockoutPolicy(free=int(given["free"]),
                         first=timedelta(seconds=int(given["first_seconds"])),
                         cap=timedelta(seconds=int(given["max_seconds"])),
                         forget=timedelta(minutes=int(given["forget_minutes"])))


def build_core(table: str, context: Mapping[str, Any]) -> TableCore:
    """The table's core as the daemon built it, from the bundle's context."""
    try:
        settings = _settings(context["tournament"])
        paytables = parse_paytables(tomllib.loads(str(context["paytables"]["text"])),
                                    f"context.paytables ({context['paytables'].get('source')})")
        deal = (parse_deal_sequence(context["deal"], source="context.deal")
                if context.get("deal") else DEFAULT_DEAL)
        chips = [Chip(uid=parse_uid(str(c["uid_hex"])), value_cents=int(c["value_cents"]),
                      chip_set=str(c["chip_set"]), issued_to=c.get("issued_to"))
                 for c in context["chips"]]
        # a bundle from before D346 names no require_issued: its table let float chips count
        registry = ChipRegistry(chips, chip_set=str(context["chip_set"]),
                                require_issued=bool(context.get("require_issued", False)),
                                source="context.chips")
        lockout = context["lockout"]
        core = TableCore(table_id=table, settings=settings, paytables=paytables, deal=deal,
                         registry=registry, marker_set=str(context["marker_set"]),
                         verify_payouts=bool(context["verify_payouts"]),
                         lockout=_backoff(lockout))
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as e:
        raise CommandError(f"the bundle's context is not usable: {type(e).__name__}: {e}") from e
    core.hands_opened = int(context.get("hands_before") or 0)
    return core


def run_replay(args: argparse.Namespace) -> int:
    """Verify, replay, compare; exit 0 when every line matches, 1 otherwise."""
    bundle = _load(args.file)
    problems = check(bundle, _ring(args, bundle))
    if problems:
        return _refused(args, problems)
    manifest, parts = bundle["manifest"], bundle["parts"]
    _shape(args.file, manifest, parts)
    context = parts.get(CONTEXT)
    if not isinstance(context, Mapping):
        raise CommandError(f"{args.file}: the bundle holds no replay context (it was exported "
                           "without --config); export it again with --config TABLE_TOML")
    core = build_core(str(manifest["table"]), context)
    device_steps: list[dict[str, Any]] = []
    records: Sequence[Mapping[str, Any]] = parts["records"]
    extra: Sequence[Mapping[str, Any]] = context.get("records") or []
    if args.devices:
        # the drivers and simulators log their alerts (connected, ...): kept off stdout
        configure_logging(fmt="json", level="critical")
    try:
        if args.devices:
            records, extra, device_steps = through_devices(records, extra, context)
        produced = replay_records(core, records, extra)
    except (KeyError, TypeError, ValueError) as e:
        raise CommandError(f"{args.file}: a record cannot be replayed (not as a table writes "
                           f"one): {type(e).__name__}: {e}") from e
    replayed = relevant([m for p in produced for m in p.messages], manifest=manifest)
    recorded = published(parts["envelopes"])
    lines = compare(recorded, replayed)
    run = _Run(path=args.file, manifest=manifest, produced=produced, lines=lines,
               device_steps=device_steps, tz=core.settings.tz, recorded=recorded)
    if args.format == "json":
        _print_json(run)
    else:
        _print_text(run)
    devices_ok = all(s["match"] for s in device_steps)
    return 0 if devices_ok and all(line.match for line in lines) else EXIT_DIFFERS


def _shape(path: Path, manifest: Mapping[str, Any], parts: Mapping[str, Any]) -> None:
    """Refuse (exit 2) a whole bundle whose fields are not as `dispute export` writes them."""
    wrong = [name for name, ok in (
        ("manifest.hand_ids", isinstance(manifest.get("hand_ids"), list)),
        ("manifest.entry_ids", isinstance(manifest.get("entry_ids"), list)),
        ("manifest.selector", manifest.get("selector") in ("hand", "entry", "heat")),
        ("parts.records", isinstance(parts.get("records"), list)
         and all(isinstance(r, Mapping) for r in parts["records"])),
        ("parts.envelopes", isinstance(parts.get("envelopes"), list)),
        ("parts.context", CONTEXT not in parts or (isinstance(parts[CONTEXT], Mapping)
         and isinstance(parts[CONTEXT].get("records", []), list)
         and all(isinstance(r, Mapping) for r in parts[CONTEXT].get("records", [])))),
    ) if not ok]
    if wrong:
        raise CommandError(f"{path}: signed, but not as `dispute export` writes a bundle: "
                           f"{', '.join(wrong)}")


def _refused(args: argparse.Namespace, problems: list[str]) -> int:
    if args.format == "json":
        print(json.dumps({"file": str(args.file), "whole": False, "replayed": False,
                          "problems": problems}, indent=2))
    else:
        print(f"{args.file}: REFUSED, not replayed: the bundle is not whole, "
              f"{len(problems)} problem(s):")
        print("\n".join(f"  - {p}" for p in problems))
    return EXIT_DIFFERS


def _local(value: Any, tz: tzinfo) -> str:
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def _text(item: str, value: Any, tz: tzinfo) -> str:
    if value is not None and (item == "at" or item.endswith("_at")):
        return _local(value, tz)
    if item == "void" and isinstance(value, Mapping):
        at = f" at {_local(value['at'], tz)}" if value.get("at") else ""
        return f"by {value.get('by') or '-'}: {value.get('reason')}{at}"
    return describe(item, value)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """One replay's outcome, for printing."""

    path: Path
    manifest: Mapping[str, Any]
    produced: Sequence[Produced]
    lines: Sequence[Line]
    device_steps: Sequence[Mapping[str, Any]]
    tz: tzinfo
    recorded: Sequence[Message]


def _print_text(run: _Run) -> None:
    path, manifest, produced, lines = run.path, run.manifest, run.produced, run.lines
    device_steps, tz, recorded = run.device_steps, run.tz, run.recorded
    own = sum(1 for p in produced if p.own)
    print(f"{path}: whole, signed by table {manifest['table']}; {manifest['selector']} "
          f"{manifest['id']}: {len(manifest['hand_ids'])} hand(s); replayed {own} record(s) "
          f"of the bundle and {len(produced) - own} of its context through the table's core")
    print(f"times in {getattr(tz, 'key', tz)} (the tournament's venue.timezone); amounts in rand")
    for step in device_steps:
        mark = "ok" if step["match"] else "DIFFERS"
        print(f"  device {step['device']}: {step['what']} [{mark}]")
    hands = {m.body.get("hand_id"): m for m in recorded if m.type in HAND_TYPES}
    groups: dict[Any, list[Line]] = {}
    for line in lines:
        groups.setdefault(line.hand_id, []).append(line)
    for hand_id, group in groups.items():
        bad = [g for g in group if not g.match]
        head = hands.get(hand_id)
        when = ""
        if head is not None:
            at = head.body.get("settled_at") or head.body.get("voided_at")
            when = (f"  heat {head.body.get('heat_id')} ({head.body.get('stage')})  "
                    f"{head.body.get('status')} {_local(at, tz) if at else ''}")
        verdict = "every line matches" if not bad else f"{len(bad)} line(s) DIFFER"
        title = f"hand {hand_id}" if hand_id else "messages about no one hand (heat, seats)"
        print(f"\n{title}{when}: {verdict}")
        if head is not None and head.body.get("status") == "void":
            void = head.body.get("void") or {}
            print(f"  voided by {void.get('by') or '-'}: {void.get('reason')}; replayed void "
                  "too: every wager returned, every net R0.00, the hand counts for nobody")
        for fix in (m.body for m in recorded if m.type == HandCorrected.TYPE
                    and m.body.get("hand_id") == hand_id):
            print(f"  corrected after settlement ({fix.get('ruling')}, by {fix.get('by') or '-'}"
                  f", dispute {fix.get('dispute_id') or '-'}: {fix.get('reason')}): entry "
                  f"{fix.get('entry_id')} counts {_text('net', fix.get('counted_net'), tz)} "
                  f"instead of the settled {_text('net', fix.get('recorded_net'), tz)}; "
                  f"balance {_text('net', fix.get('balance_before'), tz)} -> "
                  f"{_text('net', fix.get('balance_after'), tz)}")
        width = max(len(g.subject) for g in group)
        print(f"  {'':<{width}}  {'':<17} {'recorded':<36} replay")
        for g in group:
            quiet = g.match and (g.subject, g.item) in _QUIET
            if quiet or (g.recorded is None and g.replayed is None):
                continue
            a, b = _text(g.item, g.recorded, tz), _text(g.item, g.replayed, tz)
            tail = "ok" if g.match else f"DIFFERS: replayed {b}"
            print(f"  {g.subject:<{width}}  {g.item:<17} {a:<36} {tail}")
    bad = [g for g in lines if not g.match] + [
        Line(hand_id=None, subject=f"device {s['device']}", item="readings",
             recorded=s["what"], replayed=None) for s in device_steps if not s["match"]]
    if bad:
        print(f"\nREPLAY DIFFERS: {len(bad)} difference(s):")
        for g in bad:
            print(f"  - hand {g.hand_id}: {g.subject} {g.item}: recorded "
                  f"{_text(g.item, g.recorded, tz)}, replayed {_text(g.item, g.replayed, tz)}")
    else:
        hands_n = sum(1 for h in groups if h)
        print(f"\nREPLAY MATCHES: all {len(lines)} line(s) of {hands_n} hand(s)"
              + (" and the heat's other messages" if None in groups else ""))


def _print_json(run: _Run) -> None:
    path, manifest, produced, lines = run.path, run.manifest, run.produced, run.lines
    device_steps, tz = run.device_steps, run.tz
    print(json.dumps({
        "file": str(path), "whole": True, "replayed": True, "table": manifest["table"],
        "selector": manifest["selector"], "id": manifest["id"],
        "hand_ids": manifest["hand_ids"], "timezone": str(getattr(tz, "key", tz)),
        "records_replayed": sum(1 for p in produced if p.own),
        "context_records_replayed": sum(1 for p in produced if not p.own),
        "inputs_refused": [{"seq": p.seq, "kind": p.kind, "error": p.error}
                           for p in produced if not p.ok],
        "devices": list(device_steps),
        "match": all(g.match for g in lines) and all(s["match"] for s in device_steps),
        "differences": [g.as_dict() for g in lines if not g.match],
        "lines": [g.as_dict() for g in lines],
    }, indent=2, ensure_ascii=False))
