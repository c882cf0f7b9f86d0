"""The signed message envelope every showdown MQTT message travels in (ARCHITECTURE.md).

    {"v": 1, "venue": "...", "table": "...", "seq": 17, "ts": "2025-03-01T19:04:05.123Z",
     "type": "hand_settled", "body": {...}, "boot": "...", "mono": 123456789, "sig": "..."}

``sig`` is the sender's Ed25519 signature, in base64, over the canonical JSON of every other
field: ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` in UTF-8.
The message itself is sent in the same canonical form (with ``sig``), and a receiver accepts
only that form, so every message has exactly one byte representation.
``table`` names the sender and is the key id its signature is checked against: a table's own
id for its messages, the desk's (or leaderboard's) key id for commands, which then name the
table they are for in ``body["table"]``. ``seq`` rises by one per sender; ``seq`` 0 is
reserved for unsequenced notices (availability, command rejections) that are not part of the
sequence and never fill a gap.

``verify_envelope`` raises one distinct ``EnvelopeError`` subclass per rejection reason; its
``reason`` code is what consumers count.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

import orjson

from wire.outbox import OutboxItem
from wire.plain_json import PASSTHROUGH
from wire.signing import SIGNATURE_BYTES, KeyRing, Signer
from wire.topics import ID_PATTERN

__all__ = [
    "ENVELOPE_FIELDS",
    "MAX_DEPTH",
    "MAX_ENVELOPE_BYTES",
    "REJECTION_REASONS",
    "VERSION",
    "BadSignature",
    "DuplicateKey",
    "Envelope",
    "EnvelopeError",
    "ExtraField",
    "InvalidValue",
    "MissingField",
    "NotAnObject",
    "NotCanonical",
    "NotJson",
    "TooLarge",
    "UnknownSigner",
    "UnknownVersion",
    "WrongType",
    "canonical_json",
    "envelope_for",
    "format_ts",
    "parse_ts",
    "seal",
    "verify_envelope",
]

VERSION: Final = 1
ENVELOPE_FIELDS: Final = frozenset(
    {"v", "venue", "table", "seq", "ts", "type", "body", "boot", "mono", "sig"}
)
MAX_ENVELOPE_BYTES: Final = 256 * 1024
MAX_DEPTH: Final = 32  # nesting of arrays/objects in a message, the envelope itself included
_TS_PATTERN: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_TYPE_PATTERN: Final = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_BOOT_PATTERN: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")


# --- rejection reasons ---------------------------------------------------------------------


class EnvelopeError(ValueError):
    """A message that is not a valid, correctly signed envelope; ``reason`` names why."""

    reason: ClassVar[str] = "invalid"

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{self.reason}: {detail}")


class TooLarge(EnvelopeError):
    """More bytes than MAX_ENVELOPE_BYTES."""

    reason = "too_large"


class NotJson(EnvelopeError):
    """Not UTF-8 JSON (or JSON with NaN/Infinity, or nested beyond reason)."""

    reason = "not_json"


class DuplicateKey(EnvelopeError):
    """A JSON object names the same key twice (parsers disagree on which one wins)."""

    reason = "duplicate_key"


class NotAnObject(EnvelopeError):
    """Valid JSON, but not an object."""

    reason = "not_object"


class UnknownVersion(EnvelopeError):
    """An envelope version (``v``) this code does not know."""

    reason = "unknown_version"


class MissingField(EnvelopeError):
    """A required envelope field is absent."""

    reason = "missing_field"


class ExtraField(EnvelopeError):
    """A field that is not part of the envelope."""

    reason = "extra_field"


class WrongType(EnvelopeError):
    """A field of the wrong JSON type."""

    reason = "wrong_type"


class InvalidValue(EnvelopeError):
    """A field of the right type whose value is not allowed (bad id, negative seq, bad ts)."""

    reason = "invalid_value"


class NotCanonical(EnvelopeError):
    """Well-formed, but not byte-for-byte the canonical JSON of its own content.

    One byte form per message: what is stored and hashed is exactly what was signed.
    """

    reason = "not_canonical"


class UnknownSigner(EnvelopeError):
    """The sender (``table``) has no enrolled public key."""

    reason = "unknown_signer"


class BadSignature(EnvelopeError):
    """The signature is malformed or does not match the content and the sender's key."""

    reason = "bad_signature"


REJECTION_REASONS: Final = tuple(
    cls.reason
    for cls in (
        TooLarge, NotJson, DuplicateKey, NotAnObject, UnknownVersion, MissingField,
        ExtraField, WrongType, InvalidValue, NotCanonical, UnknownSigner, BadSignature,
    )
)


