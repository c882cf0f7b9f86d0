"""`showdown keys`: make and show Ed25519 signing keys for tables and desks.

    showdown keys generate --out /etc/showdown/table-01.key [--name table-01]
    showdown keys show --key /etc/showdown/table-01.key

``generate`` writes the private key (mode 0600, never over an existing file) and, next to it,
``<out>.pub`` with the public key; it prints the public key line ``<name> <base64>`` on
stdout, which is what gets enrolled (at the leaderboard for a table, at the tables for a desk).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from wire.signing import (
    KeyFormatError,
    Signer,
    SigningError,
    load_private_key,
    save_private_key,
)
from wire.topics import TopicError, validate_id

__all__ = ["register", "run_generate", "run_show"]


def register(sub: Any) -> None:
    """Add the `keys` command with `generate` and `show`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "keys", help="make and show the Ed25519 keys that sign table and desk messages",
        description="Make a signing key pair for a table or a desk, or print a key's public"
        " half for enrolment.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    gen: argparse.ArgumentParser = actions.add_parser(
        "generate", help="make a new key pair",
        description="Write a new private key (mode 0600; an existing file is never"
        " overwritten) and OUT.pub, and print the public key line to enrol.",
    )
    gen.add_argument("--out", metavar="PATH", type=Path, required=True,
                     help="where to write the private key")
    gen.add_argument("--name", metavar="NAME", default=None,
                     help="key id: the table id or desk name, a-z 0-9 '-'"
                          " (default: the file name without its extension)")
    gen.add_argument("--json", action="store_true",
                     help="print the key's name, public key and files as JSON")
    gen.set_defaults(handler=run_generate)
    show: argparse.ArgumentParser = actions.add_parser(
        "show", help="print a private key's public key line",
        description="Print '<name> <base64 public key>' for the private key file.",
    )
    show.add_argument("--key", metavar="PATH", type=Path, required=True,
                      help="the private key file")
    show.add_argument("--json", action="store_true",
                      help="print the key's name and public key as JSON")
    show.set_defaults(handler=run_show)


def _name(args: argparse.Namespace) -> str:
    out: Path = args.out
    name = args.name if args.name is not None else out.name.split(".", 1)[0]
    try:
        return validate_id("key", name)
    except TopicError as exc:
        hint = "" if args.name is not None else " (taken from the file name; give --name)"
        raise CommandError(f"{exc}{hint}") from None


def run_generate(args: argparse.Namespace) -> int:
    """Make the key pair, write it, print the public key line."""
    out: Path = args.out
    name = _name(args)
    pub = out.with_name(out.name + ".pub")
    for path in (out, pub):
        if path.exists() or path.is_symlink():
            raise CommandError(f"{path} already exists; refusing to overwrite a key")
    if not out.parent.is_dir():
        raise CommandError(f"directory {out.parent} does not exist")
    signer = Signer.generate(name)
    try:
        save_private_key(signer, out)
    except SigningError as exc:
        raise CommandError(str(exc)) from None
    line = signer.public_key.enrolment_line()
    pub.write_text(line + "\n", encoding="ascii")
    print(f"wrote private key {name!r} to {out} (mode 0600; keep it on this machine) "
          f"and its public key to {pub}", file=sys.stderr)
    _print_key(args, line, {"private_key_file": str(out), "public_key_file": str(pub)})
    return 0


def _print_key(args: argparse.Namespace, line: str, files: dict[str, str]) -> None:
    """The enrolment line, or with --json its parts (and the files written)."""
    if not args.json:
        print(line)
        return
    name, public = line.split(" ", 1)
    print(json.dumps({"name": name, "public_key": public, "enrolment_line": line, **files},
                     indent=2))


def run_show(args: argparse.Namespace) -> int:
    """Print the public key line of a private key file."""
    try:
        signer = load_private_key(args.key)
    except (SigningError, KeyFormatError) as exc:
        raise CommandError(str(exc)) from None
    _print_key(args, signer.public_key.enrolment_line(), {"private_key_file": str(args.key)})
    return 0
