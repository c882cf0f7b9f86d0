"""For each family of commands, a typo and a refusal (or a service that does not answer) end
with different exit codes (docs/exit-codes.md): 2 fix the command, 3 refused, 69 try again.
The table console's refusals (a wrong PIN, a dealer asking a supervisor's action) are in
tests/controller/console/test_dealer_cli.py; the desk's unsent command (69) in
tests/cli/test_desk.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.errors import EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_USAGE
from cli.main import main
from tests.cli.test_desk import ADULT, Desk, central  # noqa: F401 (the fixture)
from tests.leaderboard.served import Served


def typo(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run a mistyped command line: a usage error (2) and its one line; returns stderr."""
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    err = capsys.readouterr().err
    assert done.value.code == EXIT_USAGE and err.splitlines()[-1].startswith("showdown")
    return err


def failed(capsys: pytest.CaptureFixture[str], code: int, *argv: str) -> str:
    """Run a command that fails with `code`: one line on stderr, nothing on stdout."""
    assert main(list(argv)) == code
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "internal error" not in err, err
    return err


def test_desk(central: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
              monkeypatch: pytest.MonkeyPatch) -> None:
    desk = Desk(central, tmp_path / "home", capsys, monkeypatch)
    assert "invalid choice: 'registr'" in typo(capsys, "desk", "registr", *ADULT)
    assert "nobody is signed in" in failed(capsys, EXIT_REFUSED, "desk", "register", *ADULT)
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase at all")
    assert "wrong passphrase" in failed(capsys, EXIT_REFUSED, "desk", "login", "--staff-id",
                                        "desk-1", "--passphrase-file", str(wrong))
    desk.login()
    assert "no heat open at table t09" in failed(capsys, EXIT_REFUSED, "desk", "table-fault",
                                                 "--table", "t09", "--why", "shoe jammed")
    assert "--why" in failed(capsys, EXIT_USAGE, "desk", "table-fault", "--table", "t09")


def test_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    typo(capsys, "table", "dealr")
    err = typo(capsys, "table", "dealer", "manual_wager", "--socket", "s", "--staff-id", "d1",
               "--amount", "-25")
    assert "argument --amount: '-25' is not an amount: an amount cannot be negative" in err
    assert "no table daemon answers" in failed(capsys, EXIT_UNAVAILABLE, "table", "status",
                                               "--socket", str(tmp_path / "api.sock"))


def test_leaderboard(capsys: pytest.CaptureFixture[str]) -> None:
    typo(capsys, "leaderboard", "standing")
    assert "--rows must be 1..10000" in failed(capsys, EXIT_USAGE, "leaderboard", "standings",
                                               "--db", "sqlite://", "--rows", "0")
    failed(capsys, EXIT_UNAVAILABLE, "leaderboard", "standings", "--db",
           "postgresql+psycopg://showdown@127.0.0.1:1/none")


def test_pit_tools(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    typo(capsys, "settle", "--lnes")
    assert "argument --marker-value" in typo(capsys, "settle", "--marker-value", "1.001")
    typo(capsys, "heat", "--players", "7")
    (tmp_path / "k").write_text("")
    assert "refusing to overwrite a key" in failed(capsys, EXIT_USAGE, "keys", "generate",
                                                   "--out", str(tmp_path / "k"))
    typo(capsys, "journal", "rotat")
    assert str(tmp_path / "absent.toml") in failed(
        capsys, EXIT_USAGE, "journal", "rotate", "--config", str(tmp_path / "absent.toml"),
        "--why", "end of the tournament")
