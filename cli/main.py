"""The `showdown` command: one entry point, a subcommand per job.

Each subcommand lives in its own module under `cli` and exposes ``register(subparsers)``,
which adds a parser whose ``handler`` default takes the parsed arguments and returns an exit
code. Only the module of the command asked for is imported; `showdown --help`, a bare
`showdown` and an unknown command are answered from `COMMANDS` alone, importing none. Errors
reach the user as one line on stderr with a non-zero exit code, never a traceback (set
SHOWDOWN_DEBUG=1 to see one); the exit codes are `cli.errors`' (docs/exit-codes.md).
`showdown --version` names the release and the Python; a bare `showdown` prints the help and
exits 2 (a command is missing, as for any usage error).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from cli.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_USAGE, exit_code
from cli.extras import EXTRA_OF, missing_extra, register_command
from runtime.errors import one_line

__all__ = ["COMMANDS", "COMMAND_MODULES", "Command", "build_parser", "command_of", "main",
           "overview_parser", "version_line"]

EPILOG = """exit codes: 0 done; 1 a check found problems; 2 usage or configuration error (the
line names the file and key); 3 refused by the rules or for a credential; 69 a service
(database, broker, table daemon) did not answer; 70 internal error (a bug). See
docs/exit-codes.md."""


@dataclass(frozen=True)
class Command:
    """A subcommand: the module that registers it, its line in `showdown --help` (the same
    words as its parser's ``help``, tests/cli/test_imports.py), and the libraries of extras
    its module imports, in the order checked (the first missing one names the extra)."""

    module: str
    summary: str
    needs: tuple[str, ...] = ()


# Each subcommand, in the order `showdown --help` lists them.
COMMANDS: dict[str, Command] = {
    "demo": Command("cli.demo",
                    "run a simulated floor: tables, patrons and the live leaderboard page"),
    "heat": Command("cli.heat",
                    "play and explain a seeded heat at one table (offline, no daemon)"),
    "par-sheet": Command("cli.par_sheet",
                         "exact return to player and house edge of each side-bet paytable"),
    "evaluate": Command("cli.evaluate", "name the best five-card hand of 5 to 7 cards"),
    "settle": Command("cli.settle",
                      "settle one hand given as JSON on stdin (the pit's re-check tool)"),
    "check-config": Command(
        "cli.check_config",
        "check the tournament settings and paytables, listing every problem"),
    "simulate": Command(
        "cli.simulate.command",
        "run a device simulator (card shoe, chip RFID reader) or a whole simulated table with"
        " faults, for technicians"),
    "keys": Command("cli.keys",
                    "make and show the Ed25519 keys that sign table and desk messages"),
    "broker": Command("cli.broker",
                      "write the venue's broker configuration, ACL and passwords"),
    "recall": Command("cli.recall.command",
                      "show the last hands from a table's journal (works in the error state)"),
    "dispute": Command("cli.dispute.command",
                       "export a hand's signed game history; verify or replay a bundle"),
    "chips": Command("cli.chips", "the tournament chip float: inventory before and after play",
                     needs=("alembic",)),
    "journal": Command("cli.journal.command",
                       "verify a table's journal, clear its faults, or replace a damaged one"),
    "table": Command("cli.table",
                     "the table daemon: run it, see its status, press console buttons"),
    "bench": Command("cli.bench",
                     "drive a simulated table's devices: deal, place and take chips, tap cards,"
                     " unplug, faults"),
    "leaderboard": Command(
        "cli.leaderboard",
        "the central service: scores from every table, standings, the page"),
    "desk": Command("cli.desk.command",
                    "the registration desk: patrons, lists, entries, seats, draws, prizes"),
    "report": Command("cli.report.command",
                      "reports: tables, dealers, heats, economics; simulated score spread",
                      needs=("numpy", "alembic")),
    "venue": Command("cli.venue",
                     "a whole venue on one machine for a technician's rehearsal"),
    "install": Command("cli.install",
                       "set up a table PC, the central server or the desk workstation"),
    "doctor": Command("cli.doctor.command", "check a table PC: may this table open?"),
    "devices": Command("cli.devices.command",
                       "device drivers: list the installed ones, check one against the"
                       " conformance kit, record a device's traffic"),
    "completion": Command("cli.completion",
                          "print a shell completion script (bash, zsh or fish)"),
}
COMMAND_MODULES = tuple(c.module for c in COMMANDS.values())


def version_line() -> str:
    """`showdown 0.1.0 (Python 3.11.2)`: the installed release and the interpreter."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        release = version("showdown")
    except PackageNotFoundError:  # run from a source tree that was never installed
        release = "unknown (not installed)"
    return f"showdown {release} (Python {platform.python_version()})"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with `command` alone registered, or every subcommand (None: the
    whole tree, for the completion and the reference)."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = COMMANDS if command is None else (command,)
    for name in names:
        register_command(sub, name, COMMANDS[name].module, needs=COMMANDS[name].needs)
    from cli.option_help import describe  # noqa: PLC0415

    describe(parser)
    return parser


def overview_parser() -> argparse.ArgumentParser:
    """The parser of `showdown --help`, a bare `showdown` and an unknown command: every
    command with its line from `COMMANDS`, importing no command's module (a command whose
    extra is not installed says which)."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        missing = next((lib for lib in command.needs if importlib.util.find_spec(lib) is None),
                       None)
        summary = (command.summary if missing is None
                   else f"(not installed: pip install 'showdown[{EXTRA_OF[missing]}]')")
        sub.add_parser(name, help=summary, add_help=False)
    return parser


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="showdown",
        description="Heads Up Poker Showdown: table daemon, simulators, leaderboard and tools.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the release and the Python version, then exit")
    return parser


class _Version(argparse.Action):
    """`--version`: the release is read from the install's metadata only when asked (reading
    it costs more than the rest of `showdown --help`)."""

    def __call__(self, parser: argparse.ArgumentParser, _namespace: argparse.Namespace,
                 _values: object, _option_string: str | None = None) -> None:
        print(version_line())
        parser.exit()


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named by `argv` (its first word: the top level has no other option),
    or None for `--help`, no command or an unknown one (the full parser answers those)."""
    first = argv[0] if argv else None
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not words:  # no command: the help, as a usage error (a script sees it failed)
        overview_parser().print_help()
        return EXIT_USAGE
    if words == ["--version"]:
        print(version_line())
        return 0
    command = command_of(words)
    if command is None:  # --help, --version or an unknown command: answered without imports
        overview_parser().parse_args(words)
        return EXIT_USAGE  # not reached: argparse exits for each of them
    args = build_parser(command).parse_args(words)
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


if __name__ == "__main__":  # `python -m cli.main`: run the imported module, whose
    # CommandError the commands raise (this file, run as __main__, is a second copy)
    from cli.main import main as _main

    raise SystemExit(_main())
