"""bench/hand_parts.py: a quick run times each pure part of a hand beside the way it was done
before, from one simulated table's journal, and checks the parts' results."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "hand_parts.py"
ROW = re.compile(r"^(the core, a look after each|the journal \(FULL, this disk\)|sealing the"
                 r" messages|verifying them centrally) +.+? +([\d.]+) +.+? +([\d.]+|-)$", re.M)


def test_quick_run_prints_each_part_beside_its_peer_and_checks_them() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeat", "2"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    inputs = re.search(r"^one table, 10 hands: (\d+) inputs \(([\d.]+) a hand\), (\d+) messages",
                       out, re.M)
    assert inputs is not None, out
    assert int(inputs[1]) >= 10 * 40 and int(inputs[3]) >= 10 * 2  # every card, chip, message
    rows = {name: (float(now), None if peer == "-" else float(peer))
            for name, now, peer in ROW.findall(out)}
    assert set(rows) == {"the core, a look after each", "the journal (FULL, this disk)",
                         "sealing the messages", "verifying them centrally"}, out
    assert all(now > 0 for now, _ in rows.values())
    # each part but the last is printed beside the way it was done before (no timing is
    # asserted: bench figures are read, not tested)
    assert [name for name, (_, peer) in rows.items() if peer is None] == \
        ["verifying them centrally"]
    assert "result: OK" in out
