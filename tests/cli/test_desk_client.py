"""Issue 33 point 1: the desk is a client of the central service's desk API. Every `showdown
desk` command below runs in-process against a real desk API served over HTTPS with a test
CA (tests.leaderboard.served), one per module and database kind: SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.desk.table_answers import EXIT_HELD, EXIT_NOT_CONFIRMED
from cli.errors import EXIT_ERROR, EXIT_REFUSED, EXIT_UNAVAILABLE
from cli.main import main
from tests.leaderboard.served import PASSPHRASE, Served, serve_desk_api


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def central(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_desk_api(request.param, tmp_path_factory.mktemp("central")) as s:
        yield s


@pytest.fixture
def served(central: Served) -> Served:
    """The module's service, its database emptied for the test."""
    central.reset()
    return central


class Desk:
    """`showdown desk ...` at one terminal of a workstation (its own desk.toml and state)."""

    def __init__(self, served: Served, home: Path, terminal: str,
                 capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.capsys = capsys
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / f"{terminal}.toml"
        self.config.write_text(f'[desk]\napi_url = "{served.url}"\napi_ca_file = "{served.ca}"\n'
                               f'terminal = "{terminal}"\n')
        self.secret = home / "pass"
        self.secret.write_text(PASSPHRASE)
        monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
        monkeypatch.delenv("SHOWDOWN_DESK_STAFF", raising=False)

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(["desk", *args, "--config", str(self.config)])
        out, err = self.capsys.readouterr()
        return code, out, err

    def login(self, staff_id: str) -> None:
        code, out, err = self("login", "--staff-id", staff_id, "--passphrase-file",
                              str(self.secret))
        assert code == 0, err
        assert f"signed in as {staff_id}" in out


@pytest.fixture
def desk(served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str],
         monkeypatch: pytest.MonkeyPatch) -> Desk:
    return Desk(served, tmp_path, "desk-a", capsys, monkeypatch)


def test_a_workstation_config_naming_a_database_or_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, line in (("desk.database", 'database = "sqlite:///x.sqlite"'),
                      ("desk.signing_key", 'signing_key = "desk.key"')):
        path = tmp_path / "old-desk.toml"
        path.write_text(f'[desk]\napi_url = "https://lb.casino.lan/"\n{line}\n')
        assert main(["desk", "lists", "--config", str(path)]) == EXIT_ERROR
        err = capsys.readouterr().err
        assert key in err and "goes through the central service" in err, err
        assert err.count("\n") == 1


def test_an_untrusted_certificate_is_unavailable_naming_the_api_url(
    served: Served, desk: Desk, tmp_path: Path
) -> None:
    other = tmp_path / "other.toml"
    other.write_text(f'[desk]\napi_url = "{served.url}"\nterminal = "desk-x"\n')  # system CAs
    desk.capsys.readouterr()
    code = main(["desk", "login", "--staff-id", "M1", "--passphrase-file", str(desk.secret),
                 "--config", str(other)])
    err = desk.capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE
    assert "desk.api_url" in err and "not trusted" in err


