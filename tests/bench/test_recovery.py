"""bench/recovery.py: the recovery-time table. Fast: an unknown row is refused, and a row that
lost or doubled a message makes the run exit 1 (a goal missed does not). Soak: quick runs of
the rebuild row (a private Mosquitto), of the restart row (recorded heats of the simulated
table, a cache of its own), and of the database and central failover rows."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "recovery.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(REPO / "bench"))  # its `support` helpers, as when run as a script
    try:
        spec = importlib.util.spec_from_file_location("bench_recovery", SCRIPT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(REPO / "bench"))


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


@pytest.mark.soak
def test_a_quick_database_and_central_failover_lose_and_double_nothing() -> None:
    """One primary lost under the central service, one active instance lost: each row is
    measured, with 0 lost and 0 doubled (a PostgreSQL pair of the test's own)."""
    run = _run(["--quick", "--rows", "database,central"])
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^failure +time to serve again +lost +doubled +goal", out, re.M), out
    for failure in ("database primary lost", "active central instance lost"):
        assert re.search(rf"^{failure} +\d+\.\d\d s .* 0 +0 +< 10 s +(PASS|MISS)", out,
                         re.M), out
    assert "not measured" not in out
    assert "result: OK (0 rows with a wrong result)" in out


def test_an_unknown_row_is_refused() -> None:
    run = _run(["--rows", "restart,nonsense"])
    assert run.returncode == 2
    assert "--rows takes restart, brokers, database, central, rebuild; not nonsense" in run.stderr


def test_a_lost_message_is_a_wrong_result_and_a_missed_goal_is_not(
        bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    table = sys.modules["support.recovery_table"]

    def row(lost: int, value: float) -> object:
        async def measure(options: object) -> list[object]:
            del options
            return [table.Outcome(failure=f"drill {lost}", value=value,
                                  goal=table.Goal(2.0, "s"), lost=lost, doubled=0)]
        return table.Row(name=f"drill{lost}", about="a drill", measure=measure)

    bench.ROWS["drill0"], bench.ROWS["drill1"] = row(0, 3.5), row(1, 0.5)
    try:
        missed = asyncio.run(bench.main_async(bench.parse(["--rows", "drill0"])))
        out = capsys.readouterr().out
        assert missed == 0, out
        assert re.search(r"^drill 0 +3\.50 s +0 +0 +< 2 s +MISS", out, re.M), out
        wrong = asyncio.run(bench.main_async(bench.parse(["--rows", "drill1"])))
        out = capsys.readouterr().out
        assert wrong == 1, out
        assert "WRONG: 1 lost, 0 doubled" in out
        assert "result: WRONG (1 rows with a wrong result)" in out
    finally:
        del bench.ROWS["drill0"], bench.ROWS["drill1"]


@pytest.mark.soak
@pytest.mark.skipif(shutil.which("mosquitto") is None and not Path("/usr/sbin/mosquitto").exists(),
                    reason="mosquitto is not installed")
def test_a_quick_rebuild_stores_every_message_once() -> None:
    run = _run(["--quick", "--rows", "rebuild", "--database", "sqlite"])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^centre rebuilt from 2 tables' journals \(sqlite\) +[\d,]+ msg/s +0 +0 "
                     r"+>= 10,000 msg/s +(PASS|MISS) +ingest core alone", out, re.M), out
    assert re.search(r"[1-9]\d* resend requests, 224 messages resent", out), out
    assert "result: OK" in out


@pytest.mark.soak
def test_a_quick_restart_keeps_every_record(tmp_path: Path) -> None:
    run = _run(["--quick", "--rows", "restart"], SHOWDOWN_BENCH_STARTUP_CACHE=str(tmp_path),
               SHOWDOWN_BENCH_STARTUP_HEATS="4")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^table daemon restart, [\d,]+ records +[\d.]+ s +0 +0 +< 2 s "
                     r"+(PASS|MISS) +[\d.]+ s at [\d,]+ records", out, re.M), out
    assert "checked: incremental" in out
    assert "result: OK" in out
