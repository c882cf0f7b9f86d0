"""Benchmark the 7-card evaluator against treys, phevaluator and eval7, and cross-check them.

One run prints: the machine; per-call 7-card evaluations per second for our `evaluate` and
`hand_value` and for each peer library, all on the same seeded hands; `evaluate_batch` hands per
second on a seeded (N, 7) array; the exhaustive count of all 133,784,560 seven-card hands against
the textbook counts; a cross-check that every peer orders the same hands exactly as we do; and
the issue-2 targets as PASS/MISS lines. Exit status: 0, or 1 on any correctness mismatch
(performance misses are reported, not failures: machines vary), or 2 if a peer is not installed.

Run: ``make bench``, or ``.venv/bin/python bench/evaluator.py [--quick] [--seed N]``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from game.poker.cards import DECK, Card
from game.poker.evaluate import Category, category_of, evaluate, hand_value
from game.poker.evaluate_batch import evaluate_batch, seven_card_category_counts

try:  # the `bench` extra of pyproject.toml; never runtime dependencies
    import eval7
    import treys
    from phevaluator import evaluate_cards as ph_evaluate_cards
    from phevaluator.card import Card as PhCard
except ImportError as exc:
    _MISSING: str | None = exc.name
else:
    _MISSING = None

PEERS = ("treys", "phevaluator", "eval7")
DEFAULT_SEED = 20240607
TOTAL_7 = 133_784_560
# Textbook counts of the C(52, 7) seven-card hands by best five-card category.
TEXTBOOK_7 = {
    Category.ROYAL_FLUSH: 4_324,
    Category.STRAIGHT_FLUSH: 37_260,
    Category.FOUR_OF_A_KIND: 224_848,
    Category.FULL_HOUSE: 3_473_184,
    Category.FLUSH: 4_047_644,
    Category.STRAIGHT: 6_180_020,
    Category.THREE_OF_A_KIND: 6_461_620,
    Category.TWO_PAIR: 31_433_400,
    Category.PAIR: 58_627_800,
    Category.HIGH_CARD: 23_294_460,
}
# Peer category names -> ours (eval7 has no royal flush: ours is folded into straight flush).
TREYS_CATEGORY = {
    "Royal Flush": Category.ROYAL_FLUSH,
    "Straight Flush": Category.STRAIGHT_FLUSH,
    "Four of a Kind": Category.FOUR_OF_A_KIND,
    "Full House": Category.FULL_HOUSE,
    "Flush": Category.FLUSH,
    "Straight": Category.STRAIGHT,
    "Three of a Kind": Category.THREE_OF_A_KIND,
    "Two Pair": Category.TWO_PAIR,
    "Pair": Category.PAIR,
    "High Card": Category.HIGH_CARD,
}
EVAL7_CATEGORY = {
    "Straight Flush": Category.STRAIGHT_FLUSH,
    "Quads": Category.FOUR_OF_A_KIND,
    "Full House": Category.FULL_HOUSE,
    "Flush": Category.FLUSH,
    "Straight": Category.STRAIGHT,
    "Trips": Category.THREE_OF_A_KIND,
    "Two Pair": Category.TWO_PAIR,
    "Pair": Category.PAIR,
    "High Card": Category.HIGH_CARD,
}

IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Sizes:
    """How many hands each part of the run uses."""

    per_call: int
    per_call_treys: int
    batch: int
    cross_uniform: int
    cross_rich: int
    repeats: int
    exhaustive: bool


FULL = Sizes(
    per_call=200_000, per_call_treys=50_000, batch=2_000_000,
    cross_uniform=20_000, cross_rich=3_000, repeats=3, exhaustive=True,
)
QUICK = Sizes(
    per_call=2_000, per_call_treys=1_000, batch=20_000,
    cross_uniform=2_000, cross_rich=300, repeats=3, exhaustive=False,
)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the results table."""

    name: str
    kind: str
    hands: int
    seconds: float

    @property
    def rate(self) -> float:
        """Hands per second."""
        return self.hands / self.seconds