def test_sessions_are_per_person_and_terminal_listed_and_revocable(
    served: Served, desk: Desk, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    served.enrol("C1", "clerk")
    desk.login("M1")
    desk.login("C1")
    # Two people signed in at one terminal: a command that does not say who acts is refused.
    code, _, err = desk("whoami")
    assert code == EXIT_REFUSED and "--as" in err
    assert "C1, M1 are signed in at terminal desk-a" in err
    code, out, _ = desk("whoami", "--as", "C1")
    assert code == 0 and out.startswith("C1 ") and "terminal desk-a" in out
    monkeypatch.setenv("SHOWDOWN_DESK_STAFF", "M1")
    code, out, _ = desk("whoami")
    assert code == 0 and out.startswith("M1 ")
    monkeypatch.delenv("SHOWDOWN_DESK_STAFF")
    # Another terminal has sessions of its own: C1 signed in there is a second session.
    other = Desk(served, tmp_path / "b", "desk-b", capsys, monkeypatch)
    other.login("C1")
    code, out, _ = other("sessions", "--json")
    mine = json.loads(out)
    assert code == 0 and {(s["staff_id"], s["terminal"]) for s in mine} == {
        ("C1", "desk-a"), ("C1", "desk-b")}  # a clerk sees only their own
    assert all(s["address"] == "127.0.0.1" for s in mine)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # back at desk-a
    code, out, _ = desk("sessions", "--json", "--as", "M1")
    everyone = {(s["staff_id"], s["terminal"]) for s in json.loads(out)}
    assert {("M1", "desk-a"), ("C1", "desk-a"), ("C1", "desk-b")} <= everyone
    # A clerk may not end the manager's session; the manager ends C1's at desk-b.
    m1 = next(s["id"] for s in json.loads(out) if s["staff_id"] == "M1")
    code, _, err = desk("sessions", "revoke", m1, "--as", "C1")
    assert code == EXIT_REFUSED and "only a manager" in err
    at_b = next(s["id"] for s in mine if s["terminal"] == "desk-b")
    code, out, _ = desk("sessions", "revoke", at_b, "--as", "M1", "--why", "left the desk")
    assert code == 0 and "revoked" in out
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "b" / "state"))
    code, _, err = other("whoami")
    assert code == EXIT_REFUSED and "revoked" in err and "showdown desk login" in err


def _register(desk: Desk, number: str, name: str, *more: str) -> tuple[int, str, str]:
    return desk("register", "--name", name, "--id-kind", "id_document", "--id-number", number,
                "--birth-date", "1990-01-01", "--as", "M1", *more)


def _entry(desk: Desk, number: str) -> str:
    code, out, err = _register(desk, number, f"Patron {number[-4:]}")
    assert code == 0, err
    patron = out.split()[1]
    code, out, err = desk("buy", "--patron", patron, "--payment", "cash", "--json", "--as", "M1")
    assert code == 0, err
    return str(json.loads(out)["entry_id"])


def test_unanswered_then_refused_by_the_table_never_prints_seated(
    served: Served, desk: Desk
) -> None:
    desk.login("M1")
    entry = _entry(desk, "8001015009087")
    # The heat is opened at the desk, but the table never hears of it: no answer in time.
    served.tables.mode = "silent"
    code, out, err = desk("open-heat", "--table", "t01", "--stage", "qualifying",
                          "--wait", "0.3", "--as", "M1")
    served.tables.mode = "loop"
    assert code == EXIT_NOT_CONFIRMED, err
    assert out.startswith("sent, not confirmed yet: showdown desk commands --seq ")
    assert "opened" not in out
    seq = out.split("--seq ")[1].split()[0]
    code, out, _ = desk("commands", "--seq", seq)
    assert code == 0 and "sent, no answer yet" in out
    # The table has no heat open, so it refuses the seat: exit 3 with the table's reason.
    code, out, err = desk("seat", "--entry", entry, "--table", "t01", "--seat", "1")
    assert code == EXIT_REFUSED, (out, err)
    assert "seated at table" not in out and "table t01 refused seat" in err, err
    code, out, _ = desk("commands", "--entry", entry)
    assert "REFUSED" in out


def test_a_held_registration_has_its_own_exit_code(served: Served, desk: Desk,
                                                   tmp_path: Path) -> None:
    desk.login("M1")
    listed = tmp_path / "excluded.csv"
    listed.write_text("id_number,name,birth_date\n7001015009083,Thandi Nomsa Mokoena,"
                      "1980-01-01\n")
    code, _, err = desk("import-list", "self_exclusion", str(listed), "--source", "NGB",
                        "--date", "2026-07-01", "--as", "M1")
    assert code == 0, err
    code, out, err = desk("register", "--name", "THANDI NOMSA MOKOENA", "--id-kind",
                          "id_document", "--id-number", "8501015009088", "--birth-date",
                          "1980-01-01", "--as", "M1")
    assert code == EXIT_HELD, (out, err)
    assert "HELD for a supervisor's decision" in out
    code, out, _ = _register(desk, "9202025009081", "Sipho Ndlovu")
    assert code == 0 and "HELD" not in out
