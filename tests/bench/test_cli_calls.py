"""bench/cli_calls.py: a quick run times every command cold and warm, beside `python -c pass`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cli_calls.py"
ROWS = ("python -c pass", "--help (every command listed)", "settle (one hand)",
        "settle --lines (50 hands)", "evaluate", "par-sheet --help", "table dealer --help",
        "table dealer void (to the socket)")


def test_quick_run_prints_a_row_per_command_and_every_answer_is_right() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False, cwd=SCRIPT.parents[1])
    assert run.returncode == 0, run.stdout + run.stderr
    figures = {}
    for name in ROWS:
        found = re.search(rf"^{re.escape(name)} +([\d.]+) +([\d.]+) +(-?[\d.]+)", run.stdout,
                          re.M)
        assert found, (name, run.stdout)
        figures[name] = tuple(float(x) for x in found.groups())
    assert all(cold > 0 and warm > 0 for cold, warm, _ in figures.values())
    assert figures["python -c pass"][2] == 0.0
    assert re.search(r"^settle --lines \(50 hands\) .* [\d,]+ hands/s$", run.stdout, re.M)
    assert len(re.findall(r"^(PASS|MISS) ", run.stdout, re.M)) == len(ROWS) - 2
    assert "result: OK" in run.stdout
