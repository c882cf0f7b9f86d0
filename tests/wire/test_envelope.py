"""The signed envelope: canonical form, signing, and every rejection reason of verify_envelope."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from tests.hypothesis_examples import examples
from wire.envelope import (
    ENVELOPE_FIELDS,
    MAX_ENVELOPE_BYTES,
    REJECTION_REASONS,
    BadSignature,
    DuplicateKey,
    EnvelopeError,
    ExtraField,
    InvalidValue,
    MissingField,
    NotAnObject,
    NotCanonical,
    NotJson,
    TooLarge,
    UnknownSigner,
    UnknownVersion,
    WrongType,
    canonical_json,
    envelope_for,
    format_ts,
    parse_ts,
    seal,
    verify_envelope,
)
from wire.outbox import OutboxMessage
from wire.signing import KeyRing, Signer

SEED = bytes(range(32))
TABLE = Signer.from_seed("t1", SEED)
RING = KeyRing([TABLE.public_key])
WALL = datetime(2025, 3, 1, 19, 4, 5, 123999, tzinfo=UTC)


def sealed(**changes: Any) -> bytes:
    fields: dict[str, Any] = {
        "venue": "casino-1", "table": "t1", "seq": 7, "wall": WALL, "type": "hand_settled",
        "body": {"total_cents": 2500, "seat": 1, "name": "Zoë"}, "boot": "b1", "mono": 42,
        "signer": TABLE,
    }
    fields.update(changes)
    return seal(**fields).encode()


def fields_of(raw: bytes) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(raw)
    return result


def test_canonical_content_and_signature_by_hand() -> None:
    # Keys sorted by code point, no spaces, UTF-8 unescaped; ts truncated to milliseconds.
    content = (
        '{"body":{"name":"Zoë","seat":1,"total_cents":2500},"boot":"b1","mono":42,"seq":7,'
        '"table":"t1","ts":"2025-03-01T19:04:05.123Z","type":"hand_settled","v":1,'
        '"venue":"casino-1"}'
    ).encode()
    signature = SigningKey(SEED).sign(content).signature  # PyNaCl directly, not our wrapper
    sig = base64.b64encode(signature).decode()
    wire = sealed()
    assert wire == (
        '{"body":{"name":"Zoë","seat":1,"total_cents":2500},"boot":"b1","mono":42,"seq":7,'
        f'"sig":"{sig}","table":"t1","ts":"2025-03-01T19:04:05.123Z","type":"hand_settled",'
        '"v":1,"venue":"casino-1"}'
    ).encode()
    envelope = verify_envelope(wire, RING)
    assert envelope.signed_bytes() == content
    assert (envelope.venue, envelope.table, envelope.seq, envelope.type) == (
        "casino-1", "t1", 7, "hand_settled"
    )
    assert envelope.signer == "t1"
    assert envelope.wall == datetime(2025, 3, 1, 19, 4, 5, 123000, tzinfo=UTC)
    assert envelope.body == {"total_cents": 2500, "seat": 1, "name": "Zoë"}


def test_envelope_for_an_outbox_message() -> None:
    message = OutboxMessage(
        seq=12, topic_suffix="scores", type="score_recorded", body={"entry": "E-1", "cents": 9},
        wall=WALL, mono_ns=5_000, boot_id="3f2a-boot", delivered=False,
    )
    envelope = envelope_for(message, venue="casino-1", table="t1", signer=TABLE)
    back = verify_envelope(envelope.encode(), RING)
    assert back == envelope
    assert (back.seq, back.type, back.mono, back.boot, back.ts) == (
        12, "score_recorded", 5_000, "3f2a-boot", "2025-03-01T19:04:05.123Z"
    )


def test_sealing_for_another_sender_is_refused() -> None:
    with pytest.raises(ValueError, match="key id must be the sender"):
        sealed(table="t2")


def test_sealing_checks_fields() -> None:
    with pytest.raises(InvalidValue, match="seq must not be negative"):
        sealed(seq=-1)
    with pytest.raises(InvalidValue, match="type 'Hand Settled'"):
        sealed(type="Hand Settled")


def test_tuples_in_a_body_are_sealed_as_the_lists_a_receiver_sees() -> None:
    wire = sealed(body={"cards": ("Ah", "Kd")})
    assert verify_envelope(wire, RING).body == {"cards": ["Ah", "Kd"]}


def test_ts_format() -> None:
    assert format_ts(WALL) == "2025-03-01T19:04:05.123Z"
    plus2 = timezone(timedelta(hours=2))
    assert format_ts(datetime(2025, 3, 1, 21, 0, 0, 5000, tzinfo=plus2)) == (
        "2025-03-01T19:00:00.005Z"
    )
    with pytest.raises(ValueError, match="no time zone"):
        format_ts(datetime(2025, 3, 1))
    assert parse_ts("2025-03-01T19:00:00.005Z") == datetime(
        2025, 3, 1, 19, 0, 0, 5000, tzinfo=UTC
    )
    for bad in ("2025-03-01T19:00:00Z", "2025-03-01T19:00:00.005+00:00",
                "2025-02-30T19:00:00.005Z", "2025-03-01 19:00:00.005Z"):
        with pytest.raises(ValueError, match="not an RFC 3339"):
            parse_ts(bad)


# --- every rejection reason ----------------------------------------------------------------


def nested(levels: int) -> dict[str, Any]:
    """A body whose innermost array is ``levels`` levels below it."""
    value: Any = [1]
    for _ in range(levels - 1):
        value = [value]
    return {"x": value}


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def good() -> dict[str, Any]:
    return fields_of(sealed())


def changed(**changes: Any) -> bytes:
    obj = good()
    obj.update(changes)
    return canonical_json(obj)


def without(name: str) -> bytes:
    obj = good()
    del obj[name]
    return canonical_json(obj)


REJECTIONS: list[tuple[str, bytes, type[EnvelopeError], str]] = [
    ("too large", b"{" + b" " * MAX_ENVELOPE_BYTES + b"}", TooLarge, "bytes, at most"),
    ("not utf-8", b"\xff\xfe{}", NotJson, "not UTF-8"),
    ("truncated", sealed()[:-1], NotJson, "line 1"),
    ("empty", b"", NotJson, "Expecting value"),
    ("NaN", b'{"v":NaN}', NotJson, "NaN is not a JSON number"),
    ("overflowing number", changed(body={"x": 1.5e300}).replace(b"e+300", b"e+999"), NotJson,
        "number 1.5e\\+999 is out of range"),
    ("deep", b"[" * 100_000 + b"]" * 100_000, NotJson, "nested too deeply"),
    ("deep body", changed(body=nested(31)), NotJson, "nested more than 32 levels deep"),
    ("duplicate key", b'{"v":1,"v":1}', DuplicateKey, "'v' appears twice"),
    ("nested duplicate", changed()[:-1] + b',"body":{}}', DuplicateKey, "'body' appears twice"),
    ("array", b"[1,2]", NotAnObject, "an array"),
    ("string", b'"hello"', NotAnObject, "text"),
    ("null", b"null", NotAnObject, "null"),
    ("no version", without("v"), MissingField, "v \\(the envelope version\\)"),
    ("version text", changed(v="1"), WrongType, "v must be an integer"),
    ("version bool", changed(v=True), WrongType, "v must be an integer"),
    ("version 2", changed(v=2), UnknownVersion, "version 2 is not supported"),
    ("version 0", changed(v=0), UnknownVersion, "version 0"),
    ("no sig", without("sig"), MissingField, "sig is missing"),
    ("no seq", without("seq"), MissingField, "seq is missing"),
    ("extra field", changed(kid="desk-1"), ExtraField, "'kid' not allowed"),
    ("seq text", changed(seq="7"), WrongType, "seq must be an integer, got text"),
    ("seq float", changed(seq=7.0), WrongType, "seq must be an integer, got a number"),
    ("seq bool", changed(seq=True), WrongType, "seq must be an integer, got a boolean"),
    ("mono null", changed(mono=None), WrongType, "mono must be an integer, got null"),
    ("body array", changed(body=[1]), WrongType, "body must be an object, got an array"),
    ("venue number", changed(venue=5), WrongType, "venue must be text"),
    ("sig number", changed(sig=5), WrongType, "sig must be text"),
    ("venue upper", changed(venue="Casino"), InvalidValue, "venue 'Casino'"),
    ("table slash", changed(table="t1/#"), InvalidValue, "table 't1/#'"),
    ("seq negative", changed(seq=-1), InvalidValue, "seq must not be negative"),
    ("mono negative", changed(mono=-5), InvalidValue, "mono must not be negative"),
    ("ts seconds", changed(ts="2025-03-01T19:04:05Z"), InvalidValue, "ts '2025-03-01T19:04:05Z'"),
    ("ts offset", changed(ts="2025-03-01T19:04:05.123+00:00"), InvalidValue, "RFC 3339"),
    ("ts impossible", changed(ts="2025-02-30T19:04:05.123Z"), InvalidValue, "RFC 3339"),
    ("type empty", changed(type=""), InvalidValue, "type ''"),
    ("boot empty", changed(boot=""), InvalidValue, "boot ''"),
    ("surrogate in body", sealed().replace("Zoë".encode(), b"\\ud800"), InvalidValue,
        "unpaired UTF-16 surrogate"),
    ("spaces", json.dumps(good(), sort_keys=True).encode(), NotCanonical, "canonical form"),
    ("unsorted", json.dumps(dict(reversed(good().items())), separators=(",", ":"),
                            ensure_ascii=False).encode(),
        NotCanonical, "canonical form"),
    ("ascii escapes", json.dumps(good(), sort_keys=True, separators=(",", ":")).encode(),
        NotCanonical, "canonical form"),
    ("trailing newline", sealed() + b"\n", NotCanonical, "canonical form"),
    ("unknown table", sealed(table="t9", signer=Signer.from_seed("t9", SEED)), UnknownSigner,
        "no public key is enrolled for 't9'"),
    ("sig not base64", changed(sig="not base64!"), BadSignature, "not base64"),
    ("sig short", changed(sig=base64.b64encode(bytes(63)).decode()), BadSignature,
        "63 bytes, not 64"),
    ("sig of other content", changed(seq=8), BadSignature, "does not match"),
    ("sig zero", changed(sig=base64.b64encode(bytes(64)).decode()), BadSignature,
        "does not match"),
    ("other key, same id", sealed(signer=Signer.generate("t1")), BadSignature, "does not match"),
]


@pytest.mark.parametrize(
    ("raw", "error", "detail"),
    [pytest.param(raw, error, detail, id=name) for name, raw, error, detail in REJECTIONS],
)
def test_rejections(raw: bytes, error: type[EnvelopeError], detail: str) -> None:
    with pytest.raises(error, match=detail) as caught:
        verify_envelope(raw, RING)
    assert type(caught.value) is error
    assert caught.value.reason in REJECTION_REASONS
    assert str(caught.value).startswith(caught.value.reason + ": ")


def test_every_reason_has_a_test_and_reasons_are_distinct() -> None:
    assert len(set(REJECTION_REASONS)) == len(REJECTION_REASONS)
    assert {error.reason for _, _, error, _ in REJECTIONS} == set(REJECTION_REASONS)


def test_nesting_limit_is_the_same_for_sealing_and_verifying() -> None:
    # Envelope (1) > body (2) > "x" array (3) ... : 30 levels of arrays reach level 32.
    at_limit = sealed(body=nested(30))
    assert verify_envelope(at_limit, RING).body == nested(30)
    with pytest.raises(NotJson, match="nested more than 32"):
        sealed(body=nested(31))


def test_sealing_refuses_what_receivers_would_reject_as_too_large() -> None:
    with pytest.raises(TooLarge, match="hand_settled seq 7 would be"):
        sealed(body={"x": "a" * MAX_ENVELOPE_BYTES})


def test_non_canonical_base64_signature_is_rejected() -> None:
    # 64 bytes take 86 base64 digits + "=="; the last digit carries 4 unused bits, so
    # another digit decodes to the same signature. Only the canonical spelling is accepted.
    obj = good()
    sig: str = obj["sig"]
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".index(sig[-3])
    alias = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[last ^ 1]
    obj["sig"] = sig[:-3] + alias + "=="
    assert base64.b64decode(obj["sig"]) == base64.b64decode(sig)
    with pytest.raises(BadSignature, match="canonical base64"):
        verify_envelope(canonical_json(obj), RING)


# --- properties ----------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)
BODIES = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6)
IDS = st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True)


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES, venue=IDS, seq=st.integers(0, 2**63), mono=st.integers(0, 2**63))
def test_any_json_body_round_trips_and_verifies(
    body: dict[str, Any], venue: str, seq: int, mono: int
) -> None:
    assume(depth(body) <= 30)
    wire = sealed(body=body, venue=venue, seq=seq, mono=mono)
    envelope = verify_envelope(wire, RING)
    assert envelope.body == body
    assert (envelope.venue, envelope.seq, envelope.mono) == (venue, seq, mono)
    assert envelope.encode() == wire  # stable: re-encoding gives the same bytes


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES, data=st.data())
def test_any_single_byte_change_is_rejected(body: dict[str, Any], data: st.DataObject) -> None:
    assume(depth(body) <= 30)
    wire = sealed(body=body)
    position = data.draw(st.integers(0, len(wire) - 1), label="position")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != wire[position]), label="byte")
    mutated = wire[:position] + bytes([byte]) + wire[position + 1:]
    with pytest.raises(EnvelopeError):
        verify_envelope(mutated, RING)


@settings(max_examples=examples(100))
@given(body=BODIES, data=st.data())
def test_any_single_byte_change_of_the_signed_content_fails_the_signature(
    body: dict[str, Any], data: st.DataObject
) -> None:
    assume(depth(body) <= 30)
    envelope = seal(venue="casino-1", table="t1", seq=1, wall=WALL, type="t", body=body,
                    boot="b", mono=0, signer=TABLE)
    content = envelope.signed_bytes()
    signature = base64.b64decode(envelope.sig)
    position = data.draw(st.integers(0, len(content) - 1), label="position")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != content[position]), label="byte")
    assert not TABLE.public_key.verify(
        content[:position] + bytes([byte]) + content[position + 1:], signature
    )


@settings(max_examples=examples(300))
@given(raw=st.binary(max_size=400))
def test_arbitrary_bytes_only_ever_raise_envelope_errors(raw: bytes) -> None:
    with pytest.raises(EnvelopeError):
        verify_envelope(raw, RING)


@settings(max_examples=examples(300))
@given(overrides=st.dictionaries(st.sampled_from([*sorted(ENVELOPE_FIELDS), "x"]),
                                 JSON_VALUES, min_size=1, max_size=4),
       dropped=st.sets(st.sampled_from(sorted(ENVELOPE_FIELDS)), max_size=2))
def test_any_other_field_values_only_ever_raise_envelope_errors(
    overrides: dict[str, Any], dropped: set[str]
) -> None:
    original = good()
    value = {k: v for k, v in {**original, **overrides}.items() if k not in dropped}
    assume(value != original)
    with pytest.raises(EnvelopeError):
        verify_envelope(canonical_json(value), RING)
