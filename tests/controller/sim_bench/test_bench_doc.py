"""docs/operations/bench.md's commands, run as written: from a folder holding a copy of the
repository's config/ (its console's and bench's ports moved to free ones, so parallel tests
do not collide), with `showdown` the installed command. The daemon's line keeps running in the
background; every other line must exit as the document says (0, or the `# exit N` it notes);
the daemon is then stopped and must exit 0."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "operations" / "bench.md"
MARKER = "<!-- the commands below are run by tests/controller/sim_bench/test_bench_doc.py -->"
GUARD_S = 60.0


def documented() -> list[str]:
    """Every command line of the document's sh blocks after the marker, in order."""
    text = DOC.read_text(encoding="utf-8")
    assert MARKER in text
    after = text.split(MARKER, 1)[1]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", after, flags=re.S):
        lines += [line for line in block.splitlines() if line.strip()]
    return lines


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _expected(line: str) -> int:
    found = re.search(r"# exit (\d+)", line)
    return int(found.group(1)) if found else 0


def test_the_bench_documents_commands_run_as_written(tmp_path: Path) -> None:
    commands = documented()
    assert any(c.startswith("showdown table run") for c in commands)
    assert sum(c.startswith("showdown bench") for c in commands) >= 10
    shutil.copytree(REPO / "config", tmp_path / "config")
    config = tmp_path / "config" / "table-sim.toml"
    bench_port = _free_port()
    text = config.read_text(encoding="utf-8")
    assert "port = 8080" in text and "port = 8091" in text
    config.write_text(text.replace("port = 8080", f"port = {_free_port()}")
                      .replace("port = 8091", f"port = {bench_port}"), encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    daemon: subprocess.Popen[bytes] | None = None
    log = (tmp_path / "daemon.log").open("wb")
    try:
        for line in commands:
            if line.startswith("showdown table run"):
                daemon = subprocess.Popen(line, shell=True, cwd=tmp_path, env=env,  # noqa: S602
                                          stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True)
                _wait_for_bench(bench_port, daemon)
                continue
            done = subprocess.run(line, shell=True, cwd=tmp_path, env=env,  # noqa: S602
                                  capture_output=True, text=True, timeout=GUARD_S, check=False)
            assert done.returncode == _expected(line), (line, done.stdout, done.stderr)
            if line.startswith("showdown bench") and done.returncode == 0:
                assert done.stdout.count("\n") == 1, (line, done.stdout)  # one line
            if "--name virtual-desk" in line:
                assert done.stdout.startswith("virtual-desk ")
        assert daemon is not None
    finally:
        if daemon is not None and daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=GUARD_S)
        log.close()
    assert daemon.returncode in (0, -signal.SIGTERM), (tmp_path / "daemon.log").read_text()
    written = (tmp_path / "daemon.log").read_text()
    assert f"http://127.0.0.1:{bench_port}/" in written  # `bench serving url=...`
    assert "virtual desk" not in written  # the config names none: nothing virtual ran


def _wait_for_bench(port: int, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + GUARD_S
    while True:
        assert daemon.poll() is None, "the daemon stopped"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state",
                                        timeout=2):
                return
        except OSError:
            assert time.monotonic() < deadline, "the bench never answered"
            time.sleep(0.1)
