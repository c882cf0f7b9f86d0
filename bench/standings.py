"""Benchmark the standings as the tournament grows (issue 15, 5): a score's arrival to the
page's update, and the cost of computing the standings, at 1k, 10k and 100k entries, on
SQLite and PostgreSQL, before (the whole database recomputed after every change, debounced)
and after (the incremental standings, leaderboard/standings/live.py) in the same run.

For each database and size a fresh database gets that many scored qualifying entries (bulk
inserts, support/standings_rows.py). Then:

- **cost**: the full recomputation (`standings_view.standings`, what every change cost
  before), the incremental standings' start (read everything once: `LiveStandings` at a
  restart) and one change (a score acknowledged, then the document again);
- **arrival -> page**: the real service (`LeaderboardService`, in this process, on the
  machine's Mosquitto) with a fake enrolled table t01 and an HTTP client on GET /events. The
  time runs from the table's publish of a signed ``score.recorded`` (QoS 1) to the SSE event
  whose document shows that score (among those awaiting acknowledgement). Scores are sent
  one at a time, a second apart; then a burst of scores at once, counting the service's
  computations until the page shows them all. Both with the shipped
  ``debounce_seconds`` (0.5).

The goal (under 200 ms at 100k entries, the incremental path) is reported PASS/MISS and never
fails a run. PostgreSQL is used when it answers (SHOWDOWN_BENCH_POSTGRES_URL, default
postgresql+psycopg://postgres@127.0.0.1:5432/test) in a schema of its own, dropped after;
Mosquitto at 127.0.0.1:1883 (SHOWDOWN_BENCH_MQTT_PORT).

Run: ``.venv/bin/python bench/standings.py [--quick] [--sizes 1000,10000,100000]
[--databases sqlite,postgresql] [--samples N] [--burst N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session
from support.ingest_tables import MQTT_HOST, MQTT_PORT, POSTGRES_URL, Database
from support.standings_rows import populate
from support.standings_service import START, VENUE, running

from leaderboard.models import Score
from leaderboard.standings.live import LiveStandings
from leaderboard.standings.view import ViewOptions, standings
from runtime.logs import configure_logging
from runtime.net import answers
from runtime.settings_files import read_tournament

REPO = Path(__file__).resolve().parents[1]
GOAL_MS = 200.0


@dataclass(slots=True)
class Cost:
    database: str
    entries: int
    full_ms: float
    live_start_ms: float
    live_change_ms: float


@dataclass(slots=True)
class Latency:
    database: str
    entries: int
    mode: str
    ready_s: float
    p50_ms: float
    max_ms: float
    burst: int
    burst_s: float
    computations: int


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def measure_cost(engine: sa.Engine, kind: str, entries: int, repeats: int) -> Cost:
    """The full recomputation, the incremental start and one incremental change."""
    settings = read_tournament(REPO / "config" / "tournament.toml")
    options = ViewOptions(venue=VENUE, title="bench", rows=20)
    full = []
    for _ in range(repeats):
        began = time.perf_counter()
        standings(engine, settings, options, now=START)
        full.append(time.perf_counter() - began)
    live = LiveStandings(engine, settings, options)
    began = time.perf_counter()
    live.document(START)
    start = time.perf_counter() - began
    changes = []
    with Session(engine) as s:
        waiting = s.scalars(sa.select(Score).where(Score.acknowledged_at.is_(None))
                            .limit(5)).all()
    for score in waiting:
        with Session(engine) as s, s.begin():
            s.execute(sa.update(Score).where(Score.entry_id == score.entry_id)
                      .values(acknowledged_at=score.recorded_at, ack_method="card_tap"))
        began = time.perf_counter()
        live.document(START)
        changes.append(time.perf_counter() - began)
        if live.stats.rebuilt or live.stats.entries_read != 1:
            raise RuntimeError(f"one acknowledgement read {live.stats}")
    return Cost(kind, entries, _ms(statistics.median(full)), _ms(start),
                _ms(statistics.median(changes)) if changes else 0.0)


async def measure_latency(workdir: Path, db: Database, entries: int, *, full: bool,
                          first: int, samples: int, burst: int) -> Latency:
    """The service's arrival -> page times, one score at a time and in a burst."""
    async with running(workdir, db.url, port=MQTT_PORT, full=full) as (service, ready):
        times = []
        for n in range(first, first + samples):
            times.append(await service.score(n))
            await asyncio.sleep(1.0)
        burst_s, computations = (await service.burst(first + samples, burst)
                                 if burst else (0.0, 0))
    return Latency(db.kind, entries, "full (before)" if full else "incremental", ready,
                   _ms(statistics.median(times)), _ms(max(times)), burst, burst_s,
                   computations)


