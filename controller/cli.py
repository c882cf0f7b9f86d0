"""The `showdown` command: one entry point, a subcommand per job.

Each subcommand lives in its own module under `controller.commands` and exposes
``register(subparsers)``, which adds a parser whose ``handler`` default takes the parsed
arguments and returns an exit code. Errors reach the user as one line on stderr with a
non-zero exit code, never a traceback (set SHOWDOWN_DEBUG=1 to see one). The exit codes
(docs/exit-codes.md): 0 done, 1 a check that found problems, 2 a usage or configuration
error, 3 refused by the rules or for a credential, 69 a service that does not answer,
70 a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from game.errors import GameError, Refusal
from runtime.errors import Unavailable, one_line

__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "EXIT_REFUSED", "EXIT_UNAVAILABLE", "EXIT_USAGE",
           "CommandError", "CommandRefused", "build_parser", "exit_code", "main"]

EXIT_USAGE = 2  # bad arguments, a bad configuration or input file (as argparse's own)
EXIT_ERROR = EXIT_USAGE
EXIT_REFUSED = 3  # well-formed, refused by the rules or for a person's credential
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE: a database, broker or daemon does not answer
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug; the only code that asks for SHOWDOWN_DEBUG
EPILOG = """exit codes: 0 done; 1 a check found problems; 2 usage or configuration error (the
line names the file and key); 3 refused by the rules or for a credential; 69 a service
(database, broker, table daemon) did not answer; 70 internal error (a bug). See
docs/exit-codes.md."""
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
    "controller.commands.dispute",
    "controller.commands.chips",
    "controller.commands.journal_admin",
    "controller.commands.table",
    "controller.commands.leaderboard",
    "controller.commands.desk",
    "controller.commands.report",
)


class CommandError(Exception):
    """A user-facing failure of a subcommand: bad arguments, unreadable files and the like."""


class CommandRefused(CommandError, Refusal):
    """A well-formed request that a service refused by its rules or for the person's
    credential (exit 3): a wrong PIN, an action the person's role may not take."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="showdown",
        description="Heads Up Poker Showdown: table daemon, simulators, leaderboard and tools.",
        epilog=EPILOG,
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
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        code = exit_code(exc)
        if code != EXIT_INTERNAL:
            print(f"showdown {args.command}: error: {one_line(exc)}", file=sys.stderr)
            return code
        if os.environ.get("SHOWDOWN_DEBUG"):
            raise
        print(
            f"showdown {args.command}: internal error: {type(exc).__name__}: {one_line(exc)}"
            " (run again with SHOWDOWN_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def exit_code(exc: BaseException) -> int:
    """The exit code of a command that failed with `exc` (EXIT_INTERNAL: a bug)."""
    if isinstance(exc, Unavailable | ConnectionError | TimeoutError):
        return EXIT_UNAVAILABLE  # a daemon's socket refused or reset, a service timed out
    if isinstance(exc, Refusal):
        return EXIT_REFUSED
    if isinstance(exc, CommandError | GameError | OSError):
        return EXIT_USAGE
    return EXIT_INTERNAL
