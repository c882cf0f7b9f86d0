"""bench/id_readers.py: a quick run completes, reads every card tapped and prints its figures
(no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "id_readers.py"


def test_quick_run_prints_the_tap_to_reading_figures() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "WRONG" not in out
    for name in ("serial-lines", "hid-wedge"):
        assert re.search(rf"^{name} +5 +[\d.]+ +[\d.]+ +[\d.]+  (PASS|MISS)$", out, re.M), out
    assert re.search(r"^pcsc +(5 +[\d.]+ +[\d.]+ +[\d.]+  (PASS|MISS)|skipped: .+)$", out,
                     re.M), out
    assert re.search(r"^decode a 2-track swipe +200 ", out, re.M), out
