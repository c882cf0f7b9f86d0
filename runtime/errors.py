"""Errors as people read them: one line, the whitespace folded, an OS error with its file;
and `Unavailable`, a service a command needs that does not answer (exit 69,
docs/exit-codes.md), named by the setting that points at it."""

from __future__ import annotations

__all__ = ["Unavailable", "one_line"]


class Unavailable(Exception):
    """A service the command needs does not answer (a database, a broker, a daemon): not the
    caller's mistake, worth trying again. Names the file (or flag) and the key that point at
    it, as a ConfigError does: ``source: key: reason``."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {reason}")


def one_line(exc: BaseException) -> str:
    """An exception as one line for a person: its message with the whitespace folded."""
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return " ".join(str(exc).split()) or type(exc).__name__
