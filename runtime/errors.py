"""Errors as people read them: one line, the whitespace folded, an OS error with its file."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(exc: BaseException) -> str:
    """An exception as one line for a person: its message with the whitespace folded."""
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return " ".join(str(exc).split()) or type(exc).__name__
