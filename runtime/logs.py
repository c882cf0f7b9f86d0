"""structlog, configured once at the entry point: JSON lines on stdout under systemd (journald),
a readable console on a terminal. Every line about a hand carries table, hand_id and seat.

structlog is imported by the functions, not by this module: a command that only reads a
config (and its log level) does not pay for it."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Final, Literal

__all__ = ["LOG_LEVELS", "configure_logging", "get_logger"]

LogFormat = Literal["auto", "json", "console"]
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")  # what configs may say


def configure_logging(*, fmt: LogFormat = "auto", level: str = "info",
                      table: str | None = None) -> None:
    """Set up structlog and stdlib logging (in main; a later call replaces the setup)."""
    import structlog  # noqa: PLC0415

    if fmt == "auto":
        under_systemd = bool(os.environ.get("INVOCATION_ID") or os.environ.get("JOURNAL_STREAM"))
        fmt = "json" if under_systemd or not sys.stdout.isatty() else "console"
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (structlog.processors.JSONRenderer(sort_keys=True) if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=sys.stdout.isatty()))
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stdout_logger,
        # Not cached: a later call reconfigures every logger, including module loggers
        # already used (a process that runs several commands, as the tests do); about 1 us
        # a call.
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    structlog.contextvars.clear_contextvars()
    if table is not None:
        structlog.contextvars.bind_contextvars(table=table)


class _StdoutLogger:
    """Prints each rendered line to the sys.stdout of the moment (a test may swap it)."""

    def msg(self, message: str) -> None:
        """Write one line."""
        stream = sys.stdout
        stream.write(message + "\n")
        stream.flush()

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def _stdout_logger(*_: Any) -> _StdoutLogger:
    return _StdoutLogger()


def get_logger(name: str, **context: Any) -> Any:
    """A bound structlog logger for a module, with optional fixed context."""
    import structlog  # noqa: PLC0415

    return structlog.get_logger(logger_name=name, **context)  # stays lazy until first use
