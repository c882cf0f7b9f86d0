"""bench/fuzz_desk_api.py: a short run against the live desk API answers no request with a 5xx,
reads every declared field, and prints the count by status class (the 10,000-request run is
the script's default)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.services import Database

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "fuzz_desk_api.py"


def test_a_short_fuzz_run_has_no_server_error(database_url: Database) -> None:
    run = subprocess.run(
        [sys.executable, "-W", "ignore", str(SCRIPT), "--requests", "400", "--seed", "7",
         "--database", database_url.url],
        capture_output=True, text=True, timeout=300, check=False,
    )
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    count = re.search(r"^desk API fuzz: (\d+) requests", out, re.M)
    assert count and int(count.group(1)) >= 400, out
    classes = re.search(r"^by class: +2xx (\d+) +3xx 0 +4xx (\d+) +5xx 0$", out, re.M)
    assert classes, out
    assert int(classes.group(1)) > 0 and int(classes.group(2)) > 0, out  # both kinds reached
    assert "result: OK (5xx answers: 0)" in out
