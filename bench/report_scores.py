"""Time `showdown report scores`' campaign in one process and in two, and the play reports'
counting on a month of hands.

Run: `.venv/bin/python bench/report_scores.py [--heats 400] [--hands 50000]`. Prints the
machine, hands per second of the simulated campaign with 1 and 2 processes (the same seed:
the scores must be identical, else the script exits 1), and the time to count `--hands`
synthetic hands into the tables, dealers and heats reports.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime, timedelta

from cli.report.scores import simulate_campaign
from leaderboard.reports.facts import HandFact, SeatFact, StaffMark
from leaderboard.reports.play import play_report
from leaderboard.reports.reading import PlayFacts
from runtime.settings_files import read_paytables, read_tournament


def campaign(heats: int) -> bool:
    """Print the campaign's speed with 1 and 2 processes; whether both gave the same scores."""
    settings, paytables = read_tournament(None), read_paytables(None)
    results = {}
    for jobs in (1, 2):
        started = time.perf_counter()
        done = simulate_campaign(heats=heats, players=3, seed=11, settings=settings,
                                 paytables=paytables, jobs=jobs)
        took = time.perf_counter() - started
        results[jobs] = done
        print(f"campaign, {jobs} process(es): {heats} heats, {done.hands:,} hands in"
              f" {took:.1f} s = {done.hands / took:,.0f} hands/s")
    same = results[1] == results[2]
    print(f"same scores with 1 and 2 processes: {'yes' if same else 'NO'}")
    return same


def counting(hands: int) -> None:
    """Print the time to count ``hands`` synthetic hands of 3 seats at 10 tables."""
    start = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    facts: list[HandFact] = []
    staff = [StaffMark(table=f"t{t:02d}", at=start, seq=1, staff_id=f"D{t}", role="dealer",
                       signed_in=True) for t in range(10)]
    for n in range(hands):
        table = f"t{n % 10:02d}"
        opened = start + timedelta(seconds=90 * (n // 10))
        seats = tuple(SeatFact(seat=s, entry_id=f"E{n // 100}-{s}",
                               wagers={"ante": 2500, "odds": 2500, "trips_plus": 2500},
                               markers=frozenset(), choice="play_1x", keyed=False)
                      for s in (1, 2, 3))
        facts.append(HandFact(table=table, hand_id=f"{table}-{n}", heat_id=f"H{n // 1000}",
                              stage="qualifying", settled=True, opened=opened,
                              ended=opened + timedelta(seconds=60), seats=seats,
                              cards_keyed=0, corrections=0, resolutions=0, manual=False))
    given = PlayFacts(tables={f"t{t:02d}": "v" for t in range(10)}, hands=tuple(facts),
                      alerts=(), staff=tuple(staff), heats=(), events=(), staff_names={},
                      unreadable=())
    for by in ("table", "dealer", "heat"):
        started = time.perf_counter()
        report = play_report(given, by)
        took = time.perf_counter() - started
        print(f"{by}s report over {hands:,} hands: {took * 1000:,.0f} ms"
              f" ({len(report.rows)} rows)")


def main() -> int:
    """Run both measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heats", type=int, default=400)
    parser.add_argument("--hands", type=int, default=50_000)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python"
          f" {platform.python_version()}")
    same = campaign(args.heats)
    counting(args.hands)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
