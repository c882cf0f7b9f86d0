"""The score slip's verification code: the SHA-256 of the canonical JSON of a message's table,
seq, type and body, as the central service can recompute it from what it stored."""

from __future__ import annotations

import hashlib

from wire.verification import grouped, verification_code

BODY = {"entry_id": "E-1", "score": 190_000, "hands": 10, "stage": "qualifying",
        "heat_id": "Q1", "table": "t07", "seat": 1, "status": "finished",
        "markers_forfeited": None, "last_hand_id": "t07-000010", "at": "2026-07-03T11:00:00Z"}


def test_the_code_is_the_sha256_of_the_canonical_json() -> None:
    canonical = ('{"body":{"at":"2026-07-03T11:00:00Z","entry_id":"E-1","hands":10,"heat_id":"Q1",'
                 '"last_hand_id":"t07-000010","markers_forfeited":null,'
                 '"score":190000,"seat":1,"stage":"qualifying","status":"finished",'
                 '"table":"t07"},"seq":42,"table":"t07","type":"score.recorded"}')
    want = hashlib.sha256(canonical.encode()).hexdigest()
    assert verification_code("t07", 42, "score.recorded", BODY) == want


def test_the_code_does_not_depend_on_key_order_but_on_every_value() -> None:
    code = verification_code("t07", 42, "score.recorded", BODY)
    assert verification_code("t07", 42, "score.recorded", dict(reversed(BODY.items()))) == code
    assert verification_code("t07", 43, "score.recorded", BODY) != code
    assert verification_code("t08", 42, "score.recorded", BODY) != code
    assert verification_code("t07", 42, "score.recorded", {**BODY, "score": 190_001}) != code


def test_the_slip_shows_the_first_sixteen_digits_in_groups_of_four() -> None:
    code = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert grouped(code) == "9F86 D081 884C 7D65"
