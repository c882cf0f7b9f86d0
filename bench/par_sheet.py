"""Time each exact par sheet and print its figures (issue target: Trips Plus under 10 s).

Run: `.venv/bin/python bench/par_sheet.py [--paytables FILE]` (also part of `make bench`).
The Trips Plus time is measured cold (the evaluator's tables are built inside it) and warm.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from game.paytables.parsheet import (
    ParSheet,
    pocket_bonus_par_sheet,
    sweet16_par_sheet,
    trips_plus_par_sheet,
)
from game.poker.evaluate_batch import seven_card_category_counts
from runtime.settings_files import read_paytables

T = TypeVar("T")
TRIPS_PLUS_TARGET_S = 10.0


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def percent(value: Fraction) -> str:
    units = round(value * 1_000_000)  # exact: hundredths of a basis point
    return f"{units // 10_000}.{units % 10_000:04d}%"


def row(name: str, sheet: ParSheet, seconds: float) -> str:
    rtp = sheet.return_to_player
    return (f"{name:<26} {seconds:>9.3f} s  {sheet.outcomes:>13,}  "
            f"RTP {percent(rtp):>9}  = {rtp.numerator}/{rtp.denominator}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--paytables", type=Path, help="paytable file (default: the one in force)")
    args = parser.parse_args()
    paytables = read_paytables(args.paytables)
    print(f"par sheets for {paytables.source} (exact, single 52-card deck)")
    print(f"{'bet':<26} {'time':>11}  {'outcomes':>13}")

    cold, cold_s = timed(lambda: trips_plus_par_sheet(paytables.trips_plus))
    print(row("Trips Plus (cold)", cold, cold_s))
    warm, warm_s = timed(lambda: trips_plus_par_sheet(paytables.trips_plus, None))
    # the par sheet caches the enumeration; time a fresh enumeration as well
    fresh, fresh_s = timed(lambda: trips_plus_par_sheet(
        paytables.trips_plus, seven_card_category_counts()))
    assert warm.return_to_player == fresh.return_to_player == cold.return_to_player
    print(row("Trips Plus (re-enumerated)", fresh, fresh_s))
    print(row("Trips Plus (cached counts)", warm, warm_s))

    pocket, pocket_s = timed(lambda: pocket_bonus_par_sheet(paytables.pocket_bonus))
    print(row("Pocket Bonus", pocket, pocket_s))
    sweet, sweet_s = timed(lambda: sweet16_par_sheet(paytables.sweet16))
    print(row("Sweet 16", sweet, sweet_s))

    verdict = "met" if max(cold_s, fresh_s) < TRIPS_PLUS_TARGET_S else "MISSED"
    print(f"target: Trips Plus par sheet under {TRIPS_PLUS_TARGET_S:.0f} s: {verdict} "
          f"(cold {cold_s:.2f} s, re-enumerated {fresh_s:.2f} s)")


if __name__ == "__main__":
    main()
