"""bench/devices_kit.py: a quick run checks every installed driver and prints its table and
a summary line for each (no timing is asserted; a driver that does not conform makes the
script exit 1 and is named)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.adapter import ROLES
from drivers.registry import installed

pytestmark = pytest.mark.soak  # a whole run of a bench script (docs/testing.md)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "devices_kit.py"


def test_quick_run_prints_a_table_and_a_summary_line_for_each_driver() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                         text=True, timeout=600, check=False)
    out = run.stdout
    assert run.returncode in (0, 1), out + run.stderr
    names = [d.name for role in ROLES for d in installed(role)]
    for name in names:
        row = rf"^{re.escape(name)}\b.* \| (conforms[^|]*|FAILS [^|]+) \|"
        assert re.search(row, out, re.M), name
    failing = re.findall(r"^(.+?) +\| FAILS ", out, re.M)
    assert (run.returncode == 1) == bool(failing)
    assert out.rstrip().splitlines()[-1] == ("result: OK" if not failing else
                                             "result: NOT CONFORMING: " + ", ".join(failing))
