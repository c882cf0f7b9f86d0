"""`showdown venue rehearse` as a technician runs it (soak: it starts a whole venue, twice):
separate processes, its addresses printed and answering, each table connected through TLS
with its own account and holding the desk's roster, a child killed with SIGKILL started
again, SIGTERM (then SIGINT on the second run) stopping everything with exit 0 and nothing
left running; the second run on the same directory reuses the keys and the accounts."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import services
from tests.printed_lines import PrintedLines

pytestmark = pytest.mark.soak

READY_S = 180.0  # guards against a hang only



class Venue(PrintedLines):
    """The venue's process and every line it printed (read by a thread)."""

    def __init__(self, directory: Path, *args: str) -> None:
        self.directory = directory
        super().__init__(subprocess.Popen(
            [sys.executable, "-m", "cli", "venue", "rehearse", "--dir", str(directory), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}))

    def until(self, pattern: str, timeout: float = READY_S) -> re.Match[str]:
        """The first printed line matching ``pattern`` (waits for it)."""
        return super().until(pattern, timeout)

    def stop(self, how: signal.Signals) -> int:
        self.process.send_signal(how)
        code = self.process.wait(timeout=120)
        self.join(timeout=10)
        return code


@pytest.fixture
def venue_dir(tmp_path: Path) -> Iterator[Path]:
    services.mosquitto_binary()
    directory = tmp_path / "rehearsal"
    yield directory
    for pid in _children(directory):  # a failed test leaves nothing behind
        os.kill(pid, signal.SIGKILL)


def _children(directory: Path) -> list[int]:
    """The processes whose command line names the venue's directory (but the venue's own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(directory) in cmdline and "venue rehearse" not in cmdline:
            found.append(int(entry.name))
    return found


def _pid_of(directory: Path, needle: str) -> int:
    for pid in _children(directory):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if needle in cmdline:
            return pid
    raise AssertionError(f"no process runs {needle}")


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - our own 127.0.0.1
        return answer.status, answer.read().decode()


def _venue_listens_on(directory: Path, port: int) -> bool:
    """Whether a process naming the venue's directory listens on ``port``: read from the
    kernel's socket tables, because a connect test is fooled by another test's server taking
    the freed port, or by a loopback connect to a free ephemeral port meeting itself."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if str(directory) not in cmdline:
                continue
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                return True
        except OSError:
            continue
    return False


