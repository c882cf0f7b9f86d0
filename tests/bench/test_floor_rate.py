"""bench/floor_rate.py: a quick run prints hands/s beside the demo pace and the one-process peer,
the CPU a hand per process, the profile by component (the floor's process and one table's),
and finds every run's hands and messages in the central database (result OK)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "floor_rate.py"


def test_quick_run_prints_rates_beside_the_demo_pace_and_the_profile() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeat", "3"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^demo pace \(baseline\) +1 +10 +[\d.]+ +- +0$", out, re.M), out
    for tables, hands in ((1, 10), (2, 20)):
        assert re.search(rf"^full speed, virtual time +{tables} +{hands} +[\d.]+ +[\d.]+x +0$",
                         out, re.M), out
    # --repeat: the largest row's figure is the median of its runs, each printed
    largest = re.search(r"^full speed, virtual time +2 +20 +([\d.]+) .*\n  the median of 3"
                        r" runs: ([\d.]+), ([\d.]+), ([\d.]+) hands/s$", out, re.M)
    assert largest is not None, out
    runs = [float(largest[n]) for n in (2, 3, 4)]
    assert runs == sorted(runs) and float(largest[1]) == runs[1]
    assert re.search(r"^full speed, one process \(peer\) +2 +20 +[\d.]+ +[\d.]+x +0$", out,
                     re.M), out
    cpu = re.findall(r"^  CPU a hand: floor's process ([\d.]+) ms, the tables' ([\d.]+) ms,"
                     r" ([\d.]+) ms in all", out, re.M)
    assert len(cpu) == 3, out  # the demo pace and both full-speed rows in processes
    for floor_ms, tables_ms, whole_ms in cpu:
        assert float(tables_ms) > 0 and float(whole_ms) == pytest.approx(
            float(floor_ms) + float(tables_ms), abs=0.11)
    # group commit: the inputs arriving together (a sweep's chip reports, a street's cards)
    # share a transaction at full speed
    journal = re.findall(r"a hand's journal: ([\d.]+) inputs in ([\d.]+) transactions$", out,
                         re.M)
    assert len(journal) == 3, out
    assert all(0 < float(t) < float(i) for i, t in journal[1:]), journal
    assert re.search(r"^(PASS|MISS): [\d.]+ hands/s at 2 tables", out, re.M), out
    assert re.search(r"^the floor's process \(broker, central service, desk; .*\):$", out,
                     re.M), out
    # the profiles name where the CPU went, in ms a hand: the table's journal among it
    assert re.search(r"^table t01's process .*:\n(?:  .*\n)*?  journal +[\d.]+% +[\d.]+ ms  ",
                     out, re.M), out
    assert re.search(r"^  desk +[\d.]+% +[\d.]+ ms  ", out, re.M), out
    assert "result: OK" in out


def test_repeat_is_at_least_one() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeat", "0"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and "--repeat is at least 1" in run.stderr
