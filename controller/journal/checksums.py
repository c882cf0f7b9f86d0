"""The journal's checksums: the canonical text a JSON value is stored as, and the SHA-256 hash
chain over each journal record and outbox message (docs/journal.md). Changing any byte of
what these hash makes every existing journal fail verification."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from controller.journal.records import JournalError
from wire.envelope import canonical_json as canonical_json_bytes
from wire.plain_json import plain_canonical_json

__all__ = ["GENESIS", "canonical_json", "outbox_checksum", "outbox_row_checksum",
           "record_checksum", "record_row_checksum", "stored_flag", "stored_json"]

GENESIS: Final = "0" * 64  # the "previous checksum" of the first row of each chain
_RECORD_DOMAIN: Final = "showdown.journal.v1"
_OUTBOX_DOMAIN: Final = "showdown.outbox.v1"


_SCALARS: Final = frozenset({str, int, bool, type(None)})


def canonical_json(value: Any, *, what: str = "value") -> str:
    """Sorted keys, no spaces, UTF-8 text, no NaN: the one text a JSON value is stored as
    (the envelope's canonical JSON, as text)."""
    raw = plain_canonical_json(value)
    return raw.decode("utf-8") if raw is not None else _strict_text(value, what)


def stored_json(value: Any, *, what: str = "value") -> tuple[str, Any]:
    """The text `canonical_json` gives and the value read back from it (what a reader of
    the stored row gets: tuples as lists, and so on)."""
    raw = plain_canonical_json(value)
    if raw is not None:  # plain data: orjson reads it back exactly (no float, 64-bit ints)
        return raw.decode("utf-8"), orjson.loads(raw)
    text = _strict_text(value, what)
    return text, json.loads(text)


def _strict_text(value: Any, what: str) -> str:
    try:
        return canonical_json_bytes(value).decode("utf-8")
    except (TypeError, ValueError) as e:
        raise JournalError(f"{what} is not plain JSON data: {e}") from e


def _digest(material: Sequence[object]) -> str:
    if all(type(m) in _SCALARS for m in material):  # a row as stored: orjson's text is
        try:                                         # the strict encoder's
            raw = orjson.dumps(list(material))
        except orjson.JSONEncodeError:  # text that is not UTF-8 (a lone surrogate)
            pass
        else:
            return hashlib.sha256(raw).hexdigest()
    text = json.dumps(list(material), separators=(",", ":"), ensure_ascii=False,
                      default=_foreign)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _foreign(value: object) -> object:
    """A stored value no valid row holds (a BLOB, say): hashed as its repr, so it mismatches."""
    return {"foreign": repr(value)}


def record_checksum(*, seq: int, kind: str, payload: str, wall: str, mono_ns: int, boot_id: str,
                    synced: bool | None, prev: str) -> str:
    """SHA-256 (hex) of a journal record's stored content and the previous record's checksum."""
    return _digest([_RECORD_DOMAIN, seq, kind, payload, wall, mono_ns, boot_id, synced, prev])


def outbox_checksum(*, seq: int, record_seq: int, topic_suffix: str, type: str, body: str,
                    retain: bool, wall: str, mono_ns: int, boot_id: str, synced: bool | None,
                    prev: str) -> str:
    """SHA-256 (hex) of an outbox message's stored content and the previous message's checksum."""
    return _digest([_OUTBOX_DOMAIN, seq, record_seq, topic_suffix, type, body, retain, wall,
                    mono_ns, boot_id, synced, prev])


def stored_flag(value: object) -> object:
    """A stored 0/1/NULL flag as the checksum saw it; anything else as itself (a mismatch)."""
    if value is None or (isinstance(value, int) and value in (0, 1)):
        return None if value is None else bool(value)
    return value


def record_row_checksum(row: Mapping[str, Any], prev: object) -> str:
    """The checksum of a journal row as stored (raw values: damage shows as a mismatch)."""
    return _digest([_RECORD_DOMAIN, row["seq"], row["kind"], row["payload"], row["wall"],
                    row["mono_ns"], row["boot_id"], stored_flag(row["synced"]), prev])


def outbox_row_checksum(row: Mapping[str, Any], prev: object) -> str:
    """The checksum of an outbox row as stored (raw values: damage shows as a mismatch)."""
    return _digest([_OUTBOX_DOMAIN, row["seq"], row["record_seq"], row["topic_suffix"],
                    row["type"], row["body"], stored_flag(row["retain"]), row["wall"],
                    row["mono_ns"], row["boot_id"], stored_flag(row["synced"]), prev])