@dataclass(frozen=True, slots=True)
class CrossCheck:
    """Outcome of comparing our ordering of some hands with a peer's."""

    peer: str
    hands: int
    distinct: int
    ties: int  # adjacent hands we value equal that the peer does not
    order: int  # adjacent value classes the peer orders differently (or merges)
    examples: tuple[tuple[int, int], ...]  # row pairs showing a tie or order mismatch
    other: int | None = None  # hands failing a further check (None: no further check)
    other_label: str = "category"

    @property
    def mismatches(self) -> int:
        """All disagreements found."""
        return self.ties + self.order + (self.other or 0)

    def detail(self) -> str:
        """The mismatches broken down by kind."""
        other = "n/a" if self.other is None else str(self.other)
        return f"{self.ties} tie, {self.order} order, {other} {self.other_label}"


# ----------------------------------------------------------------------------------------
# Hands


def random_hands(rng: np.random.Generator, n: int, deck: Sequence[int] = range(52)) -> IntArray:
    """``n`` seeded hands of 7 distinct cards from ``deck`` (card indices), as an (n, 7) array."""
    pool = np.asarray(deck, dtype=np.int64)
    out = np.empty((n, 7), dtype=np.int64)
    chunk = 100_000
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        keys = rng.random((m, len(pool)))
        out[start : start + m] = pool[np.argpartition(keys, 7, axis=1)[:, :7]]
    return out


def _deck_of(ranks: Sequence[int], suits: Sequence[int]) -> list[int]:
    return [4 * r + s for r in ranks for s in suits]


# Small decks that make rare categories common (ranks 0..12 = 2..A; suits 0..3 = c, d, h, s).
RICH_DECKS = (
    ("flushes", _deck_of(range(13), (0, 3))),
    ("quads and full houses", _deck_of((0, 3, 7, 11, 12), range(4))),
    ("straights", _deck_of(range(9), range(4))),
    ("wheels", _deck_of((12, 0, 1, 2, 3, 4), range(4))),
    ("straight flushes", _deck_of(range(3, 11), (1, 2))),
    ("steel wheels", _deck_of((12, 0, 1, 2, 3, 4), (0, 2))),
    ("royal flushes", _deck_of(range(8, 13), (1, 2, 3))),
)


def rich_hands(rng: np.random.Generator, n: int) -> IntArray:
    """``n`` hands from each of RICH_DECKS, so every category is well represented."""
    return np.concatenate([random_hands(rng, n, deck) for _, deck in RICH_DECKS])


def as_cards(hands: IntArray) -> list[tuple[Card, ...]]:
    """Our Card tuples for each row."""
    return [tuple(DECK[i] for i in row) for row in hands.tolist()]


def cards_of(row: IntArray) -> tuple[Card, ...]:
    """Our cards for one row of card indices."""
    return tuple(DECK[i] for i in row.tolist())


def as_treys(hands: IntArray) -> list[tuple[list[int], list[int]]]:
    """(hole, board) lists of treys card ints for each row."""
    table = [treys.Card.new(str(c)) for c in DECK]
    return [([table[i] for i in row[:2]], [table[i] for i in row[2:]]) for row in hands.tolist()]


def as_phevaluator(hands: IntArray) -> list[tuple[int, ...]]:
    """phevaluator card ids for each row."""
    table = [PhCard(str(c)).id_ for c in DECK]
    return [tuple(table[i] for i in row) for row in hands.tolist()]


def as_eval7(hands: IntArray) -> list[list[object]]:
    """eval7.Card lists for each row."""
    table = [eval7.Card(str(c)) for c in DECK]
    return [[table[i] for i in row] for row in hands.tolist()]


# ----------------------------------------------------------------------------------------
# Per-call loops (same shape for every library; the hands are converted beforehand)


def loop_evaluate(hands: list[tuple[Card, ...]]) -> None:
    """Our `evaluate` (builds a HandValue) on each hand."""
    ev = evaluate
    for h in hands:
        ev(h)


def loop_hand_value(hands: list[tuple[Card, ...]]) -> None:
    """Our `hand_value` (int fast path) on each hand."""
    hv = hand_value
    for h in hands:
        hv(h)


