"""bench/chip_reads.py: a quick run completes, finds nothing wrong and prints its figures (no
timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "chip_reads.py"


@pytest.mark.slow
def test_quick_run_prints_the_chip_report_figures() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "WRONG" not in out
    assert re.search(r"^apply\(ChipsSeen\) +2000 +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), out
    assert re.search(r"^(PASS|MISS): apply p99 [\d.]+ ms", out, re.M), out
