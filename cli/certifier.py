"""`showdown leaderboard certifier-export` / `certifier-verify`: the certifier's bundle of a
promotion's records (Consumer Protection Act s36, regulation 11; docs/certifier-export.md).

The export runs on the central machine (its config names the database and the signing key);
the verification needs only the file (and, preferably, the central public key the certifier
was given): no database, no network."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cli.errors import CommandError, CommandRefused
from cli.typed_secrets import secret_from_file, typed_secret

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["NOT_WHOLE", "register_certifier"]

NOT_WHOLE: Final = 1  # `certifier-verify` found a problem


def register_certifier(lsub: Any) -> None:
    """Add `certifier-export` and `certifier-verify` to `showdown leaderboard`."""
    ex = lsub.add_parser(
        "certifier-export", help="write the signed bundle of the promotion's records for a"
                                 " period, for the independent certifier",
        description="One zip file of the promotion's records for the venue-local days FROM to"
                    " TO: the rules in force, entries, scores with the tables' signed messages"
                    " and acknowledgements, disputes and rulings, prizes and claims, the Final's"
                    " seat draw, the audit rows, the tables' and the central public keys; a"
                    " manifest lists every member's SHA-256 and is signed with the central key"
                    " (docs/certifier-export.md).")
    ex.add_argument("--config", type=Path, required=True, metavar="FILE",
                    help="the leaderboard config (its database, signing key and tournament)")
    ex.add_argument("--from", dest="first", required=True, metavar="DATE",
                    help="the first venue-local day, e.g. 2026-07-01")
    ex.add_argument("--to", dest="last", required=True, metavar="DATE",
                    help="the last venue-local day (included)")
    ex.add_argument("--out", type=Path, required=True, metavar="FILE",
                    help="the bundle to write (a new file, e.g. certifier-2026-07.zip)")
    ex.add_argument("--by", required=True, metavar="STAFF_ID",
                    help="the active supervisor or manager who exports, signing in with their"
                         " desk passphrase (recorded in the manifest and the audit)")
    ex.add_argument("--passphrase-file", type=Path, metavar="FILE",
                    help="a file holding --by's desk passphrase (default: typed at a prompt)")
    ex.add_argument("--paytables", type=Path, metavar="FILE",
                    help="the paytables in force (default: $SHOWDOWN_PAYTABLES or the shipped"
                         " ones)")
    ex.set_defaults(handler=_export)
    ve = lsub.add_parser(
        "certifier-verify", help="check a certifier's bundle offline (exit 0 whole, 1 not)",
        description="Check the manifest's signature, every member's SHA-256, every table"
                    " message's signature, the scores against them, the standings recomputed"
                    " with the rules in the bundle, the Final's seat draw against its"
                    " commitment and the countersigned dispute bundles. Needs no database.")
    ve.add_argument("file", type=Path, metavar="FILE", help="the certifier's bundle (zip) to check")
    ve.add_argument("--key", type=Path, metavar="CENTRAL_PUB",
                    help="the central service's public key file ('<id> <base64>'); without"
                         " it the key inside the bundle is used, and the report says so")
    ve.add_argument("--json", action="store_true", help="print the result as JSON")
    ve.set_defaults(handler=_verify)


def _day(text: str, flag: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{flag} {text!r} is not a date such as 2026-07-01") from None


def _export(args: argparse.Namespace) -> int:
    from leaderboard.certifier.export import Period, export_bundle  # noqa: PLC0415
    from leaderboard.certifier.manifest import BundleError  # noqa: PLC0415
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415
    from leaderboard.db import open_existing  # noqa: PLC0415
    from runtime.settings_files import (  # noqa: PLC0415
        default_paytables_path,
        default_tournament_path,
        read_paytables,
        read_tournament,
    )
    from wire.signing import load_configured_key  # noqa: PLC0415

    first, last = _day(args.first, "--from"), _day(args.last, "--to")
    if last < first:
        raise CommandError(f"--to {last} is before --from {first}")
    if args.out.exists():
        raise CommandError(f"--out {args.out} exists: a bundle is never overwritten")
    config = read_leaderboard_config(args.config)
    tournament = config.tournament or default_tournament_path()
    paytables = args.paytables or default_paytables_path()
    settings = read_tournament(tournament)
    read_paytables(paytables)  # the paytables in force must be valid ones
    rules = {}
    for name, path in (("rules/tournament.toml", tournament),
                       ("rules/paytables.toml", paytables)):
        try:
            rules[name] = Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    signer = load_configured_key(config.signing_key, source=config.source,
                                 key="keys.signing_key")
    engine = open_existing(config.database, create_with="showdown desk init",
                           source=config.source, key="service.database")
    try:
        _signed_in(engine, args)
        try:
            done = export_bundle(engine, settings, rules=rules, period=Period(first, last),
                                 out=args.out, signer=signer, exported_by=args.by,
                                 venue=config.venue, now=datetime.now(UTC))
        except BundleError as exc:
            raise CommandError(str(exc)) from None
    finally:
        engine.dispose()
    counts = ", ".join(f"{n} {name.split('/')[-1].removesuffix('.json')}"
                       for name, n in sorted(done.counts.items()))
    print(f"wrote {done.path}: {first} to {last}; {counts}; manifest signed by"
          f" {signer.key_id} ({signer.public_key.base64})")
    return 0


def _signed_in(engine: Engine, args: argparse.Namespace) -> None:
    """--by signs in with their own desk passphrase (audited, and signed out at once); only
    an active supervisor or manager exports (CommandRefused otherwise)."""
    from sqlalchemy.orm import Session  # noqa: PLC0415

    from leaderboard.desk.auth import SignInRefused, sign_in, sign_out  # noqa: PLC0415
    from leaderboard.models import StaffRecord  # noqa: PLC0415
    from runtime.clocks import utc_now  # noqa: PLC0415

    text = (secret_from_file(args.passphrase_file, "--passphrase-file")
            if args.passphrase_file is not None
            else typed_secret("passphrase", f"{args.by}'s desk passphrase", twice=False,
                              unchanged="nothing was exported"))
    with Session(engine) as session:
        member = session.get(StaffRecord, args.by)
        if member is None or not member.active or member.role not in ("supervisor",
                                                                      "manager"):
            raise CommandRefused(f"--by {args.by!r}: the export is made by an active"
                                 " supervisor or manager of the staff roster")
        try:
            opened = sign_in(session, utc_now, staff_id=args.by, passphrase_text=text,
                             client="cli")
        except SignInRefused as exc:
            raise CommandRefused(f"--by {args.by}: {exc}") from None
        sign_out(session, utc_now, opened.token)


def _verify(args: argparse.Namespace) -> int:
    from leaderboard.certifier.manifest import BundleError, read_bundle  # noqa: PLC0415
    from leaderboard.certifier.verify import (  # noqa: PLC0415
        central_key,
        problems_json,
        verify_bundle,
    )
    from wire.signing import KeyFormatError  # noqa: PLC0415

    key = None
    if args.key is not None:
        try:
            key = central_key(args.key.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"--key: cannot read {args.key}: {exc.strerror or exc}"
                               ) from None
        except (KeyFormatError, UnicodeDecodeError) as exc:
            raise CommandError(f"--key {args.key}: {exc}") from None
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        bundle = read_bundle(data, str(args.file))
    except BundleError as exc:
        raise CommandError(str(exc)) from None
    verdict = verify_bundle(bundle, key)
    if args.json:
        print(problems_json(verdict))
        return 0 if verdict.whole else NOT_WHOLE
    period = bundle.manifest.get("period") or {}
    head = (f"{args.file}: venue {bundle.manifest.get('venue')}, {period.get('from')} to"
            f" {period.get('to')}, exported {bundle.manifest.get('exported_at')} by"
            f" {bundle.manifest.get('exported_by')}")
    if verdict.whole:
        print(f"{head}: WHOLE")
    else:
        print(f"{head}: NOT WHOLE, {len(verdict.problems)} problem(s):")
        print("\n".join(f"  - {p}" for p in verdict.problems))
    print(f"  manifest checked with {verdict.key_source}")
    print("  checked: " + ", ".join(f"{n} {what}" for what, n in verdict.checked.items()))
    return 0 if verdict.whole else NOT_WHOLE
