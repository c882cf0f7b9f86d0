"""controller.startup on a real journal: the simulated table (a real `showdown table run`
subprocess) plays a heat writing checkpoints; start-up from the newest checkpoint gives the
same state as the full replay, and each kind of damage to a checkpoint (its state changed or
missing, another table key, another snapshot version, another configuration, a state that
does not restore) falls back to an older checkpoint or the full replay, logged, with no
fault. Damage to the chain is still the error state."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from controller.config import read_table_config
from controller.journal import Journal, verify_file
from controller.journal.checkpoints import (
    CHECKPOINT_KIND,
    find_checkpoints,
    read_heads,
    write_checkpoint,
)
from controller.startup import Started, fold_shoe_reads, start_journal
from controller.wiring import wire_table
from game.table.snapshot import SNAPSHOT_VERSION, take_snapshot
from simulators.table_toml import desk_key_file, simulated_table_toml
from tests.controller.journal.support import raw, tamper
from wire.signing import Signer, load_private_key, save_private_key

# One worker runs the whole module: its module-scoped fixture is built once, not once per
# worker (docs/testing.md).
pytestmark = pytest.mark.xdist_group("startup-checkpoints")

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 180.0  # against a hang only


@dataclass(slots=True)
class Log:
    """A logger that keeps what it was told."""

    lines: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def info(self, event: str, **kw: Any) -> None:
        self.lines.append(("info", event, kw))

    def warning(self, event: str, **kw: Any) -> None:
        self.lines.append(("warning", event, kw))

    def error(self, event: str, **kw: Any) -> None:
        self.lines.append(("error", event, kw))

    def critical(self, event: str, **kw: Any) -> None:
        self.lines.append(("critical", event, kw))

    def events(self, level: str) -> list[tuple[str, dict[str, Any]]]:
        return [(e, kw) for lv, e, kw in self.lines if lv == level]


def _config(directory: Path, *, tournament: Path = REPO / "config" / "tournament.toml",
            heats: int = 1) -> Path:
    path = directory / "table.toml"
    desk_key, desk_keys = desk_key_file(directory)  # the virtual desk and dealer, named
    text = simulated_table_toml(
        venue="cp", table="t01", broker="embedded", tournament=tournament,
        paytables=REPO / "config" / "paytables.toml", socket=directory / "console.sock",
        heats=heats, desk_keys=desk_keys, desk_key=desk_key.name, virtual_dealer=True,
        log_format="json", log_level="info")
    path.write_text(text + "\n[journal]\ncheckpoint_every = 40\n")
    return path


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose journal holds one heat played by the simulated table."""
    directory = Path(tmp_path_factory.mktemp("played"))
    save_private_key(Signer.generate("t01"), directory / "table.key")
    config = _config(directory)
    with (directory / "daemon.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli", "table", "run", "--config", str(config)],
            stdout=log, stderr=subprocess.STDOUT, cwd=directory,
            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + GUARD_S
        while not _heat_closed(directory / "journal.sqlite"):
            assert process.poll() is None, (directory / "daemon.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the simulated heat did not end"
            time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    return directory


def _heat_closed(journal: Path) -> bool:
    if not journal.exists():
        return False
    con = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        return bool(con.execute("SELECT count(*) FROM journal WHERE kind = 'desk' AND "
                                "json_extract(payload, '$.command') = 'close_heat'"
                                ).fetchone()[0])
    except sqlite3.Error:
        return False
    finally:
        con.close()


@pytest.fixture
def table(played: Path, tmp_path: Path) -> Path:
    """A copy of the played table's directory (journal and key) for one test to change."""
    for name in ("journal.sqlite", "table.key"):
        shutil.copy(played / name, tmp_path / name)
    (tmp_path / "table.key").chmod(0o600)
    _config(tmp_path)
    return tmp_path


def start(directory: Path, *, checkpoints: bool = True, config: Path | None = None
          ) -> tuple[Started, Log]:
    """Start-up as the daemon does it, on the directory's journal."""
    cfg = read_table_config(config or directory / "table.toml")
    daemon = wire_table(cfg).daemon
    log = Log()
    started = start_journal(cfg.journal, service=daemon._load()[0],
                            fresh=lambda: daemon._load()[0],
                            signer=load_private_key(cfg.table_key), checkpoints=checkpoints,
                            log=log, clock=daemon.clock)
    return started, log


def state(started: Started) -> Any:
    assert started.journal is not None
    started.journal.close()
    return take_snapshot(started.service.core), started.shoe_reads


def reference(directory: Path) -> Any:
    """The state after the full replay, on a copy (start-up appends records)."""
    copy = directory / "reference"
    copy.mkdir()
    shutil.copy(directory / "journal.sqlite", copy / "journal.sqlite")
    for key in ("table.key", "desk.key"):  # the config names the virtual desk's key
        shutil.copy(directory / key, copy / key)
    text = (directory / "table.toml").read_text().replace(str(directory / "console.sock"),
                                                          str(copy / "console.sock"))
    (copy / "table.toml").write_text(text)
    started, _ = start(copy, checkpoints=False)
    assert started.checkpoint_seq is None and started.faults == []
    return state(started)


def checkpoint_seqs(path: Path) -> list[int]:
    with Journal.open(path, read_only=True) as j:
        return [r.seq for r in j.records() if r.kind == CHECKPOINT_KIND]


def test_start_up_from_the_newest_checkpoint_is_the_full_replay(table: Path) -> None:
    expected = reference(table)
    seqs = checkpoint_seqs(table / "journal.sqlite")
    assert len(seqs) >= 3
    started, log = start(table)
    assert started.faults == [] and started.checkpoint_seq == seqs[-1]
    with Journal.open(table / "journal.sqlite", read_only=True) as j:
        total = j.last_record_seq()
    assert started.replayed < total - seqs[-1] + 1  # only the tail
    assert state(started) == expected
    assert log.events("warning") == [] and log.events("error") == []
    # the next start checks only what follows the signed verified head it recorded
    again, log = start(table)
    assert again.checkpoint_seq == seqs[-1] and state(again)[0] == expected[0]
    verified = [kw for e, kw in log.events("info") if e == "journal verified"]
    assert verified[0]["how"].startswith("incremental")


def test_each_checkpoint_holds_the_shoe_reads_of_the_records_it_covers(played: Path) -> None:
    """The daemon keeps its shoe reads current at every commit and a checkpoint copies them:
    they are exactly what folding the journal's card records up to its head gives."""
    key = load_private_key(played / "table.key").public_key
    with Journal.open(played / "journal.sqlite", read_only=True) as j:
        # the journal keeps the states of its newest checkpoints only
        checkpoints = [c for c in find_checkpoints(j, key, limit=100) if c.body is not None]
        records = list(j.records())
    assert len(checkpoints) >= 2
    cards = 0
    for checkpoint in checkpoints:
        covered = [r for r in records if r.seq <= checkpoint.covers.journal_seq]
        expected = fold_shoe_reads({}, covered)
        cards += sum(r.kind == "card" for r in covered)
        assert checkpoint.body is not None
        assert checkpoint.body["shoe_reads"] == {d: [s, i] for d, (s, i) in expected.items()}
    assert cards and any(c.body and c.body["shoe_reads"] for c in checkpoints)


def _body_of(path: Path, seq: int) -> str:
    con = raw(path)
    try:
        payload = con.execute("SELECT payload FROM journal WHERE seq = ?", (seq,)).fetchone()[0]
        digest = json.loads(payload)["body_sha256"]
        return str(digest)
    finally:
        con.close()


@pytest.mark.parametrize("damage", ["state_changed", "state_missing"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(table: Path,
                                                                  damage: str) -> None:
    expected = reference(table)
    path = table / "journal.sqlite"
    seqs = checkpoint_seqs(path)
    digest = _body_of(path, seqs[-1])
    con = raw(path)
    if damage == "state_changed":
        con.execute("UPDATE checkpoint_body SET body = replace(body, '\"hands_opened\":', "
                    "'\"hands_opened\": ') WHERE sha256 = ?", (digest,))
    else:
        con.execute("DELETE FROM checkpoint_body WHERE sha256 = ?", (digest,))
    con.close()
    started, log = start(table)
    assert started.faults == [] and started.checkpoint_seq == seqs[-2]
    assert state(started) == expected
    (_event, kw), = log.events("warning")
    assert kw["checkpoint"] == seqs[-1]
    assert ("SHA-256" if damage == "state_changed" else "missing") in kw["reason"]
    assert log.events("error") == [] and verify_file(path) == []


def test_another_table_key_uses_no_checkpoint_and_replays_everything(table: Path) -> None:
    expected = reference(table)
    (table / "table.key").unlink()
    save_private_key(Signer.generate("t01"), table / "table.key")  # a new key
    started, log = start(table)
    assert started.faults == [] and started.checkpoint_seq is None
    assert state(started) == expected
    reasons = [kw["reason"] for _, kw in log.events("warning")]
    assert len(reasons) == 3 and all("signature" in r for r in reasons)
    verified = [kw["how"] for e, kw in log.events("info") if e == "journal verified"]
    assert verified[0].startswith("full")  # the verified head is the old key's too


def test_another_snapshot_version_replays_everything(table: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A software update that changed the snapshot format (cannot be made with real files).
    expected = reference(table)
    monkeypatch.setattr("controller.startup.SNAPSHOT_VERSION", SNAPSHOT_VERSION + 1)
    started, log = start(table)
    assert started.checkpoint_seq is None and state(started) == expected
    assert all("snapshot version" in kw["reason"] for _, kw in log.events("warning"))


def test_another_configuration_refuses_the_checkpoint(table: Path) -> None:
    changed = table / "tournament.toml"
    text = (REPO / "config" / "tournament.toml").read_text()
    changed.write_text(text + "\n# edited\n")
    # a comment does not change the settings: the checkpoint still fits
    config = _config(table, tournament=changed)
    started, log = start(table, config=config)
    assert started.checkpoint_seq is not None
    started.journal.close()  # type: ignore[union-attr]
    # a setting that changes: every checkpoint is refused, the full replay is used
    text_changed = text.replace('name = "Main Casino Floor tournament area"',
                                'name = "Another floor"', 1)
    assert text_changed != text
    changed.write_text(text_changed)
    started, log = start(table, config=config)
    assert started.faults == [] and started.checkpoint_seq is None
    state(started)
    assert log.events("warning") and all("cannot be restored" in kw["reason"]
                                         for _, kw in log.events("warning"))


def test_a_state_that_does_not_restore_falls_back(table: Path) -> None:
    expected = reference(table)
    path = table / "journal.sqlite"
    cfg = read_table_config(table / "table.toml")
    with Journal.open(path) as j:  # a signed checkpoint whose state is not the core's
        bad = write_checkpoint(j, {"core": {"version": SNAPSHOT_VERSION, "config": {}}},
                               covers=read_heads(j), snapshot_version=SNAPSHOT_VERSION,
                               signer=load_private_key(cfg.table_key)).seq
    seqs = checkpoint_seqs(path)
    started, log = start(table)
    assert started.checkpoint_seq == seqs[-2] and state(started) == expected
    (_event, kw), = log.events("warning")
    assert kw["checkpoint"] == bad and "cannot be restored" in kw["reason"]


def test_a_changed_record_after_the_verified_head_is_the_error_state(table: Path) -> None:
    start(table)[0].journal.close()  # type: ignore[union-attr]  # records a verified head
    path = table / "journal.sqlite"
    with Journal.open(path, read_only=True) as j:
        last = j.last_record_seq()
    edit = "UPDATE journal SET payload = '{\"x\":1}' WHERE seq = "
    tamper(path, edit + str(last))
    started, _log = start(table)
    assert started.faults and "checksum_mismatch" in started.faults[0]
    assert started.journal is not None
    started.journal.close()


def test_a_changed_checkpoint_before_the_verified_head_is_the_error_state(table: Path) -> None:
    start(table)[0].journal.close()  # type: ignore[union-attr]  # records a verified head
    path = table / "journal.sqlite"
    newest = checkpoint_seqs(path)[-1]
    edit = ("UPDATE journal SET payload = replace(payload, '\"format\":1', "
            "'\"format\":1 ') WHERE seq = ")
    tamper(path, edit + str(newest))
    started, log = start(table)
    assert started.faults and "checkpoint record" in started.faults[0]
    assert log.events("critical")  # the table cannot go on
    started.journal.close()  # type: ignore[union-attr]



def test_the_technicians_rotation_keeps_the_state_and_the_old_file(
        table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = reference(table)
    path = table / "journal.sqlite"
    con = raw(path)  # every message acknowledged, as the broker would have
    con.execute("UPDATE outbox SET delivered = 1, delivered_wall = wall")
    con.close()
    assert main(["journal", "rotate", "--config", str(table / "table.toml"),
                 "--why", "end of the tournament"]) == 0
    out = capsys.readouterr().out
    assert "read-only as" in out and "continues both chains" in out
    archived = [p for p in table.iterdir() if p.name.startswith("journal.sqlite.2")]
    assert len(archived) == 1 and verify_file(archived[0]) == []
    started, log = start(table)
    assert started.faults == [] and started.checkpoint_seq == 2  # the new file's own
    assert state(started) == expected
    assert log.events("warning") == []
