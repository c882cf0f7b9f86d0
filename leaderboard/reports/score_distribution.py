"""The distribution of qualifying scores, to help the casino plan prizes: percentiles, mean,
the share of entries finishing below the starting chips, and the score the last qualifying
place (the 12th best) is expected to need in a campaign of E entries, with its spread.

Pure (numpy only). A percentile is by nearest rank: the p-th percentile is the lowest score
that at least p% of the entries scored or did not reach (so it is always a score that was
played). The expected cut is resampled (bootstrap): ``resamples`` campaigns of E entries are
drawn with replacement from the simulated scores, each campaign's 12th-best score taken.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

__all__ = ["PERCENTILES", "CutLine", "ScoreSummary", "cut_line", "nearest_rank",
           "summarise"]

PERCENTILES: Final[Mapping[str, float]] = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p95": 95.0,
                                           "p99": 99.0, "p99.9": 99.9}


def nearest_rank(ordered: Sequence[int], percent: float) -> int:
    """The nearest-rank percentile of scores sorted ascending (ValueError when empty)."""
    if not ordered:
        raise ValueError("no scores")
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return int(ordered[rank - 1])


@dataclass(frozen=True, slots=True, kw_only=True)
class CutLine:
    """The place-th best score of E entries, over the resampled campaigns."""

    place: int
    entries: int
    resamples: int
    mean_cents: float
    median_cents: int
    p5_cents: int
    p95_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreSummary:
    """The scores' distribution."""

    count: int
    percentiles: Mapping[str, int]
    mean_cents: float
    lowest_cents: int
    highest_cents: int
    below_start: int
    start_cents: int

    @property
    def below_start_share(self) -> float:
        """The share of entries finishing below the starting chips."""
        return self.below_start / self.count


def summarise(scores: Sequence[int], start_cents: int) -> ScoreSummary:
    """The summary of ``scores`` (cents; ValueError when there are none)."""
    ordered = sorted(scores)
    if not ordered:
        raise ValueError("no scores")
    return ScoreSummary(
        count=len(ordered), percentiles={k: nearest_rank(ordered, p)
                                         for k, p in PERCENTILES.items()},
        mean_cents=sum(ordered) / len(ordered), lowest_cents=ordered[0],
        highest_cents=ordered[-1], below_start=sum(1 for s in ordered if s < start_cents),
        start_cents=start_cents)


def cut_line(scores: Sequence[int], *, place: int, entries: int, resamples: int,
             seed: int) -> CutLine:
    """The expected ``place``-th best score of ``entries`` entries drawn from ``scores``
    (ValueError when ``entries`` < ``place`` or there are no scores)."""
    if not scores:
        raise ValueError("no scores")
    if entries < place:
        raise ValueError(f"a campaign of {entries} entries has no {place}th place")
    if resamples < 1:
        raise ValueError("at least one resample is needed")
    rng = np.random.default_rng(seed)
    pool = np.asarray(scores, dtype=np.int64)
    cuts = np.empty(resamples, dtype=np.int64)
    for i in range(resamples):
        drawn = rng.choice(pool, size=entries, replace=True)
        # the place-th best is the (entries - place)-th smallest
        cuts[i] = np.partition(drawn, entries - place)[entries - place]
    ordered = sorted(int(c) for c in cuts)
    return CutLine(place=place, entries=entries, resamples=resamples,
                   mean_cents=float(cuts.mean()), median_cents=nearest_rank(ordered, 50),
                   p5_cents=nearest_rank(ordered, 5), p95_cents=nearest_rank(ordered, 95))
