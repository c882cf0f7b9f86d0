"""Jittered exponential backoff for reconnect loops (any device, any transport).

Attempt n (0-based) waits ``min(maximum, initial * factor**n)`` scaled by a random factor in
``[1 - jitter, 1]``, so several drivers that lost their devices together do not retry in step.
The random source is injected (``random.Random(seed)`` in tests); nothing here sleeps.
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Delays for successive retries; `next_delay` grows them, `reset` after a success."""

    def __init__(
        self,
        *,
        initial: float = 0.1,
        maximum: float = 5.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"need 0 < initial <= maximum, got {initial} and {maximum}")
        if factor < 1:
            raise ValueError(f"factor {factor} must be at least 1")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter {jitter} must be within 0..1")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng if rng is not None else random.Random()
        self.attempt = 0

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt; each call counts one more attempt."""
        ceiling = min(self.maximum, self.initial * self.factor ** min(self.attempt, 64))
        self.attempt += 1
        return ceiling * (1.0 - self.jitter * self._rng.random())

    def first_delay(self) -> float:
        """A jittered delay of the first step, not counted as an attempt (to space out
        attempts that do not grow the backoff)."""
        return self.initial * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        """Start again from ``initial`` (call after a successful connection)."""
        self.attempt = 0
