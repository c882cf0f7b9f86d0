"""Strict reading of a table snapshot's plain JSON data (`game.table.snapshot`), and the
canonical digest of a configuration object for the snapshot's config fingerprint.

Every reader names the path of the value it refuses (``staff.signed_in[2]``), so a damaged
or foreign snapshot is refused with a reason the technician can act on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta, tzinfo
from enum import Enum
from fractions import Fraction
from typing import Any, Final

from game.chips.registry import ChipRegistry
from game.poker.cards import DECK, Card

__all__ = ["Node", "SnapshotError", "cards_text", "config_digest", "plain", "uid_text"]

_MAX_UID_BYTES: Final = 32
_CARDS: Final = {str(c): c for c in DECK}
_SCALARS: Final = frozenset({str, int, bool, type(None)})
_DIGESTS_KEPT: Final = 32
_digests: dict[int, tuple[object, str]] = {}  # id -> (the object, kept alive; its digest)


class SnapshotError(ValueError):
    """A snapshot that cannot be used; the message says which part and why."""


def cards_text(cards: tuple[Card, ...]) -> str:
    """Cards as the snapshot writes them: one text of two-character cards."""
    return "".join(map(str, cards))


def uid_text(uid: bytes) -> str:
    """A chip UID as the snapshot writes it: lower-case hex."""
    return uid.hex()


class Node:
    """One value of the snapshot and its path, with typed, checked accessors."""

    __slots__ = ("path", "value")

    def __init__(self, value: Any, path: str = "snapshot") -> None:
        self.value = value
        self.path = path

    def fail(self, why: str) -> SnapshotError:
        """The error for this value."""
        return SnapshotError(f"{self.path}: {why}")

    # ---- containers ---------------------------------------------------------------------

    def obj(self, *keys: str, optional: Iterable[str] = ()) -> dict[str, Node]:
        """A mapping with exactly ``keys`` (plus any of ``optional``), as child nodes."""
        if not isinstance(self.value, Mapping):
            raise self.fail(f"must be an object, not {_kind(self.value)}")
        allowed = set(keys) | set(optional)
        missing = [k for k in keys if k not in self.value]
        if missing:
            raise self.fail(f"missing field {', '.join(sorted(missing))}")
        unknown = sorted(str(k) for k in self.value if k not in allowed)
        if unknown:
            raise self.fail(f"unknown field {', '.join(unknown)}")
        return {k: Node(self.value[k], f"{self.path}.{k}") for k in self.value}

    def items(self) -> list[tuple[str, Node]]:
        """A mapping of text keys to values, as (key, child node) pairs."""
        if not isinstance(self.value, Mapping):
            raise self.fail(f"must be an object, not {_kind(self.value)}")
        out = []
        for key, value in self.value.items():
            if not isinstance(key, str) or not key:
                raise self.fail(f"key {key!r} must be non-empty text")
            out.append((key, Node(value, f"{self.path}[{key!r}]")))
        return out

    def array(self, *, most: int | None = None) -> list[Node]:
        """A list, as child nodes (at most ``most`` long)."""
        if not isinstance(self.value, list):
            raise self.fail(f"must be a list, not {_kind(self.value)}")
        if most is not None and len(self.value) > most:
            raise self.fail(f"holds {len(self.value)} items, at most {most} allowed")
        return [Node(v, f"{self.path}[{i}]") for i, v in enumerate(self.value)]

    def opt(self) -> Node | None:
        """None for a JSON null, else this node."""
        return None if self.value is None else self

    # ---- scalars ------------------------------------------------------------------------

    def text(self, *, empty: bool = False) -> str:
        """A string (non-empty unless ``empty``)."""
        if not isinstance(self.value, str) or (not empty and not self.value):
            raise self.fail(f"must be {'' if empty else 'non-empty '}text, not"
                            f" {_kind(self.value)}")
        return self.value

    def opt_text(self, *, empty: bool = False) -> str | None:
        """A string or null."""
        return None if self.value is None else self.text(empty=empty)

    def choice(self, allowed: Iterable[str]) -> str:
        """One of the ``allowed`` strings."""
        options = sorted(allowed)
        if self.value not in options:
            raise self.fail(f"must be one of {', '.join(options)}, not {self.value!r}")
        return str(self.value)

    def number(self, *, low: int | None = 0, high: int | None = None) -> int:
        """A whole number (not a bool) within ``low``..``high``."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"must be a whole number, not {_kind(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.fail(f"{value} is out of range {low}..{'' if high is None else high}")
        return value

    def opt_int(self, *, low: int | None = 0, high: int | None = None) -> int | None:
        """A whole number or null."""
        return None if self.value is None else self.number(low=low, high=high)

    def flag(self) -> bool:
        """true or false."""
        if not isinstance(self.value, bool):
            raise self.fail(f"must be true or false, not {_kind(self.value)}")
        return self.value

    def uid(self) -> bytes:
        """A chip UID written as lower-case hex."""
        text = self.text()
        try:
            uid = bytes.fromhex(text)
        except ValueError:
            raise self.fail(f"{text!r} is not a chip UID in hex") from None
        if uid_text(uid) != text or len(uid) > _MAX_UID_BYTES:
            raise self.fail(f"{text!r} is not a chip UID in lower-case hex")
        return uid

    def uids(self) -> frozenset[bytes]:
        """A sorted list of distinct chip UIDs."""
        return frozenset(self.sorted_uids())

    def sorted_uids(self) -> tuple[bytes, ...]:
        """A sorted list of distinct chip UIDs, in that order."""
        found = self.uid_list()
        if found != sorted(set(found)):
            raise self.fail("chip UIDs must be distinct and in order")
        return tuple(found)

    def uid_list(self) -> list[bytes]:
        """A list of chip UIDs (each as `uid` reads it), in the order written."""
        found = _plain_uids(self.value)  # ~10^5 in a checkpoint: no node each (D416)
        return [n.uid() for n in self.array()] if found is None else found

    def cards(self, *, most: int = 52) -> tuple[Card, ...]:
        """Cards written as one text of two-character cards ("AhKd9c")."""
        text = self.text(empty=True)
        if len(text) % 2 or len(text) > 2 * most:
            raise self.fail(f"must be at most {most} two-character cards, not {text!r}")
        try:
            return tuple(_CARDS[text[i:i + 2]] for i in range(0, len(text), 2))
        except KeyError as exc:
            raise self.fail(f"{exc.args[0]!r} is not a card") from None

    def moment(self) -> datetime:
        """A time written by `datetime.isoformat`."""
        text = self.text()
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            raise self.fail(f"{text!r} is not a time") from None
        if at.isoformat() != text:
            raise self.fail(f"{text!r} is not a time as the snapshot writes one")
        return at

    def data(self) -> Any:
        """Plain JSON data (objects with text keys, lists, text, numbers, booleans, null),
        copied."""
        try:
            return plain(self.value)
        except TypeError as exc:
            raise self.fail(str(exc)) from None


def plain(value: Any) -> Any:
    """A deep copy of plain JSON data; TypeError names anything else."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict and all(type(k) is str for k in value):
        return {k: plain(v) for k, v in value.items()}
    if kind is list:
        return [plain(v) for v in value]
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError("a number must be finite")
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"key {key!r} is not text")
            out[key] = plain(item)
        return out
    raise TypeError(f"{_kind(value)} is not plain JSON data")


def _plain_uids(value: Any) -> list[bytes] | None:
    """``value``'s UIDs when it is a list of UIDs each `Node.uid` accepts; None otherwise (the
    caller reads it node by node, which names the value it refuses)."""
    if not isinstance(value, list):
        return None
    try:
        found = [bytes.fromhex(text) for text in value]
    except (TypeError, ValueError):
        return None
    sizes = list(map(len, found))
    if sizes and (min(sizes) == 0 or max(sizes) > _MAX_UID_BYTES):
        return None
    return found if list(map(bytes.hex, found)) == value else None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "text", int: "a number", float: "a number", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


# ---- the config fingerprint -------------------------------------------------------------


def config_digest(value: object) -> str:
    """SHA-256 of a canonical form of a configuration object (dataclasses, mappings, sets,
    enums, chips, registries...); a field named ``source`` (where it was read from) or not
    compared is left out, so moving a file changes nothing. The configuration is immutable,
    so the digest of the same object is computed once (the last few are kept)."""
    cached = _digests.get(id(value))
    if cached is not None and cached[0] is value:
        return cached[1]
    text = json.dumps(_canon(value), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()
    if len(_digests) >= _DIGESTS_KEPT:
        _digests.pop(next(iter(_digests)))
    _digests[id(value)] = (value, digest)
    return digest


def _canon(value: object) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, Enum):
        return ["enum", type(value).__name__, _canon(value.value)]
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    if isinstance(value, Fraction):
        return ["fraction", str(value)]
    if isinstance(value, datetime):
        return ["datetime", value.isoformat()]
    if isinstance(value, date | time):
        return [type(value).__name__, value.isoformat()]
    if isinstance(value, timedelta):
        return ["timedelta", value.days, value.seconds, value.microseconds]
    if isinstance(value, tzinfo):
        return ["tz", str(value)]
    if isinstance(value, Card):
        return ["card", str(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__,
                {f.name: _canon(getattr(value, f.name)) for f in dataclasses.fields(value)
                 if f.compare and f.name != "source"}]
    if isinstance(value, Mapping):
        pairs = [[_canon(k), _canon(v)] for k, v in value.items()]
        return ["map", sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))]
    if isinstance(value, set | frozenset):
        return ["set", sorted((_canon(v) for v in value), key=json.dumps)]
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if isinstance(value, ChipRegistry):
        return ["registry", value.chip_set, value.require_issued,
                [f"{c.uid.hex()} {c.value_cents} {c.chip_set!r} {c.issued_to!r}"
                 for c in value]]
    raise TypeError(f"cannot fingerprint a {type(value).__name__}")
