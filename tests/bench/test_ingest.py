"""bench/ingest.py: a quick run finishes, prints its table, and finds every message stored once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "ingest.py"


def test_quick_run_prints_the_table_and_stores_every_message_once() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^scenario +broker +database +workers +messages +seconds +msg/s ", out,
                     re.M), out
    # SQLite is always there; each row has stored every message, none twice, none refused.
    for scenario in ("ingest core \\(handle_batch\\)", "1 instance"):
        row = re.search(rf"^{scenario} +\S+ +sqlite +\d+ +112 +[\d.]+ +[\d,]+ +112 +\d+ +0 +0 ",
                        out, re.M)
        assert row, (scenario, out)
    assert "2 instances, shared subscription" in out
    assert "result: OK" in out
