"""bench/memory.py: the daemon on a real table config reaches READY, its memory is printed with
the interpreter's and the breakdown by package, and it stops cleanly (no figure asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import services
from tests.fixtures.services import require_service

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "memory.py"


@pytest.mark.mosquitto
def test_a_run_prints_the_memory_at_ready_and_its_parts() -> None:
    host, port = services.MOSQUITTO
    require_service("Mosquitto", services.mosquitto_up(), f"{host}:{port}")
    run = subprocess.run([sys.executable, str(SCRIPT), "--mosquitto", f"{host}:{port}",
                          "--top", "5"], capture_output=True, text=True, timeout=300,
                         check=False, cwd=SCRIPT.parents[1])
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    ready = re.search(r"^at READY: VmRSS ([\d.]+) MiB, VmHWM ([\d.]+) MiB \(RssAnon ([\d.]+),"
                      r" RssFile ([\d.]+),", out, re.M)
    assert ready, out
    rss, hwm, anon, file = (float(x) for x in ready.groups())
    assert hwm >= rss > 0 and abs(anon + file - rss) < 1.0
    interpreter = re.search(r"^interpreter \(python -c pass\) +([\d.]+)$", out, re.M)
    imports = re.search(r"^imports \((\d+) modules\), by package +([\d.]+)$", out, re.M)
    assert interpreter and imports, out
    assert 0 < float(interpreter.group(1)) < rss and int(imports.group(1)) > 100
    parts = re.findall(r"^  (\S.*?) +(-?[\d.]+)$", out, re.M)
    assert len(parts) == 6  # the five largest and the others
    assert {"(standard library)", "sqlalchemy"} <= {name for name, _ in parts}
    assert re.search(r"^(PASS|MISS) VmRSS at READY under 80 MiB: [\d.]+ MiB$", out, re.M)
    assert "result: OK" in out
