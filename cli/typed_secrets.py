"""Secrets a person gives the command line (a PIN, a desk passphrase): read from a file a flag
names, or typed at a prompt that does not echo them; every problem is one line naming the flag.
"""

from __future__ import annotations

import getpass
from pathlib import Path

from cli.errors import CommandError

__all__ = ["secret_from_file", "typed_secret"]


def secret_from_file(path: Path, flag: str) -> str:
    """The secret in the file ``flag`` names (its first line's text, stripped)."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{flag} {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not text:
        raise CommandError(f"{flag} {path} is empty")
    return text


def typed_secret(what: str, prompt: str, *, twice: bool, unchanged: str) -> str:
    """``what`` typed at ``prompt`` (``twice``: and again, the two must match); ``unchanged``
    says what a cancelled prompt leaves as it was."""
    try:
        first = getpass.getpass(f"{prompt}: ")
        again = getpass.getpass(f"{prompt.split(' (', maxsplit=1)[0]} again: ") if twice else first
    except (EOFError, KeyboardInterrupt):
        raise CommandError(f"no {what} was typed: {unchanged}") from None
    if first != again:
        raise CommandError(f"the two {what}s typed differ: {unchanged}")
    return first
