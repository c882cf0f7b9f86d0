"""orjson's canonical text of plain JSON data, where it is `wire.envelope.canonical_json`'s
byte for byte: a dict with text keys, no float anywhere, no subclass of a JSON type, and
integers within 64 bits. Anything else makes orjson fail over (the passthrough options) and
the caller takes the strict `json` way."""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = ["PASSTHROUGH", "plain_canonical_json"]

# A subclass, a dataclass or a datetime is not encoded orjson's own way: it raises instead.
PASSTHROUGH: Final = (orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
                      | orjson.OPT_PASSTHROUGH_DATETIME)
_SORTED: Final = orjson.OPT_SORT_KEYS | PASSTHROUGH


def plain_canonical_json(value: Any) -> bytes | None:
    """The canonical bytes of plain data through orjson; None for anything else (a float,
    a key that is not text, a subclass, a huge integer, text that is not UTF-8)."""
    if type(value) is not dict or not _no_float(value):
        return None
    try:
        return orjson.dumps(value, option=_SORTED)
    except orjson.JSONEncodeError:
        return None


def _no_float(value: dict[str, Any]) -> bool:
    """False if a float lies anywhere in `value` (a float's text is the strict encoder's)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            return False
    return True