def loop_treys(hands: list[tuple[list[int], list[int]]]) -> None:
    """treys.Evaluator().evaluate(hole, board) on each hand."""
    ev = treys.Evaluator().evaluate
    for hole, board in hands:
        ev(hole, board)


def loop_phevaluator(hands: list[tuple[int, ...]]) -> None:
    """phevaluator.evaluate_cards on each hand."""
    ev = ph_evaluate_cards
    for h in hands:
        ev(*h)


def loop_eval7(hands: list[list[object]]) -> None:
    """eval7.evaluate on each hand."""
    ev = eval7.evaluate
    for h in hands:
        ev(h)


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# ----------------------------------------------------------------------------------------
# Correctness


def order_check(
    peer: str, ours: IntArray, theirs: IntArray, *, other: int | None = None,
    other_label: str = "category",
) -> CrossCheck:
    """Compare orderings: ``theirs`` (higher is stronger) must be a strictly increasing function
    of ``ours``, which holds iff sign(ours[a] - ours[b]) == sign(theirs[a] - theirs[b]) for
    every pair of hands. Sorted by (ours, theirs), it suffices to check adjacent hands."""
    order = np.lexsort((theirs, ours))
    o, t = ours[order], theirs[order]
    same = o[1:] == o[:-1]
    tie_bad = same & (t[1:] != t[:-1])
    order_bad = ~same & (t[1:] <= t[:-1])
    bad = np.flatnonzero(tie_bad | order_bad)[:5]
    return CrossCheck(
        peer=peer,
        hands=len(ours),
        distinct=len(np.unique(o)),
        ties=int(tie_bad.sum()),
        order=int(order_bad.sum()),
        examples=tuple((int(order[k]), int(order[k + 1])) for k in bad),
        other=other,
        other_label=other_label,
    )


def cross_check(hands: IntArray) -> tuple[list[CrossCheck], list[Category]]:
    """Cross-check our values of ``hands`` with evaluate_batch and every peer; also return our
    category of each hand."""
    cards = as_cards(hands)
    ours = np.array([hand_value(h) for h in cards], dtype=np.int64)
    ours_cat = [category_of(v) for v in ours.tolist()]
    batch = evaluate_batch(hands).astype(np.int64)
    # evaluate_batch must give the very same integers as hand_value, not just the same order
    results = [order_check("evaluate_batch", ours, batch,
                           other=int((batch != ours).sum()), other_label="unequal values")]

    ev = treys.Evaluator()
    t_ranks = [ev.evaluate(hole, board) for hole, board in as_treys(hands)]
    t_cat = [TREYS_CATEGORY[ev.class_to_string(ev.get_rank_class(r))] for r in t_ranks]
    results.append(order_check(
        "treys", ours, -np.array(t_ranks, dtype=np.int64),
        other=sum(a != b for a, b in zip(ours_cat, t_cat, strict=True)),
    ))

    p_ranks = [ph_evaluate_cards(*h) for h in as_phevaluator(hands)]
    results.append(order_check("phevaluator", ours, -np.array(p_ranks, dtype=np.int64)))

    e_vals = [eval7.evaluate(h) for h in as_eval7(hands)]
    e_cat = [EVAL7_CATEGORY[eval7.handtype(v)] for v in e_vals]
    folded = [Category.STRAIGHT_FLUSH if c is Category.ROYAL_FLUSH else c for c in ours_cat]
    results.append(order_check(
        "eval7", ours, np.array(e_vals, dtype=np.int64),
        other=sum(a != b for a, b in zip(folded, e_cat, strict=True)),
    ))
    return results, ours_cat


# ----------------------------------------------------------------------------------------
# Output


