"""`showdown dispute`: export a hand's (entry's, heat's) game history as a signed bundle,
verify one offline and replay it (issue 14; NJAC 13:69E-1.31: a game history captured and
kept).

``export`` opens the journal read-only (the daemon may run), picks the records and messages
(`wire.dispute_bundle.select`), rebuilds each message's envelope as the table sent it (Ed25519
is deterministic: the same key, venue and stored fields give the same bytes and signature)
and writes one JSON file signed with the table's key (with ``--config``, plus the context a
replay needs: `cli.dispute.context`). ``verify`` needs only the file and the
table's public key: exit 0 when whole, 1 with every problem listed. ``replay`` is
`cli.dispute.replay`. docs/disputes.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli.dispute.context import build_context
from cli.dispute.replay import add_parser as add_replay
from cli.errors import CommandError
from controller.journal import Journal, JournalError, JournalRecord, StoredMessage
from controller.journal.rotation import journal_files
from wire.dispute_bundle import Selector, build, check, select
from wire.envelope import EnvelopeError, envelope_for
from wire.signing import (
    KeyRing,
    PublicKey,
    SigningError,
    load_private_key,
    parse_public_key,
)

__all__ = ["EXIT_PROBLEMS", "register", "run_export", "run_verify"]

EXIT_PROBLEMS = 1  # `dispute verify` found the bundle not whole


def register(sub: Any) -> None:
    """Add the `dispute` subcommand and its actions."""
    p: argparse.ArgumentParser = sub.add_parser(
        "dispute", help="export a hand's signed game history; verify or replay a bundle",
        description="Dispute bundles (docs/disputes.md): a hand's, entry's or heat's journal "
                    "records, published messages, settlement, acknowledgements and disputes, "
                    "with a manifest signed by the table.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    e = actions.add_parser("export", help="write a signed bundle from a table's journal",
                           description="Read the journal read-only and write one signed JSON "
                                       "bundle for a hand, an entry or a heat.")
    which = e.add_mutually_exclusive_group(required=True)
    which.add_argument("--hand", metavar="ID", help="a hand id, e.g. t01-000003")
    which.add_argument("--entry", metavar="ID", help="an entry id: every hand it played")
    which.add_argument("--heat", metavar="ID", help="a heat id: every hand of the heat")
    e.add_argument("--journal", required=True, type=Path, metavar="PATH",
                   help="the table's journal file")
    e.add_argument("--key", required=True, type=Path, metavar="TABLE_KEY",
                   help="the table's private key file (its key id is the table id)")
    e.add_argument("--venue", required=True, metavar="VENUE",
                   help="the venue id the table sends under (table config identity.venue)")
    e.add_argument("--by", required=True, metavar="STAFF",
                   help="who exports (staff number or name), recorded in the manifest")
    e.add_argument("--out", required=True, type=Path, metavar="FILE", help="the bundle to write")
    e.add_argument("--config", type=Path, metavar="TABLE_TOML",
                   help="the table's configuration (as the daemon runs it): adds the context "
                        "`dispute replay` needs (rules, paytables, chips, the heat's records)")
    e.set_defaults(handler=run_export)
    v = actions.add_parser("verify", help="check a bundle offline (exit 0 whole, 1 not)",
                           description="Check every part's hash, the manifest's signature "
                                       "and every envelope's own signature.")
    v.add_argument("file", type=Path, metavar="FILE")
    keys = v.add_mutually_exclusive_group(required=True)
    keys.add_argument("--keys", type=Path, metavar="TABLES_FILE",
                      help="enrolment file: lines '<table id> <base64 public key>'")
    keys.add_argument("--public-key", metavar="BASE64",
                      help="the table's public key (for the table the manifest names)")
    v.add_argument("--central-key", type=Path, metavar="CENTRAL_PUB",
                   help="the central service's public key file ('<id> <base64>'): also check"
                        " its countersignature (missing or bad: not whole)")
    v.add_argument("--json", action="store_true", help="print JSON instead of text")
    v.set_defaults(handler=run_verify)
    add_replay(actions)


def _record(r: JournalRecord) -> dict[str, Any]:
    return {"seq": r.seq, "kind": r.kind, "payload": r.payload, "wall": r.wall.isoformat(),
            "mono_ns": r.mono_ns, "boot_id": r.boot_id, "checksum": r.checksum}


def _message(m: StoredMessage) -> dict[str, Any]:
    return {"seq": m.seq, "record_seq": m.record_seq, "type": m.type, "body": m.body}


def run_export(args: argparse.Namespace) -> int:
    """Write the bundle; exit 2 when nothing matches or an input is unusable."""
    selector: Selector = ("hand" if args.hand is not None
                          else "entry" if args.entry is not None else "heat")
    ident = str(getattr(args, selector))
    try:
        signer = load_private_key(args.key)
    except SigningError as e:
        raise CommandError(f"--key: {e}") from e
    try:  # the journal, then the files it continues after a rotation (newest first)
        for path in journal_files(args.journal):
            with Journal.open(path, read_only=True) as journal:
                records = list(journal.records())
                stored = journal.messages(1)
                problems = journal.verify()
            plain, outbox = [_record(r) for r in records], [_message(m) for m in stored]
            selection = select(selector, ident, plain, outbox)
            if selection.hand_ids:
                break
    except JournalError as e:
        raise CommandError(f"--journal: {e}") from e
    if not selection.hand_ids:
        raise CommandError(f"--{selector}: no hand of {selector} {ident!r} in {args.journal}")
    by_seq = {m.seq: m for m in stored}
    try:
        envelopes = [envelope_for(by_seq[int(m["seq"])], venue=args.venue, table=signer.key_id,
                                  signer=signer).encode() for m in selection.messages]
    except (EnvelopeError, ValueError) as e:
        raise CommandError(f"--venue/--key: cannot rebuild the envelopes: {e}") from e
    chain = {"path": str(path), "records": len(records),
             "head_record_seq": records[-1].seq if records else 0,
             "head_checksum": records[-1].checksum if records else None,
             "last_message_seq": stored[-1].seq if stored else 0,
             "integrity_problems": [str(p) for p in problems]}
    context = None
    if args.config is not None:
        context = build_context(args.config, table=signer.key_id, selection=selection,
                                records=plain, messages=outbox)
    bundle = build(selection, envelopes, selector=selector, ident=ident, signer=signer,
                   chain=chain, exported_at=datetime.now(UTC).isoformat(),
                   exported_by=args.by, context=context)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {len(selection.hand_ids)} hand(s), {len(selection.records)} "
          f"record(s), {len(selection.messages)} message(s), signed by {signer.key_id}")
    if problems:
        print(f"warning: the journal fails verification ({len(problems)} problem(s)); "
              "recorded in the manifest", file=sys.stderr)
    return 0


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def run_verify(args: argparse.Namespace) -> int:
    """Check the bundle; exit 0 whole, 1 with each problem listed."""
    try:
        bundle = json.loads(args.file.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise CommandError(f"{args.file}: not a JSON dispute bundle: {e}") from e
    manifest = bundle.get("manifest") if isinstance(bundle, dict) else None
    table = manifest.get("table") if isinstance(manifest, dict) else None
    try:
        if args.keys is not None:
            ring = KeyRing.load(args.keys)
        else:
            ring = KeyRing([parse_public_key(str(table), args.public_key)])
    except SigningError as e:
        raise CommandError(f"{'--keys' if args.keys else '--public-key'}: {e}") from e
    central = _central_key(args.central_key)
    problems = check(bundle, ring, central)
    counter = bundle.get("countersignature") if isinstance(bundle, dict) else None
    if central is not None:
        countersigned = "bad" if any(p.startswith("countersignature") for p in problems) \
            else "verified"
        if counter is None:
            countersigned = "missing"
    else:
        countersigned = "not checked (give --central-key)" if counter is not None \
            else "none"
    if args.json:
        print(json.dumps({"file": str(args.file), "whole": not problems,
                          "countersignature": countersigned, "problems": problems},
                         indent=2))
    elif problems:
        print(f"{args.file}: NOT WHOLE, {len(problems)} problem(s):")
        print("\n".join(f"  - {p}" for p in problems))
    else:
        parts = manifest["parts"] if isinstance(manifest, dict) else {}
        print(f"{args.file}: whole: table {table}, {manifest.get('selector') if manifest else ''}"
              f" {manifest.get('id') if manifest else ''}, "
              + ", ".join(f"{n} {p['count']}" for n, p in parts.items()))
    if not args.json:
        signed = "bad" if any(p.startswith("manifest") for p in problems) else "verified"
        print(f"  table signature: {signed}; central countersignature: {countersigned}")
    return EXIT_PROBLEMS if problems else 0


def _central_key(path: Path | None) -> PublicKey | None:
    """The one key of the central public key file (``<id> <base64>``), if given."""
    if path is None:
        return None
    try:
        keys = list(KeyRing.load(path))
    except OSError as e:
        raise CommandError(f"--central-key: cannot read {path}: {e.strerror or e}") from e
    except (SigningError, UnicodeDecodeError) as e:
        raise CommandError(f"--central-key: {e}") from e
    if len(keys) != 1:
        raise CommandError(f"--central-key: {path} must hold one key line '<id> <base64>',"
                           f" it holds {len(keys)}")
    return keys[0]