# --- canonical form ------------------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 JSON of ``value``: sorted keys, no spaces, no NaN/Infinity."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def format_ts(wall: datetime) -> str:
    """RFC 3339 UTC with milliseconds and ``Z``, e.g. ``2025-03-01T19:04:05.123Z``."""
    if wall.tzinfo is None or wall.utcoffset() is None:
        raise ValueError(f"wall clock time {wall!r} has no time zone; give it in UTC")
    utc = wall.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_ts(text: str) -> datetime:
    """Inverse of format_ts (an aware UTC datetime); ValueError if not in exactly that form."""
    if not _TS_PATTERN.fullmatch(text):
        raise ValueError(f"{text!r} is not an RFC 3339 UTC time with milliseconds and 'Z'")
    try:
        if text.isascii():
            # The pattern fixes each field's width; the constructor checks the ranges as
            # strptime does, at a fraction of its cost (one call per received message).
            return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]),
                            int(text[11:13]), int(text[14:16]), int(text[17:19]),
                            int(text[20:23]) * 1000, tzinfo=UTC)
        parsed = datetime.strptime(text[:-1] + "000", "%Y-%m-%dT%H:%M:%S.%f")
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 UTC time (no such date or time)") from None
    return parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """A signed message: a verified one (from verify_envelope) or a freshly sealed one."""

    venue: str
    table: str
    seq: int
    ts: str
    type: str
    body: Mapping[str, Any]
    boot: str
    mono: int
    sig: str
    v: int = VERSION
    # The wire form as `seal` made it (the same bytes encode() would compute again); not an
    # init field, so `dataclasses.replace` starts a changed envelope without it.
    _wire: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def signer(self) -> str:
        """The key id the signature belongs to (the sending table or desk)."""
        return self.table

    @property
    def wall(self) -> datetime:
        """``ts`` as an aware UTC datetime."""
        return parse_ts(self.ts)

    def content(self) -> dict[str, Any]:
        """Every field except ``sig``: what is signed."""
        return {
            "v": self.v, "venue": self.venue, "table": self.table, "seq": self.seq,
            "ts": self.ts, "type": self.type, "body": self.body, "boot": self.boot,
            "mono": self.mono,
        }

    def signed_bytes(self) -> bytes:
        """The canonical JSON of ``content()``."""
        return canonical_json(self.content())

    def to_json(self) -> dict[str, Any]:
        """The whole envelope as a JSON object."""
        return {**self.content(), "sig": self.sig}

    def encode(self) -> bytes:
        """The wire form: canonical JSON of the whole envelope (kept from `seal`)."""
        if self._wire is not None:
            return self._wire
        return canonical_json(self.to_json())


def seal(
    *,
    venue: str,
    table: str,
    seq: int,
    wall: datetime,
    type: str,
    body: Mapping[str, Any],
    boot: str,
    mono: int,
    signer: Signer,
) -> Envelope:
    """Build and sign an envelope; ``signer.key_id`` must be ``table`` (the sender).

    Refuses (EnvelopeError) what a receiver would reject: bad field values, nesting deeper
    than MAX_DEPTH, more than MAX_ENVELOPE_BYTES.
    """
    if signer.key_id != table:
        raise ValueError(
            f"signing key {signer.key_id!r} cannot sign for {table!r}: the key id must be "
            "the sender's id"
        )
    fields: dict[str, Any] = {
        "v": VERSION, "venue": venue, "table": table, "seq": seq, "ts": format_ts(wall),
        "type": type, "body": None, "boot": boot, "mono": mono,
    }
    # What the receiver will parse: tuples become lists, and so on.
    plain_body = _plain_body(body)
    if plain_body is None:  # a float, a key that is not text, deep nesting: the strict way
        plain_body = json.loads(canonical_json(dict(body)))
        fields["body"] = plain_body
        _check_fields(fields)
        _check_depth(fields)
        signed = canonical_json(fields)
    else:
        fields["body"] = plain_body
        _check_fields(fields)
        signed = orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    sig = base64.b64encode(signer.sign(signed)).decode("ascii")
    envelope = Envelope(
        venue=venue, table=table, seq=seq, ts=fields["ts"], type=type, body=plain_body,
        boot=boot, mono=mono, sig=sig,
    )
    # The wire form is the signed bytes with the signature put in its sorted place (after
    # seq, before table: the fields after it hold no quotes once checked).
    head, _, tail = signed.rpartition(b',"table":')
    wire = head + b',"sig":' + canonical_json(sig) + b',"table":' + tail
    if len(wire) > MAX_ENVELOPE_BYTES:
        raise TooLarge(f"{type} seq {seq} would be {len(wire)} bytes, at most"
                       f" {MAX_ENVELOPE_BYTES}")
    object.__setattr__(envelope, "_wire", wire)
    return envelope




