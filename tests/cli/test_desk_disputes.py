"""`showdown desk dispute raise|rule|close|show|list` against the central service's desk API
(SQLite and PostgreSQL), whose tables keep the command a ruling sends."""

from __future__ import annotations

from sqlalchemy.orm import Session

from cli.errors import EXIT_ERROR, EXIT_REFUSED
from leaderboard.projections import project
from tests.cli.test_desk import ADULT, Desk, central, run  # noqa: F401 (the fixtures)
from tests.leaderboard.desk_fields import HEAT_TIME
from wire.envelope import seal
from wire.signing import Signer

HAND = "t01-000003"


def stored_hand(desk: Desk, entry: str) -> None:
    """The table's record of a hand the entry won R75 in, projected as the ingest does."""
    body = {"v": 1, "table": "t01", "hand_id": HAND, "status": "settled", "heat_id": "h",
            "stage": "qualifying", "nets": {"2": 7_500},
            "seats": [{"seat": 2, "entry_id": entry}]}
    envelope = seal(venue="gold-reef", table="t01", seq=20, wall=HEAT_TIME, type="hand.settled",
                    body=body, boot="b", mono=20, signer=Signer.from_seed("t01", bytes(32)))
    with desk.database() as engine, Session(engine) as s:
        project(s.connection(), envelope)
        s.commit()


def test_a_dispute_raised_ruled_at_the_table_shown_and_closed(run: Desk) -> None:  # noqa: F811
    pid = run.json("register", *ADULT)["patron_id"]
    entry = run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
    run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    run.json("seat", "--entry", entry, "--table", "t01", "--seat", "2")
    stored_hand(run, entry)
    code, out, err = run("dispute", "raise", "--entry", entry, "--claim", "my trips")
    assert code == EXIT_ERROR and "has no recorded score yet: name the hand(s)" in err
    raised = run.json("dispute", "raise", "--entry", entry, "--hand", HAND,
                      "--claim", "odds paid short")
    number = str(raised["dispute_id"])
    assert (raised["raised_by_role"], raised["recorded_by"], raised["status"]) == (
        "participant", "desk-1", "open")
    code, out, err = run("dispute", "rule", number, "--correct-hand", "--net", "R100")
    assert code == EXIT_ERROR and "--why" in err
    code, out, err = run("dispute", "rule", number, "--correct-hand", "--net=-R25",
                         "--why", "the odds lost: a pair does not pay")
    assert code == EXIT_REFUSED and "segregation of duties: raise / rule dispute" in err
    code, _, err = run("staff", "add", "--staff-id", "S2", "--name", "Second Supervisor",
                       "--role", "supervisor", "--passphrase-file", str(run.passphrase))
    assert code == 0, err
    run.login("S2")  # desk-1 recorded the dispute: another supervisor rules on it
    code, out, err = run.bare("dispute", "rule", number, "--correct-hand", "--net=-R25",
                              "--why", "the odds lost: a pair does not pay")
    assert code == 0, err
    run.login()
    command = run.sender.commands[-1]
    assert (command.table, command.command) == ("t01", "correct_hand")
    assert (command.args["net"], command.args["ruling"], command.args["dispute_id"]) == (
        -2_500, "correct", raised["dispute_id"])
    assert "ruled hand_corrected by S2" in out and f"as command {command.seq}" in out
    code, out, err = run("dispute", "close", number, "--outcome", "told")
    assert code == EXIT_REFUSED and "has not been applied by table t01 yet" in err
    code, out, err = run("dispute", "show", number)
    assert code == 0 and f"hand {HAND} at t01 (seq 20, settled): seat 2 net R75.00" in out
    code, out, err = run("dispute", "list", "--status", "ruled")
    assert code == 0 and out.startswith(f"{number:>5} ") and "hand_corrected by S2" in out
    code, out, err = run("dispute", "list", "--status", "closed")
    assert (code, out) == (0, "no disputes\n")
    code, out, err = run("dispute", "show", "999")
    assert code == EXIT_ERROR and "no dispute 999" in err
