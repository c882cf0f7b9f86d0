"""Reading an adapter's keys from its config section with errors that name the key: the
checks every adapter's `configure` needs (type, range, choice, a path), written once.

    opts = Options(options, place)
    url = opts.text("url", required=place.real)
    baud = opts.integer("baudrate", 115_200, low=1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drivers.adapter import ConfigPlace

__all__ = ["Options"]


def _kind(value: object) -> str:
    return {bool: "true/false", int: "an integer", float: "a number", str: "text",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


class Options:
    """An adapter's keys of one config section, read one at a time with checks."""

    def __init__(self, options: Mapping[str, Any], place: ConfigPlace) -> None:
        self.options, self.place = options, place

    def _value(self, key: str, required: bool) -> Any:
        if key not in self.options:
            if required:
                raise self.place.error(key, "missing")
            return None
        return self.options[key]

    def text(self, key: str, default: str | None = None, *, required: bool = False,
             choices: Sequence[str] = ()) -> str | None:
        """A string (``choices``: one of them); ``default`` when absent."""
        value = self._value(key, required)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.place.error(key, f"expected non-empty text, got {_kind(value)}")
        if choices and value not in choices:
            raise self.place.error(key, f"must be one of {', '.join(choices)}")
        return value

    def path(self, key: str, *, required: bool = False) -> str | None:
        """A device path or URL (a relative path resolved against the config's folder)."""
        value = self.text(key, required=required)
        return None if value is None else self.place.path(value)

    def integer(self, key: str, default: int, *, low: int | None = None,
                high: int | None = None) -> int:
        """An integer within ``low..high``; ``default`` when absent."""
        value = self._value(key, False)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.place.error(key, f"expected an integer, got {_kind(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.place.error(key, f"must be {_range(low, high)}")
        return value

    def number(self, key: str, default: float, *, low: float | None = None,
               high: float | None = None) -> float:
        """A number within ``low..high``; ``default`` when absent."""
        value = self._value(key, False)
        if value is None:
            return default
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.place.error(key, f"expected a number, got {_kind(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.place.error(key, f"must be {_range(low, high)}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        """true or false; ``default`` when absent."""
        value = self._value(key, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.place.error(key, f"expected true or false, got {_kind(value)}")
        return value


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{low:g}..{high:g}"
    return f">= {low:g}" if low is not None else f"<= {high:g}"
