"""structlog, configured once at the entry point. Where each event goes (``fmt="auto"``):

- under systemd, when stderr or stdout is journald's stream (``JOURNAL_STREAM``): natively to
  journald, one entry per event with its ``PRIORITY`` and every key as a field (``TABLE``,
  ``HAND_ID``, ``SEAT``...), see runtime/journald.py;
- elsewhere, when stdout is not a terminal: JSON lines on stdout;
- on a terminal: structlog's readable console.

Standard-library logging (uvicorn, asyncio, aiomqtt, amqtt, alembic, SQLAlchemy) goes
through the same processors to the same place; the chatty libraries log warnings and above.
Every line about a hand carries table, hand_id and seat. docs/operations/logs.md says which
level means what.

structlog is imported by the functions, not by this module: a command that only reads a
config (and its log level) does not pay for it."""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Final, Literal

__all__ = ["LOG_LEVELS", "configure_logging", "get_logger", "journal_fields"]

LogFormat = Literal["auto", "json", "console"]
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")  # what configs may say
IDENTIFIER: Final = "showdown"  # SYSLOG_IDENTIFIER: `journalctl -t showdown`

# syslog priorities (sd-daemon(3)): what `journalctl -p` filters on.
PRIORITIES: Final[Mapping[str, int]] = {
    "critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}
# Libraries that log routine detail at info or debug; they log warnings and above.
NOISY_LIBRARIES: Final = (
    "aiomqtt", "aiosqlite", "alembic", "amqtt", "asyncio", "httpcore", "httpx", "multipart",
    "passlib", "sqlalchemy", "transitions", "uvicorn.access", "websockets")
# Fields this module sets (or journald reserves): a key of the same name gets a prefix.
_RESERVED: Final = frozenset({
    "MESSAGE", "MESSAGE_ID", "PRIORITY", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "ERRNO",
    "SYSLOG_IDENTIFIER", "SYSLOG_FACILITY", "SYSLOG_PID", "SYSLOG_TIMESTAMP", "SYSLOG_RAW",
    "DOCUMENTATION", "TID", "INVOCATION_ID", "USER_INVOCATION_ID", "UNIT", "USER_UNIT"})
_CALLSITE: Final = {"pathname": "CODE_FILE", "lineno": "CODE_LINE", "func_name": "CODE_FUNC"}
_META: Final = ("_record", "_from_structlog")
_NOT_IN_MESSAGE: Final = frozenset({"event", "exception", "logger_name", *_CALLSITE})
_NEEDS_QUOTES: Final = re.compile(r'[ ="\n]')


def configure_logging(*, fmt: LogFormat = "auto", level: str = "info",
                      table: str | None = None) -> None:
    """Set up structlog and stdlib logging (in main; a later call replaces the setup)."""
    import structlog  # noqa: PLC0415

    from runtime.journald import JournalSocket, stream_is_journal  # noqa: PLC0415

    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    journal = fmt == "auto" and stream_is_journal()
    if fmt == "auto" and not journal:
        fmt = "console" if sys.stdout.isatty() else "json"
    processors: list[Any] = [structlog.contextvars.merge_contextvars,
                             structlog.processors.add_log_level]
    output: Any
    if journal:
        processors += [
            structlog.processors.CallsiteParameterAdder(
                [structlog.processors.CallsiteParameter.PATHNAME,
                 structlog.processors.CallsiteParameter.LINENO,
                 structlog.processors.CallsiteParameter.FUNC_NAME],
                additional_ignores=["runtime.logs"]),
            structlog.processors.format_exc_info, _drop_meta, _journal_renderer]
        output = _JournalLogger(JournalSocket())
    else:
        processors += [structlog.processors.TimeStamper(fmt="iso", utc=True),
                       structlog.processors.format_exc_info, _drop_meta,
                       structlog.processors.JSONRenderer(sort_keys=True) if fmt == "json"
                       else structlog.dev.ConsoleRenderer(colors=sys.stdout.isatty())]
        output = _StdoutLogger()
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=lambda *_: output,
        # Not cached: a later call reconfigures every logger, including module loggers
        # already used (a process that runs several commands, as the tests do); about 1 us
        # a call.
        cache_logger_on_first_use=False,
    )
    _route_stdlib(_StdlibBridge(processors, output), numeric)
    structlog.contextvars.clear_contextvars()
    if table is not None:
        structlog.contextvars.bind_contextvars(table=table)


