"""Time the pit's CLI per call, cold and warm, beside `python -c pass` in the same run (issue 15).

Each command runs as its own process, as a script or a pit boss runs it: `showdown settle`
(one hand), `showdown settle --lines` (N hands in one call, as hands per second), `showdown
evaluate`, `showdown --help` (every command listed, none of their modules imported),
`showdown par-sheet --help`, `showdown table dealer --help`, and the real start of
a console action (`table dealer void`: argument parsing, the PIN, the local API client, up to
the daemon's socket, where nobody answers here: exit 69).

Cold is the first call with no byte-code cache (a fresh PYTHONPYCACHEPREFIX: every module of
the project, its dependencies and the standard library compiled again, as after an install or
an upgrade); warm is the median of the calls after it. The evaluator keeps no table on disk
(values are computed on first use), so the byte-code cache is the only cache there is. The
operating system's file cache is not dropped (that needs root). PYTHONDONTWRITEBYTECODE is
lifted for these calls (the byte code goes to the private prefix, never into the tree).
Goal: every command under 0.3 s warm (PASS/MISS lines; a miss never fails a run: machines
vary).

Run: ``.venv/bin/python bench/cli_calls.py [--repeats 5] [--hands 2000] [--quick]``. Exit status 0,
or 1 when a command's answer is wrong (exit code, or a settlement line missing or refused).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.3
RANKS, SUITS = "23456789TJQKA", "cdhs"
SHOWDOWN = (sys.executable, "-m", "cli")


@dataclass(frozen=True)
class Case:
    """One command timed: its name, argv, stdin and the exit code it must give."""

    name: str
    argv: tuple[str, ...]
    stdin: bytes = b""
    exit_code: int = 0
    hands: int = 0  # hands settled by the call (a batch), 0 for a per-call figure


def random_hands(count: int, seed: int) -> list[dict[str, object]]:
    """Seeded valid hands: a dealer, a board and two seats with Ante, Odds, Play, side bets."""
    rng = random.Random(seed)
    deck = [r + s for r in RANKS for s in SUITS]
    hands = []
    for _ in range(count):
        cards = rng.sample(deck, 11)
        seats = [{"seat": seat, "hole": cards[7 + 2 * i: 9 + 2 * i],
                  "wagers": {"ante": 2500, "odds": 2500, "play": rng.choice((0, 2500, 7500)),
                             "trips_plus": 2500, "sweet16": 2500}}
                 for i, seat in enumerate((2, 5))]
        hands.append({"dealer": cards[:2], "board": cards[2:7], "seats": seats})
    return hands


def cases(hands: int, seed: int) -> list[Case]:
    """Every command timed, the baseline first."""
    batch = random_hands(hands, seed)
    lines = "".join(json.dumps(h) + "\n" for h in batch).encode()
    return [
        Case("python -c pass", (sys.executable, "-c", "pass")),
        Case("--help (every command listed)", (*SHOWDOWN, "--help")),
        Case("settle (one hand)", (*SHOWDOWN, "settle"), json.dumps(batch[0]).encode()),
        Case(f"settle --lines ({hands} hands)", (*SHOWDOWN, "settle", "--lines"), lines,
             hands=hands),
        Case("evaluate", (*SHOWDOWN, "evaluate", "Ah", "Kh", "Qh", "Jh", "Th", "2c", "3d")),
        Case("par-sheet --help", (*SHOWDOWN, "par-sheet", "--help")),
        Case("table dealer --help", (*SHOWDOWN, "table", "dealer", "--help")),
        Case("table dealer void (to the socket)",
             (*SHOWDOWN, "table", "dealer", "void", "--socket", "/nonexistent/showdown.sock",
              "--staff-id", "bench"), exit_code=69),
    ]


def call(case: Case, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Run the case once: wall-clock seconds from spawn to exit, and the finished process."""
    start = time.perf_counter()
    done = subprocess.run(case.argv, input=case.stdin, capture_output=True, env=env,  # noqa: S603
                          cwd=ROOT, timeout=300, check=False)
    return time.perf_counter() - start, done


def wrong(case: Case, done: subprocess.CompletedProcess[bytes]) -> str | None:
    """What is wrong with a call's answer, or None."""
    if done.returncode != case.exit_code:
        return (f"exit {done.returncode}, expected {case.exit_code}:"
                f" {done.stderr.decode(errors='replace').strip()[-300:]}")
    if case.hands:
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        settled = [a["line"] for a in answers if "settlement" in a]
        if settled != list(range(1, case.hands + 1)):
            return f"{len(settled)} of {case.hands} hands settled in order"
    return None


def main() -> int:
    """Time every case cold then warm and print the table; 1 when an answer was wrong."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="warm calls per command")
    parser.add_argument("--hands", type=int, default=2000, help="hands in the batched call")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 warm calls, 50 hands")
    args = parser.parse_args()
    repeats, hands = (2, 50) if args.quick else (max(1, args.repeats), max(1, args.hands))
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs,"
          f" Python {platform.python_version()}, load average"
          f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failures: list[str] = []
    rows: list[tuple[Case, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="showdown-bench-cli-") as prefix:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": prefix,
               "SHOWDOWN_PIN": "0000"}
        env.pop("SHOWDOWN_PAYTABLES", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # warm calls find what the cold call wrote
        for case in cases(hands, args.seed):
            cold, done = call(case, env)
            warm_times = []
            for _ in range(repeats):
                seconds, done = call(case, env)
                warm_times.append(seconds)
                problem = wrong(case, done)
                if problem:
                    failures.append(f"{case.name}: {problem}")
            rows.append((case, cold, statistics.median(warm_times)))
    baseline = rows[0][2]
    print(f"{'command':<36} {'cold s':>8} {'warm s':>8} {'warm - pass':>12}  per hand / rate")
    for case, cold, warm in rows:
        rate = (f"{warm / case.hands * 1000:.3f} ms a hand, {case.hands / warm:,.0f} hands/s"
                if case.hands else "")
        print(f"{case.name:<36} {cold:>8.3f} {warm:>8.3f} {warm - baseline:>12.3f}  {rate}")
    for case, _, warm in rows[1:]:
        if not case.hands:
            verdict = "PASS" if warm < GOAL_S else "MISS"
            print(f"{verdict} {case.name} under {GOAL_S} s warm: {warm:.3f} s")
    for failure in failures:
        print(f"WRONG {failure}")
    print("result: " + ("OK" if not failures else f"{len(failures)} wrong answers"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
