"""The optional extras of the install, and the one-line error of a command whose extra is missing.

The base install is a table PC's (`showdown table run` on real devices and a real broker); the
central service, the demo, the house's reports and PostgreSQL are extras (pyproject.toml).
A command that needs a library of a missing extra fails with `MissingExtra`: one line naming
the extra and the pip command that installs it (exit 2), never an ImportError traceback.
`showdown --help` on a lean install still lists every command: one whose module cannot be
imported is listed with the extra it needs, and running it says so.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from typing import Any, Final

from cli.errors import CommandError

__all__ = ["EXTRA_OF", "MissingExtra", "missing_extra", "register_command", "require"]

# The top-level module of each library that only an extra installs -> that extra.
EXTRA_OF: Final[dict[str, str]] = {
    "alembic": "central",
    "mako": "central",
    "amqtt": "demo",
    "rich": "demo",
    "numpy": "reports",
    "matplotlib": "reports",
    "psycopg": "postgres",
    "psycopg_binary": "postgres",
    "evdev": "readers",
    "smartcard": "readers",
    "escpos": "printer",
}


class MissingExtra(CommandError):
    """The command needs a library of an extra that is not installed (exit 2)."""

    def __init__(self, library: str, extra: str) -> None:
        self.library, self.extra = library, extra
        super().__init__(f"this needs the optional extra '{extra}' ({library} is not"
                         f" installed): pip install 'showdown[{extra}]'")


def missing_extra(exc: BaseException) -> MissingExtra | None:
    """`exc` as a MissingExtra if it is the import of an extra's library that is not
    installed; None for anything else (a missing module of ours is a bug, not an extra)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    library = exc.name.partition(".")[0]
    extra = EXTRA_OF.get(library)
    return None if extra is None else MissingExtra(library, extra)


def require(*libraries: str) -> None:
    """Check up front that each extra's library is installed (MissingExtra if not), for a
    command that would otherwise find out in the middle of its run."""
    for library in libraries:
        if importlib.util.find_spec(library) is None:
            raise MissingExtra(library, EXTRA_OF[library])


def register_command(sub: Any, name: str, module: str, *, needs: tuple[str, ...] = ()) -> None:
    """Register subcommand `name` from `module`; if the module needs a missing extra (the
    libraries `needs` names are looked for first, in order), a stand-in that takes any
    arguments and says which extra to install when run."""
    try:
        require(*needs)
        importlib.import_module(module).register(sub)
    except (ModuleNotFoundError, MissingExtra) as exc:
        missing = exc if isinstance(exc, MissingExtra) else missing_extra(exc)
        if missing is None:
            raise
        # No option prefix: `showdown desk --help` also reaches the handler and its one line.
        p: argparse.ArgumentParser = sub.add_parser(
            name, add_help=False, prefix_chars="\0",
            help=f"(not installed: pip install 'showdown[{missing.extra}]')")
        p.add_argument("words", nargs="*", help=argparse.SUPPRESS)
        p.set_defaults(handler=_refuse(missing))


def _refuse(missing: MissingExtra) -> Any:
    def handler(_args: argparse.Namespace) -> int:
        raise missing
    return handler
