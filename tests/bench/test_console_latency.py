"""bench/console_latency.py: a quick run completes and prints its figures (no timing is
asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "console_latency.py"


@pytest.mark.slow
def test_quick_run_prints_the_console_latency_table() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "result: OK" in out
    cells = r" +20 +[\d.]+ +[\d.]+ +[\d.]+"
    for row in ("(a) card written -> SSE event with it", "(b) card written -> status() shows it"):
        assert re.search(rf"^{re.escape(row)}{cells}$", out, re.M), out
    assert re.search(r"^target \(a\) p99 [\d.]+ ms < 100 ms: (PASS|MISS)$", out, re.M), out
