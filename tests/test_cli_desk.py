"""`showdown desk ...`: the registration desk on the command line, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

import controller.commands.desk_actions as desk_cli
from controller.cli import EXIT_ERROR, main
from leaderboard.desk import DeskCommand
from leaderboard.desk_sender import RecordingSender, SendError
from leaderboard.models import AuditEntry, Draw, Refusal, Score
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import final_field
from tests.leaderboard.desk_helpers import FakeClock, add_score, local, migrated
from wire.signing import Signer

ADULT = ["--name", "Thabo Mokoena", "--id-kind", "id_document", "--id-number",
         "8001015009087", "--birth-date", "1980-01-01"]


class Desk:
    """Runs `showdown desk` on one database with a fixed clock and a recording sender."""

    def __init__(self, db: Database, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.db, self.capsys = db, capsys
        self.clock = FakeClock(local(2026, 7, 3, 14, 0))
        self.sender = RecordingSender(venue="gold-reef", signer=Signer.generate("desk-a"))
        monkeypatch.setattr(desk_cli, "now", self.clock)
        monkeypatch.setattr(desk_cli, "make_sender", lambda _args: self.sender)

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = main(["desk", args[0], "--db", self.db.url, "--by", "desk-1", *args[1:]])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str) -> Any:
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def run(database_url: Database, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Desk:
    return Desk(database_url, capsys, monkeypatch)


def test_register_lists_check_and_audit(run: Desk, tmp_path: Path) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    assert pid.startswith("P-")
    code, _, err = run("register", *ADULT)
    assert (code, err.count("\n")) == (EXIT_ERROR, 1)
    assert f"already registered as patron {pid}" in err
    code, _, err = run("register", "--name", "Kid", "--id-kind", "licence", "--id-number",
                       "DL999999", "--birth-date", "2008-07-04")
    assert code == EXIT_ERROR and err.startswith("showdown desk: error: registration refused")
    assert "18 only on 2026-07-04" in err

    bad = tmp_path / "ngb.csv"
    bad.write_text("id_number,name\n8001015009087,Thabo Mokoena\n12,Too Short\n")
    code, _, err = run("import-list", "self_exclusion", str(bad), "--source", "NGB", "--date",
                       "2026-07-01")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert f"{bad}:3: '12' is not a document or card number" in err
    bad.write_text("id_number,name\n8001015009087,Thabo Mokoena\n")
    code, out, _ = run("import-list", "self_exclusion", str(bad), "--source", "NGB", "--date",
                       "2026-07-01")
    assert code == 0 and "imported 1 rows: self_exclusion list from NGB dated 2026-07-01" in out
    assert run("lists")[1] == "self_exclusion: NGB, dated 2026-07-01, 1 rows\n"
    code, out, _ = run("check", "--patron", pid)
    assert (code, out) == (1, "not eligible: on the self-exclusion list (rule 2): NGB, dated"
                              " 2026-07-01\n")
    code, out, _ = run("check", "--id-number", "7001015009087", "--name", "Other",
                       "--birth-date", "1970-01-01")
    assert (code, out) == (0, "eligible\n")
    with migrated(run.db) as engine, Session(engine) as s:
        assert s.scalars(select(Refusal.context).order_by(Refusal.id)).all() == [
            "registration", "check"]
    audit = run.json("audit", "--limit", "3")
    assert [a["action"] for a in audit] == ["eligibility.refused", "list.imported",
                                            "eligibility.refused"]
    assert {a["actor"] for a in audit} == {"desk-1"}


def test_buy_open_heat_and_seat(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    run.clock.now = local(2026, 7, 3, 12, 30)
    code, _, err = run("buy", "--patron", pid)
    assert code == EXIT_ERROR and "no buy-in at 2026-07-03 12:30" in err
    run.clock.now = local(2026, 7, 4, 0, 0)  # the last buy-in of 3 July's heat
    entry = run.json("buy", "--patron", pid)
    assert (entry["heat_day"], entry["buy_in_cents"]) == ("2026-07-03", 10_000)
    heat = run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    seat = run.json("seat", "--entry", entry["entry_id"], "--table", "t01", "--seat", "6")
    assert (seat["seat"], seat["heat_id"], seat["player"]) == (6, heat["args"]["heat_id"], pid)
    assert [c.command for c in run.sender.commands] == ["open_heat", "seat"]
    assert run.sender.commands[1].args == {"entry_id": entry["entry_id"], "seat": 6}
    code, _, err = run("close-heat", "--table", "t01")
    assert code == EXIT_ERROR and "entries still seated" in err
    resent = run.json("resend", str(seat["command"]["seq"]))
    assert resent["seq"] == seat["command"]["seq"]
    assert run.sender.commands[-1] == run.sender.commands[1]
    code, _, err = run("unseat", "--entry", entry["entry_id"])
    assert code == EXIT_ERROR and "say why the entry leaves (--why)" in err
    assert err.count("\n") == 1
    code, out, _ = run("unseat", "--entry", entry["entry_id"], "--why", "patron left")
    assert code == 0 and out.startswith(f"entry {entry['entry_id']} to leave table t01 seat 6")
    assert run.sender.commands[-1].command == "unseat"
    assert run.sender.commands[-1].args == {"seat": 6, "entry_id": entry["entry_id"],
                                            "reason": "patron left"}


def test_refund_and_table_fault(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    first, second = run.json("buy", "--patron", pid), run.json("buy", "--patron", pid)
    code, _, err = run("refund", "--entry", first["entry_id"])
    assert code == EXIT_ERROR and "say why the entry is refunded (--why)" in err
    code, out, _ = run("refund", "--entry", first["entry_id"], "--why", "bought twice")
    assert (code, out) == (0, f"entry {first['entry_id']} refunded: pay the patron R100.00\n")
    heat = run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    run.json("seat", "--entry", second["entry_id"], "--table", "t01", "--seat", "2")
    code, out, err = run("table-fault", "--table", "t01", "--why", "shoe jammed")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [
        f"table t01 out of service; heat {heat['args']['heat_id']} closed at the desk",
        f"entry {second['entry_id']} refunded: pay the patron R100.00"]
    unseat, close = run.sender.commands[-2:]
    assert (unseat.command, close.command) == ("unseat", "close_heat")
    assert lines[2] == (f"the table is sent 2 commands (seq {unseat.seq}, {close.seq}); it"
                        " applies them if it comes back, so it does not play those entries on")
    code, _, err = run("table-fault", "--table", "t01", "--why", "again")
    assert code == EXIT_ERROR and "no heat open at table t01" in err
    # The broker is down: what the desk recorded is printed, and the unsent seqs are named.
    third = run.json("buy", "--patron", pid)
    run.json("open-heat", "--table", "t02", "--stage", "qualifying")
    run.json("seat", "--entry", third["entry_id"], "--table", "t02", "--seat", "1")
    run.sender = _Unreachable()  # type: ignore[assignment]
    code, out, err = run("table-fault", "--table", "t02", "--why", "power")
    assert code == EXIT_ERROR
    assert f"entry {third['entry_id']} refunded: pay the patron R100.00" in out
    assert err.startswith("showdown desk: error: table t02 is out of service at the desk, but"
                          " the table was not told: ")
    assert err.count("\n") == 1 and "; unsent seq " in err


def test_void_and_correct_a_score(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    voided, corrected, unscored = (run.json("buy", "--patron", pid)["entry_id"]
                                   for _ in range(3))
    recorded = local(2026, 7, 3, 15, 0)
    with migrated(run.db) as engine, Session(engine) as s:
        add_score(s, voided, 225_000, stage="qualifying", recorded=recorded,
                  acknowledged=recorded, table="t09", seq=1)
        add_score(s, corrected, 225_000, stage="qualifying", recorded=recorded,
                  acknowledged=None, table="t09", seq=2)
    run.clock.now = local(2026, 7, 3, 16, 0)

    code, out, err = run("void-score", "--entry", voided)
    assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1)
    assert "say why the score is voided (--why)" in err
    code, out, err = run("void-score", "--entry", voided, "--why", "dispute upheld: misdeal")
    assert (code, out) == (0, f"entry {voided} score voided: R2,250.00 from t09 no longer"
                              " counts\n"), err
    code, _, err = run("void-score", "--entry", voided, "--why", "again")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert f"entry {voided}'s score is voided" in err

    for bad in ("R-5", "abc"):
        code, out, err = run("correct-score", "--entry", corrected, "--score", bad, "--why",
                             "miscount")
        assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1)
        assert err.startswith(f"showdown desk: error: --score: {bad!r} is not an amount")
    code, _, err = run("correct-score", "--entry", corrected, "--score=-R5", "--why", "x")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert "must be 0 or more cents, not -500" in err
    code, _, err = run("correct-score", "--entry", corrected, "--score", "R1,500")
    assert code == EXIT_ERROR and "say why the score is corrected (--why)" in err
    ruling = run.json("correct-score", "--entry", corrected, "--score", "R1,500",
                      "--why", "dispute upheld: chips miscounted")
    assert ruling == {"entry_id": corrected, "ruling": "corrected", "stage": "qualifying",
                      "table": "t09", "recorded_cents": 225_000, "counted_cents": 150_000,
                      "at": local(2026, 7, 3, 16, 0).isoformat(),
                      "why": "dispute upheld: chips miscounted"}
    code, out, err = run("correct-score", "--entry", corrected, "--score", "1200.50",
                         "--why", "recounted")
    assert (code, out) == (0, f"entry {corrected} score corrected: R2,250.00 from t09 now"
                              " counts R1,200.50\n"), err

    code, _, err = run("void-score", "--entry", unscored, "--why", "no such score")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert f"entry {unscored} has no recorded score" in err
    code, _, err = run("correct-score", "--entry", "E-nope", "--score", "R1", "--why", "x")
    assert code == EXIT_ERROR and "no entry 'E-nope'" in err

    # The table's figures are kept; the rulings are in the audit with who and why.
    with migrated(run.db) as engine, Session(engine) as s:
        kept = {row.entry_id: (row.score_cents, row.corrected_cents, row.voided_at is not None)
                for row in s.scalars(select(Score))}
        assert kept == {voided: (225_000, None, True), corrected: (225_000, 120_050, False)}
        audit = s.scalars(select(AuditEntry).where(AuditEntry.action.in_(
            ["score.voided", "score.corrected"])).order_by(AuditEntry.id)).all()
        assert [(a.action, a.actor, a.detail["entry_id"], a.detail["why"]) for a in audit] == [
            ("score.voided", "desk-1", voided, "dispute upheld: misdeal"),
            ("score.corrected", "desk-1", corrected, "dispute upheld: chips miscounted"),
            ("score.corrected", "desk-1", corrected, "recounted")]


class _Unreachable:
    async def send(self, command: DeskCommand) -> None:
        raise SendError(f"{command.command} seq {command.seq}: the broker is unreachable")


def test_sending_needs_the_desk_key(database_url: Database, capsys: pytest.CaptureFixture[str],
                                    tmp_path: Path) -> None:
    code = main(["desk", "open-heat", "--db", database_url.url, "--table", "t01", "--stage",
                 "qualifying", "--by", "desk-1"])
    _, err = capsys.readouterr()
    assert code == EXIT_ERROR and "needs --key" in err
    code = main(["desk", "open-heat", "--db", database_url.url, "--table", "t01", "--stage",
                 "qualifying", "--key", str(tmp_path / "none.key"), "--venue", "gold-reef"])
    _, err = capsys.readouterr()
    assert code == EXIT_ERROR and "none.key" in err and err.count("\n") == 1


def test_places_draw_replay_and_prizes(run: Desk) -> None:
    with migrated(run.db) as engine, Session(engine, expire_on_commit=False) as s:
        final_field(s, run.clock)  # qualifying, semis played, Final places allocated
    semis = run.json("semis")
    assert len(semis) == 12 and [p["position"] for p in semis] == list(range(1, 13))
    code, out, _ = run("final")
    assert code == 0 and out.count("no seat yet") == 6
    drawn = run.json("draw")
    assert sorted(drawn["seats"].values()) == [1, 2, 3, 4, 5, 6] and not drawn["reused"]
    again = run.json("draw")
    assert again["reused"] and again["seats"] == drawn["seats"]
    code, out, _ = run("draw", "--replay", str(drawn["draw_id"]))
    assert code == 0 and out.startswith(f"draw {drawn['draw_id']}: replay matches")
    with migrated(run.db) as engine, Session(engine) as s:  # tamper with the stored result
        row = s.get(Draw, drawn["draw_id"])
        assert row is not None
        swapped = [dict(a) for a in row.result["assignments"]]
        swapped[0]["seat"], swapped[1]["seat"] = swapped[1]["seat"], swapped[0]["seat"]
        row.result = {**row.result, "assignments": swapped}
        s.commit()
    code, out, _ = run("draw", "--replay", str(drawn["draw_id"]))
    assert code == 1 and "DIFFERS from the stored result" in out
    code, _, err = run("draw", "--replay", "999")
    assert code == EXIT_ERROR and "no draw 999" in err

    run.clock.now = local(2026, 8, 1, 18, 0)
    code, _, err = run("award", "final")
    assert code == EXIT_ERROR and "0 of 6 Final scores are counted" in err
    awarded = run.json("award", "top_score")
    assert [a["amount_cents"] for a in awarded] == [18_000, 7_500, 4_500]
    # Recorded late: week 1's prize was paid on Friday 10 July, so it expired on 26 July.
    code, out, _ = run("award", "weekly", "--week", "1", "--prize", "R5,000")
    assert code == 0 and "R5,000.00" in out and "expired, deadline 2026-07-26 00:00" in out
    run.clock.now = local(2026, 8, 17, 0, 0)
    prizes = run.json("prizes")
    assert [p["status"] for p in prizes] == ["expired"] * 4  # rule 55: 1 August + 15 days
    code, _, err = run("claim", str(prizes[0]["award_id"]), "--id-number", "5001015009087")
    assert code == EXIT_ERROR and "expired at 2026-08-17 00:00" in err
    run.clock.now = local(2026, 8, 16, 23, 59)
    claimed = run.json("claim", str(prizes[0]["award_id"]), "--id-number", "5001015009087",
                       "--receipt", "R-1")
    assert claimed["status"] == "claimed"


def test_default_database_and_bad_urls(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["desk", "audit"]) == 0
    assert (tmp_path / "var" / "leaderboard.sqlite").is_file()
    capsys.readouterr()
    assert main(["desk", "audit", "--db", "not a url"]) == EXIT_ERROR
    assert "is not a database URL" in capsys.readouterr().err
    monkeypatch.setattr(desk_cli, "now", lambda: datetime(2026, 7, 3, 12, 0))
    code = main(["desk", "register", *ADULT, "--by", "x"])
    assert code == EXIT_ERROR
    assert "without a time zone" in capsys.readouterr().err
