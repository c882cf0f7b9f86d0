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

__all__ = ["COMMANDS", "COMMAND_MODULES", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_REFUSED",
           "EXIT_UNAVAILABLE", "EXIT_USAGE", "CommandError", "CommandRefused", "build_parser",
           "command_of", "exit_code", "main"]

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
# Each subcommand and the module that registers it, in the order `showdown --help` lists them.
# Only the module of the command asked for is imported (a command's start-up pays for its own
# machinery alone); `showdown --help` and an unknown command import them all.
COMMANDS: dict[str, str] = {
    "demo": "controller.commands.demo",
    "heat": "controller.commands.heat",
    "par-sheet": "controller.commands.par_sheet",
    "evaluate": "controller.commands.evaluate",
    "settle": "controller.commands.settle",
    "check-config": "controller.commands.check_config",
    "simulate": "controller.commands.simulate",
    "keys": "controller.commands.keys",
    "broker": "controller.commands.broker",
    "recall": "controller.commands.recall",
    "dispute": "controller.commands.dispute",
    "chips": "controller.commands.chips",
    "journal": "controller.commands.journal_admin",
    "table": "controller.commands.table",
    "leaderboard": "controller.commands.leaderboard",
    "desk": "controller.commands.desk",
    "report": "controller.commands.report",
    "install": "controller.commands.install",
    "doctor": "controller.commands.doctor",
}
COMMAND_MODULES = tuple(COMMANDS.values())


class CommandError(Exception):
    """A user-facing failure of a subcommand: bad arguments, unreadable files and the like."""


class CommandRefused(CommandError, Refusal):
    """A well-formed request that a service refused by its rules or for the person's
    credential (exit 3): a wrong PIN, an action the person's role may not take."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with `command` alone registered, or every subcommand (None)."""
    parser = argparse.ArgumentParser(
        prog="showdown",
        description="Heads Up Poker Showdown: table daemon, simulators, leaderboard and tools.",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = COMMAND_MODULES if command is None else (COMMANDS[command],)
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named by `argv` (its first word: the top level has no other option),
    or None for `--help`, no command or an unknown one (the full parser answers those)."""
    first = argv[0] if argv else None
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(command_of(words)).parse_args(words)
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
