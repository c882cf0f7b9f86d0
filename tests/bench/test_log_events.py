"""bench/log_events.py and bench/library_review.py run and print their figures beside their
baselines (no figure asserted: machines vary)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(*args: str) -> str:
    run = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         timeout=300, check=False, cwd=BENCH.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_log_events_prints_each_output_per_event() -> None:
    out = _run(str(BENCH / "log_events.py"), "--events", "200")
    assert out.startswith("machine : ")
    figures = dict(re.findall(r"^  (\S.*?\S) +([\d.]+)$", out, re.M))
    assert set(figures) == {"JSON line to /dev/null (baseline)",
                            "native journald entry to a socket",
                            "debug line below the level"}
    assert all(float(v) > 0 for v in figures.values())


def test_library_review_measures_ours_and_says_what_it_could_not(tmp_path: Path) -> None:
    out = _run(str(BENCH / "library_review.py"), "--libs", str(tmp_path), "--runs", "1")
    assert re.search(r"^baseline: the standard library's asyncio, for scale: [\d.]+ ms", out,
                     re.M)
    ours = re.findall(r"^(\S.*?): ours (\S+) \((\d+) lines in (\d+) files\), import [\d.]+ ms$",
                      out, re.M)
    assert [(piece, module) for piece, module, _, _ in ours] == [
        ("config validation", "controller.config"), ("backoff", "runtime.backoff"),
        ("sd_notify", "runtime.sd_notify"), ("journald", "runtime.journald")]
    assert all(int(lines) > 0 for _, _, lines, _ in ours)
    assert out.count("not measured (no ") == 10  # every candidate, none installed there