def _plain_body(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The body as a receiver parses it, through orjson (whose encoding of plain JSON is
    canonical_json's, byte for byte); None for anything else (a float, a key that is not
    text, a subclass, a value JSON does not know, nesting deeper than MAX_DEPTH), which
    `seal` then takes the strict way, as before."""
    try:
        plain = orjson.loads(orjson.dumps(dict(body), option=PASSTHROUGH))
    except (orjson.JSONEncodeError, orjson.JSONDecodeError):
        return None
    return plain if _plain_within_depth(plain, 2) else None


def envelope_for(message: OutboxItem, *, venue: str, table: str, signer: Signer) -> Envelope:
    """The signed envelope of an outbox message."""
    return seal(
        venue=venue, table=table, seq=message.seq, wall=message.wall, type=message.type,
        body=message.body, boot=message.boot_id, mono=message.mono_ns, signer=signer,
    )


# --- verification --------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # e.g. 1e999: Python would read it as infinity
        raise NotJson(f"number {text[:40]} is out of range")
    return value


def _check_depth(value: Any) -> None:
    """NotJson if arrays/objects nest deeper than MAX_DEPTH (the envelope is level 1)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise NotJson(f"nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


def _parse(raw: bytes) -> Any:
    if len(raw) > MAX_ENVELOPE_BYTES:
        raise TooLarge(f"{len(raw)} bytes, at most {MAX_ENVELOPE_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotJson(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                           parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise NotJson(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise NotJson("nested too deeply") from None
    except EnvelopeError:
        raise
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise NotJson(str(exc)) from None
    _check_depth(value)
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES: Final[dict[str, tuple[str, Any]]] = {
    "venue": ("text", str), "table": ("text", str), "ts": ("text", str),
    "type": ("text", str), "boot": ("text", str), "sig": ("text", str),
    "body": ("an object", dict),
}


def _check_fields(obj: Mapping[str, Any]) -> None:
    """Types, then values, of every field but ``v`` and ``sig``'s content."""
    for name in sorted(obj):
        value = obj[name]
        if name in ("seq", "mono", "v"):
            if not _is_int(value):
                raise WrongType(f"{name} must be an integer, got {_json_type(value)}")
        elif name in _TYPES:
            label, kind = _TYPES[name]
            if not isinstance(value, kind):
                raise WrongType(f"{name} must be {label}, got {_json_type(value)}")
    for name in ("venue", "table"):
        if not ID_PATTERN.fullmatch(obj[name]):
            raise InvalidValue(f"{name} {obj[name]!r} is not an id of a-z, 0-9 and '-'")
    for name in ("seq", "mono"):
        if obj[name] < 0:
            raise InvalidValue(f"{name} must not be negative, got {obj[name]}")
    try:
        parse_ts(obj["ts"])
    except ValueError:
        raise InvalidValue(
            f"ts {obj['ts']!r} is not an RFC 3339 UTC time with milliseconds and 'Z'"
        ) from None
    if not _TYPE_PATTERN.fullmatch(obj["type"]):
        raise InvalidValue(f"type {obj['type']!r} is not a lower-case message type name")
    if not _BOOT_PATTERN.fullmatch(obj["boot"]):
        raise InvalidValue(f"boot {obj['boot']!r} is not a boot id")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "an array"
    return "an object"


def verify_envelope(raw: bytes, keyring: KeyRing) -> Envelope:
    """Parse and check a received message; raises the EnvelopeError naming what is wrong.

    Checks, in order: size, UTF-8 JSON, duplicate keys, object, version, missing and extra
    fields, field types, field values, canonical form, enrolled signer, signature.
    """
    checked = _well_formed(raw)
    if checked is None:
        envelope = _check_form(raw)  # raises the error naming the first problem
        signed = envelope.signed_bytes()
    else:
        envelope, signed = checked
    key = keyring.get(envelope.signer)
    if key is None:
        raise UnknownSigner(f"no public key is enrolled for {envelope.signer!r}")
    try:
        signature = base64.b64decode(envelope.sig.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise BadSignature("sig is not base64") from None
    if len(signature) != SIGNATURE_BYTES:
        raise BadSignature(f"sig is {len(signature)} bytes, not {SIGNATURE_BYTES}")
    if base64.b64encode(signature).decode("ascii") != envelope.sig:
        raise BadSignature("sig is not in canonical base64")
    if not key.verify(signed, signature):
        raise BadSignature(f"signature does not match the content and {envelope.signer!r}'s key")
    return envelope


def _check_form(raw: bytes) -> Envelope:
    """Every check before the signer's, in the documented order; the envelope if all pass."""
    obj = _parse(raw)
    if not isinstance(obj, dict):
        raise NotAnObject(f"the message is {_json_type(obj)}, not an object")
    if "v" not in obj:
        raise MissingField("v (the envelope version) is missing")
    if not _is_int(obj["v"]):
        raise WrongType(f"v must be an integer, got {_json_type(obj['v'])}")
    if obj["v"] != VERSION:
        raise UnknownVersion(f"envelope version {obj['v']} is not supported (only {VERSION})")
    missing = sorted(ENVELOPE_FIELDS - obj.keys())
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise MissingField(f"{', '.join(missing)} {verb} missing")
    extra = sorted(obj.keys() - ENVELOPE_FIELDS)
    if extra:
        raise ExtraField(", ".join(repr(name) for name in extra) + " not allowed")
    _check_fields(obj)
    envelope = _envelope_of(obj)
    try:
        canonical = envelope.encode()
    except UnicodeEncodeError:  # a lone surrogate (\ud800) in some string
        raise InvalidValue("text holds an unpaired UTF-16 surrogate") from None
    if canonical != raw:
        raise NotCanonical(
            "the message is not in canonical form (keys sorted, no spaces, UTF-8 unescaped)"
        )
    return envelope


def _envelope_of(obj: Mapping[str, Any]) -> Envelope:
    return Envelope(
        venue=obj["venue"], table=obj["table"], seq=obj["seq"], ts=obj["ts"],
        type=obj["type"], body=obj["body"], boot=obj["boot"], mono=obj["mono"], sig=obj["sig"],
    )


_CONTAINERS: Final = (dict, list)


def _plain_within_depth(value: Any, depth: int = 1) -> bool:
    """False if below ``value`` (a parsed dict or list at ``depth``) there is a float, or
    arrays/objects nest deeper than MAX_DEPTH."""
    for child in value.values() if type(value) is dict else value:
        kind = type(child)
        if kind is float:
            return False
        if kind in _CONTAINERS and (
            depth >= MAX_DEPTH or not _plain_within_depth(child, depth + 1)
        ):
            return False
    return True


def _well_formed(raw: bytes) -> tuple[Envelope, bytes] | None:
    """The fast path of _check_form: (envelope, signed bytes) of a message that passes every
    check before the signer's, else None (and _check_form then names the problem).

    A message that passes here passes _check_form with the same envelope. orjson parses and
    re-encodes; its encoding of what JSON parses to (objects with text keys, arrays, text,
    integers, true, false, null) is canonical_json's, byte for byte, with floats left to
    _check_form (the two spell some exponents differently); tests/controller/
    test_envelope_fast_path.py checks this. Whatever cannot be canonical fails here: a
    duplicate key parses to fewer keys than the text has, an integer beyond 64 bits parses to
    a float, NaN, a lone surrogate and bytes that are not UTF-8 do not parse, and the byte
    comparison with the canonical encoding comes last.
    """
    if len(raw) > MAX_ENVELOPE_BYTES:
        return None
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(parsed) is not dict or parsed.keys() != ENVELOPE_FIELDS:
        return None
    obj: dict[str, Any] = parsed
    version = obj["v"]
    if type(version) is not int or version != VERSION:
        return None
    try:
        _check_fields(obj)
    except EnvelopeError:
        return None
    envelope = _envelope_of(obj)
    try:
        canonical = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None
    if canonical != raw or not _plain_within_depth(obj):
        return None
    # What is signed is the canonical JSON of every field but sig: the same bytes without
    # ',"sig":"..."'. The fields after sig (table, ts, type, v, venue) hold no quotes once
    # checked, so the last ',"sig":' is the envelope's own.
    pair = b',"sig":' + canonical_json(envelope.sig)
    at = raw.rfind(pair)
    end = at + len(pair)
    if at < 0 or not raw.startswith(b',"table":"', end):
        return None
    return envelope, raw[:at] + raw[end:]