def machine_lines(seed: int, quick: bool) -> list[str]:
    """Describe the machine, the libraries and the run."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in PEERS)
    return [
        f"machine : {platform.platform()}; {cpu}",
        f"cpus    : {os.cpu_count()} (usable by this process: {usable})",
        f"python  : {platform.python_implementation()} {platform.python_version()}; "
        f"numpy {np.__version__}; {versions}",
        f"seed    : {seed}{'  (--quick: small sizes, exhaustive run skipped)' if quick else ''}",
    ]


def table_lines(rows: Sequence[Row], treys_rate: float, eval7_rate: float) -> list[str]:
    """The side-by-side table of rates."""
    head = (
        f"{'evaluator':<50} {'kind':<10} {'hands':>12} {'best s':>8} "
        f"{'hands/s':>13} {'x treys':>8} {'x eval7':>8}"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(
            f"{r.name:<50} {r.kind:<10} {r.hands:>12,} {r.seconds:>8.3f} {r.rate:>13,.0f} "
            f"{r.rate / treys_rate:>8.2f} {r.rate / eval7_rate:>8.2f}"
        )
    return out


def verdict(ok: bool, text: str) -> str:
    """A PASS/MISS line."""
    return f"  {'PASS' if ok else 'MISS'}  {text}"


# ----------------------------------------------------------------------------------------


def speed_rows(sizes: Sizes, rng: np.random.Generator) -> list[Row]:
    """Time every per-call evaluator on the same hands, then evaluate_batch on an (N, 7) array."""
    hands = random_hands(rng, sizes.per_call)
    cards = as_cards(hands)
    evaluate(cards[0])  # build the lookup tables outside the timings
    per_call: list[tuple[str, Callable[[Any], None], Sequence[object]]] = [
        ("game.poker.evaluate.evaluate (HandValue)", loop_evaluate, cards),
        ("game.poker.evaluate.hand_value (int)", loop_hand_value, cards),
        ("treys Evaluator.evaluate (pure Python)", loop_treys,
         as_treys(hands[: sizes.per_call_treys])),
        ("phevaluator.evaluate_cards (C)", loop_phevaluator, as_phevaluator(hands)),
        ("eval7.evaluate (C)", loop_eval7, as_eval7(hands)),
    ]
    rows = [
        Row(name, "per call", len(data),
            best_time(partial(loop, data), sizes.repeats))
        for name, loop, data in per_call
    ]
    batch = random_hands(rng, sizes.batch)  # a seeded (N, 7) int64 array of card indices
    evaluate_batch(batch[:1])  # build the numpy tables outside the timings
    for check in (True, False):
        seconds = best_time(partial(evaluate_batch, batch, check=check), sizes.repeats)
        rows.append(Row(f"game.poker.evaluate_batch.evaluate_batch check={check}", "batch",
                        len(batch), seconds))
    return rows


def run_exhaustive() -> tuple[Row, dict[Category, int]]:
    """Count every 7-card hand by category, in one timed run."""
    start = time.perf_counter()
    counts = seven_card_category_counts()
    row = Row("game.poker.evaluate_batch.seven_card_category_counts", "exhaustive", TOTAL_7,
              time.perf_counter() - start)
    return row, counts


def count_lines(counts: dict[Category, int]) -> tuple[list[str], int]:
    """The exhaustive counts against the textbook, and how many of them mismatch."""
    out = ["exhaustive counts (all 133,784,560 seven-card hands) against the textbook:"]
    failures = 0
    for cat in sorted(TEXTBOOK_7, reverse=True):
        got, want = counts.get(cat, 0), TEXTBOOK_7[cat]
        failures += got != want
        out.append(f"  {cat.label:<16} {got:>12,}  textbook {want:>12,}  "
                   f"{'ok' if got == want else 'MISMATCH'}")
    total = sum(counts.values())
    failures += total != TOTAL_7
    out.append(f"  {'total':<16} {total:>12,}  textbook {TOTAL_7:>12,}  "
               f"{'ok' if total == TOTAL_7 else 'MISMATCH'}")
    return out, failures


def cross_check_section(sizes: Sizes, rng: np.random.Generator) -> int:
    """Run and print the cross-check against evaluate_batch and every peer; return mismatches."""
    sample = np.concatenate([random_hands(rng, sizes.cross_uniform),
                             rich_hands(rng, sizes.cross_rich)])
    checks, ours_cat = cross_check(sample)
    print(f"cross-check on {len(sample):,} hands ({sizes.cross_uniform:,} uniform + "
          f"{len(sample) - sizes.cross_uniform:,} rich in rare categories); by our category:")
    print("  " + ", ".join(f"{cat.key} {ours_cat.count(cat):,}"
                           for cat in sorted(Category, reverse=True)))
    failures = 0
    for c in checks:
        print(f"cross-check {c.peer:<15}: {c.hands:,} hands, {c.distinct:,} distinct values, "
              f"{c.mismatches} mismatches ({c.detail()})")
        for a, b in c.examples:
            print(f"    e.g. {' '.join(map(str, cards_of(sample[a])))} vs "
                  f"{' '.join(map(str, cards_of(sample[b])))}")
        failures += c.mismatches
    print()
    return failures


def target_lines(rows: Sequence[Row], exhaustive: Row | None) -> list[str]:
    """The issue-2 targets as PASS/MISS lines."""
    ev_rate, hv_rate, treys_rate, eval7_rate = (rows[i].rate for i in (0, 1, 2, 4))
    out = [
        "targets (performance is reported, not enforced: machines vary):",
        verdict(ev_rate >= 2 * treys_rate,
                f"per call: evaluate {ev_rate / treys_rate:.2f}x treys (target >= 2x); "
                f"hand_value {hv_rate / treys_rate:.2f}x"),
    ]
    out += [
        verdict(r.rate >= 5 * eval7_rate,
                f"batch ({r.name.rsplit(' ', 1)[1]}, random hands): "
                f"{r.rate / eval7_rate:.2f}x eval7 per call (target >= 5x)")
        for r in rows[5:7]
    ]
    if exhaustive is not None:
        out += [
            verdict(exhaustive.rate >= 5 * eval7_rate,
                    f"exhaustive: {exhaustive.rate / eval7_rate:.2f}x eval7 per call "
                    "(target >= 5x)"),
            verdict(exhaustive.seconds <= 10.0,
                    f"exhaustive: all {TOTAL_7:,} hands in {exhaustive.seconds:.1f} s "
                    "(target about 10 s)"),
        ]
    out.append(f"  (5x eval7 per call = {5 * eval7_rate:,.0f} hands/s, i.e. all hands in "
               f"{TOTAL_7 / (5 * eval7_rate):.1f} s; the batch check=True rate would take "
               f"{TOTAL_7 / rows[5].rate:.1f} s)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the results; the exit status reports correctness only."""
    parser = argparse.ArgumentParser(
        prog="bench/evaluator.py",
        description="7-card evaluator speed, side by side with treys, phevaluator and eval7, "
        "plus an exhaustive category count and an ordering cross-check against every peer.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: small sizes, no exhaustive count (for the test suite)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed for the random hands (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if _MISSING is not None:
        print(f"bench/evaluator.py: the peer library {_MISSING!r} is not installed; "
              "`make bench` installs the bench extra (pip install -e '.[bench]')",
              file=sys.stderr)
        return 2
    sizes = QUICK if args.quick else FULL
    rng = np.random.default_rng(args.seed)
    for line in machine_lines(args.seed, args.quick):
        print(line)
    print()

    rows = speed_rows(sizes, rng)
    exhaustive, counts = run_exhaustive() if sizes.exhaustive else (None, None)
    print(f"speed (7-card hands; best of {sizes.repeats} runs; exhaustive: 1 run, its default "
          "2 worker threads; x = rate relative to that library's per-call loop)")
    shown = [*rows, exhaustive] if exhaustive else rows
    for line in table_lines(shown, rows[2].rate, rows[4].rate):
        print(line)
    print()
    failures = 0
    if counts is not None:
        lines, failures = count_lines(counts)
        print("\n".join(lines), end="\n\n")
    failures += cross_check_section(sizes, rng)
    for line in target_lines(rows, exhaustive):
        print(line)
    print()
    if failures:
        print(f"bench/evaluator.py: {failures} correctness mismatches", file=sys.stderr)
        print(f"result: FAIL ({failures} correctness mismatches)")
        return 1
    print("result: OK (0 correctness mismatches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
