"""`showdown leaderboard backup`: a checked copy of the SQLite database while it is written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from cli.errors import EXIT_ERROR
from cli.main import main
from leaderboard.backup import BackupError, backup_sqlite, sqlite_file
from leaderboard.db import alembic_config, make_engine, upgrade
from leaderboard.models import AuditEntry
from tests.leaderboard.ingest_support import (
    FakeClock,
    FakeTable,
    Resends,
    enroll,
    make_ingestor,
    progress,
    register_entry,
    scores,
    stored,
)

HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[Path, sa.Engine]]:
    path = tmp_path / "leaderboard.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    try:
        yield path, engine
    finally:
        engine.dispose()


def _audit_rows(engine: sa.Engine, count: int, *, start: int = 0) -> None:
    with engine.begin() as connection:
        connection.execute(sa.insert(AuditEntry), [
            {"at": datetime(2026, 7, 3, tzinfo=UTC), "actor": "desk-1", "action": "test.row",
             "detail": {"n": start + n}} for n in range(count)])


def test_a_backup_is_a_whole_checked_single_file(database: tuple[Path, sa.Engine],
                                                 tmp_path: Path) -> None:
    path, engine = database
    _audit_rows(engine, 250)
    out = tmp_path / "backups"
    out.mkdir()
    report = backup_sqlite(path, out, now=datetime(2026, 7, 3, 21, 30, 5, tzinfo=UTC))
    assert report.path == out / "leaderboard-20260703T213005Z.sqlite3"
    assert (report.schema, report.rows["audit"], report.rows["messages"]) == (HEAD, 250, 0)
    assert report.sha256 == hashlib.sha256(report.path.read_bytes()).hexdigest()
    assert report.size_bytes == report.path.stat().st_size
    assert sorted(p.name for p in out.iterdir()) == [report.path.name]  # no -wal, no .partial
    copy = sqlite3.connect(report.path)
    try:
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert copy.execute("SELECT count(*) FROM audit").fetchone() == (250,)
    finally:
        copy.close()
    with pytest.raises(BackupError, match="a backup is never overwritten"):
        backup_sqlite(path, report.path)


def test_a_backup_while_the_service_writes_is_one_commit_of_it(
        database: tuple[Path, sa.Engine], tmp_path: Path) -> None:
    path, engine = database
    _audit_rows(engine, 100)
    stop = threading.Event()
    written = [100]

    def write() -> None:  # the service goes on committing batches of 10
        while not stop.is_set():
            _audit_rows(engine, 10, start=written[0])
            written[0] += 10

    writer = threading.Thread(target=write)
    writer.start()
    try:
        reports = [backup_sqlite(path, tmp_path / f"copy-{n}.sqlite3") for n in range(5)]
    finally:
        stop.set()
        writer.join(30)
    for report in reports:
        copied = report.rows["audit"]
        assert 100 <= copied <= written[0] and copied % 10 == 0  # whole commits only
        check = sqlite3.connect(report.path)
        try:
            numbers = sorted(json.loads(d)["n"] for (d,) in check.execute(
                "SELECT detail FROM audit"))
        finally:
            check.close()
        assert numbers == list(range(copied))  # a prefix of the commits: nothing torn


def test_keep_removes_only_the_oldest_timestamped_backups(database: tuple[Path, sa.Engine],
                                                          tmp_path: Path) -> None:
    path, _ = database
    out = tmp_path / "backups"
    out.mkdir()
    (out / "notes.txt").write_text("the operator's own file")
    made = [backup_sqlite(path, out, keep=2,
                          now=datetime(2026, 7, day, 4, 0, tzinfo=UTC)).path
            for day in (3, 4, 5)]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [made[1].name, made[2].name, "notes.txt"])
    with pytest.raises(BackupError, match="at least 1"):
        backup_sqlite(path, out, keep=0)
    with pytest.raises(BackupError, match="needs --out to be a directory"):
        backup_sqlite(path, tmp_path / "one.sqlite3", keep=3)


def test_what_cannot_be_backed_up_is_said_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(BackupError, match="pg_dump"):
        sqlite_file("postgresql+psycopg://postgres@127.0.0.1:5432/test")
    with pytest.raises(BackupError, match="names no database file"):
        sqlite_file("sqlite://")
    with pytest.raises(BackupError, match="not a database URL"):
        sqlite_file("no url")
    assert sqlite_file("sqlite:////var/lib/x/lb.sqlite3") == Path("/var/lib/x/lb.sqlite3")
    with pytest.raises(BackupError, match="no database file at"):
        backup_sqlite(tmp_path / "absent.sqlite3", tmp_path / "b.sqlite3")
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(BackupError, match="is not a leaderboard database"):
        backup_sqlite(other, tmp_path / "b.sqlite3")
    with pytest.raises(BackupError, match="no directory"):
        backup_sqlite(other, tmp_path / "missing" / "b.sqlite3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite3"]


def test_the_command_prints_one_line(database: tuple[Path, sa.Engine], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path, engine = database
    _audit_rows(engine, 3)
    target = tmp_path / "b.sqlite3"
    assert main(["leaderboard", "backup", "--db", f"sqlite:///{path}", "--out",
                 str(target)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"backup {target}: 0 messages, 0 scores, 0 entries, 0 patrons,"
                          f" 3 audit; integrity ok; schema {HEAD}; ")
    assert out.count("\n") == 1
    assert main(["leaderboard", "backup", "--db", f"sqlite:///{path}", "--out",
                 str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["rows"]["audit"], report["removed"]) == (3, [])
    assert main(["leaderboard", "backup", "--db", f"sqlite:///{path}", "--out",
                 str(target)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == f"showdown leaderboard: error: {target} exists: a backup is never overwritten\n"


async def test_restoring_an_older_backup_loses_nothing_the_tables_published(
        tmp_path: Path) -> None:
    # Scores 1-4 are backed up, 5-8 arrive after; the disk is lost and the backup restored.
    # The table's next message shows the gap, the ingest asks for a resend, and the table's
    # journal fills it: every score is back, each once.
    path = tmp_path / "leaderboard.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    t01 = FakeTable("t01")
    enroll(engine, t01)
    for n in range(1, 13):
        register_entry(engine, f"E-{n:016x}")
    sent = [t01.score(f"E-{n:016x}", n * 1000) for n in range(1, 13)]
    clock, resends = FakeClock(), Resends()
    ingest = make_ingestor(engine, clock, resends)
    for message in sent[:4]:
        await ingest.handle(*message)
    backup = backup_sqlite(path, tmp_path / "backup.sqlite3").path
    for message in sent[4:8]:
        await ingest.handle(*message)
    engine.dispose()
    for lost in path.parent.glob("leaderboard.sqlite3*"):
        lost.unlink()
    path.write_bytes(backup.read_bytes())
    engine = make_engine(f"sqlite:///{path}")
    try:
        ingest = make_ingestor(engine, clock, resends)
        assert len(scores(engine)) == 4
        await ingest.handle(*sent[8])  # seq 9: 5-8 are missing here
        assert resends.calls == [("t01", 5)]
        for message in (*sent[4:8], *sent[9:]):  # the table resends, then goes on
            await ingest.handle(*message)
        assert progress(engine, "t01") == (12, 12, [])
        assert sorted(s[1] for s in scores(engine).values()) == list(range(1, 13))
        assert [seq for _, seq, _ in stored(engine)] == list(range(1, 13))
    finally:
        engine.dispose()
