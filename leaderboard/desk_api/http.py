"""What the desk API's operations share: the request read as typed fields (every problem a
`BadRequest` naming the field, answered 400), and what an operation returns.

A field is read as its operation declares it (leaderboard.desk_api.schema): text within its length
and without control characters (PostgreSQL cannot store NUL), whole numbers within their
bounds (never past 64 bits), path ids too. Reading a field the operation does not declare is a
bug (`UndeclaredField`), so the OpenAPI document generated from the declarations stays true.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final

from sqlalchemy.orm import Session
from starlette.requests import Request

from leaderboard.desk import DeskCommand, DeskError, NotFound
from leaderboard.desk_api.schema import INT64_MAX, INT64_MIN, MAX_ITEMS, Field, Spec

__all__ = ["FIELDS_READ", "BadRequest", "Body", "Operation", "Result", "UndeclaredField",
           "iso"]

_YES: Final = ("1", "true", "yes")
_NO: Final = ("0", "false", "no")
# C0 and C1 controls, DEL and lone surrogates (JSON "\ud800"); a multi-line field may hold
# tabs and line breaks.
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_MULTILINE: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_WHOLE: Final = re.compile(r"[+-]?[0-9]{1,400}")  # past 19 digits: out of range
_UNDECLARED: Final = Field("?", max_length=INT64_MAX)
# What each operation has read (operation name -> field names): the test that keeps the
# OpenAPI document true checks every declared field is read by some request.
FIELDS_READ: Final[defaultdict[str, set[str]]] = defaultdict(set)


class BadRequest(DeskError):
    """The request itself is malformed (not JSON, a missing or mistyped field)."""


class UndeclaredField(RuntimeError):
    """An operation read a field its declaration does not list: a bug in the desk API."""


@dataclass(frozen=True, slots=True)
class Result:
    """What an operation returns: the JSON answer and the commands to send after it."""

    body: Mapping[str, Any]
    commands: tuple[DeskCommand, ...] = ()
    status: int = 200


class Body:
    """Typed access to a request's fields; every problem is a BadRequest naming the field.

    `spec` declares the fields (bounds, lengths); without one (a test's own operation) a
    field is only typed. `path` holds the path's parameters; `query` says the values are
    the query string's texts (a GET).
    """

    def __init__(self, data: Mapping[str, Any], spec: Spec | None = None, *,
                 path: Mapping[str, Any] | None = None, query: bool = False,
                 actor: str | None = None) -> None:
        self.data = data
        self.spec = spec
        self.path = path or {}
        self.query = query
        self._actor = actor

    def signed_in(self, staff_id: str) -> Body:
        """This body as acted on by the signed-in ``staff_id``; a body naming an ``actor`` of
        its own is refused (the actor is always the session's person)."""
        if "actor" in self.data:
            raise BadRequest("field 'actor': not accepted: the action is recorded under the"
                             " signed-in person (the session's); remove the field")
        return Body(self.data, self.spec, path=self.path, query=self.query, actor=staff_id)

    def _field(self, key: str) -> Field:
        if self.spec is None:
            return _UNDECLARED
        declared = self.spec.by.get(key)
        if declared is None:
            raise UndeclaredField(f"operation {self.spec.name!r} reads the undeclared field"
                                  f" {key!r}")
        FIELDS_READ[self.spec.name].add(key)
        return declared

    def given(self, key: str) -> bool:
        """True when the field is present and not null."""
        self._field(key)
        return self.data.get(key) is not None

    def text(self, key: str) -> str:
        """A non-empty string field, stripped."""
        return _text(self._field(key), key, self.data.get(key))

    def optional_text(self, key: str) -> str | None:
        """A string field that may be absent or null."""
        return None if self.data.get(key) is None else self.text(key)

    def integer(self, key: str) -> int:
        """A whole-number field within its bounds (64 bits at most)."""
        return _integer(self._field(key), key, self.data.get(key), text=self.query)

    def optional_integer(self, key: str) -> int | None:
        """A whole-number field that may be absent or null."""
        return None if self.data.get(key) is None else self.integer(key)

    def texts(self, key: str) -> list[str]:
        """A list of non-empty strings (absent: empty), each checked as a text field."""
        declared = self._field(key)
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            raise BadRequest(f"field {key!r}: a list of at most {MAX_ITEMS} texts is required")
        return [_text(declared, f"{key}[{n}]", item) for n, item in enumerate(value)]

    def day(self, key: str) -> date:
        """A date field (YYYY-MM-DD)."""
        text = self.text(key)
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise BadRequest(f"field {key!r}: {text!r} is not a date such as 2026-07-03"
                              ) from None

    def flag(self, key: str) -> bool:
        """A yes/no field: JSON true/false, or in a query 1/0, true/false, yes/no."""
        self._field(key)
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _YES + _NO:
            return value.strip().lower() in _YES
        raise BadRequest(f"field {key!r}: true or false is required, got {_shown(value)}")

    def path_text(self, key: str) -> str:
        """A text id from the path; an unusable one is no such record (404)."""
        try:
            return _text(self._field(key), key, self.path.get(key))
        except BadRequest as exc:
            raise NotFound(f"path {exc}") from None

    def path_integer(self, key: str) -> int:
        """A whole-number id from the path; one out of bounds is no such record (404)."""
        try:
            return _integer(self._field(key), key, self.path.get(key), text=True)
        except BadRequest as exc:
            raise NotFound(f"path {exc}") from None

    @property
    def actor(self) -> str:
        """Who performs the action: the signed-in person (`signed_in`)."""
        if self._actor is None:
            raise RuntimeError("a desk operation ran without a signed-in person")
        return self._actor


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _text(spec: Field, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"field {key!r}: a non-empty string is required")
    value = value.strip()
    if len(value) > spec.max_length:
        raise BadRequest(f"field {key!r}: at most {spec.max_length} characters, got"
                         f" {len(value)}")
    bad = (_CONTROL_MULTILINE if spec.multiline else _CONTROL).search(value)
    if bad is not None:
        raise BadRequest(f"field {key!r}: the control character U+{ord(bad.group()):04X} at"
                         f" position {bad.start()} is not allowed")
    if spec.enum and value not in spec.enum:
        raise BadRequest(f"field {key!r}: one of {', '.join(spec.enum)} is required, got"
                         f" {_shown(value)}")
    return value


def _integer(spec: Field, key: str, value: object, *, text: bool) -> int:
    if text and isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"field {key!r}: a whole number is required, got {_shown(value)}")
    low, high = max(spec.minimum, INT64_MIN), min(spec.maximum, INT64_MAX)
    if not low <= value <= high:
        raise BadRequest(f"field {key!r}: {_shown(value)} is out of range ({low} to {high})")
    return value


def iso(moment: datetime | None) -> str | None:
    """An ISO 8601 text of a moment, or None."""
    return None if moment is None else moment.isoformat()


Operation = Callable[[Session, Body, Request], Result]