def get_logger(name: str, **context: Any) -> Any:
    """A bound structlog logger for a module, with optional fixed context."""
    import structlog  # noqa: PLC0415

    return structlog.get_logger(logger_name=name, **context)  # stays lazy until first use


def journal_fields(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An event dict as journal fields: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, CODE_*, then
    every other key upper-cased (``hand_id`` -> ``HAND_ID``; non-strings as JSON, None left
    out)."""
    texts = _texts(event)
    level = str(event.get("level", "info"))
    fields = [("MESSAGE", _message(event, texts)),
              ("PRIORITY", str(PRIORITIES.get(level, PRIORITIES["info"]))),
              ("SYSLOG_IDENTIFIER", IDENTIFIER)]
    fields += [(_journal_name(key), text) for key, text in texts.items()]
    return fields


def message_text(event: Mapping[str, Any]) -> str:
    """One readable line for an event: its name, then ``key=value`` for the rest in key
    order (what ``journalctl`` and ``-o cat`` show); a traceback on the next lines."""
    return _message(event, _texts(event))


def _texts(event: Mapping[str, Any]) -> dict[str, str]:
    # PRIORITY says the level; a None value is left out (a journal field has no null).
    return {key: _text(value) for key, value in event.items()
            if value is not None and key != "level"}


def _message(event: Mapping[str, Any], texts: Mapping[str, str]) -> str:
    parts = [texts.get("event", "")]
    for key in sorted(texts):  # the JSON lines' order
        if key in _NOT_IN_MESSAGE:
            continue
        text = texts[key]
        if isinstance(event[key], str) and (not text or _NEEDS_QUOTES.search(text)):
            text = json.dumps(text)
        parts.append(f"{key}={text}")
    message = " ".join(parts)
    if texts.get("exception"):
        message += "\n" + texts["exception"].rstrip("\n")
    return message


@functools.lru_cache(maxsize=1024)
def _journal_name(key: str) -> str:
    from runtime.journald import field_name  # noqa: PLC0415

    if key in _CALLSITE:
        return _CALLSITE[key]
    name = field_name(key)
    return field_name("showdown_" + key) if name in _RESERVED else name


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if type(value) is int:  # not bool: JSON writes true/false
        return str(value)
    return json.dumps(value, sort_keys=True, default=str)


def _drop_meta(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Remove the stdlib bridge's own keys (the record) before rendering."""
    for key in _META:
        event.pop(key, None)
    return event


def _journal_renderer(_: Any, __: str, event: MutableMapping[str, Any]) -> Any:
    """The last processor under journald: (datagram, priority, message) for _JournalLogger."""
    from runtime.journald import encode  # noqa: PLC0415

    fields = journal_fields(event)
    return (encode(fields),), {"priority": int(fields[1][1]), "message": fields[0][1]}


class _JournalLogger:
    """Hands each rendered entry to journald (or, failing that, to stderr with ``<N>``)."""

    def __init__(self, sock: Any) -> None:
        self.socket = sock

    def msg(self, datagram: bytes, *, priority: int, message: str) -> None:
        """Send one entry."""
        self.socket.send(datagram, priority=priority, message=message)

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


class _StdoutLogger:
    """Prints each rendered line to the sys.stdout of the moment (a test may swap it)."""

    def msg(self, message: str) -> None:
        """Write one line."""
        stream = sys.stdout
        stream.write(message + "\n")
        stream.flush()

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


class _StdlibBridge(logging.Handler):
    """A stdlib handler that runs each record through structlog's processors and output."""

    def __init__(self, processors: list[Callable[..., Any]], output: Any) -> None:
        super().__init__()
        self.processors = processors
        self.output = output

    def emit(self, record: logging.LogRecord) -> None:
        """Render and write one record as a structlog event of the same level."""
        try:
            event: Any = {"event": record.getMessage(), "logger_name": record.name,
                          "_record": record, "_from_structlog": False}
            if record.exc_info:
                event["exc_info"] = record.exc_info
            method = record.levelname.lower()
            for processor in self.processors:
                event = processor(None, method, event)
            if isinstance(event, tuple):
                args, kwargs = event
                self.output.msg(*args, **kwargs)
            else:
                self.output.msg(event)
        except Exception:  # logging must never raise into the caller
            self.handleError(record)


def _route_stdlib(bridge: _StdlibBridge, numeric: int) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _StdlibBridge):  # an earlier call's
            root.removeHandler(handler)
            if isinstance(handler.output, _JournalLogger):
                handler.output.socket.close()
    root.addHandler(bridge)
    root.setLevel(numeric)
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)  # warnings.warn(...) as py.warnings records, same pipeline
