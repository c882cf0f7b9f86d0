"""`showdown bench` against a running daemon's bench: one line per answer, exit 0 done, 2 a bad
argument, 3 refused (the bench's reason), 69 no bench (not enabled, or not answering)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.controller.sim_bench.support import bench_config, bench_table, spots

REPO = Path(__file__).resolve().parents[3]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", "bench", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False)


async def test_each_action_answers_in_one_line_with_its_exit_code(tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        await table.open_heat((1,), stacks=False)
        url = ("--bench-url", bench.url)

        async def run(*args: str) -> subprocess.CompletedProcess[str]:
            return await asyncio.to_thread(_bench, *url, *args)

        done = await run("place", "1", "ante", "R25", "--from", "tray")
        assert (done.returncode, done.stdout) == (
            0, "placed R25.00 (1 chip) from the tray on seat 1 ante\n"), done.stderr
        await table.until("the wager", lambda s: spots(s, 1) == {"ante": 2_500})
        done = await run("take", "1", "ante")
        assert (done.returncode, done.stdout) == (0, "took R25.00 (1 chip) off seat 1 ante\n")
        done = await run("deal", "Qd")
        assert (done.returncode, done.stdout) == (0, "the shoe dealt Qd\n")
        done = await run("deal", "qd")
        assert done.returncode == 3
        assert done.stderr.strip() == ("showdown bench: error: refused: Qd was dealt already in"
                                       " this hand (Qd)")
        done = await run("--json", "deal")
        assert done.returncode == 0 and json.loads(done.stdout)["card"] != "Qd"
        done = await run("tap", "6012345678900001")
        assert (done.returncode, done.stdout) == (0, "tapped card …0001 (track2)\n")
        done = await run("fault", "shoe", "delay", "0.01")
        assert (done.returncode, done.stdout) == (0, "the shoe: delay = 0.01\n")
        done = await run("fault", "shoe", "delay", "0")
        assert done.returncode == 0
        done = await run("fault", "rfid", "smoke")
        assert done.returncode == 3 and "fault 'smoke' does not exist" in done.stderr
        done = await run("unplug", "id_reader")
        assert (done.returncode, done.stdout) == (0, "the ID reader unplugged\n")
        done = await run("plug", "id_reader")
        assert (done.returncode, done.stdout) == (0, "the ID reader plugged in\n")
        done = await run("state")
        assert done.returncode == 0 and done.stdout.count("\n") == 1
        state = json.loads(done.stdout)
        assert state["table"] == table.daemon.config.table
        assert state["devices"]["id_reader"]["plugged"] is True
        done = await run("shoe-state", "jam")
        assert (done.returncode, done.stdout) == (0, "the shoe reports jam\n")
        done = await run("shoe-state", "ready")
        assert done.returncode == 0
        done = await run("unknown-chip", "2", "odds")
        assert (done.returncode, done.stdout) == (
            0, "laid 1 chip the registry does not know on seat 2 odds\n")
        done = await run("power-cycle")
        assert (done.returncode, done.stdout) == (0, "the shoe lost power and came back\n")
        done = await run("place", "1", "ante", "R2.5O")
        assert done.returncode == 2 and "AMOUNT:" in done.stderr  # a usage error, no request


def test_no_bench_is_exit_69(tmp_path: Path) -> None:
    off = bench_config(tmp_path, bench="enabled = false\n")
    done = _bench("--config", str(off), "state")
    assert done.returncode == 69
    assert "no bench: [bench] enabled = true is not set" in done.stderr
    done = _bench("--bench-url", "http://127.0.0.1:9/", "deal")
    assert done.returncode == 69 and "no bench answers at http://127.0.0.1:9/" in done.stderr
    done = _bench("--bench-url", "ftp://127.0.0.1/", "deal")
    assert done.returncode == 2 and "--bench-url ftp://127.0.0.1/" in done.stderr
    done = _bench("deal")
    assert done.returncode == 2  # where the bench is: one of --config or --bench-url


def test_the_config_gives_the_address(tmp_path: Path) -> None:
    on = bench_config(tmp_path, bench="enabled = true\nport = 1\n")
    done = _bench("--config", str(on), "state")
    assert done.returncode == 69 and "no bench answers at http://127.0.0.1:1/" in done.stderr
    (tmp_path / "broken.toml").write_text("[table\n")
    done = _bench("--config", str(tmp_path / "broken.toml"), "state")
    assert done.returncode == 2 and "broken.toml" in done.stderr


def test_a_bench_port_taken_stops_the_daemon_naming_the_key(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = bench_config(tmp_path, bench=f"enabled = true\nport = {port}\n")
        done = subprocess.run([sys.executable, "-m", "cli", "table", "run", "--config",
                               str(config)], cwd=REPO, capture_output=True, text=True,
                              timeout=60, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{config}: bench.port: 127.0.0.1:{port} is already in use" in done.stderr
