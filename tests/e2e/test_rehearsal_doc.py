"""Issue 31's "done" test (soak): docs/operations/rehearsal.md's commands, run verbatim as
separate processes, as a technician would from a checkout.

The doc marks its command blocks with `<!-- rehearsal: NAME -->` before each fenced `sh`
block: `setup` (git clone, which this checkout stands for, and `make venv`, run here in the
checkout), `venue` (the venue, in a terminal of its own: started in the background from a
fresh directory holding only a `.venv` link to the checkout's), `desk` (run by one `bash -e`,
so its shell variables carry from line to line; every line a process of its own). The venue
then runs with the entry seated at t01; a SIGKILL of t01 and of the central service must
lose and double nothing; Ctrl-C (SIGINT) must stop it with exit 0 and nothing left running.

The bench part of the issue's "done when" (Playwright, Debian's chromium: one entry's 10
hands played through t01's bench page with its console open, paid and taken on the
simulated reader, the participant tapping the rewards card, the score on the central page)
is `test_the_heat_is_played_on_the_bench_page`, which needs the bench's hand play
(controller/sim_bench) and is marked below while it is not written.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import services

pytestmark = pytest.mark.soak

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/operations/rehearsal.md"
READY_S = 240.0  # guards against a hang only
_BLOCK = re.compile(r"<!-- rehearsal: (\w+) -->\s*\n```sh\n(.*?)\n```", re.DOTALL)


def doc_blocks() -> dict[str, list[str]]:
    """The doc's marked command blocks, each a list of command lines (comments dropped)."""
    blocks: dict[str, list[str]] = {}
    for name, body in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        lines = [line for line in body.splitlines() if line.strip()
                 and not line.lstrip().startswith("#")]
        blocks.setdefault(name, []).extend(lines)
    return blocks


def test_the_doc_has_the_blocks_this_test_runs() -> None:
    blocks = doc_blocks()
    assert set(blocks) == {"setup", "venue", "desk"}
    assert blocks["setup"][-1] == "make venv"
    assert len(blocks["venue"]) == 1 and "showdown venue rehearse" in blocks["venue"][0]
    # the number of commands a technician types, as the doc's timing section says
    assert len(blocks["setup"]) + len(blocks["venue"]) == 3
    assert len(blocks["desk"]) == 5


class Background:
    """A command line run by the shell in the background, every line it printed kept."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def until(self, pattern: str, timeout: float = READY_S) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found := re.search(pattern, line):
                    return found
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.2)
        raise AssertionError(f"no line matches {pattern!r}:\n" + "\n".join(self.lines))


def _processes_naming(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(directory) in cmdline or " rehearsal/" in cmdline:
                found.append(int(entry.name))
    return [pid for pid in found if pid != os.getpid()]


def _pid_of(needle: str, cwd: Path) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            here = os.readlink(entry / "cwd")
        except OSError:
            continue
        if needle in cmdline and here == str(cwd):
            return int(entry.name)
    raise AssertionError(f"no process runs {needle} in {cwd}")


@pytest.fixture
def technician(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh working directory with the checkout's .venv, and a home of its own."""
    if not (shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/sbin")):
        reason = "the mosquitto binary is not installed (apt-get install mosquitto)"
        if services.services_required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    work = tmp_path / "showdown"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".local/state"),
           "PYTHONUNBUFFERED": "1"}
    yield work, env
    for pid in _processes_naming(work):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(work):
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _rows(database: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return list(db.execute(sql))


def test_the_rehearsal_docs_commands_run_verbatim(
        technician: tuple[Path, dict[str, str]]) -> None:
    work, env = technician
    blocks = doc_blocks()
    started = time.monotonic()
    # setup: `git clone` is this checkout; `make venv` runs in it (a no-op once done)
    done = subprocess.run(blocks["setup"][-1], shell=True, cwd=ROOT, env=env,  # noqa: S602
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    venue = Background(blocks["venue"][0], work, env)
    try:
        venue.until(r"^venue ready", READY_S)
        ready_s = time.monotonic() - started
        directory = work / "rehearsal"
        assert venue.until(r"^venue directory: (.*)$").group(1) == str(directory)
        bench = int(venue.until(r"^t01: +console http://127\.0\.0\.1:\d+/  bench"
                                r" http://127\.0\.0\.1:(\d+)/").group(1))
        assert bench > 0

        # the desk block, one shell: each line a process of its own
        desk = subprocess.run(["bash", "-e", "-x", "-c", "\n".join(blocks["desk"])], cwd=work,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
        assert desk.returncode == 0, desk.stdout + desk.stderr
        assert re.search(r"^signed in as S1 \(Pit Supervisor, supervisor\)", desk.stdout,
                         re.MULTILINE), desk.stdout
        entry = re.search(r"^entry (E-[0-9a-f]+) seated at table t01 seat 1", desk.stdout,
                          re.MULTILINE)
        assert entry is not None, desk.stdout + desk.stderr

        def seated() -> str:
            status = subprocess.run(
                [".venv/bin/showdown", "table", "status", "--config", "rehearsal/t01/table.toml"],
                cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False)
            return status.stdout

        deadline = time.monotonic() + 60
        while f"seat 1: {entry.group(1)} chips R2,000.00" not in (text := seated()):
            assert time.monotonic() < deadline, text
            time.sleep(0.5)

        # SIGKILL t01 and the central service: restarted, nothing lost or doubled
        database = directory / "leaderboard.sqlite3"
        before = _rows(database, "SELECT count(*) FROM entries")
        os.kill(_pid_of("rehearsal/t01/table.toml", work), signal.SIGKILL)
        os.kill(_pid_of("leaderboard serve", work), signal.SIGKILL)
        venue.until(r"^venue: t01 restarted")
        venue.until(r"^venue: central restarted")
        assert f"seat 1: {entry.group(1)} chips R2,000.00" in seated()  # from its journal
        assert _rows(database, "SELECT count(*) FROM entries") == before == [(1,)]

        # Ctrl-C in the venue's terminal
        venue.process.send_signal(signal.SIGINT)
        assert venue.process.wait(timeout=120) == 0
        assert venue.until(r"^venue: stopped$")
        assert [p for p in _processes_naming(work)
                if os.path.exists(f"/proc/{p}") and os.readlink(f"/proc/{p}/cwd") == str(work)
                ] == []
        print(f"rehearsal: venue ready {ready_s:.0f} s after start;"
              f" whole run {time.monotonic() - started:.0f} s")
    finally:
        if venue.process.poll() is None:
            venue.process.kill()


@pytest.mark.skip(reason="BENCH PART NOT WRITTEN YET (issue 31 done-when): play one entry's 10"
                  " hands through t01's bench page in chromium with the console open, pay and"
                  " take on the simulated reader, tap the rewards card to acknowledge, see the"
                  " score on the central page, SIGKILL t01 and the central service mid-heat"
                  " and find every hand and the score once; needs the bench's hand play")
def test_the_heat_is_played_on_the_bench_page() -> None:
    raise AssertionError("not written")
