"""game.tournament.draw: the Final's seat draw [40] is replayable from its logged inputs and
unbiased.

The statistical tests use a fixed seed, so they are deterministic; the critical values are
from the chi-squared distribution (table values, or the Wilson-Hilferty formula for 719 degrees
of freedom, worked in the test).
"""

from __future__ import annotations

import json
import random
import secrets
from collections import Counter
from collections.abc import Mapping
from itertools import product
from math import sqrt
from typing import Any

import pytest

from game.tournament.draw import RECOMMENDED_BYTES, ByteSource, DrawError, draw_seats, replay_draw

SIX = ["F-ada", "F-ben", "F-cas", "F-dee", "F-eli", "F-fay"]
SEATS = [1, 2, 3, 4, 5, 6]


# ---- determinism and replay -------------------------------------------------------------------

def test_a_worked_draw() -> None:
    # Five zero bytes: Fisher-Yates swaps i with j = 0 for i = 5..1:
    # [1..6] -> [6,2,3,4,5,1] -> [5,2,3,4,6,1] -> [4,2,3,5,6,1] -> [3,2,4,5,6,1] -> [2,3,4,5,6,1].
    draw = draw_seats(SIX, SEATS, bytes(5))
    assert [(a.finalist, a.seat) for a in draw.assignments] == [
        ("F-ada", 2), ("F-ben", 3), ("F-cas", 4), ("F-dee", 5), ("F-eli", 6), ("F-fay", 1)]
    assert draw.bytes_used == 5
    assert draw.seat_of("F-fay") == 1
    with pytest.raises(DrawError, match="not a finalist"):
        draw.seat_of("F-zed")


def test_the_same_inputs_give_the_same_draw() -> None:
    data = secrets.token_bytes(RECOMMENDED_BYTES)
    assert draw_seats(SIX, SEATS, data) == draw_seats(SIX, SEATS, data)


def test_input_order_does_not_matter() -> None:
    data = random.Random(7).randbytes(RECOMMENDED_BYTES)
    a = draw_seats(SIX, SEATS, data)
    b = draw_seats(list(reversed(SIX)), [4, 6, 1, 3, 2, 5], data)
    assert a == b


def test_a_draw_replays_from_its_json_log() -> None:
    draw = draw_seats(SIX, SEATS, secrets.token_bytes(RECOMMENDED_BYTES))
    logged = json.loads(json.dumps(draw.log_record()))
    assert replay_draw(logged) == draw
    seats_of = {a["finalist"]: a["seat"] for a in logged["assignments"]}
    assert sorted(seats_of.values()) == SEATS


def test_a_tampered_log_is_caught() -> None:
    logged = draw_seats(SIX, SEATS, bytes(5) + b"\x01" * 59).log_record()
    swapped = [dict(a) for a in logged["assignments"]]  # type: ignore[attr-defined]
    swapped[0]["seat"], swapped[1]["seat"] = swapped[1]["seat"], swapped[0]["seat"]
    with pytest.raises(DrawError, match="does not match the replay"):
        replay_draw({**logged, "assignments": swapped})
    with pytest.raises(DrawError, match="does not match"):
        replay_draw({**logged, "bytes_used": 6})
    with pytest.raises(DrawError, match="lacks 'random_bytes'"):
        replay_draw({k: v for k, v in logged.items() if k != "random_bytes"})
    with pytest.raises(DrawError, match="not hex"):
        replay_draw({**logged, "random_bytes": "zz"})


def test_fewer_finalists_than_seats() -> None:
    draw = draw_seats(SIX[:5], SEATS, bytes(5))
    seats = [a.seat for a in draw.assignments]
    assert len(set(seats)) == 5
    assert set(seats) <= set(SEATS)


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("finalists", "seats", "message"),
    [
        ([], SEATS, "non-empty list"),
        ("F-ada", SEATS, "non-empty list"),
        (["F-ada", ""], SEATS, "non-empty string"),
        (["F-ada", "F-ada"], SEATS, "listed twice: F-ada"),
        (SIX, [1, 2, 3], "6 finalists but only 3 seats"),
        (SIX, [1, 1, 2, 3, 4, 5], "seat numbers listed twice"),
        (SIX, [1, 2, 3, 4, 5, True], "a seat is a whole number"),
    ],
)
def test_bad_finalists_or_seats_are_refused(finalists: list[str], seats: list[int],
                                            message: str) -> None:
    with pytest.raises(DrawError, match=message):
        draw_seats(finalists, seats, bytes(64))


def test_running_out_of_bytes_is_an_error() -> None:
    with pytest.raises(DrawError, match="ran out: 4 supplied, 4 used and 1 more needed"):
        draw_seats(SIX, SEATS, bytes(4))
    with pytest.raises(DrawError, match="must be bytes"):
        draw_seats(SIX, SEATS, "00" * 8)  # type: ignore[arg-type]


# ---- the integer draw -----------------------------------------------------------------------

