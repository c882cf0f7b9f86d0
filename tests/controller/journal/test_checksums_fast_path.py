"""The journal's canonical text and checksum material through orjson give the strict
encoder's bytes exactly, and whatever orjson cannot give that way (a float, a key that is
not text, a subclass, a huge integer, a lone surrogate) takes the strict way as before."""

from __future__ import annotations

import hashlib
import json
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal.checksums import _digest, canonical_json, record_checksum, stored_json
from controller.journal.records import JournalError
from tests.hypothesis_examples import examples
from tests.wire.test_envelope_fast_path import JSON_VALUES, TRICKY_TEXT, nested
from wire.envelope import canonical_json as strict_bytes


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


def strict_text(value: Any) -> str | None:
    """The text the strict encoder gives (None where it refuses the value)."""
    try:
        return strict_bytes(value).decode("utf-8")
    except (TypeError, ValueError):
        return None


def strict_digest(material: list[Any]) -> str:
    text = json.dumps(material, separators=(",", ":"), ensure_ascii=False,
                      default=lambda v: {"foreign": repr(v)})
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def fast_or_error(value: Any) -> str | None:
    try:
        return canonical_json(value)
    except JournalError:
        return None


VALUES = JSON_VALUES | st.tuples(JSON_VALUES, JSON_VALUES)
OBJECTS = st.dictionaries(TRICKY_TEXT, VALUES, max_size=4)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OBJECTS)
def test_the_stored_text_of_any_object_is_the_strict_text(value: dict[str, Any]) -> None:
    assert fast_or_error(value) == strict_text(value)


@pytest.mark.parametrize("value", [
    {"f": 1.0}, {"f": [1, {"g": 2.5e-7}]}, {"big": 2**64}, {"neg": -(2**63) - 1},
    {"s": Colour.RED}, {"i": Level.HIGH}, {Colour.RED: 1}, {"t": (1, "a", None)},
    {"lone": "\ud800"}, {"deep": nested(300)},
    {"\x00\x1f\u2028😀": "\x7f\\\""}, {"b": True, "a": None, "c": False}, {},
])
def test_values_at_the_edges_are_stored_as_the_strict_encoder_stores_them(value: Any) -> None:
    assert fast_or_error(value) == strict_text(value)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OBJECTS)
def test_the_value_read_back_is_the_strict_texts_reading(value: dict[str, Any]) -> None:
    """What a record or message carries is what json reads from its stored text, type for
    type (an integer stays an integer however large, a float a float)."""
    text = strict_text(value)
    if text is None:
        with pytest.raises(JournalError):
            stored_json(value)
        return
    stored, back = stored_json(value)
    assert stored == text
    assert repr(back) == repr(json.loads(text))


def test_a_huge_integer_is_read_back_as_an_integer() -> None:
    for value in ({"n": 2**64}, {"n": [-(2**63) - 1]}, {"n": 2**64 - 1}, {"f": 0.1}):
        assert repr(stored_json(value)[1]) == repr(value)


def test_what_is_not_json_is_refused_as_before() -> None:
    for value in ({"x": {1, 2}}, {"x": float("nan")}, {1: "a"} | {"1": "b"}, {"x": b"\x00"},
                  {"lone": "\udc80"}):
        with pytest.raises(JournalError, match="not plain JSON"):
            canonical_json(value, what="payload")


SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | TRICKY_TEXT
           | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2)
           | st.floats(allow_nan=False) | st.binary(max_size=3) | st.sampled_from(list(Level)))


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SCALARS, min_size=1, max_size=11))
def test_a_checksum_hashes_the_strict_text_of_its_material(material: list[Any]) -> None:
    assert _digest(material) == strict_digest(material)


def test_a_record_checksum_is_unchanged() -> None:
    # a journal written before the fast path verifies after it: a fixed record's checksum
    material = ["showdown.journal.v1", 7, "card", '{"card":"Qs","quality":98}',
                "2026-12-04T22:00:00.000Z", 123456789, "boot-é", None, "0" * 64]
    assert record_checksum(seq=7, kind="card", payload='{"card":"Qs","quality":98}',
                           wall="2026-12-04T22:00:00.000Z", mono_ns=123456789,
                           boot_id="boot-é", synced=None, prev="0" * 64) == strict_digest(material)
