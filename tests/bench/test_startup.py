"""bench/startup.py: a tiny run (a journal of 1,500 records from four recorded heats, its own
cache) builds its journal, starts the daemon with checkpoints off and on, and prints its
table with every start's READY time and a short replay when checkpoints are on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "startup.py"


def test_a_tiny_run_prints_the_table(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "1500"], capture_output=True, text=True,
        timeout=600, check=False, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "SHOWDOWN_BENCH_STARTUP_CACHE": str(tmp_path),
             "SHOWDOWN_BENCH_STARTUP_HEATS": "4"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^ +records +file MB +off +on, 1st +on +replayed \(on\)", out, re.M), out
    row = re.search(r"^ +([\d,]+) +\d+ +([\d.]+)s +([\d.]+)s +([\d.]+)s +(\d+) ", out, re.M)
    assert row, out
    records, replayed = int(row.group(1).replace(",", "")), int(row.group(5))
    assert records >= 1500 and replayed < records  # checkpoints on: only the tail
    assert "checks: off full, on 1st full, on incremental" in out
    assert re.search(r"^checkpoint at [\d,]+ records: snapshot [\d.]+ ms", out, re.M), out
