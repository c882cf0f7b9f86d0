"""verify_envelope's fast path (orjson, and one walk for floats and depth) accepts exactly
what the strict path accepts, with the same envelope and the same signed bytes."""

from __future__ import annotations

import base64
import dataclasses
import json
from enum import StrEnum
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_examples import examples
from tests.wire.test_envelope import WALL
from wire.envelope import (
    MAX_DEPTH,
    EnvelopeError,
    _check_form,
    _plain_within_depth,
    _well_formed,
    canonical_json,
    seal,
)
from wire.signing import Signer

TABLE = Signer.from_seed("t1", bytes(range(32)))

# Text that stresses the string rules: quotes, backslashes, brackets and words inside
# strings, control characters, non-ASCII, astral characters, U+2028.
TRICKY_TEXT = st.lists(
    st.sampled_from(['"', "\\", "[", "]", "{", "}", ",", ":", ".", "e", "true", "null",
                     "\\\"", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028", "a", "1"])
    | st.characters(codec="utf-8"),
    max_size=8,
).map("".join)
LEAVES = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | TRICKY_TEXT
          | st.floats(allow_nan=False, allow_infinity=False))
JSON_VALUES = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(TRICKY_TEXT, children, max_size=3),
    max_leaves=24,
)


def nested(depth: int, leaf: Any = 1) -> Any:
    """``depth`` levels of alternating arrays and objects around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def reference(value: Any, depth: int = 1) -> bool:
    """The tree walk: no float anywhere, arrays/objects at most MAX_DEPTH deep."""
    if isinstance(value, float):
        return False
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            return False
        children = value.values() if isinstance(value, dict) else value
        return all(reference(child, depth + 1) for child in children)
    return True


@settings(max_examples=examples(1_500), suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON_VALUES, wrap=st.integers(0, MAX_DEPTH + 2))
def test_the_walk_finds_floats_and_depth_as_the_reference_does(value: Any, wrap: int) -> None:
    document = nested(wrap, {"v": value})
    assert _plain_within_depth(document) == reference(document)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_walk_counts_depth_exactly(depth: int) -> None:
    document = nested(depth, "[[{{")
    assert _plain_within_depth(document) == (depth <= MAX_DEPTH)


@settings(max_examples=examples(1_000), suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON_VALUES)
def test_orjson_writes_canonical_json_for_everything_but_floats(value: Any) -> None:
    try:
        fast = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: the fast path gives way
        return
    if not beyond_orjson(value):
        assert fast == canonical_json(value)


def beyond_orjson(value: Any) -> bool:
    """True if ``value`` holds a float or an integer outside orjson's 64 bits."""
    if isinstance(value, float):
        return True
    if isinstance(value, int) and not isinstance(value, bool):
        return not -(2**63) <= value < 2**64
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return any(beyond_orjson(child) for child in children)
    return False


def sealed_wire(body: dict[str, Any]) -> bytes:
    return seal(venue="casino-1", table="t1", seq=7, wall=WALL, type="hand_settled", body=body,
                boot="b1", mono=42, signer=TABLE).encode()


def strict(raw: bytes) -> tuple[Any, bytes] | None:
    try:
        envelope = _check_form(raw)
    except EnvelopeError:
        return None
    return envelope, envelope.signed_bytes()


MUTATIONS = st.sampled_from(["replace", "insert", "delete", "space"])


@settings(max_examples=examples(1_500), suppress_health_check=[HealthCheck.too_slow])
@given(body=st.dictionaries(TRICKY_TEXT, JSON_VALUES, max_size=4), data=st.data())
def test_the_fast_path_accepts_exactly_what_the_strict_path_accepts(
    body: dict[str, Any], data: st.DataObject
) -> None:
    try:
        wire = sealed_wire(body)
    except (EnvelopeError, ValueError):  # too deep to seal
        return
    for _ in range(3):
        position = data.draw(st.integers(0, len(wire)), label="position")
        how = data.draw(MUTATIONS, label="how")
        if how == "replace" and position < len(wire):
            byte = data.draw(st.sampled_from(b'"\\.e+-0{}[],: \x00\xff'), label="byte")
            wire = wire[:position] + bytes([byte]) + wire[position + 1:]
        elif how == "insert":
            piece = data.draw(st.sampled_from(
                [b"\\", b'"', b"1", b".0", b"e1", b" ", b"[]", b"{}", b",", b"\xc3"]))
            wire = wire[:position] + piece + wire[position:]
        elif how == "delete" and position < len(wire):
            wire = wire[:position] + wire[position + 1:]
        fast = _well_formed(wire)
        if fast is not None:
            assert fast == strict(wire)
        else:
            # The fast path gives way only where the strict path refuses, or for floats
            # and integers beyond 64 bits, which the strict path handles itself.
            assert strict(wire) is None or beyond_orjson(json.loads(wire))