def test_rejected_bytes_are_skipped_in_order() -> None:
    # Below 6 with one byte: 256 - 256 % 6 = 252, so 252..255 are rejected.
    source = ByteSource(bytes([252, 255, 7, 251]))
    assert source.below(6) == 1  # 252 and 255 rejected, 7 % 6 = 1
    assert source.used == 3
    assert source.below(6) == 251 % 6
    assert source.below(1) == 0  # one choice needs no byte
    assert source.used == 4


def test_wide_draws_read_two_bytes_big_endian() -> None:
    # Below 300: two bytes, 65536 - 65536 % 300 = 65400 accepted values.
    assert ByteSource(bytes([1, 2])).below(300) == 258
    source = ByteSource(bytes([0xFF, 0x78, 0x00, 0x05]))  # 65400 rejected
    assert (source.below(300), source.used) == (5, 4)
    with pytest.raises(DrawError, match="whole number >= 1"):
        ByteSource(b"").below(0)


def naive(byte: int, n: int) -> int:
    """The biased method the draw must not use: reduce a byte modulo n."""
    return byte % n


def test_naive_modulo_would_be_biased_but_the_draw_is_not() -> None:
    # Exact enumeration of every byte value for a 3-way choice.
    biased = Counter(naive(b, 3) for b in range(256))
    assert biased == {0: 86, 1: 85, 2: 85}  # 256 = 3 x 85 + 1: outcome 0 is favoured

    def one(data: bytes) -> int | None:
        try:
            return ByteSource(data).below(3)
        except DrawError:
            return None

    singles = Counter(one(bytes([b])) for b in range(256))
    assert singles == {0: 85, 1: 85, 2: 85, None: 1}  # 255 is rejected, never mapped
    # With a second byte available every sequence but (255, 255) gives an answer, each
    # outcome exactly equally often: 255 x 256 + 255 = 65,535 = 3 x 21,845.
    pairs = Counter(one(bytes(p)) for p in product(range(256), repeat=2))
    assert pairs == {0: 21_845, 1: 21_845, 2: 21_845, None: 1}


def test_every_choice_up_to_six_is_exactly_uniform_over_one_byte() -> None:
    for n in range(2, 7):
        counts: Counter[int | None] = Counter()
        for b in range(256):
            try:
                counts[ByteSource(bytes([b])).below(n)] += 1
            except DrawError:
                counts[None] += 1  # rejected: the next byte would be read
        assert counts.pop(None, 0) == 256 % n
        assert set(counts.values()) == {256 // n}
        assert set(counts) == set(range(n))


# ---- unbiasedness, statistically --------------------------------------------------------------

DRAWS = 60_000
K = 719  # all 720 seatings of six: 719 degrees of freedom
# Wilson-Hilferty: k (1 - 2/(9k) + z sqrt(2/(9k)))^3 with z = 3.0902 (99.9%) is about 842.
CRITICAL_720 = K * (1 - 2 / (9 * K) + 3.0902 * sqrt(2 / (9 * K))) ** 3
# Finalist x seat: 36 cells; a 6 x 6 table with fixed margins has (6 - 1)^2 = 25 degrees of
# freedom, and the 99.9% point of chi-squared(25) is 52.620 (table value).
CRITICAL_36 = 52.620


def chi_squared(counts: Mapping[Any, int], cells: int) -> float:
    """Pearson's statistic against equal counts in every one of `cells` cells."""
    expected = sum(counts.values()) / cells
    return sum((counts.get(c, 0) - expected) ** 2 / expected for c in counts) + (
        cells - len(counts)) * expected


def test_the_critical_value() -> None:
    assert 840 < CRITICAL_720 < 845


def test_chi_squared_over_60000_draws() -> None:
    rng = random.Random(20_260_801)
    cells: Counter[tuple[str, int]] = Counter()
    orders: Counter[tuple[int, ...]] = Counter()
    for _ in range(DRAWS):
        draw = draw_seats(SIX, SEATS, rng.randbytes(16))
        seats = tuple(a.seat for a in draw.assignments)
        cells.update(zip(draw.finalists, seats, strict=True))
        orders[seats] += 1
    assert len(cells) == 36
    assert chi_squared(cells, 36) < CRITICAL_36
    assert len(orders) == 720
    assert chi_squared(orders, 720) < CRITICAL_720


def test_the_chi_squared_test_catches_a_biased_shuffle() -> None:
    # The classic wrong shuffle (swap every position with any position, byte modulo 6)
    # favours some seatings; the same test must reject it, or it would prove nothing.
    rng = random.Random(20_260_801)
    cells: Counter[tuple[str, int]] = Counter()
    orders: Counter[tuple[int, ...]] = Counter()
    for _ in range(DRAWS):
        order, data = list(SEATS), rng.randbytes(6)
        for i in range(6):
            j = naive(data[i], 6)
            order[i], order[j] = order[j], order[i]
        cells.update(zip(SIX, order, strict=True))
        orders[tuple(order)] += 1
    assert chi_squared(cells, 36) > CRITICAL_36
    assert chi_squared(orders, 720) > CRITICAL_720
