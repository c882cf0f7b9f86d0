"""`showdown desk login | whoami | logout`, `showdown leaderboard init` (the central database
and its first manager, no longer a workstation's job) and the desk config (desk.toml): on
SQLite and PostgreSQL, the desk against the central service's desk API."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import select
from sqlalchemy.orm import Session

from cli.errors import EXIT_ERROR, EXIT_REFUSED
from cli.main import main
from leaderboard.db import alembic_config, make_engine
from leaderboard.models import AuditEntry, Patron, StaffRecord
from runtime import settings_files
from tests.cli.test_desk import ADULT, Desk, central, run  # noqa: F401 (the fixtures)
from tests.fixtures.services import Database

REPO = Path(__file__).resolve().parents[2]


def test_leaderboard_init_creates_the_database_and_its_first_manager(
    database_url: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = database_url.url
    engine = make_engine(url)
    cfg = alembic_config(url)
    with engine.begin() as connection:  # a database at an old revision is upgraded
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "0004")
    (tmp_path / "pass").write_text("the first manager's passphrase")
    code = main(["leaderboard", "init", "--db", url, "--staff-id", "M1"])
    assert code == EXIT_ERROR
    assert "has no manager yet: give --staff-id and --name" in capsys.readouterr().err
    assert main(["leaderboard", "init", "--db", url, "--staff-id", "M1", "--name", "M. One",
                 "--passphrase-file", str(tmp_path / "pass")]) == 0
    assert "M1 (M. One) is its first manager" in capsys.readouterr().out
    with Session(engine) as s:
        row = s.get(StaffRecord, "M1")
        assert row is not None and row.role == "manager" and row.desk_hash is not None
    # Only one first manager: afterwards a manager enrols staff at a desk.
    assert main(["leaderboard", "init", "--db", url, "--staff-id", "M2", "--name", "M. Two",
                 "--passphrase-file", str(tmp_path / "pass")]) == 0
    assert "its managers: M1" in capsys.readouterr().out
    engine.dispose()
    assert main(["leaderboard", "init", "--db", "not a url"]) == EXIT_ERROR
    assert "--db 'not a url' is not a database URL" in capsys.readouterr().err


def test_login_whoami_an_action_recorded_under_the_person_and_logout(
    run: Desk, tmp_path: Path  # noqa: F811
) -> None:
    clerk = tmp_path / "clerk.passphrase"
    clerk.write_text("the clerk's own passphrase\n")
    code, out, err = run("staff", "add", "--staff-id", "C07", "--name", "Lindiwe Khumalo",
                         "--role", "clerk", "--passphrase-file", str(clerk))
    assert code == 0 and "(clerk, desk passphrase)" in out, err
    code, out, _ = run.bare("logout")  # the manager leaves the desk
    assert (code, out) == (0, "desk-1 signed out\n")
    run.monkeypatch.delenv("SHOWDOWN_DESK_STAFF")  # the one person signed in here acts
    code, out, err = run.bare("login", "--staff-id", "C07", "--passphrase-file", str(clerk))
    assert code == 0, err
    assert out.startswith("signed in as C07 (Lindiwe Khumalo, clerk) at terminal desk-test until")
    saved = (tmp_path / "desk-home" / "state" / "showdown" / "desk-sessions" / "desk-test"
             / "C07.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    assert json.loads(saved.read_text())["staff_id"] == "C07"
    who = json.loads(run.bare("whoami", "--json")[1])
    assert (who["staff_id"], who["role"]) == ("C07", "clerk")

    code, out, err = run.bare("register", *ADULT)
    assert code == 0 and out.startswith("registered P-"), err
    code, out, err = run.bare("void-score", "--entry", "E-1", "--why", "x")
    assert (code, out) == (EXIT_REFUSED, "")
    assert err == ("showdown desk: error: refused: 'score.void' needs a supervisor or manager;"
                   " C07 is signed in as clerk\n")
    with run.database() as engine, Session(engine) as s:
        patron = s.scalars(select(Patron)).one()
        rows = s.scalars(select(AuditEntry).where(AuditEntry.action == "patron.registered"))
        assert [(a.actor, a.detail["patron_id"]) for a in rows] == [("C07", patron.patron_id)]

    code, out, _ = run.bare("logout")
    assert (code, out) == (0, "C07 signed out\n")
    assert not saved.exists()
    code, _, err = run.bare("whoami")
    assert (code, err) == (EXIT_REFUSED, "showdown desk: error: nobody is signed in here: run"
                                         " `showdown desk login`\n")
    code, _, err = run.bare("register", *ADULT)
    assert code == EXIT_REFUSED and "nobody is signed in here" in err
    clerk.write_text("not the clerk's passphrase")
    code, _, err = run.bare("login", "--staff-id", "C07", "--passphrase-file", str(clerk))
    assert (code, err.count("\n")) == (EXIT_REFUSED, 1)
    assert "wrong passphrase for C07 (4 tries left" in err


@pytest.mark.parametrize(("text", "key", "words"), [
    ('[desk]\nterminal = "d1"\n', "desk.api_url", "missing"),
    ('[desk]\napi_url = "ftp://x/"\n', "desk.api_url", "is not an http(s) URL"),
    ('[desk]\napi_url = "http://10.1.2.3/"\n', "desk.api_url", "clear text"),
    ('[desk]\napi_url = "https://lb/"\nterminl = "x"\n', "desk.terminl", "unknown key"),
    ('[desks]\napi_url = "https://lb/"\n', "desks", "unknown section"),
    ('[desk]\napi_url = "https://lb/"\nterminal = "desk 1"\n', "desk.terminal", "letters"),
    ('[desk]\napi_url = "https://lb/"\ntournament = "none.toml"\n', "desk.tournament",
     "no such file"),
    ('[desk]\napi_url = "https://lb/"\napi_ca_file = "none.pem"\n', "desk.api_ca_file",
     "no such file"),
    ('[desk]\napi_url = 5\n', "desk.api_url", "non-empty text"),
    ("[desk\n", "", "TOML syntax error"),
    # what a workstation held before it became a client of the central service (issue 33)
    ('[desk]\napi_url = "https://lb/"\ndatabase = "sqlite://"\n', "desk.database",
     "goes through the central service"),
    ('[desk]\napi_url = "https://lb/"\nsigning_key = "desk.key"\n', "desk.signing_key",
     "no database URL, signing key"),
    ('[desk]\napi_url = "https://lb/"\n[mqtt]\nbroker = "b:1883"\n', "mqtt",
     "not a desk's any more"),
    ('[desk]\napi_url = "https://lb/"\n[auth]\nidle_minutes = 5\n', "auth",
     "not a desk's any more"),
])
def test_desk_config_errors_name_the_file_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *,
    text: str, key: str, words: str
) -> None:
    path = tmp_path / "desk.toml"
    path.write_text(text)
    monkeypatch.setenv("SHOWDOWN_DESK_CONFIG", str(path))
    code = main(["desk", "lists"])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (EXIT_ERROR, 1), err
    assert err.startswith(f"showdown desk: error: {path}: {key}{': ' if key else ''}"), err
    assert words in err


def test_the_config_is_found_by_flag_then_environment_then_the_shipped_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHOWDOWN_DESK_CONFIG", str(tmp_path / "absent.toml"))
    assert main(["desk", "lists"]) == EXIT_ERROR
    assert "no such desk config file (named by $SHOWDOWN_DESK_CONFIG)" in capsys.readouterr().err
    flag = tmp_path / "flag.toml"
    flag.write_text('[desk]\napi_url = "https://lb.flag.test/"\nterminal = "t-flag"\n')
    assert main(["desk", "lists", "--config", str(flag)]) == EXIT_REFUSED
    assert "nobody is signed in here" in capsys.readouterr().err  # the flag's config read
    monkeypatch.delenv("SHOWDOWN_DESK_CONFIG")
    shipped = tmp_path / "checkout" / "config"
    shipped.mkdir(parents=True)
    (shipped / "desk.toml").write_text((REPO / "config" / "desk.toml").read_text())
    monkeypatch.setattr(settings_files, "shipped_dir", lambda: shipped)
    from leaderboard.desk.config import read_desk_config

    assert read_desk_config().api_url == "http://127.0.0.1:8080/"
    for name in ("desk.toml", "desk.production.toml"):  # the shipped files are valid
        text = (REPO / "config" / name).read_text()
        text = "\n".join(t for t in text.splitlines()
                         if not t.startswith(("api_ca_file", "tournament =")))
        (tmp_path / name).write_text(text)
        config = read_desk_config(tmp_path / name)
        assert config.api_url is not None and config.api_url.startswith(
            "http://127.0.0.1" if name == "desk.toml" else "https://")


def test_the_services_house_rules_apply_to_desk_sign_ins(run: Desk, tmp_path: Path) -> None:  # noqa: F811
    """Sessions are short-lived and locked out by the central service's [desk_auth] (here
    its defaults: 30 idle minutes, 5 wrong passphrases)."""
    run.login()
    run.clock.advance(31 * 60)
    code, _, err = run.bare("whoami")
    assert code == EXIT_REFUSED and "after 30 minutes without use" in err
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase at all")
    for left in ("4 tries left", "3 tries left", "2 tries left", "1 try left"):
        assert left in run.bare("login", "--staff-id", "desk-1", "--passphrase-file",
                                str(wrong))[2]
    err = run.bare("login", "--staff-id", "desk-1", "--passphrase-file", str(wrong))[2]
    assert "that was 5 in a row, so the account is locked until" in err
