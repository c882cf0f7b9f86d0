"""`showdown desk ...`: the registration desk on the command line, on SQLite and PostgreSQL
(and its actions for the tables' consoles: staff, participants' proof, desk acknowledgements,
disputes, payout checks)."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

import cli.desk.actions as desk_cli
from cli.errors import EXIT_ERROR, EXIT_REFUSED, EXIT_UNAVAILABLE
from cli.main import main
from game.messages.desk import StaffRoster
from game.staff import secret_matches
from leaderboard.models import AuditEntry, Dispute, Draw, Patron, PayoutCheck, Refusal, Score
from tests.leaderboard.desk_fields import final_field
from tests.leaderboard.desk_helpers import add_score, local
from tests.leaderboard.ingest_support import FakeTable, enroll
from tests.leaderboard.served import Served, serve_desk_api

GROUPS = ("staff", "patron", "dispute", "document", "hold")
PASSPHRASE = "correct horse battery staple"  # noqa: S105 - a test credential
ADULT = ["--name", "Thabo Mokoena", "--id-kind", "id_document", "--id-number",
         "8001015009087", "--birth-date", "1980-01-01"]


class Desk:
    """Runs `showdown desk` against the module's central service (tests.leaderboard.served:
    the desk API over HTTPS, its database emptied for the test, its clock fixed, its tables
    accepting every command and keeping it in ``sender.commands``), as ``desk-1`` (the
    database's first manager) signed in with `showdown desk login`; the desk config
    (``$SHOWDOWN_DESK_CONFIG``) names the API, so no command takes more than its own
    arguments."""

    def __init__(self, served: Served, home: Path, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.served, self.capsys, self.monkeypatch = served, capsys, monkeypatch
        served.reset("desk-1")
        self.clock = served.clock
        self.sender = served.tables
        monkeypatch.setattr(desk_cli, "now", self.clock)
        home.mkdir()
        self.config = home / "desk.toml"
        self.config.write_text(f'[desk]\napi_url = "{served.url}"\napi_ca_file = "{served.ca}"\n'
                               'terminal = "desk-test"\n')
        monkeypatch.setenv("SHOWDOWN_DESK_CONFIG", str(self.config))
        monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
        monkeypatch.delenv("SHOWDOWN_DESK_STAFF", raising=False)
        self.passphrase = home / "desk-1.passphrase"
        self.passphrase.write_text(f"{PASSPHRASE}\n")
        self.signed_at: datetime | None = None

    @contextmanager
    def database(self) -> Iterator[Engine]:
        """The central service's database, for what a test sets up or checks there."""
        yield self.served.engine

    def bare(self, *args: str) -> tuple[int, str, str]:
        """`showdown desk ARGS` as it is."""
        self.capsys.readouterr()
        code = main(["desk", *args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def login(self, staff_id: str = "desk-1", passphrase: Path | None = None) -> None:
        """Sign in (again: the tests move the clock by days, past a session's end)."""
        code, _, err = self.bare("login", "--staff-id", staff_id, "--passphrase-file",
                                 str(passphrase or self.passphrase))
        assert code == 0, err
        self.signed_at = self.clock.now
        self.monkeypatch.setenv("SHOWDOWN_DESK_STAFF", staff_id)  # who acts from now on

    def __call__(self, *args: str) -> tuple[int, str, str]:
        if self.signed_at != self.clock.now:
            self.login(os.environ.get("SHOWDOWN_DESK_STAFF", "desk-1"))
        return self.bare(*args)

    def json(self, *args: str) -> Any:
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def central(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One central service per module and database kind."""
    with serve_desk_api(request.param, tmp_path_factory.mktemp("central")) as served:
        yield served


@pytest.fixture
def run(central: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Desk:
    return Desk(central, tmp_path / "desk-home", capsys, monkeypatch)


def test_register_lists_check_and_audit(run: Desk, tmp_path: Path) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    assert pid.startswith("P-")
    code, _, err = run("register", *ADULT)
    assert (code, err.count("\n")) == (EXIT_REFUSED, 1)
    assert f"already registered as patron {pid}" in err
    code, _, err = run("register", "--name", "Kid", "--id-kind", "licence", "--id-number",
                       "DL999999", "--birth-date", "2008-07-04")
    assert code == EXIT_REFUSED and err.startswith("showdown desk: error: registration refused")
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
    assert f"patron {pid} REFUSED: the list names a document of theirs" in out  # screened
    assert run("lists")[1] == "self_exclusion: NGB, dated 2026-07-01, 1 rows\n"
    code, out, _ = run("check", "--patron", pid)
    assert (code, out) == (1, "not eligible: on the self-exclusion list (rule 2): NGB, dated"
                              " 2026-07-01\n")
    code, out, _ = run("check", "--id-number", "7001015009087", "--name", "Other",
                       "--birth-date", "1970-01-01")
    assert (code, out) == (0, "eligible\n")
    with run.database() as engine, Session(engine) as s:
        assert s.scalars(select(Refusal.context).order_by(Refusal.id)).all() == [
            "registration", "rescreen", "check"]
    audit = run.json("audit", "--limit", "4")
    assert [a["action"] for a in audit] == ["eligibility.refused", "list.rescreened",
                                            "eligibility.refused", "list.imported"]
    assert {a["actor"] for a in audit} == {"desk-1"}


def test_buy_open_heat_and_seat(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    run.clock.now = local(2026, 7, 3, 12, 30)
    code, _, err = run("buy", "--patron", pid, "--payment", "cash")
    assert code == EXIT_REFUSED and "no buy-in at 2026-07-03 12:30" in err
    run.clock.now = local(2026, 7, 4, 0, 0)  # the last buy-in of 3 July's heat
    entry = run.json("buy", "--patron", pid, "--payment", "cash")
    assert (entry["heat_day"], entry["buy_in_cents"]) == ("2026-07-03", 10_000)
    heat = run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    seat = run.json("seat", "--entry", entry["entry_id"], "--table", "t01", "--seat", "6")
    assert (seat["seat"], seat["heat_id"], seat["player"]) == (6, heat["heat_id"], pid)
    assert [c.command for c in run.sender.commands] == ["open_heat", "seat"]
    assert run.sender.commands[1].args == {"entry_id": entry["entry_id"], "seat": 6,
                                           "entry_code": entry["code"]}  # the code (D331)
    code, _, err = run("close-heat", "--table", "t01")
    assert code == EXIT_REFUSED and "entries still seated" in err
    resent = run.json("resend", str(seat["seq"]))
    assert resent["seq"] == seat["seq"]
    assert run.sender.commands[-1] == run.sender.commands[1]
    code, _, err = run("unseat", "--entry", entry["entry_id"])
    assert code == EXIT_ERROR and "say why the entry leaves (--why)" in err
    assert err.count("\n") == 1
    code, out, _ = run("unseat", "--entry", entry["entry_id"], "--why", "patron left")
    assert code == 0 and out.startswith(f"entry {entry['code']} to leave table t01 seat 6")
    assert run.sender.commands[-1].command == "unseat"
    assert run.sender.commands[-1].args == {"seat": 6, "entry_id": entry["entry_id"],
                                            "reason": "patron left"}


def test_refund_and_table_fault(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    first, second = (run.json("buy", "--patron", pid, "--payment", "cash") for _ in range(2))
    code, _, err = run("refund", "--entry", first["entry_id"])
    assert code == EXIT_ERROR and "say why the entry is refunded (--why)" in err
    code, out, _ = run("refund", "--entry", first["entry_id"], "--why", "bought twice")
    assert (code, out) == (0, f"entry {first['code']} refunded: pay the patron R100.00\n")
    heat = run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    run.json("seat", "--entry", second["entry_id"], "--table", "t01", "--seat", "2")
    code, out, err = run("table-fault", "--table", "t01", "--why", "shoe jammed")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [
        f"table t01 out of service; heat {heat['heat_id']} closed at the desk",
        f"entry {second['code']} refunded: pay the patron R100.00"]
    unseat, close = run.sender.commands[-2:]
    assert (unseat.command, close.command) == ("unseat", "close_heat")
    assert lines[2] == (f"the table is sent 2 commands (seq {unseat.seq}, {close.seq}); it"
                        " applies them if it comes back, so it does not play those entries on")
    code, _, err = run("table-fault", "--table", "t01", "--why", "again")
    assert code == EXIT_REFUSED and "no heat open at table t01" in err
    # The broker is down: what the desk recorded is printed, and the unsent seqs are named.
    third = run.json("buy", "--patron", pid, "--payment", "cash")
    run.json("open-heat", "--table", "t02", "--stage", "qualifying")
    run.json("seat", "--entry", third["entry_id"], "--table", "t02", "--seat", "1")
    run.sender.mode = "down"
    code, out, err = run("table-fault", "--table", "t02", "--why", "power")
    assert code == EXIT_UNAVAILABLE  # the broker did not answer: try again
    assert f"entry {third['code']} refunded: pay the patron R100.00" in out
    assert err.startswith("showdown desk: error: table t02 is out of service at the desk, but"
                          " the table was not told: ")
    assert err.count("\n") == 1 and "; unsent seq " in err


def test_void_and_correct_a_score(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    bought = [run.json("buy", "--patron", pid, "--payment", "cash") for _ in range(3)]
    voided, corrected, unscored = (b["entry_id"] for b in bought)
    recorded = local(2026, 7, 3, 15, 0)
    with run.database() as engine, Session(engine) as s:
        add_score(s, voided, 225_000, stage="qualifying", recorded=recorded,
                  acknowledged=recorded, table="t09", seq=1)
        add_score(s, corrected, 225_000, stage="qualifying", recorded=recorded,
                  acknowledged=None, table="t09", seq=2)
    run.clock.now = local(2026, 7, 3, 16, 0)

    code, out, err = run("void-score", "--entry", voided)
    assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1)
    assert "say why the score is voided (--why)" in err
    code, out, err = run("void-score", "--entry", voided, "--why", "dispute upheld: misdeal")
    assert (code, out) == (0, f"entry {bought[0]['code']} score voided: R2,250.00 from t09"
                              " no longer counts\n"), err
    code, _, err = run("void-score", "--entry", voided, "--why", "again")
    assert code == EXIT_REFUSED and err.count("\n") == 1
    assert f"entry {voided}'s score is voided" in err

    for bad in ("R-5", "abc"):
        code, out, err = run("correct-score", "--entry", corrected, "--score", bad, "--why",
                             "miscount")
        assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1)
        assert err.startswith(f"showdown desk: error: --score: {bad!r} is not an amount")
    code, _, err = run("correct-score", "--entry", corrected, "--score=-R5", "--why", "x")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert "--score: '-R5' is not an amount: an amount cannot be negative" in err
    code, _, err = run("correct-score", "--entry", corrected, "--score", "R1,500")
    assert code == EXIT_ERROR and "say why the score is corrected (--why)" in err
    ruling = run.json("correct-score", "--entry", corrected, "--score", "R1,500",
                      "--why", "dispute upheld: chips miscounted")
    assert ruling == {"entry_id": corrected, "code": bought[1]["code"], "ruling": "corrected",
                      "stage": "qualifying",
                      "table": "t09", "recorded_cents": 225_000, "counted_cents": 150_000,
                      "at": local(2026, 7, 3, 16, 0).isoformat(),
                      "why": "dispute upheld: chips miscounted"}
    code, out, err = run("correct-score", "--entry", corrected, "--score", "1200.50",
                         "--why", "recounted")
    assert (code, out) == (0, f"entry {bought[1]['code']} score corrected: R2,250.00 from t09 now"
                              " counts R1,200.50\n"), err

    code, _, err = run("void-score", "--entry", unscored, "--why", "no such score")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert f"entry {unscored} has no recorded score" in err
    code, _, err = run("correct-score", "--entry", "E-nope", "--score", "R1", "--why", "x")
    assert code == EXIT_ERROR and "no entry 'E-nope'" in err

    # The table's figures are kept; the rulings are in the audit with who and why.
    with run.database() as engine, Session(engine) as s:
        kept = {row.entry_id: (row.score_cents, row.corrected_cents, row.voided_at is not None)
                for row in s.scalars(select(Score))}
        assert kept == {voided: (225_000, None, True), corrected: (225_000, 120_050, False)}
        audit = s.scalars(select(AuditEntry).where(AuditEntry.action.in_(
            ["score.voided", "score.corrected"])).order_by(AuditEntry.id)).all()
        assert [(a.action, a.actor, a.detail["entry_id"], a.detail["why"]) for a in audit] == [
            ("score.voided", "desk-1", voided, "dispute upheld: misdeal"),
            ("score.corrected", "desk-1", corrected, "dispute upheld: chips miscounted"),
            ("score.corrected", "desk-1", corrected, "recounted")]


def test_the_workstation_neither_signs_nor_opens_the_database(run: Desk) -> None:
    """The flags a workstation had while it signed and sent the tables' commands and opened
    the database itself are refused, naming where the desk goes now (issue 33)."""
    run.login()
    for flag, value in (("--key", "desk.key"), ("--broker", "127.0.0.1:1883"),
                        ("--db", "sqlite:///x.sqlite")):
        with pytest.raises(SystemExit) as stopped:
            run.bare("open-heat", "--table", "t01", "--stage", "qualifying", flag, value)
        assert stopped.value.code == EXIT_ERROR
        err = run.capsys.readouterr().err
        assert f"{flag}: the desk no longer opens the database" in err
        assert "desk.api_url" in err
    assert run.sender.commands == []


def test_places_draw_replay_and_prizes(run: Desk) -> None:
    with run.database() as engine, Session(engine, expire_on_commit=False) as s:
        final_field(s, run.clock)  # qualifying, semis played, Final places allocated
    semis = run.json("semis")
    assert len(semis) == 12 and [p["position"] for p in semis] == list(range(1, 13))
    code, out, _ = run("final")
    assert code == 0 and out.count("no seat yet") == 6
    code, _, err = run("staff", "add", "--staff-id", "S2", "--name", "Second Supervisor",
                       "--role", "supervisor", "--passphrase-file", str(run.passphrase))
    assert code == 0, err
    code, _, err = run("draw", "--witness", "desk-1")  # the one drawing cannot witness
    assert code == EXIT_ERROR and "witness" in err
    drawn = run.json("draw", "--witness", "S2")
    assert sorted(drawn["seats"].values()) == [1, 2, 3, 4, 5, 6] and not drawn["reused"]
    # The digest printed before the draw is the SHA-256 of the seed the draw revealed.
    assert (hashlib.sha256(bytes.fromhex(drawn["seed_hex"])).hexdigest()
            == drawn["commitment"]["seed_sha256"])
    code, _, err = run("draw", "--witness", "S2")  # drawn once: no second commitment
    assert code == EXIT_REFUSED and "drawn already" in err
    code, out, _ = run("draw", "--replay", str(drawn["draw_id"]))
    assert code == 0 and out.startswith(f"draw {drawn['draw_id']}: replay matches")
    with run.database() as engine, Session(engine) as s:  # tamper with the stored result
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
    assert code == EXIT_REFUSED and "0 of 6 Final places are settled" in err
    awarded = run.json("award", "top_score")
    assert [a["amount_cents"] for a in awarded] == [18_000, 7_500, 4_500]
    # Recorded late: week 1's prize was paid on Friday 10 July, so it expired on 26 July.
    code, out, _ = run("award", "weekly", "--week", "1", "--prize", "R5,000")
    assert code == 0 and "R5,000.00" in out and "expired, deadline 2026-07-26 00:00" in out
    run.clock.now = local(2026, 8, 17, 0, 0)
    prizes = run.json("prizes")
    assert [p["status"] for p in prizes] == ["expired"] * 4  # rule 55: 1 August + 15 days
    run.login("S2")  # desk-1 awarded the prizes: another person pays them
    code, _, err = run.bare("claim", str(prizes[0]["award_id"]), "--id-number", "5001015009087")
    assert code == EXIT_REFUSED and "expired at 2026-08-17 00:00" in err
    run.clock.now = local(2026, 8, 16, 23, 59)
    run.login("S2")
    code, out, err = run.bare("claim", str(prizes[0]["award_id"]), "--id-number",
                              "5001015009087", "--receipt", "R-1", "--json")
    assert code == 0 and json.loads(out)["status"] == "claimed", err


def test_the_shipped_config_names_the_api_on_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shipped development config names the central service on this machine (plain HTTP
    # only to the loopback); with no service there the command is unavailable, naming it.
    shipped = Path(__file__).resolve().parents[2] / "config" / "desk.toml"
    text = shipped.read_text()
    assert "database" not in text.split("[desk]", 1)[1].split("#")[0]
    free = _free_port()
    (tmp_path / "desk.toml").write_text(text.replace("8080", str(free)))
    monkeypatch.setenv("SHOWDOWN_DESK_CONFIG", str(tmp_path / "desk.toml"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "pass").write_text(PASSPHRASE)
    code = main(["desk", "login", "--staff-id", "M1", "--passphrase-file",
                 str(tmp_path / "pass")])
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE and err.count("\n") == 1
    assert f"desk.api_url http://127.0.0.1:{free}/api/desk/session" in err
    assert main(["desk", "init", "--staff-id", "M1", "--name", "M. One"]) == EXIT_REFUSED
    assert "showdown leaderboard init --db URL" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- the tables' consoles (issue 12) -----------------------------------------------------------


def test_staff_enrolment_and_the_roster_sent(run: Desk, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pin_file = tmp_path / "pin"
    pin_file.write_text("4821\n")
    code, out, err = run("staff", "add", "--staff-id", "D12", "--name", "Nandi Dlamini",
                         "--role", "dealer", "--pin-file", str(pin_file), "--card", "04A1B2C3")
    assert (code, out) == (0, "D12 Nandi Dlamini (dealer, PIN and card): enrolled; roster"
                              " version 2 (send it to the tables: showdown desk staff send)\n"), err
    typed = iter(["99887766", "99887766", "1234", "4321"])
    monkeypatch.setattr(getpass, "getpass", lambda _prompt: next(typed))
    code, _, err = run("staff", "add", "--staff-id", "S1", "--name", "Sipho", "--role",
                       "supervisor")  # no PIN option, no card: the PIN is asked for
    assert code == 0, err
    code, out, err = run("staff", "pin", "S1")  # typed twice, differently
    assert (code, out) == (EXIT_ERROR, "")
    assert err == "showdown desk: error: the two PINs typed differ: nothing was changed\n"
    code, _, err = run("staff", "add", "--staff-id", "C1", "--name", "Card Only", "--role",
                       "dealer", "--card", "0011AABB")  # a card alone: nothing is asked
    assert code == 0, err
    listed = run.json("staff", "list")
    assert [(m["staff_id"], m["pin"], m["card"], m["passphrase"],
             m["roster_version"]) for m in listed] == [
        ("C1", False, True, False, 4), ("D12", True, True, False, 4),
        ("S1", True, False, False, 4), ("desk-1", False, False, True, 4)]
    assert "4821" not in json.dumps(listed) and "scrypt" not in json.dumps(listed)
    code, out, _ = run("staff", "disable", "C1")
    assert code == 0 and "C1 Card Only (dealer, card, DISABLED): disabled; roster version 5" \
        in out
    with run.database() as engine:
        enroll(engine, FakeTable("t01"), FakeTable("t02"))
    sent = run.json("staff", "send")
    assert (sent["roster_version"], [s["table"] for s in sent["sent"]]) == (5, ["t01", "t02"])
    assert [c.command for c in run.sender.commands] == [StaffRoster.NAME] * 2
    body = json.dumps(run.sender.commands[0].body("desk-a"))
    assert "4821" not in body and "99887766" not in body and "04A1B2C3" not in body
    code, out, _ = run("staff", "send", "--table", "t02")
    assert (code, out) == (0, "staff roster version 5 sent to table t02 (seq"
                              f" {run.sender.commands[-1].seq})\n")

    for args, words in (
        (["add", "--staff-id", "D13", "--name", "X", "--role", "dealer", "--pin-file",
          str(tmp_path / "none")], "--pin-file " + str(tmp_path / "none")),
        (["add", "--staff-id", "D13", "--name", "X", "--role", "dealer", "--pin-file",
          str(pin_file), "--card", "x"], "card number must be 4 to 64"),
        (["enable", "D99"], "no staff member 'D99'"),
        (["send", "--table", "t09"], "no enrolled table 't09'"),
    ):
        code, out, err = run("staff", *args)
        assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1), err
        assert words in err
    pin_file.write_text("12")
    code, _, err = run("staff", "pin", "D12", "--pin-file", str(pin_file))
    assert code == EXIT_ERROR and "PIN must be 4 to 8 digits" in err and "12" not in err[-4:]


def test_participants_proof_is_recorded_and_carried_to_the_seat(
    run: Desk, tmp_path: Path
) -> None:
    pin_file = tmp_path / "pin"
    pin_file.write_text("0042")
    registered = run.json("register", *ADULT, "--rewards-card", "5555 6666", "--pin-file",
                          str(pin_file))
    assert (registered["card"], registered["pin"]) == (True, True)
    pid = registered["patron_id"]
    code, out, _ = run("register", "--name", "R Card", "--id-kind", "rewards_card",
                       "--id-number", "6099000077889900", "--birth-date", "1970-01-01")
    assert code == 0 and out.endswith("(rewards card recorded for the table)\n")
    code, out, err = run("patron", "credentials", "--patron", pid, "--rewards-card",
                         "5555 7777")
    assert (code, out) == (0, f"patron {pid}: rewards card and PIN recorded for the table"
                              " (entries seated from now on carry it)\n"), err
    code, _, err = run("patron", "credentials", "--patron", pid)
    assert code == EXIT_ERROR and "give a rewards card number or a PIN" in err
    run.clock.now = local(2026, 7, 4, 0, 0)
    entry = run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
    run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    run.json("seat", "--entry", entry, "--table", "t01", "--seat", "3")
    seat = run.sender.commands[-1].args
    assert secret_matches("55557777", seat["card_hash"])
    assert secret_matches("0042", seat["pin_hash"])
    with run.database() as engine, Session(engine) as s:
        patron = s.get(Patron, pid)
        assert patron is not None and patron.card_hash == seat["card_hash"]


def test_desk_acknowledgement_disputes_and_payouts(run: Desk) -> None:
    pid = run.json("register", *ADULT)["patron_id"]
    entry, other = (run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
                    for _ in range(2))
    code, _, err = run("acknowledge", "--entry", entry, "--method", "desk_signature")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert f"entry {entry} has no recorded score to acknowledge" in err
    assert run.sender.commands == []
    recorded = local(2026, 7, 3, 15, 0)
    at = recorded.astimezone(UTC)
    with run.database() as engine, Session(engine) as s:
        add_score(s, entry, 23_450, stage="qualifying", recorded=recorded, acknowledged=None,
                  table="t04", seq=3)
        s.add(Dispute(entry_id=other, table_id="t04", seq=4, stage="qualifying", heat_id="h",
                      score_cents=1_000, note="paid short", at=at))
        s.add(PayoutCheck(hand_id="t04-000009", table_id="t04", seq=5, heat_id="h",
                          outcome="overridden", by="S1", reason="walked away", at=at,
                          mismatches=[{"seat": 2, "spot": "ante", "expected": 20_000,
                                       "held": 25_000}], unverifiable=[]))
        s.add(PayoutCheck(hand_id="t04-000008", table_id="t04", seq=2, heat_id="h",
                          outcome="verified", mismatches=[], unverifiable=[], at=at))
        s.commit()
    code, out, err = run("acknowledge", "--entry", entry, "--method", "desk_signature")
    assert code == 0, err
    command = run.sender.commands[-1]
    assert (command.table, command.command, dict(command.args)) == (
        "t04", "ack_score", {"entry_id": entry, "method": "desk_signature"})
    assert out == (f"entry {entry}'s score acknowledged at the desk (desk_signature): sent to"
                   f" table t04 (seq {command.seq})\n")
    with pytest.raises(SystemExit):  # argparse refuses it, naming the choices
        run("acknowledge", "--entry", entry, "--method", "wave")
    assert "invalid choice: 'wave'" in run.capsys.readouterr().err

    code, out, _ = run("disputes", "--open")
    assert (code, out) == (0, f"2026-07-03 13:00 {other} R10.00 at t04 (seq 4): 'paid short'"
                              " - OPEN\n")
    code, _, err = run("dispute", "resolve", "--entry", other, "--resolution", " ")
    assert code == EXIT_ERROR and "say how the dispute was resolved" in err
    code, out, _ = run("dispute", "resolve", "--entry", other, "--resolution", "replayed: fine")
    assert code == 0 and out.endswith("resolved by desk-1: replayed: fine\n")
    assert run("disputes", "--open")[1] == "no open disputes\n"
    code, out, _ = run("payouts", "--overridden")
    assert (code, out) == (0, "2026-07-03 13:00 t04-000009 at t04: overridden by S1: walked"
                              " away [seat 2 ante held R250.00 of R200.00]\n")
    assert len(run.json("payouts")) == 2
    audit = [a["action"] for a in run.json("audit", "--limit", "2")]
    assert audit == ["score.dispute_resolved", "score.ack_sent"]


def test_identities_line_up_on_the_command_line(run: Desk) -> None:
    """Issue 31 item 5 at the desk's command line: a card no reader produces refused with
    the reason (exit 2, nothing stored), a card changed after seating sent to the table
    (D330), the entry shown by its code, and the patron record with the score and how it
    was acknowledged (D333)."""
    code, _, err = run("register", *ADULT, "--rewards-card", "RC-100001")
    assert code == EXIT_ERROR and err.count("\n") == 1
    assert "field 'rewards_card': RC-100001: a rewards card reads as 8 to 19 digits or a hex" \
        " UID" in err
    assert "this venue's readers produce swiped card numbers (track 2)" in err
    pid = run.json("register", *ADULT, "--rewards-card", "6012 3456 7890 1234")["patron_id"]
    run.clock.now = local(2026, 7, 4, 0, 0)
    entry = run.json("buy", "--patron", pid, "--payment", "cash")
    run.json("open-heat", "--table", "t01", "--stage", "qualifying")
    code, out, err = run("seat", "--entry", entry["code"], "--table", "t01", "--seat", "4")
    assert code == 0, err  # the code names the entry too
    assert out.startswith(f"entry {entry['code']} seated at table t01 seat 4")
    assert entry["entry_id"] not in out

    code, out, err = run("patron", "credentials", "--patron", pid, "--rewards-card",
                         "04A1B2C3D4E5F6")
    assert code == 0, err
    sent = run.sender.commands[-1]
    assert (sent.table, sent.command, sent.args["entry_id"]) == (
        "t01", "participant_proofs", entry["entry_id"])
    assert secret_matches("04A1B2C3D4E5F6", sent.args["card_hash"])
    assert f"sent to table t01 for entry {entry['entry_id']} (seq {sent.seq})" in out

    record = run.json("patron", "show", "--patron", pid)
    assert [(e["code"], e["state"], e["score"]) for e in record["entries"]] == [
        (entry["code"], "seated", None)]
    with run.database() as engine, Session(engine) as s:
        add_score(s, entry["entry_id"], 12_500, stage="qualifying",
                  acknowledged=local(2026, 7, 3, 23, 40), recorded=local(2026, 7, 3, 23, 35))
    record = run.json("patron", "show", "--patron", pid)
    shown = record["entries"][0]
    assert (shown["state"], shown["score"]["score"], shown["score"]["ack_method"],
            shown["score"]["acknowledged_local"]) == ("acknowledged", "R125.00", "card",
                                                      "2026-07-03 23:40")
    code, out, _ = run("patron", "show", "--patron", pid)
    assert code == 0
    assert (f"  {entry['code']} [{entry['entry_id']}] qualifying: scored R125.00 in 10 hands"
            " at table t01; acknowledged by rewards card at 2026-07-03 23:40") in out
