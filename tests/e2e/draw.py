"""The Final's seat draw replayed from its stored bytes (rule 40), written from
docs/standings-and-prizes.md: finalists sorted by id, seats ascending, an unbiased
Fisher-Yates shuffle of the seats whose uniform numbers come from the bytes in order, with
rejection sampling; the k-th finalist takes the k-th seat of the shuffled list."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DrawReplayError", "replay_seat_draw"]


class DrawReplayError(ValueError):
    """The stored bytes ran out before the draw was complete."""


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def below(self, n: int) -> int:
        """A uniform number in [0, n): the fewest whole bytes covering n, big-endian; a value
        at or above the largest multiple of n that fits is rejected and the next read."""
        width = 1
        while 256 ** width < n:
            width += 1
        span = 256 ** width
        limit = span - span % n
        while True:
            if self.at + width > len(self.data):
                raise DrawReplayError(f"the draw's {len(self.data)} bytes ran out")
            value = int.from_bytes(self.data[self.at:self.at + width], "big")
            self.at += width
            if value < limit:
                return value % n


def replay_seat_draw(finalists: Sequence[str], seats: Sequence[int],
                     data: bytes) -> dict[str, int]:
    """Finalist -> seat, as the draw gives it from `data`."""
    names = sorted(finalists)
    order = sorted(seats)
    source = _Bytes(data)
    for i in range(len(order) - 1, 0, -1):
        j = source.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return dict(zip(names, order, strict=False))
