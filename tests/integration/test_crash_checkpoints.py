"""SIGKILL of the table daemon (a real `showdown table run` subprocess, the simulated table)
while it creates its journal, while it writes a checkpoint and while it rotates its journal,
then a restart that plays on:
0 lost and 0 doubled messages, and the state an uninterrupted run of the same inputs reaches
(docs/testing-crash.md, "Kills during checkpoints and rotation"). A kill while the journal
is first created leaves no file at the journal's path (only its staging file), so the
restart creates it afresh.

The kill lands at an exact point: the test hooks (controller/journal/pause.py) stop the
daemon there when their environment variable names that point, and write a marker file; the
test waits for the marker and kills the process group.

What is compared: (1) every input record of the final journal, replayed through a fresh
table core, produces exactly the messages the outbox holds for it, in seq order, across the
rotated files too (nothing lost, nothing doubled, seqs contiguous); (2) start-up from the
final journal (newest checkpoint and the tail) gives the same `take_snapshot` as that full
replay; (3) the journal verifies clean and nothing is left undelivered.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from controller.config import read_table_config
from controller.journal import Journal, is_own_kind, verify_file
from controller.journal.checkpoints import HOOK_ENV as CHECKPOINT_HOOK
from controller.journal.rotation import HOOK_ENV as ROTATION_HOOK
from controller.journal.rotation import journal_files
from controller.journal.store import CREATE_HOOK_ENV as CREATE_HOOK
from controller.startup import start_journal
from controller.wiring import wire_table
from game.table.snapshot import take_snapshot
from simulators.table_toml import desk_key_file, simulated_table_toml
from tests.integration.crash_support import daemon_status
from wire.signing import Signer, load_private_key, save_private_key

# Each test kills a running daemon process and starts it again: the soak tier (docs/testing.md;
# the journal's own SIGKILL loop, tests/controller/journal, stays in the fast lane).
pytestmark = pytest.mark.soak

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 120.0  # against a hang only; nothing here asserts a duration


class Table:
    """A simulated table's directory: config, key, journal, and its daemon processes."""

    def __init__(self, directory: Path, socket_dir: Path) -> None:
        self.dir = directory
        self.socket = socket_dir / "api.sock"
        self.tournament = directory / "tournament.toml"
        shutil.copy(REPO / "config" / "tournament.toml", self.tournament)
        save_private_key(Signer.generate("t01"), directory / "table.key")
        self.config = directory / "table.toml"
        self.log = directory / "daemon.log"

    def write_config(self, *, heats: int, rotate: str = "month") -> None:
        desk_key, desk_keys = desk_key_file(self.dir)  # the virtual desk, named
        text = simulated_table_toml(
            venue="crash-cp", table="t01", broker="embedded", tournament=self.tournament,
            paytables=REPO / "config" / "paytables.toml", socket=self.socket, heats=heats,
            desk_keys=desk_keys, desk_key=desk_key.name, virtual_dealer=True,
            log_format="json", log_level="info")
        self.config.write_text(
            text + f'\n[journal]\ncheckpoint_every = 30\nrotate = "{rotate}"\n')

    def start(self, **hook: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(REPO), **hook}
        env.update({f"{k}_MARKER": str(self.dir / "paused") for k in hook})
        with self.log.open("ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "cli", "table", "run", "--config",
                 str(self.config)], stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
                env=env, start_new_session=True)

    def wait_paused(self, process: subprocess.Popen[bytes]) -> str:
        marker = self.dir / "paused"
        deadline = time.monotonic() + GUARD_S
        while not marker.exists():
            assert process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the daemon never reached the hook"
            time.sleep(0.05)
        step = marker.read_text()
        marker.unlink()
        return step

    def finished(self) -> int:
        """How many times the virtual dealer said it had finished (all starts)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.count('"event": "virtual dealer finished"')

    def idle(self, process: subprocess.Popen[bytes], *, finished_before: int) -> None:
        """Wait until the virtual dealer has finished (the heat played out, or nothing to
        play), no hand is open and everything is delivered."""
        deadline = time.monotonic() + GUARD_S
        while True:
            assert process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the table did not settle down"
            status = asyncio.run(daemon_status(self.socket))
            if status is not None and status.get("hand") is None \
                    and (status.get("journal") or {}).get("pending") == 0 \
                    and self.finished() > finished_before:
                return
            time.sleep(0.3)


def kill(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # a power cut: the daemon and what it started
    process.wait()


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0


@pytest.fixture
def table(tmp_path: Path) -> Any:
    socket_dir = Path(tempfile.mkdtemp(prefix="cp-"))  # short: a socket path has ~107 bytes
    try:
        yield Table(tmp_path, socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


def check_against_replay(t: Table) -> None:
    """(1)-(3) of the module docstring."""
    journal = t.dir / "journal.sqlite"
    files = list(journal_files(journal))
    for path in files:
        assert verify_file(path) == [], path
    cfg = read_table_config(t.config)
    daemon = wire_table(cfg).daemon
    service = daemon._load()[0]
    produced: list[tuple[str, str, Any]] = []
    stored: list[tuple[str, str, Any]] = []
    seqs: list[int] = []
    for path in reversed(files):  # oldest first
        with Journal.open(path, read_only=True) as j:
            by_record: dict[int, list[Any]] = {}
            for m in j.messages(1):
                by_record.setdefault(m.record_seq, []).append(m)
                seqs.append(m.seq)
                assert m.delivered, f"message {m.seq} left undelivered"
            for record in j.records():
                if is_own_kind(record.kind):
                    assert record.seq not in by_record
                    continue
                applied = service.apply(record.kind, record.payload, record.wall)
                produced += [(path.name, m.type, dict(m.body)) for m in applied.messages]
                stored += [(path.name, m.type, dict(m.body))
                           for m in by_record.get(record.seq, [])]
    assert stored == produced  # 0 lost, 0 doubled, each message where its input is
    assert seqs == list(range(1, len(seqs) + 1))  # the table's seq, across the files
    copy = t.dir / "copy"
    copy.mkdir()
    shutil.copy(journal, copy / "journal.sqlite")
    started = start_journal(copy / "journal.sqlite", service=daemon._load()[0],
                            fresh=lambda: daemon._load()[0],
                            signer=load_private_key(cfg.table_key), checkpoints=True,
                            log=_Quiet(), clock=daemon.clock)
    assert started.faults == [] and started.checkpoint_seq is not None
    assert started.journal is not None
    started.journal.close()
    assert take_snapshot(started.service.core) == take_snapshot(service.core)


class _Quiet:
    def info(self, *_a: Any, **_k: Any) -> None: ...
    def warning(self, *_a: Any, **_k: Any) -> None: ...
    def error(self, *_a: Any, **_k: Any) -> None: ...
    def critical(self, *_a: Any, **_k: Any) -> None: ...


@pytest.mark.parametrize("step", ["in_transaction", "created"])
def test_a_kill_while_the_journal_is_first_created(table: Table, step: str) -> None:
    table.write_config(heats=1)
    process = table.start(**{CREATE_HOOK: step})
    try:
        assert table.wait_paused(process) == step
    finally:
        kill(process)
    journal = table.dir / "journal.sqlite"
    assert not journal.exists()  # never a half-made journal at its path
    assert (table.dir / "journal.sqlite.creating").exists()
    process = table.start()
    try:
        table.idle(process, finished_before=0)
    finally:
        stop(process)
    assert not (table.dir / "journal.sqlite.creating").exists()
    with Journal.open(journal, read_only=True) as j:
        assert next(j.records()).kind == "journal.created"
        assert j.pending_count() == 0 and j.last_seq() > 0  # the heat was played
    check_against_replay(table)


def _chip_alerts(log: str) -> list[str]:
    return [line for line in log.splitlines() if '"kind": "chip_clone"' in line
            or '"kind": "chip_pooling"' in line]


@pytest.mark.parametrize("where", ["wagers", "payout"])
def test_a_kill_with_chips_on_the_felt(table: Table, where: str) -> None:
    """The chips on the spots stay where they lie across the restart (the simulated reader,
    in the daemon's process, is given back what the table last read): nobody's chips are
    taken for another's, and no chip shows on two spots."""
    table.write_config(heats=1)
    process = table.start()
    deadline = time.monotonic() + GUARD_S
    try:
        while True:
            assert process.poll() is None, table.log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no {where} on the felt"
            status = asyncio.run(daemon_status(table.socket)) or {}
            hand = status.get("hand") or {}
            if status.get("spots") and (
                    status.get("payout") if where == "payout"
                    else hand and not status.get("payout")):
                break
            time.sleep(0.005)
    finally:
        kill(process)
    before = len(table.log.read_text())
    table.write_config(heats=0)
    process = table.start()
    try:
        table.idle(process, finished_before=table.finished())
    finally:
        stop(process)
    assert _chip_alerts(table.log.read_text()[before:]) == []
    check_against_replay(table)


@pytest.mark.parametrize("step", ["in_transaction", "committed"])
def test_a_kill_while_a_checkpoint_is_written(table: Table, step: str) -> None:
    table.write_config(heats=2)
    process = table.start(**{CHECKPOINT_HOOK: step})
    try:
        assert table.wait_paused(process) == step
    finally:
        kill(process)
    with Journal.open(table.dir / "journal.sqlite", read_only=True) as j:
        last = j.last_record_seq()
    table.write_config(heats=0)  # play out the open heat, open no other
    before = table.finished()
    process = table.start()
    try:
        table.idle(process, finished_before=before)
    finally:
        stop(process)
    with Journal.open(table.dir / "journal.sqlite", read_only=True) as j:
        assert j.last_record_seq() > last  # it played on after the kill
    check_against_replay(table)


@pytest.mark.parametrize("step", ["next_written", "archived"])
def test_a_kill_while_the_journal_rotates(table: Table, step: str) -> None:
    table.write_config(heats=1)
    process = table.start()
    try:
        table.idle(process, finished_before=0)
    finally:
        stop(process)
    # another tournament: the settings file changed (a comment: the checkpoints still fit)
    table.tournament.write_text(table.tournament.read_text() + "\n# the next tournament\n")
    table.write_config(heats=1, rotate="tournament")
    process = table.start(**{ROTATION_HOOK: step})
    try:
        assert table.wait_paused(process) == step
    finally:
        kill(process)
    table.write_config(heats=0, rotate="tournament")
    before = table.finished()
    process = table.start()  # rotates now if the kill came before the swap
    try:
        table.idle(process, finished_before=before)
    finally:
        stop(process)
    files = list(journal_files(table.dir / "journal.sqlite"))
    assert len(files) == 2  # rotated: at the restart if not before the kill
    assert not (table.dir / "journal.sqlite.next").exists()
    check_against_replay(table)
