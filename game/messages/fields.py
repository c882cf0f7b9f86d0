"""Reading and checking the fields of a message body: one error that names the field.

Every message definition (`game.messages.table`, `game.messages.desk`, `wire.messages`) decodes
its JSON body through a `BodyReader`, so a bad body is always refused the same way: a
`MessageError` naming the message type, the field and what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, Final

from game.errors import GameError

__all__ = ["INT32_MAX", "INT64_MAX", "BodyReader", "MessageError", "format_ts"]

INT64_MAX: Final = 2**63 - 1
INT32_MAX: Final = 2**31 - 1
_SHOWN: Final = 60  # characters of a bad value quoted in an error


def format_ts(at: datetime) -> str:
    """RFC 3339 UTC text of an aware time, ``Z`` for UTC (the form every body uses)."""
    return at.isoformat().replace("+00:00", "Z")


class MessageError(GameError, ValueError):
    """A message body that cannot be read: which type, which field, and what is wrong."""

    def __init__(self, type_: str, field: str, problem: str | None = None,
                 value: object = None) -> None:
        self.type = type_
        self.field = field
        self.problem = problem
        if problem is None:
            text = f"{type_} body lacks {field!r}"
        else:
            text = f"{type_} body field {field!r} {problem} (got {_show(value)})"
        super().__init__(text)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _text_problem(value: object, limit: int) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    if not value:
        return "must not be empty"
    if limit and len(value) > limit:
        return f"must be at most {limit} characters"
    if "\x00" in value:
        return "must not contain NUL"
    return None


def _int_problem(value: object, limit: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number"
    if not 0 <= value <= limit:
        return f"must be within 0..{limit}"
    return None


class BodyReader:
    """Reads the fields of one body of message type ``type_``; each read checks one rule.

    A required field must be present (None is then checked like any value, and refused); an
    optional field may be absent or None, and reads as None.
    """

    def __init__(self, type_: str, body: Mapping[str, Any]) -> None:
        if not isinstance(body, Mapping):
            raise MessageError(type_, "body", "must be a JSON object", body)
        self.type = type_
        self.body = body

    def _get(self, name: str, required: bool) -> tuple[bool, object]:
        if name not in self.body:
            if required:
                raise MessageError(self.type, name)
            return False, None
        value = self.body[name]
        if value is None and not required:
            return False, None
        return True, value

    def _check(self, name: str, value: object, problem: str | None) -> None:
        if problem is not None:
            raise MessageError(self.type, name, problem, value)

    def text(self, name: str, limit: int = 0) -> str:
        """Required non-empty text without NUL, at most ``limit`` characters (0: no limit)."""
        _, value = self._get(name, True)
        self._check(name, value, _text_problem(value, limit))
        assert isinstance(value, str)
        return value

    def opt_text(self, name: str, limit: int = 0) -> str | None:
        """Like `text`, but absent or None reads as None."""
        present, value = self._get(name, False)
        if not present:
            return None
        self._check(name, value, _text_problem(value, limit))
        assert isinstance(value, str)
        return value

    def count(self, name: str) -> int:
        """A required whole number 0..2**31-1."""
        _, value = self._get(name, True)
        self._check(name, value, _int_problem(value, INT32_MAX))
        assert isinstance(value, int)
        return value

    def opt_count(self, name: str) -> int | None:
        """Like `count`, but absent or None reads as None."""
        present, value = self._get(name, False)
        if not present:
            return None
        self._check(name, value, _int_problem(value, INT32_MAX))
        assert isinstance(value, int)
        return value

    def cents(self, name: str) -> int:
        """A required amount of cents 0..2**63-1."""
        _, value = self._get(name, True)
        self._check(name, value, _int_problem(value, INT64_MAX))
        assert isinstance(value, int)
        return value

    def seq(self, name: str) -> int:
        """A required sequence number 0..2**63-1."""
        _, value = self._get(name, True)
        self._check(name, value, _int_problem(value, INT64_MAX))
        assert isinstance(value, int)
        return value

    def opt_seq(self, name: str) -> int | None:
        """Like `seq`, but absent or None reads as None."""
        present, value = self._get(name, False)
        if not present:
            return None
        self._check(name, value, _int_problem(value, INT64_MAX))
        assert isinstance(value, int)
        return value

    def choice(self, name: str, allowed: Collection[str]) -> str:
        """A required value that is one of ``allowed``."""
        _, value = self._get(name, True)
        if value not in allowed:
            raise MessageError(self.type, name, f"must be one of {sorted(allowed)}", value)
        assert isinstance(value, str)
        return value

    def opt_equal(self, name: str, expected: str | None, what: str) -> str | None:
        """An optional value that must equal ``expected`` (None: anything); ``what`` says why."""
        present, value = self._get(name, False)
        if not present:
            return None
        if expected is not None and value != expected:
            raise MessageError(self.type, name, f"must be {what}", value)
        return None if value is None else str(value)

    def flag(self, name: str) -> bool:
        """A required true or false."""
        _, value = self._get(name, True)
        if not isinstance(value, bool):
            raise MessageError(self.type, name, "must be true or false", value)
        return value

    def raw(self, name: str, default: Any = None) -> Any:
        """A field this message does not check (kept as sent), or ``default``."""
        return self.body.get(name, default)
