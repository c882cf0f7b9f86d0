"""The score distribution as a PNG for a casino manager: a histogram of the scores in rand with
the cumulative share on a second axis, the percentiles and the starting chips marked and
labelled, the expected cut line for the last qualifying place with its spread, and a caption
naming the seed and the size of the simulated campaign.

matplotlib is the optional extra ``reports`` (``pip install 'showdown[reports]'``); it is
imported only here, with the Agg backend (no display), and its absence is `PlotUnavailable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from game.money import format_rand
from leaderboard.reports.score_distribution import CutLine, ScoreSummary

__all__ = ["PlotUnavailable", "check_plotting", "plot_scores"]


_BOX: dict[str, Any] = {"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise PlotUnavailable("the plot needs matplotlib, the optional extra 'reports':"
                              " pip install 'showdown[reports]' (or"
                              " pip install 'matplotlib>=3.8,<4')") from None
    return plt


def check_plotting() -> None:
    """Raise PlotUnavailable now if matplotlib is missing (before a long simulation)."""
    _pyplot()


def _rand_axis(cents: float, _: object = None) -> str:
    return f"R{cents / 100:,.0f}"


def plot_scores(path: Path, scores: Sequence[int], summary: ScoreSummary, cut: CutLine, *,
                caption: str, title: str) -> None:
    """Draw the distribution to ``path`` (PNG)."""
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter, PercentFormatter  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(11, 6.2), dpi=110)
    width = 5_000  # R50 bins
    shown_to = max(summary.percentiles["p99"], cut.p95_cents, summary.start_cents)
    right = (int(shown_to * 1.15) // 50_000 + 1) * 50_000  # to the next R500
    beyond = [s for s in scores if s >= right]
    low = (min(scores) // width) * width
    bins = list(range(low, right + width, width))
    ax.hist([s for s in scores if s < right], bins=bins, color="#9bb7d4",
            edgecolor="#5b7fa6", linewidth=0.4, label="entries per R50 of score")
    ax.set_xlim(low, right)
    ax.set_xlabel("score: chips after 10 hands (rand)")
    ax.set_ylabel("entries")
    ax.xaxis.set_major_formatter(FuncFormatter(_rand_axis))
    ax.grid(axis="y", alpha=0.3)
    cdf = ax.twinx()
    ordered = sorted(scores)
    n = len(ordered)
    cdf.plot(ordered, [(i + 1) / n for i in range(n)], color="#1f3b5a", linewidth=1.4,
             label="share of entries at or below (right axis)")
    cdf.set_ylim(0, 1.02)
    cdf.set_xlim(low, right)
    cdf.yaxis.set_major_formatter(PercentFormatter(1.0))
    cdf.set_ylabel("share of entries scoring at or below")
    top = ax.get_ylim()[1]
    ax.axvline(summary.start_cents, color="#555555", linestyle=":", linewidth=1.4)
    ax.text(summary.start_cents, top * 0.99,
            f"start {format_rand(summary.start_cents)}:"
            f" {summary.below_start_share * 100:.0f}% finish below ", fontsize=8,
            rotation=90, ha="right", va="top", color="#333333", bbox=_BOX)
    for name, cents in summary.percentiles.items():
        if cents >= right:
            ax.annotate(f"{name} {format_rand(cents)} (off the scale)",
                        xy=(right, top * 0.3), xytext=(-4, 0), textcoords="offset points",
                        ha="right", fontsize=8, color="#c0392b", bbox=_BOX)
            continue
        ax.axvline(cents, color="#c0392b", linestyle="--", linewidth=0.9, alpha=0.8)
        ax.text(cents, top * 0.99, f"{name} {format_rand(cents)} ", fontsize=8,
                color="#c0392b", rotation=90, ha="right", va="top", bbox=_BOX)
    ax.axvspan(cut.p5_cents, cut.p95_cents, color="#27ae60", alpha=0.15,
               label=f"12th best: 90% range {format_rand(cut.p5_cents)}"
                     f" to {format_rand(cut.p95_cents)}")
    ax.axvline(cut.median_cents, color="#1e8449", linewidth=2.0,
               label=f"expected cut (place {cut.place} of {cut.entries:,} entries):"
                     f" {format_rand(cut.median_cents)}")
    if beyond:
        caption += (f" Not drawn: {len(beyond):,} entries at {format_rand(right)} or more"
                    f" (highest {format_rand(max(beyond))}).")
    lines, labels = ax.get_legend_handles_labels()
    more, more_labels = cdf.get_legend_handles_labels()
    ax.legend(lines + more, labels + more_labels, loc="center right", fontsize=8,
              framealpha=0.9)
    ax.set_title(title, fontsize=13, loc="left")
    fig.text(0.01, 0.01, caption, fontsize=8, color="#333333", ha="left", va="bottom",
             wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    try:
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
