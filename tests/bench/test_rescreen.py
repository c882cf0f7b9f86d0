"""bench/rescreen.py: a quick run screens the planted patrons exactly and says OK."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "rescreen.py"


def test_quick_run_refuses_and_holds_exactly_the_planted_patrons() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False,
                         cwd=SCRIPT.parents[1])
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^rescreen: 300 patrons against 1000 rows in [\d.]+ s .*refused 3,"
                     r" held 3$", run.stdout, re.M), run.stdout
    assert "result: OK" in run.stdout
