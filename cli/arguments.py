"""What many commands' arguments share: an option renamed in this release (the old name still
works, with a warning) and a rand amount read as integer cents (plain or signed)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["add_renamed", "rand_amount", "signed_rand"]


class _Renamed(argparse.Action):
    """An option's name before this release: does what the new name does, and says so on
    stderr (hidden from the help and the completion)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, target: argparse.Action,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=target.nargs, metavar=target.metavar,
                         type=target.type if callable(target.type) else None,
                         choices=target.choices,
                         default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.target = target

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        new = self.target.option_strings[0]
        print(f"{parser.prog}: warning: {option_string} is now {new}; the old name is accepted"
              " until the next release", file=sys.stderr)
        self.target(parser, namespace, values, new)


def add_renamed(parser: Any, name: str, *, was: str, **kwargs: Any) -> argparse.Action:
    """Add option ``name`` (argparse's keywords) that was called ``was`` before this release:
    the old name still works, hidden, with a warning on stderr. A required option stays
    required under either name."""
    required = bool(kwargs.pop("required", False))
    group = parser.add_mutually_exclusive_group(required=required) if required else parser
    action: argparse.Action = group.add_argument(name, **kwargs)
    group.add_argument(was, dest=action.dest, action=_Renamed, target=action)
    return action


def rand_amount(text: str) -> int:
    """An argparse type: a rand amount ("150", "R150", "1,250.50") as integer cents, never
    negative nor a fraction of a cent (a bad one is a usage error naming the option)."""
    from game.money import parse_amount  # noqa: PLC0415

    try:
        return parse_amount(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def signed_rand(text: str) -> int:
    """``--net R100`` or ``--net=-R25`` as signed cents (a usage error names the option)."""
    from cli.errors import CommandError  # noqa: PLC0415
    from game.money import InvalidAmount, parse_rand  # noqa: PLC0415

    negative = text.strip().startswith("-")
    try:
        cents = parse_rand(text.strip().removeprefix("-"))
    except InvalidAmount as exc:
        raise CommandError(f"--net: {exc}") from None
    return -cents if negative else cents
