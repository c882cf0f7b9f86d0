"""bench/quasar_corruption.py: a short run damages inventory answers, nothing crashes, and
the rates are printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "quasar_corruption.py"


def test_short_run_prints_the_rates_and_no_crash() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--trials", "3000"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "crashes (must be 0): 0" in out
    for kind in ("1 byte", "2 bytes", "burst"):
        assert re.search(rf"^{kind} +1000 +\d+ +\d+ +\d+ +[\d.]+%$", out, re.M), out
