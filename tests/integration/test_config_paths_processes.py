"""The services started from another working directory (as systemd starts them from /) keep
every file beside the config that names it (issue 31, D334): the table daemon's journal,
socket and key, and a shoe configured as `url = "shoe"` found next to the config and read; the
leaderboard service's default database next to its config. Nothing lands in the working
directory."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.local_api import call
from simulators.shoe import ShoeSimulator
from tests.integration.daemon_support import PAYTABLES, REPO, TOURNAMENT, free_port, short_dir
from wire.signing import Signer, save_private_key

__all__ = ["short_dir"]  # the fixture, imported for the table's short socket path

GUARD_S = 60.0
TABLE_TOML = """\
[table]
venue = "paths"
id = "t01"
journal = "state/journal.sqlite"

[files]
tournament = "settings/tournament.toml"
paytables = "settings/paytables.toml"
chips = "chips.csv"
chip_set = "showdown-2026"

[keys]
table_key = "keys/table.key"

[shoe]
kind = "hardware"
url = "shoe"

[rfid]
kind = "manual"

[console]
port = 0

[mqtt]
broker = "embedded"

[api]
socket = "run/console.sock"
"""


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The processes a test starts, stopped (SIGTERM, then SIGKILL) at its end."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def showdown(args: list[str], *, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=cwd, env=env,
                                stdout=out, stderr=subprocess.STDOUT)


async def test_the_table_daemon_keeps_its_files_beside_its_config_and_finds_its_shoe_there(
        short_dir: Path, started: list[subprocess.Popen[bytes]]) -> None:
    etc, cwd = short_dir / "etc", short_dir / "cwd"
    for folder in (etc / "settings", etc / "keys", etc / "state", etc / "run", cwd):
        folder.mkdir(parents=True)
    shutil.copy(TOURNAMENT, etc / "settings/tournament.toml")
    shutil.copy(PAYTABLES, etc / "settings/paytables.toml")
    shutil.copy(REPO / "config/chips.example.csv", etc / "chips.csv")
    save_private_key(Signer.generate("t01"), etc / "keys/table.key")
    (etc / "table.toml").write_text(TABLE_TOML)
    log = short_dir / "table.log"
    # The shoe's pty is linked as etc/shoe: the daemon reads the shoe only if it looks there.
    with ShoeSimulator(seed=1, link_path=etc / "shoe"):
        process = showdown(["table", "run", "--config", "../etc/table.toml"], cwd=cwd, log=log)
        started.append(process)
        socket_path = etc / "run/console.sock"
        status: dict[str, object] = {}
        deadline = time.monotonic() + GUARD_S
        while not (isinstance(shoe := status.get("shoe"), dict) and shoe.get("connected")):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, (status, log.read_text())
            await asyncio.sleep(0.2)
            if socket_path.exists():
                answer = await call(socket_path, {"action": "status"}, timeout=5.0)
                status = answer["detail"] if answer and answer.get("ok") else {}
        assert shoe["device"] != str(cwd / "shoe")
        assert (etc / "state/journal.sqlite").is_file()
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text()
    assert list(cwd.iterdir()) == []


def test_the_leaderboard_creates_its_default_database_beside_its_config(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    etc, cwd = tmp_path / "etc", tmp_path / "cwd"
    for folder in (etc / "keys", cwd):
        folder.mkdir(parents=True)
    save_private_key(Signer.generate("leaderboard"), etc / "keys/leaderboard.key")
    table = Signer.generate("t01").public_key
    (etc / "tables.pub").write_text(f"t01 {table.base64}\n")
    shutil.copy(TOURNAMENT, etc / "tournament.toml")
    # No database key: the default sqlite:///leaderboard.sqlite3 (D334). The broker is a free
    # port nobody listens on: the service creates its database, serves, and keeps trying it.
    (etc / "leaderboard.toml").write_text(
        f'[service]\nvenue = "paths"\ntournament = "tournament.toml"\n\n'
        f'[mqtt]\nbroker = "127.0.0.1:{free_port()}"\n\n'
        '[keys]\nsigning_key = "keys/leaderboard.key"\ntables_file = "tables.pub"\n\n'
        '[http]\nport = 0\n')
    log = tmp_path / "leaderboard.log"
    process = showdown(["leaderboard", "serve", "--config", "../etc/leaderboard.toml"],
                       cwd=cwd, log=log)
    started.append(process)
    deadline = time.monotonic() + GUARD_S
    while "Started server process" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    assert (etc / "leaderboard.sqlite3").is_file()
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0, log.read_text()
    assert list(cwd.iterdir()) == []
