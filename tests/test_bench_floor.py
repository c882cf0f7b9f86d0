"""bench/floor.py: a quick run prints hands/s beside the demo pace, the profile by component,
and finds every run's hands and messages in the central database (result OK)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "floor.py"


def test_quick_run_prints_rates_beside_the_demo_pace_and_the_profile() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^demo pace \(baseline\) +1 +10 +[\d.]+ +- +0$", out, re.M), out
    for tables, hands in ((1, 10), (2, 20)):
        assert re.search(rf"^full speed, virtual time +{tables} +{hands} +[\d.]+ +[\d.]+x +0$",
                         out, re.M), out
    assert re.search(r"^(PASS|MISS): [\d.]+ hands/s at 2 tables", out, re.M), out
    # the profile names where the busy samples went: the journal is always among them
    assert re.search(r"^  journal +[\d.]+%  ", out, re.M), out
    assert "result: OK" in out
