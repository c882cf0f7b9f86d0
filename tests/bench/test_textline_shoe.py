"""bench/textline_shoe.py: a quick run completes and prints both tables (no timing is
asserted); the damage table's shares are exact counts, so one of them is checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "textline_shoe.py"


def test_quick_run_prints_the_damage_and_latency_tables() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert re.search(r"^result: OK \(codec crashes 0; every timed card read right\)$", out,
                     re.M), out
    # 52 cards x 4 styles: 2 or 3 bytes a line, 8 bits a byte; 0.00% crashes everywhere.
    assert re.search(r"^1 bit flipped +\| +4192 \| .*\| +0\.00%$", out, re.M), out
    for damage in ("1 byte replaced", "1 byte dropped", "1 byte doubled", "cut by a line end"):
        assert re.search(rf"^{damage} +\| +\d+ \| .*\| +0\.00%$", out, re.M), damage
    for driver in ("text-line (this example)", "showdown-shoe (baseline)"):
        assert re.search(rf"^{re.escape(driver)} +\| +[\d.]+ \| +[\d.]+ \| +[\d.]+ \| yes$",
                         out, re.M), driver
