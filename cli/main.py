"""The `showdown` command: one entry point, a subcommand per job.

Each subcommand lives in its own module under `cli` and exposes
``register(subparsers)``, which adds a parser whose ``handler`` default takes the parsed
arguments and returns an exit code. Errors reach the user as one line on stderr with a
non-zero exit code, never a traceback (set SHOWDOWN_DEBUG=1 to see one). The exit codes
(docs/exit-codes.md): 0 done, 1 a check that found problems, 2 a usage or configuration
error, 3 refused by the rules or for a credential, 69 a service that does not answer,
70 a bug. `showdown --version` names the release and the Python; a bare `showdown` prints
the help and exits 2 (a command is missing, as for any usage error).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
from collections.abc import Sequence
from typing import Any

from game.errors import GameError, Refusal
from runtime.errors import Unavailable, one_line

__all__ = ["COMMANDS", "COMMAND_MODULES", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_REFUSED",
           "EXIT_UNAVAILABLE", "EXIT_USAGE", "CommandError", "CommandRefused",
           "CommandUnavailable", "add_renamed", "build_parser", "command_of", "exit_code", "main",
           "rand_amount", "version_line"]

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
    "demo": "cli.demo",
    "heat": "cli.heat",
    "par-sheet": "cli.par_sheet",
    "evaluate": "cli.evaluate",
    "settle": "cli.settle",
    "check-config": "cli.check_config",
    "simulate": "cli.simulate.command",
    "keys": "cli.keys",
    "broker": "cli.broker",
    "recall": "cli.recall.command",
    "dispute": "cli.dispute.command",
    "chips": "cli.chips",
    "journal": "cli.journal.command",
    "table": "cli.table",
    "leaderboard": "cli.leaderboard",
    "desk": "cli.desk.command",
    "report": "cli.report.command",
    "install": "cli.install",
    "doctor": "cli.doctor.command",
    "completion": "cli.completion",
}
COMMAND_MODULES = tuple(COMMANDS.values())


class CommandError(Exception):
    """A user-facing failure of a subcommand: bad arguments, unreadable files and the like."""

    def reworded(self, message: str) -> CommandError:
        """The same kind of failure (and so the same exit code) told in other words."""
        return type(self)(message)


class CommandRefused(CommandError, Refusal):
    """A well-formed request that a service refused by its rules or for the person's
    credential (exit 3): a wrong PIN, an action the person's role may not take."""


class CommandUnavailable(CommandError, Unavailable):
    """A service the command needs did not answer (exit 69): a broker that refused the
    connection, a daemon that is not running. The message says what to try again."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.source, self.key, self.reason = "", "", message


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


def version_line() -> str:
    """`showdown 0.1.0 (Python 3.11.2)`: the installed release and the interpreter."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        release = version("showdown")
    except PackageNotFoundError:  # run from a source tree that was never installed
        release = "unknown (not installed)"
    return f"showdown {release} (Python {platform.python_version()})"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with `command` alone registered, or every subcommand (None)."""
    parser = argparse.ArgumentParser(
        prog="showdown",
        description="Heads Up Poker Showdown: table daemon, simulators, leaderboard and tools.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print the release and the Python version, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from cli.extras import register_command  # noqa: PLC0415  (it imports this module)

    names = COMMANDS if command is None else (command,)
    for name in names:
        register_command(sub, name, COMMANDS[name])
    from cli.option_help import describe  # noqa: PLC0415

    describe(parser)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named by `argv` (its first word: the top level has no other option),
    or None for `--help`, no command or an unknown one (the full parser answers those)."""
    first = argv[0] if argv else None
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not words:  # no command: the help, as a usage error (a script sees it failed)
        build_parser().print_help()
        return EXIT_USAGE
    if words == ["--version"]:  # without importing every command's module
        print(version_line())
        return 0
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
        from cli.extras import missing_extra  # noqa: PLC0415

        exc = missing_extra(exc) or exc
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


if __name__ == "__main__":  # `python -m cli.main`: run the imported module, whose
    # CommandError the commands raise (this file, run as __main__, is a second copy)
    from cli.main import main as _main

    raise SystemExit(_main())
