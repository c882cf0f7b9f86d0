"""bench/quasar_sweep.py: a quick run prints the sweep time of 16 and 42 spots for each wiring
of QuasarMX readers and the SR-48 baseline (no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script, about 20 s (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "quasar_sweep.py"


def test_quick_run_prints_every_rows_sweep() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    for spots in (16, 42):
        for reader in ("SR-48 sim", "QuasarMX sim, 4 antennas", "QuasarMX sim, multiplexers"):
            assert re.search(rf"^{re.escape(reader)}.* {spots} +20 +\d+ +\d+ +\d+ +\d+$",
                             out, re.M), out
