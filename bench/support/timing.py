"""The one best-of-N timing the bench scripts share."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(work: Callable[[], object], repeat: int,
            clock: Callable[[], float] = time.perf_counter) -> float:
    """The least seconds ``work()`` took in ``repeat`` runs, read on ``clock`` (wall time by
    default; `time.process_time` for this process's CPU)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        work()
        best = min(best, clock() - start)
    return best
