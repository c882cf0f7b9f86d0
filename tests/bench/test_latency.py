"""bench/latency.py: a quick run completes and prints its table (no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "latency.py"


@pytest.mark.slow
def test_quick_run_prints_the_latency_memory_and_start_up_table() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=600, check=False)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "result: OK" in out
    assert re.search(r"^measure +\| embedded \(amqtt, in-process\)", out, re.M), out
    cells = r"\| +\d+ +[\d.]+ +[\d.]+ +[\d.]+ "
    for row in ("(a) last card written -> journal commit",
                "(b) settle pressed -> hand.settled received",
                "(c) last card -> hand.settled (incl. people)",
                "every card written -> journal commit"):
        assert re.search(rf"^ *{re.escape(row)} +{cells}", out, re.M), row
    assert re.search(r"^target embedded \(amqtt, in-process\): \(a\) p99 [\d.]+ ms < 10 ms: "
                     r"(PASS|MISS)$", out, re.M), out
    assert re.search(r"^checked embedded .*: \d+ messages, every seq received and verified",
                     out, re.M), out
    for row in ("spawn -> READY=1, fresh journal", "spawn -> READY=1, restart (replay)",
                "resident memory (VmRSS) at READY", "VmRSS after its hands",
                "peak resident memory (VmHWM)", "WATCHDOG=1 pings received"):
        assert re.search(rf"^{re.escape(row)} +\| \S", out, re.M), row
    assert re.search(r"^SIGTERM: STOPPING=1, exit codes +\| yes, \[0, 0\]", out, re.M), out
