"""bench/snapshot.py: a quick run prints the snapshot's figures beside the replay it replaces
and checks that every restored snapshot equals the original's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "snapshot.py"
ROW = re.compile(r"^after (\d+) heats +(\d+) +(\d+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+)"
                 r" +(\d+)x$", re.M)


def test_quick_run_prints_size_and_times_beside_the_replay() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeat", "2"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^safe point +inputs +hands +bytes +take_ms +load_ms +replay_ms"
                     r" +replay/load$", out, re.M), out
    rows = ROW.findall(out)
    assert [r[0] for r in rows] == ["1", "2"], out
    first, second = ([float(x) for x in r[1:]] for r in rows)
    assert 0 < first[0] < second[0] and 0 < first[1] < second[1]  # more inputs, more hands
    assert all(x > 0 for x in first + second)
    assert "result: OK (every restored snapshot equals the original's)" in out
