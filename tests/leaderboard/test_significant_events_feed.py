"""`showdown leaderboard events`: the audit rows and stored table messages of the central
database with their severities, by time and severity, as a report and as a feed; on SQLite
and PostgreSQL, with rows written by the desk's and the ingest's own functions."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from cli.errors import EXIT_ERROR
from cli.main import main
from game.messages.table import CommandResult, DeviceState
from leaderboard import desk
from leaderboard.desk import Refused
from leaderboard.desk.action import write_audit
from leaderboard.event_feed import Cursor, EventQuery, read_events
from leaderboard.significant_events import names_at_least
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import ADULT, settings
from tests.leaderboard.ingest_support import (
    FakeClock,
    FakeTable,
    enroll,
    key_of,
    make_ingestor,
)

ROOT = Path(__file__).resolve().parents[2]
DESK_AT = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)  # the desk's actions: 12:00 and 12:05 UTC
TABLE_AT = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)  # the table's messages: 13:00, :01, :02


def at(minute: int, hour: int = 13) -> str:
    return f"2026-07-03T{hour:02d}:{minute:02d}:00Z"


async def write_events(engine: sa.Engine) -> None:
    """A clerk registers an adult and is refused a minor (the desk's own functions); table
    t01 publishes an alert, a device report and a refused command's result, and a message
    signed with another key claims to be t01's (the ingest stores three, refuses one)."""
    desk_clock = FakeClock(DESK_AT)
    with Session(engine, expire_on_commit=False) as s:
        desk.register_patron(s, settings(), desk_clock, actor="C1", name="Ada Adult",
                             id_kind="id_document", id_number="8005175009087",
                             birth_date=ADULT)
        desk_clock.now = DESK_AT + timedelta(minutes=5)
        with pytest.raises(Refused):
            desk.register_patron(s, settings(), desk_clock, actor="C1", name="Mo Minor",
                                 id_kind="id_document", id_number="1001015009087",
                                 birth_date=datetime(2010, 1, 1).date())
    t01 = FakeTable("t01")
    enroll(engine, t01)
    clock = FakeClock(TABLE_AT)
    ingest = make_ingestor(engine, clock)
    for minute, message in enumerate((
        t01.alert("shoe jam"),
        t01.message("device", DeviceState(device="shoe", state="ok", detail="",
                                          at=at(1)).encode()),
        t01.message("command.result", CommandResult(
            command_id="c-9", command="seat", accepted=False, reason="no heat open").encode()),
    )):
        clock.now = TABLE_AT + timedelta(minutes=minute)
        assert (await ingest.handle(*message)).outcome == "stored"
    clock.now = TABLE_AT + timedelta(minutes=3)
    forged = t01.message("alert", {"kind": "x", "message": "x", "source": "x", "at": at(3)},
                         key=key_of("t01", "not its key"))
    assert (await ingest.handle(*forged)).reason == "bad_signature"


def events(db: Database, capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    """`showdown leaderboard events --db URL ARGS --json`: the events it printed."""
    capsys.readouterr()  # what the ingest logged before
    assert main(["leaderboard", "events", "--db", db.url, *args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["count"] == len(doc["events"])
    return list(doc["events"])


def summary(lines: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(e["at"], e["severity"], e["who"], e["event"]) for e in lines]


ALL = [  # what write_events wrote, oldest first, with the catalogue's severities
    (at(0, 12), "info", "C1", "patron.registered"),
    (at(5, 12), "warning", "C1", "eligibility.refused"),
    (at(0), "warning", "t01", "alert"),
    (at(1), "info", "t01", "device"),
    (at(2), "warning", "t01", "command.result"),  # refused: above its usual info
    (at(3), "critical", "t01", "bad_signature"),  # a refused message
]


async def test_the_report_by_time_and_severity(engine: sa.Engine, database_url: Database,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    await write_events(engine)
    assert summary(events(database_url, capsys)) == ALL
    assert summary(events(database_url, capsys, "--severity", "warning")) == [
        e for e in ALL if e[1] in {"warning", "critical"}]
    assert summary(events(database_url, capsys, "--severity", "critical")) == ALL[-1:]
    window = events(database_url, capsys, "--since", "2026-07-03T14:05:00+02:00",
                    "--until", at(1, 13).replace("Z", "+00:00"))
    assert summary(window) == ALL[1:3]  # from 12:05 UTC, before 13:01
    refused = events(database_url, capsys, "--since", at(2), "--until", at(3))[0]
    assert (refused["source"], refused["detail"]["accepted"], refused["detail"]["reason"],
            refused["detail"]["seq"]) == ("message", False, "no heat open", 3)
    assert main(["leaderboard", "events", "--db", database_url.url, "--severity",
                 "warning"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert len(text) == 4
    assert text[0].startswith(f"{at(5, 12)}  warning   C1") and "eligibility.refused" in text[0]
    assert text[2].split()[:4] == [at(2), "warning", "t01", "command.result"]
    assert "reason=\"no heat open\"" in text[2]


async def test_a_cursor_reads_only_what_came_after(engine: sa.Engine) -> None:
    await write_events(engine)
    first, cursor = read_events(engine, EventQuery(severity="warning"))
    assert [e.event for e in first] == ["eligibility.refused", "alert", "command.result",
                                        "bad_signature"]
    again, same = read_events(engine, EventQuery(severity="warning"), cursor)
    assert (again, same) == ([], cursor)
    with Session(engine) as s:
        desk.register_patron(s, settings(), FakeClock(TABLE_AT + timedelta(hours=1)),
                             actor="C2", name="Bo Adult", id_kind="id_document",
                             id_number="7005175009087", birth_date=ADULT)
    later, moved = read_events(engine, EventQuery(), cursor)
    assert [(e.who, e.event) for e in later] == [("C2", "patron.registered")]
    assert moved.audit_id > cursor.audit_id
    assert (moved.message_id, moved.rejection_id) == (cursor.message_id, cursor.rejection_id)
    assert read_events(engine, EventQuery(), Cursor())[0][-1].event == "patron.registered"


def test_an_action_the_catalogue_lacks_is_a_warning_and_hand_reports_are_skipped(
        engine: sa.Engine) -> None:
    with Session(engine) as s:
        write_audit(s, TABLE_AT, "M1", "house.custom_thing", detail={"n": 1})
        s.commit()
    shown = read_events(engine, EventQuery(severity="warning"))[0]
    assert [(e.who, e.event, e.severity) for e in shown] == [
        ("M1", "house.custom_thing", "warning")]
    assert read_events(engine, EventQuery(severity="critical"))[0] == []
    warnings = names_at_least("message", "warning")
    assert {"alert", "command.result", "chips.reconciled"} <= warnings  # usual or raised
    assert not {"hand.settled", "device", "heat.opened"} & warnings


def test_bad_input_is_named(database_url: Database, engine: sa.Engine,
                            capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = [
        (["--since", "2026-07-03T14:00"], "--since '2026-07-03T14:00' has no time zone"),
        (["--until", "yesterday"], "--until 'yesterday' is not a time such as"),
        (["--since", at(5), "--until", at(1)], f"--until {at(1)} is not after --since"),
        (["--follow", "--until", at(1)], "--follow prints new events until interrupted"),
    ]
    for args, words in cases:
        assert main(["leaderboard", "events", "--db", database_url.url, *args]) == EXIT_ERROR
        assert words in capsys.readouterr().err
    missing = f"sqlite:///{tmp_path / 'nothing.sqlite3'}"
    assert main(["leaderboard", "events", "--db", missing]) == EXIT_ERROR
    assert "no such SQLite file" in capsys.readouterr().err
    assert main(["leaderboard", "events", "--db", database_url.url]) == 0
    assert capsys.readouterr().out == "no events\n"


class Lines:
    """A process's output read line by line as it comes (the test fails rather than hang if
    no line comes in 60 s)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.fd, self.buffer = process.stdout.fileno(), b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)

    def next(self) -> str:
        """The next whole line."""
        while b"\n" not in self.buffer:
            assert self.selector.select(timeout=60), f"no line came: {self.buffer!r}"
            chunk = os.read(self.fd, 65536)
            assert chunk, f"the feed ended: {self.buffer!r}"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()


async def test_follow_prints_new_events_as_they_are_written(
        engine: sa.Engine, database_url: Database) -> None:
    await write_events(engine)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "leaderboard", "events", "--db", database_url.url,
         "--follow", "--json", "--severity", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    try:
        lines = Lines(process)
        shown = [json.loads(lines.next())["event"] for _ in range(4)]
        assert shown == ["eligibility.refused", "alert", "command.result", "bad_signature"]
        with Session(engine) as s, pytest.raises(Refused):  # a warning written now
            desk.register_patron(s, settings(), FakeClock(TABLE_AT + timedelta(hours=1)),
                                 actor="C2", name="Al Minor", id_kind="id_document",
                                 id_number="1201015009087",
                                 birth_date=datetime(2012, 1, 1).date())
        new = json.loads(lines.next())
        assert (new["who"], new["event"], new["severity"]) == (
            "C2", "eligibility.refused", "warning")
    finally:
        process.terminate()
        process.wait(timeout=30)
