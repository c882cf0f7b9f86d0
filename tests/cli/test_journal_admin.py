"""`showdown journal verify | clear-faults | replace`: the technician's journal tools."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli.errors import EXIT_ERROR, EXIT_REFUSED
from cli.journal.command import EXIT_PROBLEMS
from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import FAULTS_CLEARED_KIND, Journal, JournalRecord
from controller.journal.models import TRIGGERS
from tests.controller.journal.support import Message


def build(path: Path, *, faults: tuple[str, ...] = ()) -> None:
    """Three inputs, each causing two messages (seq 1-6), the first four delivered."""
    fake = FakeClockSource()

    def two(record: JournalRecord) -> list[Message]:
        return [Message(topic_suffix="events", type="card.read", body={"r": record.seq}),
                Message(topic_suffix="scores", type="score.recorded", body={"r": record.seq})]

    with Journal.open(path, clock=fake) as j:
        for n in range(3):
            j.append(kind="card", payload={"n": n}, clock=fake(), outgoing=two)
        for seq in range(1, 5):
            j.mark_delivered(seq)
        for detail in faults:
            j.record_fault("integrity", detail)


def tamper(path: Path, sql: str) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    for name in TRIGGERS:
        con.execute(f"DROP TRIGGER {name}")
    con.execute(sql)
    for create in TRIGGERS.values():
        con.execute(create)
    con.close()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["journal", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "t07.journal"


# ---- verify ------------------------------------------------------------------------------


def test_verify_intact(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path, faults=("seen at start",))
    code, out, err = run(capsys, "verify", "--journal", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"journal {path}",
        # the creation record, 3 inputs and the fault; 6 messages, 1-4 delivered
        "  5 records, 6 messages (2 not yet delivered), last message seq 6",
        "verification: full: every record and message, and SQLite's whole-file check",
        "integrity: OK",
        "open faults: 1 (the table stays in its error state)",
        "  fault 5 at 2026-01-01T12:00:00.008000+00:00: integrity: seen at start",
    ]


def test_verify_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path)
    code, out, _ = run(capsys, "verify", "--journal", str(path), "--json")
    got = json.loads(out)
    assert code == 0
    assert (got["intact"], got["problems"], got["open_faults"]) == (True, [], [])
    assert got["summary"] == {"records": 4, "messages": 6, "pending": 2, "last_seq": 6}


def test_verify_names_each_problem(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path)
    tamper(path, "UPDATE journal SET payload = '{\"n\":5}' WHERE seq = 3")
    tamper(path, "DELETE FROM outbox WHERE seq = 6")
    code, out, err = run(capsys, "verify", "--journal", str(path))
    assert (code, err) == (EXIT_PROBLEMS, "")
    assert "integrity: 2 PROBLEM(S)" in out
    assert ("  journal seq 3: content does not match its checksum (the row was changed) "
            "[checksum_mismatch]") in out
    assert "  head seq 5: the outbox ends at seq 5 but the head row says seq 6" in out
    code, out, _ = run(capsys, "verify", "--journal", str(path), "--json")
    problems = json.loads(out)["problems"]
    assert code == EXIT_PROBLEMS
    assert [(p["area"], p["seq"], p["code"]) for p in problems] == [
        ("journal", 3, "checksum_mismatch"), ("head", 5, "head_mismatch")]


@pytest.mark.parametrize("content", [b"", b"\x00" * 4096, b"SQLite format 3\x00" + b"\xee" * 900])
def test_verify_broken_file_is_a_problem_not_a_traceback(
        path: Path, content: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    path.write_bytes(content)
    code, out, err = run(capsys, "verify", "--journal", str(path))
    assert (code, err) == (EXIT_PROBLEMS, "")
    assert "integrity: 1 PROBLEM(S)" in out
    assert "[unreadable]" in out and "Traceback" not in out


def test_verify_truncated_file(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path)
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)
    code, out, err = run(capsys, "verify", "--journal", str(path))
    assert code == EXIT_PROBLEMS and err == ""
    assert "PROBLEM(S)" in out


def test_verify_missing_file(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "verify", "--journal", str(path))
    assert code == EXIT_PROBLEMS
    assert f"no journal at {path}" in out


# ---- clear-faults ------------------------------------------------------------------------


def test_clear_faults_is_recorded(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path, faults=("a", "b"))
    code, out, err = run(capsys, "clear-faults", "--journal", str(path),
                         "--operator", "T. Nkosi (tech 114)", "--why", "verified after outage")
    assert (code, err) == (0, "")
    assert out == ("cleared 2 fault(s) (fault seq 5, 6); recorded as journal seq 7 by "
                   "T. Nkosi (tech 114): verified after outage\n")
    with Journal.open(path, read_only=True) as j:
        assert j.open_faults() == []
        last = list(j.records())[-1]
        assert (last.kind, last.payload["operator"], last.payload["reason"]) == (
            FAULTS_CLEARED_KIND, "T. Nkosi (tech 114)", "verified after outage")
        assert j.verify() == []
    code, out, _ = run(capsys, "clear-faults", "--journal", str(path),
                       "--operator", "T. Nkosi", "--why", "again")
    assert (code, out) == (0, "no open faults: nothing cleared, nothing recorded\n")
    code, out, _ = run(capsys, "verify", "--journal", str(path))
    assert "open faults: none" in out


def test_clear_faults_refusals(path: Path, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    build(path, faults=("a",))
    code, _, err = run(capsys, "clear-faults", "--journal", str(path),
                       "--operator", "  ", "--why", "x")
    assert code == EXIT_ERROR and "operator must be non-empty" in err
    with Journal.open(path):  # the daemon is running: refused, not a usage error
        code, _, err = run(capsys, "clear-faults", "--journal", str(path),
                           "--operator", "T. Nkosi", "--why", "x")
    assert code == EXIT_REFUSED
    assert "open for writing by another process" in err and err.count("\n") == 1
    code, _, err = run(capsys, "clear-faults", "--journal", str(tmp_path / "none"),
                       "--operator", "T. Nkosi", "--why", "x")
    assert code == EXIT_ERROR and "no journal at" in err
    assert not (tmp_path / "none").exists()  # never creates a journal
    tamper(path, "UPDATE journal SET payload = '{}' WHERE seq = 2")
    code, _, err = run(capsys, "clear-faults", "--journal", str(path),
                       "--operator", "T. Nkosi", "--why", "x")
    assert code == EXIT_REFUSED and "fails verification with 1 problem(s)" in err
    with Journal.open(path, read_only=True) as j:
        assert len(j.open_faults()) == 1


def test_clear_faults_needs_operator_and_reason(path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    build(path, faults=("a",))
    with pytest.raises(SystemExit):
        main(["journal", "clear-faults", "--journal", str(path), "--operator", "X"])
    assert "--why" in capsys.readouterr().err


# ---- replace -----------------------------------------------------------------------------


def test_replace_a_damaged_journal(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path, faults=("checksum mismatch",))
    tamper(path, "UPDATE outbox SET body = '{}' WHERE seq = 2")
    code, out, err = run(capsys, "replace", "--journal", str(path), "--operator", "T. Nkosi",
                         "--why", "outbox row changed")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"retired {path} (1 problem(s)) as {path}.retired-")
    assert lines[2] == (f"new journal {path}: messages continue after seq 6; "
                        "recorded as journal seq 1")
    retired = Path(lines[0].split(" as ")[1])
    assert retired.exists()
    code, out, _ = run(capsys, "verify", "--journal", str(path))
    assert code == 0 and "last message seq 6" in out and "open faults: none" in out
    code, _, _ = run(capsys, "verify", "--journal", str(retired))
    assert code == EXIT_PROBLEMS  # the retired file is kept as it was


def test_replace_refusals(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(path)
    code, _, err = run(capsys, "replace", "--journal", str(path), "--operator", "T. Nkosi",
                       "--why", "x")
    assert code == EXIT_ERROR and "verifies clean" in err
    path.write_bytes(b"\x00" * 4096)
    code, _, err = run(capsys, "replace", "--journal", str(path), "--operator", "T. Nkosi",
                       "--why", "disk")
    assert code == EXIT_ERROR and "last message seq cannot be read" in err
    code, out, _ = run(capsys, "replace", "--journal", str(path), "--operator", "T. Nkosi",
                       "--why", "disk", "--last-seq", "6")
    assert code == 0 and "messages continue after seq 6" in out
