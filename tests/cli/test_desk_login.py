"""`showdown desk init | login | whoami | logout`, the desk config (desk.toml) and the rule that
no desk command creates a database it was only asked to use; on SQLite and PostgreSQL."""

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
from leaderboard.db import alembic_config, head_revisions, make_engine
from leaderboard.models import AuditEntry, Patron
from runtime import settings_files
from tests.cli.test_desk import ADULT, Desk
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import migrated

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(database_url: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Desk:
    return Desk(database_url, tmp_path / "desk-home", capsys, monkeypatch)


def test_a_wrong_db_is_refused_and_never_created(run: Desk, tmp_path: Path) -> None:
    # Issue 13: a mistyped --db used to create an empty database answering "No lists imported".
    typo = tmp_path / "leaderbaord.sqlite"
    for args in (["lists"], ["register", *ADULT], ["whoami"], ["login", "--staff-id", "desk-1"]):
        code, out, err = run.bare(*args, "--db", f"sqlite:///{typo}")
        assert (code, out, err.count("\n")) == (EXIT_ERROR, "", 1), err
        assert err == (f"showdown desk: error: database sqlite:///{typo}: no such SQLite file"
                       f" {typo} (a mistyped URL?); to create it run `showdown desk init`\n")
        assert not typo.exists()
    code, out, _ = run("lists")  # the configured database is untouched and answers
    assert (code, out) == (0, "no lists imported\n")


def test_an_empty_or_old_database_is_refused_until_desk_init(
    database_url: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    url = database_url.url
    engine = make_engine(url)
    with engine.begin() as connection:  # a database of this kind that exists but is empty
        connection.exec_driver_sql("CREATE TABLE unrelated (x INTEGER)")
    code = main(["desk", "lists", "--db", url])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR and "is empty (no showdown schema)" in err
    assert "run `showdown desk init`" in err and err.count("\n") == 1
    cfg = alembic_config(url)
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "0004")
    engine.dispose()
    assert main(["desk", "lists", "--db", url]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert f"is at schema revision 0004; this software needs {max(head_revisions())}" in err
    (tmp_path / "pass").write_text("the first manager's passphrase")
    assert main(["desk", "init", "--db", url, "--staff-id", "M1", "--name", "M. One",
                 "--passphrase-file", str(tmp_path / "pass")]) == 0
    assert main(["desk", "login", "--db", url, "--staff-id", "M1", "--passphrase-file",
                 str(tmp_path / "pass")]) == 0
    capsys.readouterr()
    assert main(["desk", "lists", "--db", url]) == 0
    assert capsys.readouterr().out == "no lists imported\n"
    # Only one first manager: afterwards a manager enrols staff.
    assert main(["desk", "init", "--db", url, "--staff-id", "M2", "--name", "M. Two",
                 "--passphrase-file", str(tmp_path / "pass")]) == 0
    assert "its managers: M1" in capsys.readouterr().out


def test_login_whoami_an_action_recorded_under_the_person_and_logout(
    run: Desk, tmp_path: Path
) -> None:
    clerk = tmp_path / "clerk.passphrase"
    clerk.write_text("the clerk's own passphrase\n")
    code, out, err = run("staff", "add", "--staff-id", "C07", "--name", "Lindiwe Khumalo",
                         "--role", "clerk", "--passphrase-file", str(clerk))
    assert code == 0 and "(clerk, desk passphrase)" in out, err
    code, out, err = run.bare("login", "--staff-id", "C07", "--passphrase-file", str(clerk))
    assert code == 0 and out.startswith("signed in as C07 (Lindiwe Khumalo, clerk) until"), err
    saved = tmp_path / "desk-home" / "state" / "showdown" / "desk-session"
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
    with migrated(run.db) as engine, Session(engine) as s:
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


def test_the_session_of_another_database_is_named(run: Desk, database_url: Database,
                                                  tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    (tmp_path / "p").write_text("another manager's passphrase")
    assert run.bare("init", "--db", f"sqlite:///{other}", "--staff-id", "X1", "--name", "X",
                    "--passphrase-file", str(tmp_path / "p"))[0] == 0
    run.login()
    code, _, err = run.bare("lists", "--db", f"sqlite:///{other}")
    assert code == EXIT_REFUSED
    assert f"not signed in on sqlite:///{other}: the saved session is for" in err


@pytest.mark.parametrize(("text", "key", "words"), [
    ('[desk]\nvenue = "v"\n', "desk.database", "missing"),
    ('[desk]\ndatabase = "nonsense"\n', "desk.database", "is not a database URL"),
    ('[desk]\ndatabase = "sqlite://"\nvenu = "x"\n', "desk.venu", "unknown key"),
    ('[desks]\ndatabase = "sqlite://"\n', "desks", "unknown section"),
    ('[desk]\ndatabase = "sqlite://"\nvenue = "Gold Reef"\n', "desk.venue", "a-z, 0-9"),
    ('[desk]\ndatabase = "sqlite://"\ntournament = "none.toml"\n', "desk.tournament",
     "no such file"),
    ('[desk]\ndatabase = "sqlite://"\n[mqtt]\nbroker = "localhost"\n', "mqtt.broker",
     "host:port"),
    ('[desk]\ndatabase = "sqlite://"\n[mqtt]\ntls = "yes"\n', "mqtt.tls", "true or false"),
    ('[desk]\ndatabase = "sqlite://"\n[mqtt]\npassword_file = "pw"\n', "mqtt.password_file",
     "no such file"),
    ('[desk]\ndatabase = 5\n', "desk.database", "non-empty text"),
    ("[desk\n", "", "TOML syntax error"),
    ('[desk]\ndatabase = "sqlite://"\n[auth]\nidle_minutes = 0\n', "auth.idle_minutes",
     "1..480"),
    ('[desk]\ndatabase = "sqlite://"\n[auth]\nlockout = 3\n', "auth.lockout", "unknown key"),
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
    monkeypatch.setenv("SHOWDOWN_DESK_CONFIG", str(tmp_path / "absent.toml"))
    assert main(["desk", "lists"]) == EXIT_ERROR
    assert "no such desk config file (named by $SHOWDOWN_DESK_CONFIG)" in capsys.readouterr().err
    flag = tmp_path / "flag.toml"
    flag.write_text(f'[desk]\ndatabase = "sqlite:///{tmp_path / "flag.sqlite"}"\n')
    assert main(["desk", "lists", "--config", str(flag)]) == EXIT_ERROR
    assert f"sqlite:///{tmp_path / 'flag.sqlite'}: no such SQLite" in capsys.readouterr().err
    monkeypatch.delenv("SHOWDOWN_DESK_CONFIG")
    # The shipped config/desk.toml (a copy, so the checkout's var/ is left alone): its
    # ../var/leaderboard.sqlite is beside the config folder, not under the working directory.
    shipped = tmp_path / "checkout" / "config"
    shipped.mkdir(parents=True)
    (shipped / "desk.toml").write_text((REPO / "config" / "desk.toml").read_text())
    monkeypatch.setattr(settings_files, "shipped_dir", lambda: shipped)
    assert main(["desk", "lists"]) == EXIT_ERROR
    where = shipped / ".." / "var" / "leaderboard.sqlite"
    assert f"sqlite:///{where}: no such SQLite" in capsys.readouterr().err
    for name in ("desk.toml", "desk.production.toml"):  # the shipped files are valid
        from leaderboard.desk.config import read_desk_config

        if name == "desk.toml":
            config = read_desk_config(REPO / "config" / name)
            assert (config.venue, config.host, config.port) == ("dev", "127.0.0.1", 1883)
        else:
            text = (REPO / "config" / name).read_text()
            for line in ("credentials_file", "ca_file", "tournament ="):
                text = "\n".join(t for t in text.splitlines() if not t.startswith(line))
            (tmp_path / name).write_text(text)
            config = read_desk_config(tmp_path / name)
            assert config.database.startswith("postgresql+psycopg://")
            assert config.signing_key == Path("/etc/showdown/desk.key")


def test_the_house_rules_of_desk_toml_apply_to_its_sign_ins(run: Desk, tmp_path: Path) -> None:
    config = tmp_path / "desk-home" / "desk.toml"
    config.write_text(config.read_text() + "[auth]\nidle_minutes = 5\nfailures = 3\n")
    run.login()
    run.clock.advance(5 * 60)
    code, _, err = run.bare("whoami")
    assert code == EXIT_REFUSED and "after 5 minutes without use" in err
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase at all")
    for left in ("2 tries left", "1 try left"):
        assert left in run.bare("login", "--staff-id", "desk-1", "--passphrase-file", str(wrong))[2]
    err = run.bare("login", "--staff-id", "desk-1", "--passphrase-file", str(wrong))[2]
    assert "that was 3 in a row, so the account is locked until" in err