def test_the_venue_runs_restarts_and_stops_as_processes(venue_dir: Path) -> None:
    venue = Venue(venue_dir, "--tables", "2")
    try:
        venue.until(r"^venue ready")
        text = "\n".join(venue.lines)
        page = int(venue.until(r"^page: +http://127\.0\.0\.1:(\d+)/").group(1))
        broker = int(venue.until(r"^broker: +mqtts://127\.0\.0\.1:(\d+) \(TLS").group(1))
        tables = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
            r"^(t0\d): +console http://127\.0\.0\.1:(\d+)/  bench http://127\.0\.0\.1:(\d+)/",
            text, re.MULTILINE)}
        assert set(tables) == {"t01", "t02"}
        assert re.search(r"^  S1 +supervisor +Pit Supervisor +passphrase \S{12,}, PIN \d{6},"
                         r" card \d{16}$", text, re.MULTILINE)
        assert "staff roster version" in text and "sent to table t02" in text
        assert _get(f"http://127.0.0.1:{page}/healthz")[0] == 200
        for table, (console, bench) in tables.items():
            assert _get(f"http://127.0.0.1:{console}/")[0] == 200
            status, state = _get(f"http://127.0.0.1:{bench}/api/state")
            assert status == 200 and f'"table": "{table}"' in state.replace('":"', '": "')
        # every process a process of its own; the tables' link is TLS with their accounts:
        # the broker saw no clear-text connection (the "wrong version number")
        for needle in ("mosquitto -c", "leaderboard serve", "t01/table.toml",
                       "t02/table.toml"):
            _pid_of(venue_dir, needle)
        broker_log = (venue_dir / "logs/broker.log").read_text()
        assert "wrong version number" not in broker_log
        assert re.search(r"New client connected from 127\.0\.0\.1:\d+ as t01 .*u't01'",
                         broker_log), broker_log[-2000:]

        # SIGKILL a table and the central service: both are started again
        os.kill(_pid_of(venue_dir, "t01/table.toml"), signal.SIGKILL)
        os.kill(_pid_of(venue_dir, "leaderboard serve"), signal.SIGKILL)
        venue.until(r"^venue: t01 was killed by SIGKILL; restarting in 2 s$")
        venue.until(r"^venue: central was killed by SIGKILL; restarting in 2 s$")
        venue.until(r"^venue: t01 restarted \(pid \d+\)$")
        venue.until(r"^venue: central restarted \(pid \d+\)$")
        assert _get(f"http://127.0.0.1:{page}/healthz")[0] == 200
        assert _get(f"http://127.0.0.1:{tables['t01'][1]}/api/state")[0] == 200

        assert venue.stop(signal.SIGTERM) == 0
        venue.until(r"^venue: stopped$")
        stops = [line for line in venue.lines if re.match(r"^venue: \S+ stopped$", line)]
        assert stops == ["venue: t02 stopped", "venue: t01 stopped", "venue: central stopped",
                         "venue: broker stopped"]
        assert _children(venue_dir) == []
        for port in (page, broker, *(p for pair in tables.values() for p in pair)):
            assert not _venue_listens_on(venue_dir, port), port
    finally:
        if venue.process.poll() is None:
            venue.process.kill()

    # the same directory again: keys, accounts and database kept; Ctrl-C stops it
    keys = (venue_dir / "keys/tables.pub").read_text()
    again = Venue(venue_dir, "--tables", "2")
    try:
        again.until(r"^venue ready")
        assert f"staff accounts as before: {venue_dir / 'staff/accounts.txt'} (owner-only)" \
            in again.lines
        assert not any("passphrase" in line for line in again.lines)
        assert (venue_dir / "keys/tables.pub").read_text() == keys
        assert again.stop(signal.SIGINT) == 0
        assert _children(venue_dir) == []
    finally:
        if again.process.poll() is None:
            again.process.kill()


def test_patrons_are_seated_on_the_first_run_only(venue_dir: Path) -> None:
    """`--patrons 2` on one table: the pit supervisor registers, sells and seats two made-up
    patrons with the desk's own commands; the table holds both (their codes), the central
    database both entries, the desk's audit names S1; a second run seats nobody again."""
    venue = Venue(venue_dir, "--tables", "1", "--patrons", "2")
    try:
        venue.until(r"^venue ready")
        seated = [venue.until(rf"^  t01 seat {n}: (\S+) (.+), rewards card (\d+) \(entry"
                              rf" (E-[0-9a-f]+)\)$") for n in (1, 2)]
        listing = (venue_dir / "patrons.txt").read_text().splitlines()
        assert [line.split(": ", 1)[0] for line in listing] == ["t01 seat 1", "t01 seat 2"]
        config = str(venue_dir / "t01" / "table.toml")
        deadline = time.monotonic() + 60
        while True:
            status = subprocess.run([sys.executable, "-m", "cli", "table", "status", "--config",
                                     config], capture_output=True, text=True, check=False)
            if all(f"seat {n}: {m.group(1)} chips R2,000.00" in status.stdout
                   for n, m in ((1, seated[0]), (2, seated[1]))):
                break
            assert time.monotonic() < deadline, status.stdout + status.stderr
            time.sleep(0.5)
        with sqlite3.connect(venue_dir / "leaderboard.sqlite3") as db:
            entries = sorted(r[0] for r in db.execute("SELECT entry_id FROM entries"))
            actors = {r[0] for r in db.execute(
                "SELECT actor FROM audit WHERE action LIKE '%seat%'")}
        assert entries == sorted(m.group(4) for m in seated)
        assert actors == {"S1"}, actors
        assert venue.stop(signal.SIGTERM) == 0
        again = Venue(venue_dir, "--tables", "1", "--patrons", "2")
        again.until(r"^patrons: seated on this venue's first run .*; none added$")
        again.until(r"^venue ready")
        assert again.stop(signal.SIGINT) == 0
    finally:
        if venue.process.poll() is None:
            venue.process.kill()
