"""The deck checks (`game.decks.check`) on simulated decks: false alarms and detection rates.

For each deck mode of `simulators.decks` (``shuffled``: the baseline every other column is
read against; ``factory``: new-deck order; ``riffle``: a new deck riffled once, GSR;
``repeated``: one shuffled order dealt every hand) one `DeckWatch` checks ``--decks`` decks in
a row, each dealt as a hand of ``--seats`` seats by the default deal sequence (2 hole cards to
each seat and the dealer, 2 burns, 5 board: 21 cards at 6 seats). A held deck is cleared at
once (the supervisor replaced it). A repeated order can only be caught from its second deal,
so its detection rate counts the decks after the first. It prints, side by side, the share
of decks each per-deck test flags, the share flagged by any, the chi-square windows that
failed at 95% (one every ``chi_window`` decks) and the deck_suspect that two failing windows
in a row make.

Run: ``.venv/bin/python bench/shuffle_check.py [--decks 10000] [--seats 6] [--seed N]``;
``--quick`` checks 1,000 decks (tests/bench/test_shuffle_check.py). Exit status 0, or 1 when
the shuffled baseline's per-deck false-alarm rate exceeds 0.1% or an ordered deck is missed.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from game.decks.check import DeckLimits, DeckWatch, Shuffle
from game.hand.deal import DEFAULT_DEAL
from simulators.decks import DECK_MODES, DeckMode, DeckSource

DEFAULT_SEED = 20261201
PER_DECK_TESTS = ("composition", "succession_suit", "succession_rank", "repeated_run",
                  "repeated_positions")
MAX_FALSE_ALARMS = 0.001


@dataclass
class Run:
    """What one mode's decks gave."""

    mode: DeckMode
    decks: int = 0
    flagged: Counter[str] = field(default_factory=Counter)
    any_flag: int = 0
    windows: int = 0
    windows_failed: int = 0
    chi_suspects: int = 0
    seconds: float = 0.0


def run_mode(mode: DeckMode, *, decks: int, seats: int, seed: int,
             limits: DeckLimits | None = None) -> Run:
    """Check ``decks`` decks of one mode in a row at one table."""
    source = DeckSource(mode, rng=random.Random(f"{seed}:{mode}"), seed=seed)
    watch = DeckWatch(limits)
    dealt = len(DEFAULT_DEAL.targets(list(range(1, seats + 1))))
    run = Run(mode=mode)
    start = time.perf_counter()
    for n in range(decks):
        cards = tuple(source.next_deck()[:dealt])
        found = watch.check(Shuffle(hand_id=f"H{n:06d}", cards=cards))
        tests = {f.test for f in found if f.kind == "deck_suspect" and f.test in PER_DECK_TESTS}
        run.flagged.update(tests)
        run.any_flag += bool(tests)
        run.chi_suspects += any(f.test == "chi_square" and f.blocking for f in found)
        if watch.held:
            watch.clear()
        run.decks += 1
    run.seconds = time.perf_counter() - start
    run.windows, run.windows_failed = watch.windows_tested, watch.windows_failed
    return run


def _rate(count: int, total: int) -> str:
    return f"{count / total:8.4%}" if total else "       -"


def report(runs: list[Run], *, seats: int, seed: int) -> str:
    """The figures side by side, one column per mode."""
    lines = [f"machine: {platform.machine()} {platform.python_implementation()}"
             f" {platform.python_version()}; seed {seed}; {seats} seats"
             f" ({len(DEFAULT_DEAL.targets(list(range(1, seats + 1))))} cards a deck)",
             "", f"{'share of decks flagged':30}" + "".join(f"{r.mode:>12}" for r in runs)]
    lines.append(f"{'decks':30}" + "".join(f"{r.decks:>12,}" for r in runs))
    for test in PER_DECK_TESTS:
        lines.append(f"{test:30}" + "".join(f"{_rate(r.flagged[test], r.decks):>12}"
                                            for r in runs))
    lines.append(f"{'any per-deck test':30}" + "".join(f"{_rate(r.any_flag, r.decks):>12}"
                                                       for r in runs))
    lines.append(f"{'detection (per deck that can)':30}"
                 + "".join(f"{_rate(r.any_flag, r.decks - (r.mode == 'repeated')):>12}"
                           for r in runs))
    lines.append(f"{'chi-square windows tested':30}" + "".join(f"{r.windows:>12,}"
                                                                for r in runs))
    lines.append(f"{'  failed at 95%':30}" + "".join(f"{_rate(r.windows_failed, r.windows):>12}"
                                                     for r in runs))
    lines.append(f"{'  deck_suspect (2 in a row)':30}" + "".join(f"{r.chi_suspects:>12,}"
                                                                 for r in runs))
    lines.append(f"{'seconds':30}" + "".join(f"{r.seconds:>12.1f}" for r in runs))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every mode and print the table; the exit status says whether the baseline held."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decks", type=int, default=10_000)
    parser.add_argument("--seats", type=int, default=6, choices=range(1, 7))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--quick", action="store_true", help="1,000 decks a mode")
    args = parser.parse_args(argv)
    decks = 1_000 if args.quick else args.decks
    runs = [run_mode(mode, decks=decks, seats=args.seats, seed=args.seed) for mode in DECK_MODES]
    print(report(runs, seats=args.seats, seed=args.seed))
    by_mode = {r.mode: r for r in runs}
    base, factory = by_mode["shuffled"], by_mode["factory"]
    ok = base.any_flag / base.decks <= MAX_FALSE_ALARMS and factory.any_flag == factory.decks
    print(f"result: {'OK' if ok else 'FAIL'} (baseline false alarms"
          f" {base.any_flag / base.decks:.4%}, factory order caught"
          f" {factory.any_flag}/{factory.decks})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
