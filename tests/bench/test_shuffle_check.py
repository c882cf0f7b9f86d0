"""bench/shuffle_check.py: a quick run prints the figures side by side and passes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "shuffle_check.py"


def test_quick_run_has_no_false_alarm_and_catches_ordered_and_repeated_decks() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--seats", "6"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    header = re.search(r"^share of decks flagged +shuffled +factory +riffle +repeated$", out,
                       re.M)
    assert header, out
    detection = re.search(r"^detection \(per deck that can\) +(\S+)% +(\S+)% +(\S+)% +(\S+)%$",
                          out, re.M)
    assert detection, out
    shuffled, factory, riffled, repeated = (float(x) for x in detection.groups())
    assert shuffled <= 0.1 and factory == 100.0 and repeated == 100.0 and riffled >= 95.0
    windows = re.search(r"^chi-square windows tested +10 +10 +10 +10$", out, re.M)
    assert windows, out
    assert "result: OK (baseline false alarms" in out