@pytest.mark.parametrize("body", [
    {"x": 1.5}, {"x": 1e16}, {"x": 1e-7}, {"x": 2**64}, {"x": -(2**63) - 1}, {"x": [0.0]},
])
def test_floats_and_huge_integers_go_the_strict_way_and_verify_the_same(
    body: dict[str, Any]
) -> None:
    wire = sealed_wire(body)
    assert _well_formed(wire) is None  # the fast path gives way ...
    envelope, signed = strict(wire) or (None, b"")  # ... and the strict path accepts
    assert envelope is not None and envelope.body == body and signed


@pytest.mark.parametrize("raw", [
    b'{"body":{"a":1,"a":2}}', b'"\\ud800"', b"NaN", b"\xef\xbb\xbf{}", b"1e999", b"[" * 40,
])
def test_what_cannot_be_canonical_is_left_to_the_strict_path(raw: bytes) -> None:
    assert _well_formed(raw) is None


def strict_seal(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """(signed bytes, wire form) as seal made them before its orjson path: json's
    canonical encoding of the body as parsed, then of the fields, then of the envelope."""
    plain = json.loads(canonical_json(dict(body)))
    fields = {"v": 1, "venue": "casino-1", "table": "t1", "seq": 7,
              "ts": "2025-03-01T19:04:05.123Z", "type": "hand_settled", "body": plain,
              "boot": "b1", "mono": 42}
    signed = canonical_json(fields)
    sig = base64.b64encode(TABLE.sign(signed)).decode("ascii")
    return signed, canonical_json({**fields, "sig": sig})


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(body=st.dictionaries(TRICKY_TEXT, JSON_VALUES, max_size=4))
def test_seal_writes_the_bytes_the_strict_encoding_writes(body: dict[str, Any]) -> None:
    try:
        envelope = seal(venue="casino-1", table="t1", seq=7, wall=WALL, type="hand_settled",
                        body=body, boot="b1", mono=42, signer=TABLE)
    except (EnvelopeError, ValueError):  # too deep to seal
        return
    signed, wire = strict_seal(body)
    assert envelope.signed_bytes() == signed
    assert envelope.encode() == wire == canonical_json(envelope.to_json())
    assert strict(wire) == (envelope, signed)


class _Colour(StrEnum):
    RED = "red"


@pytest.mark.parametrize("body", [
    {"t": (1, 2, ("a",))}, {"k": {3: "three", 10: "ten"}}, {"c": _Colour.RED},
    {"x": 0.5}, {"n": 2**70}, {"deep": nested(MAX_DEPTH - 2)},
])
def test_what_orjson_leaves_is_sealed_the_strict_way(body: dict[str, Any]) -> None:
    envelope = seal(venue="casino-1", table="t1", seq=7, wall=WALL, type="hand_settled",
                    body=body, boot="b1", mono=42, signer=TABLE)
    signed, wire = strict_seal(body)
    assert (envelope.signed_bytes(), envelope.encode()) == (signed, wire)
    assert strict(wire) == (envelope, signed)


def test_a_changed_copy_of_a_sealed_envelope_is_encoded_afresh() -> None:
    envelope = seal(venue="casino-1", table="t1", seq=7, wall=WALL, type="hand_settled",
                    body={"a": 1}, boot="b1", mono=42, signer=TABLE)
    changed = dataclasses.replace(envelope, seq=8)
    assert changed.encode() == canonical_json(changed.to_json()) != envelope.encode()
