"""The `showdown` command: one entry point, a subcommand per job.

Each subcommand lives in its own module under `controller.commands` and exposes
``register(subparsers)``, which adds a parser whose ``handler`` default takes the parsed
arguments and returns an exit code. Errors reach the user as one line on stderr with a
non-zero exit code, never a traceback (set SHOWDOWN_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from game.errors import GameError
from runtime.errors import one_line

__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "CommandError", "build_parser", "main"]

EXIT_ERROR = 2
EXIT_INTERNAL = 70
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a killed writer
# Subcommand modules, in the order `showdown --help` lists them.
COMMAND_MODULES = (
    "controller.commands.demo",
    "controller.commands.heat",
    "controller.commands.par_sheet",
    "controller.commands.evaluate",
    "controller.commands.settle",
    "controller.commands.check_config",
    "controller.commands.simulate",
    "controller.commands.keys",
    "controller.commands.broker",
    "controller.commands.recall",
    "controller.commands.chips",
    "controller.commands.journal_admin",
    "controller.commands.table",
    "controller.commands.leaderboard",
    "controller.commands.desk",
)


class CommandError(Exception):
    """A user-facing failure of a subcommand: bad arguments, unreadable files and the like."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="showdown",
        description="Heads Up Poker Showdown: table daemon, simulators, leaderboard and tools.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        # The reader went away (`showdown ... | head`): stop quietly, as Unix tools do.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CommandError, GameError, OSError) as exc:
        print(f"showdown {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("SHOWDOWN_DEBUG"):
            raise
        print(
            f"showdown {args.command}: internal error: {type(exc).__name__}: {one_line(exc)}"
            " (run again with SHOWDOWN_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
