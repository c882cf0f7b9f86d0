"""`showdown desk commands` and `showdown desk check-tables`: the clerk sees each command's
state and the table's reason for a refusal, and a table that disagrees with the desk is
reported (exit 1). On SQLite and PostgreSQL, through a real table core and Ingestor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.models import AuditEntry, Entry
from tests.cli.test_desk import ADULT, Desk
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import migrated
from tests.leaderboard.roundtrip_support import TableLoop


@pytest.fixture
def run(database_url: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Desk:
    return Desk(database_url, tmp_path / "desk-home", capsys, monkeypatch)


def test_the_clerk_sees_a_refused_seat_and_why_and_the_tables_disagreement(
    run: Desk, log_events: list[dict[str, Any]],  # the in-process ingest's logs kept off stdout
) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    entry = run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
    with migrated(run.db) as engine:
        loop = TableLoop(engine, run.clock)
        run.sender = loop  # type: ignore[assignment]
        loop.deliver = False  # the heat never reaches the table
        heat = run.json("open-heat", "--table", "t01", "--stage", "qualifying")
        loop.deliver = True
        seat = run.json("seat", "--entry", entry, "--table", "t01", "--seat", "6")
        code, out, _ = run("commands", "--refused")
        assert code == 0
        assert out == (f"seq {seat['command']['seq']}  t01  seat entry_id={entry} seat=6  by"
                       " desk-1  REFUSED: no heat is open at this table\n")
        [mine] = run.json("commands", "--entry", entry)
        assert (mine["command"], mine["state"]) == ("seat", "refused")
        [pending] = run.json("commands", "--pending")
        assert (pending["seq"], pending["state"]) == (heat["seq"], "sent")
        code, out, _ = run("check-tables")
        assert code == 1
        assert (f"DISAGREES: table t01: the desk has heat {heat['args']['heat_id']} open, the"
                f" table reports none (the desk awaits the table's answer to seq"
                f" {heat['seq']})") in out
        with Session(engine) as session:
            row = session.get(Entry, entry)
            assert row is not None and (row.status, row.seat) == ("registered", None)
        run("resend", str(heat["seq"]))
        assert run.json("commands", "--seq", str(heat["seq"]))[0]["state"] == "accepted"
        run.json("seat", "--entry", entry, "--table", "t01", "--seat", "6")
        code, out, _ = run("check-tables")
        assert (code, out) == (0, "t01: heat " + heat["args"]["heat_id"]
                               + ", 1 seated; agrees with the desk\n")
        with Session(engine) as session:  # the refusal is in the audit, by the ingest
            refused = session.scalars(select(AuditEntry).where(
                AuditEntry.action == "command.refused")).all()
            assert [(a.actor, a.detail["command"], a.detail["entry_id"], a.detail["reason"])
                    for a in refused] == [("ingest", "seat", entry,
                                           "no heat is open at this table")]
        code, _, err = run("commands", "--seq", "99")
        assert code != 0 and "no desk command with seq 99" in err
