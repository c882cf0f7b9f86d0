"""What the desk API's operations share: the request body read as typed fields (every
problem a `BadRequest` naming the field, answered 400), and what an operation returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Final

from sqlalchemy.orm import Session
from starlette.requests import Request

from leaderboard.desk import DeskCommand, DeskError

__all__ = ["BadRequest", "Body", "Operation", "Result", "iso"]

_YES: Final = ("1", "true", "yes")
_NO: Final = ("0", "false", "no")


class BadRequest(DeskError):
    """The request itself is malformed (not JSON, a missing or mistyped field)."""


@dataclass(frozen=True, slots=True)
class Result:
    """What an operation returns: the JSON answer and the commands to send after it."""

    body: Mapping[str, Any]
    commands: tuple[DeskCommand, ...] = ()
    status: int = 200


class Body:
    """Typed access to a request's JSON object; every problem is a BadRequest naming the field."""

    def __init__(self, data: Mapping[str, Any], *, actor: str | None = None) -> None:
        self.data = data
        self._actor = actor

    def signed_in(self, staff_id: str) -> Body:
        """This body as acted on by the signed-in ``staff_id``; a body naming an ``actor`` of
        its own is refused (the actor is always the session's person)."""
        if "actor" in self.data:
            raise BadRequest("field 'actor': not accepted: the action is recorded under the"
                             " signed-in person (the session's); remove the field")
        return Body(self.data, actor=staff_id)

    def text(self, key: str) -> str:
        """A non-empty string field, stripped."""
        value = self.data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise BadRequest(f"field {key!r}: a non-empty string is required")
        return value.strip()

    def optional_text(self, key: str) -> str | None:
        """A string field that may be absent or null."""
        return None if self.data.get(key) is None else self.text(key)

    def integer(self, key: str) -> int:
        """A whole-number field."""
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadRequest(f"field {key!r}: a whole number is required, got {value!r}")
        return value

    def optional_integer(self, key: str) -> int | None:
        """A whole-number field that may be absent or null."""
        return None if self.data.get(key) is None else self.integer(key)

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
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _YES + _NO:
            return value.strip().lower() in _YES
        raise BadRequest(f"field {key!r}: true or false is required, got {value!r}")

    @property
    def actor(self) -> str:
        """Who performs the action: the signed-in person (`signed_in`)."""
        if self._actor is None:
            raise RuntimeError("a desk operation ran without a signed-in person")
        return self._actor


def iso(moment: datetime | None) -> str | None:
    """An ISO 8601 text of a moment, or None."""
    return None if moment is None else moment.isoformat()


Operation = Callable[[Session, Body, Request], Result]
