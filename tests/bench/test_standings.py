"""bench/standings.py: a quick run finishes and prints both tables, before and after."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import services
from tests.fixtures.services import require_service

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "standings.py"


def test_quick_run_prints_the_cost_and_the_arrival_to_page_tables() -> None:
    require_service("Mosquitto", services.mosquitto_up(), "{}:{}".format(*services.MOSQUITTO))
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    cost = re.search(r"^sqlite +500 +([\d,.]+) +([\d,.]+) +([\d,.]+)$", out, re.M)
    assert cost, out
    assert all(float(v.replace(",", "")) > 0 for v in cost.groups()), out
    for mode in ("full \\(before\\)", "incremental"):
        row = re.search(rf"^sqlite +500 +{mode} +[\d.]+ +([\d,]+) +([\d,]+) +50 +[\d.]+ +(\d+)$",
                        out, re.M)
        assert row, (mode, out)
        p50, worst, computations = (int(v.replace(",", "")) for v in row.groups())
        assert 0 < p50 <= worst
        assert 1 <= computations < 50  # the burst of 50 scores is not 50 computations
    assert re.search(r"^goal: under 200 ms at 500 entries on sqlite: (PASS|MISS)", out, re.M)
    assert "result: OK" in out
