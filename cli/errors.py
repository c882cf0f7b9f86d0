"""What a `showdown` command's failure means: the exit codes (docs/exit-codes.md) and the
errors a command raises, each mapped to its code by `exit_code`."""

from __future__ import annotations

from game.errors import GameError, Refusal
from runtime.errors import Unavailable

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_REFUSED", "EXIT_UNAVAILABLE",
           "EXIT_USAGE", "CommandError", "CommandRefused", "CommandUnavailable", "exit_code"]

EXIT_USAGE = 2  # bad arguments, a bad configuration or input file (as argparse's own)
EXIT_ERROR = EXIT_USAGE
EXIT_REFUSED = 3  # well-formed, refused by the rules or for a person's credential
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE: a database, broker or daemon does not answer
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug; the only code that asks for SHOWDOWN_DEBUG
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a killed writer

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


def exit_code(exc: BaseException) -> int:
    """The exit code of a command that failed with `exc` (EXIT_INTERNAL: a bug)."""
    if isinstance(exc, Unavailable | ConnectionError | TimeoutError):
        return EXIT_UNAVAILABLE  # a daemon's socket refused or reset, a service timed out
    if isinstance(exc, Refusal):
        return EXIT_REFUSED
    if isinstance(exc, CommandError | GameError | OSError):
        return EXIT_USAGE
    return EXIT_INTERNAL
