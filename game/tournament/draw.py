"""The Final's seat draw [40]: an unbiased shuffle driven only by the random bytes supplied.

Pure and replayable: the caller takes the bytes from `secrets.token_bytes(RECOMMENDED_BYTES)`
and logs them with the finalists, the seats and the result (`Draw.log_record`); anyone can
replay the draw from that record (`replay_draw`). The shuffle is Fisher-Yates; each index is
drawn by rejection sampling (no modulo bias). Bytes are consumed in order, big-endian, the
fewest whole bytes per draw; running out raises DrawError (never a silent fallback).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from game.errors import GameError

__all__ = [
    "RECOMMENDED_BYTES",
    "ByteSource",
    "Draw",
    "DrawError",
    "SeatAssignment",
    "draw_seats",
    "replay_draw",
]

# Six seats need 5 one-byte draws, each rejected with probability < 2%; 64 bytes run out
# only if 60 of them are rejected (probability far below 1e-90).
RECOMMENDED_BYTES: Final = 64


class DrawError(GameError, ValueError):
    """A draw that cannot be made or replayed (bad finalists or seats, too few bytes, mismatch)."""


class ByteSource:
    """Unbiased integers read from supplied bytes, in order; `used` counts the bytes consumed."""

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray):
            raise DrawError(f"the random input must be bytes, not {type(data).__name__}")
        self._data = bytes(data)
        self.used = 0

    def _take(self, width: int) -> int:
        end = self.used + width
        if end > len(self._data):
            raise DrawError(
                f"the random bytes ran out: {len(self._data)} supplied, {self.used} used and"
                f" {width} more needed; supply more (e.g. {RECOMMENDED_BYTES} bytes)"
            )
        value = int.from_bytes(self._data[self.used:end], "big")
        self.used = end
        return value

    def below(self, n: int) -> int:
        """A uniform integer in [0, n): read whole bytes, reject values past the last full cycle."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise DrawError(f"cannot draw below {n!r}: need a whole number >= 1")
        if n == 1:
            return 0
        width = ((n - 1).bit_length() + 7) // 8
        span = 1 << (8 * width)
        limit = span - span % n  # [0, limit) holds each residue exactly limit // n times
        while True:
            value = self._take(width)
            if value < limit:
                return value % n


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatAssignment:
    """One finalist's drawn seat."""

    finalist: str
    seat: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Draw:
    """A seat draw with every input needed to replay it (finalists and seats as sorted)."""

    finalists: tuple[str, ...]
    seats: tuple[int, ...]
    random_bytes: bytes
    bytes_used: int
    assignments: tuple[SeatAssignment, ...]

    def seat_of(self, finalist: str) -> int:
        """The seat drawn for one finalist."""
        for a in self.assignments:
            if a.finalist == finalist:
                return a.seat
        raise DrawError(f"{finalist!r} is not a finalist of this draw")

    def log_record(self) -> dict[str, object]:
        """The draw as a JSON-ready record (bytes in hex) for the audit log; see replay_draw."""
        return {
            "finalists": list(self.finalists),
            "seats": list(self.seats),
            "random_bytes": self.random_bytes.hex(),
            "bytes_used": self.bytes_used,
            "assignments": [{"finalist": a.finalist, "seat": a.seat} for a in self.assignments],
        }


def _finalists(finalists: Sequence[str]) -> tuple[str, ...]:
    if isinstance(finalists, str) or not isinstance(finalists, Sequence) or not finalists:
        raise DrawError("the draw needs a non-empty list of finalist ids")
    for f in finalists:
        if not isinstance(f, str) or not f:
            raise DrawError(f"a finalist id must be a non-empty string, got {f!r}")
    if len(set(finalists)) != len(finalists):
        twice = sorted({f for f in finalists if finalists.count(f) > 1})
        raise DrawError(f"finalist(s) listed twice: {', '.join(twice)}")
    return tuple(sorted(finalists))


def _seats(seats: Sequence[int], finalists: int) -> tuple[int, ...]:
    if not isinstance(seats, Sequence):
        raise DrawError("the draw needs a list of seat numbers")
    for s in seats:
        if isinstance(s, bool) or not isinstance(s, int):
            raise DrawError(f"a seat is a whole number, got {s!r}")
    if len(set(seats)) != len(seats):
        raise DrawError(f"seat numbers listed twice in {list(seats)}")
    if len(seats) < finalists:
        raise DrawError(f"{finalists} finalists but only {len(seats)} seats")
    return tuple(sorted(seats))


def draw_seats(finalists: Sequence[str], seats: Sequence[int], random_bytes: bytes) -> Draw:
    """Draw a seat for every finalist from `random_bytes` alone (unbiased, replayable).

    Finalists are sorted by id and seats ascending first, so the result depends only on who
    and which seats, never on the order they were typed in. The seats are shuffled by
    Fisher-Yates (for i = last..1 swap i with a uniform j <= i) and the k-th finalist takes
    the k-th seat of the shuffled list; with fewer finalists than seats the seats left over
    stay empty.
    """
    names = _finalists(finalists)
    order = list(_seats(seats, len(names)))
    source = ByteSource(random_bytes)
    for i in range(len(order) - 1, 0, -1):
        j = source.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return Draw(
        finalists=names, seats=tuple(sorted(order)), random_bytes=bytes(random_bytes),
        bytes_used=source.used,
        assignments=tuple(SeatAssignment(finalist=f, seat=s)
                          for f, s in zip(names, order, strict=False)),
    )


def replay_draw(record: Mapping[str, object]) -> Draw:
    """Replay a logged draw (Draw.log_record) and check the logged result; raises on mismatch."""
    try:
        finalists = record["finalists"]
        seats = record["seats"]
        hex_bytes = record["random_bytes"]
        logged = record["assignments"]
    except KeyError as exc:
        raise DrawError(f"the draw record lacks {exc.args[0]!r}") from exc
    if not isinstance(hex_bytes, str):
        raise DrawError("random_bytes must be a hex string")
    try:
        data = bytes.fromhex(hex_bytes)
    except ValueError as exc:
        raise DrawError(f"random_bytes is not hex: {exc}") from exc
    if not isinstance(finalists, list) or not isinstance(seats, list):
        raise DrawError("finalists and seats must be lists")
    draw = draw_seats(finalists, seats, data)
    again = draw.log_record()
    used = record.get("bytes_used", draw.bytes_used)
    if logged != again["assignments"] or used != draw.bytes_used:
        raise DrawError(
            f"the logged result {logged!r} does not match the replay {again['assignments']!r}"
        )
    return draw
