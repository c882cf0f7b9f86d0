"""`showdown desk commands` and `showdown desk check-tables`: the clerk sees each command's
state and the table's reason for a refusal, and a table that disagrees with the desk is
reported (exit 1). Against the central service's desk API on SQLite and PostgreSQL, through a
real table core and Ingestor."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cli.desk.table_answers import EXIT_NOT_CONFIRMED
from cli.errors import EXIT_REFUSED
from leaderboard.models import AuditEntry, Entry
from tests.cli.test_desk import ADULT, Desk, central, run  # noqa: F401 (the fixtures)


def test_the_clerk_sees_a_refused_seat_and_why_and_the_tables_disagreement(
    run: Desk, log_events: list[dict[str, Any]],  # noqa: F811 (the in-process ingest's logs)
) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    entry = run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
    with run.database() as engine:
        run.sender.mode = "loop"
        loop = run.sender.loop
        loop.deliver = False  # the heat never reaches the table
        code, out, _ = run("open-heat", "--table", "t01", "--stage", "qualifying", "--json",
                           "--wait", "0")
        assert code == EXIT_NOT_CONFIRMED
        heat = json.loads(out)
        loop.deliver = True
        code, _, err = run("seat", "--entry", entry, "--table", "t01", "--seat", "6")
        assert code == EXIT_REFUSED and "no heat is open at this table" in err
        [mine] = run.json("commands", "--entry", entry)
        assert (mine["command"], mine["state"]) == ("seat", "refused")
        code, out, _ = run("commands", "--refused")
        assert code == 0
        assert out == (f"seq {mine['seq']}  t01  seat entry_id={entry} seat=6  by"
                       " desk-1  REFUSED: no heat is open at this table\n")
        [pending] = run.json("commands", "--pending")
        assert (pending["seq"], pending["state"]) == (heat["seq"], "sent")
        code, out, _ = run("check-tables")
        assert code == 1
        assert (f"DISAGREES: table t01: the desk has heat {heat['heat_id']} open, the"
                f" table reports none (the desk awaits the table's answer to seq"
                f" {heat['seq']})") in out
        with Session(engine) as session:
            row = session.get(Entry, entry)
            assert row is not None and (row.status, row.seat) == ("registered", None)
        assert run("resend", str(heat["seq"]))[0] == 0
        assert run.json("commands", "--seq", str(heat["seq"]))[0]["state"] == "accepted"
        run.json("seat", "--entry", entry, "--table", "t01", "--seat", "6")
        code, out, _ = run("check-tables")
        assert (code, out) == (0, "t01: heat " + heat["heat_id"]
                               + ", 1 seated; agrees with the desk\n")
        with Session(engine) as session:  # the refusal is in the audit, by the ingest
            refused = session.scalars(select(AuditEntry).where(
                AuditEntry.action == "command.refused")).all()
            assert [(a.actor, a.detail["command"], a.detail["entry_id"], a.detail["reason"])
                    for a in refused] == [("ingest", "seat", entry,
                                           "no heat is open at this table")]
        code, _, err = run("commands", "--seq", "99")
        assert code != 0 and "no desk command with seq 99" in err
