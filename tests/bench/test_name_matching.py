"""bench/name_matching.py: a quick run holds every listed variant, few clean people, and says
OK beside the previous matcher's figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "name_matching.py"


def test_quick_run_holds_every_listed_variant() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False, cwd=SCRIPT.parents[1])
    assert run.returncode == 0, run.stdout + run.stderr
    total = re.search(r"^all listed variants\s+(\d+)\s+(\d+)\s+(\d+)$", run.stdout, re.M)
    assert total is not None, run.stdout
    registered, clear_now, clear_before = map(int, total.groups())
    assert registered > 0 and clear_now == 0 and clear_before > clear_now
    assert re.search(r"^clean   : 1000 registrations, held now \d ", run.stdout, re.M)
    assert "result: OK" in run.stdout