def print_tables(costs: list[Cost], latencies: list[Latency]) -> None:
    print("\nrecompute cost (median ms)")
    print(f"{'database':<11}{'entries':>9}{'full recompute':>16}{'incremental start':>19}"
          f"{'incremental change':>20}")
    for c in costs:
        print(f"{c.database:<11}{c.entries:>9,}{c.full_ms:>16,.1f}{c.live_start_ms:>19,.1f}"
              f"{c.live_change_ms:>20,.1f}")
    print("\nscore published -> page's SSE event (ms)")
    print(f"{'database':<11}{'entries':>9}  {'mode':<15}{'ready s':>8}{'p50 ms':>9}"
          f"{'max ms':>9}{'burst':>7}{'burst s':>9}{'computations':>14}")
    for r in latencies:
        print(f"{r.database:<11}{r.entries:>9,}  {r.mode:<15}{r.ready_s:>8.1f}{r.p50_ms:>9,.0f}"
              f"{r.max_ms:>9,.0f}{r.burst:>7}{r.burst_s:>9.2f}{r.computations:>14}")


async def main_async(args: argparse.Namespace) -> int:
    print(f"machine: {platform.machine()} {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, SQLAlchemy {sa.__version__}, SQLite {sqlite3.sqlite_version}")
    if not answers(MQTT_HOST, MQTT_PORT):
        print(f"no MQTT broker at {MQTT_HOST}:{MQTT_PORT}: cannot run", file=sys.stderr)
        return 2
    host, port = sa.make_url(POSTGRES_URL).host, sa.make_url(POSTGRES_URL).port or 5432
    kinds = [k for k in args.databases if k == "sqlite" or answers(host or "", port)]
    costs: list[Cost] = []
    latencies: list[Latency] = []
    per_mode = args.samples + args.burst
    with tempfile.TemporaryDirectory(prefix="showdown-bench-standings-") as tmp:
        for kind in kinds:
            for size in args.sizes:
                workdir = Path(tmp) / f"{kind}-{size}"
                workdir.mkdir()
                db = Database(kind, workdir)
                try:
                    began = time.perf_counter()
                    populate(db.engine, size, live=2 * per_mode)
                    print(f"{kind} {size:,} entries written in {time.perf_counter() - began:.1f} s",
                          flush=True)
                    costs.append(measure_cost(db.engine, kind, size, args.repeats))
                    print(f"  full recompute {costs[-1].full_ms:,.0f} ms, incremental change"
                          f" {costs[-1].live_change_ms:,.1f} ms", flush=True)
                    for n, full in enumerate((True, False)):
                        latencies.append(await measure_latency(
                            workdir, db, size, full=full, first=n * per_mode,
                            samples=args.samples, burst=args.burst))
                        print(f"  {latencies[-1].mode}: p50 {latencies[-1].p50_ms:,.0f} ms",
                              flush=True)
                finally:
                    db.close()
    print_tables(costs, latencies)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    largest = max(args.sizes)
    for r in latencies:
        if r.entries == largest and r.mode == "incremental":
            verdict = "PASS" if r.max_ms < GOAL_MS else "MISS"
            print(f"goal: under {GOAL_MS:.0f} ms at {largest:,} entries on {r.database}: "
                  f"{verdict} (p50 {r.p50_ms:,.0f} ms, max {r.max_ms:,.0f} ms)")
    print("result: OK")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a small run (500 entries, SQLite) for the smoke test")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--samples", type=int, default=5, help="scores sent one at a time")
    parser.add_argument("--burst", type=int, default=1000, help="scores sent at once")
    parser.add_argument("--repeats", type=int, default=3, help="full recomputations timed")
    args = parser.parse_args()
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s]
    args.databases = [d for d in str(args.databases).split(",") if d]
    if args.quick:
        args.sizes, args.databases, args.samples, args.burst, args.repeats = (
            [500], ["sqlite"], 2, 50, 1)
    configure_logging(fmt="console", level="warning")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
