"""`showdown check-config` and runtime.settings_files, through the real entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from game.errors import ConfigError
from game.tournament.schema import ConfigErrors
from runtime.settings_files import (
    PAYTABLES_ENV,
    TOURNAMENT_ENV,
    default_tournament_path,
    read_tournament,
)

CONFIG = Path(__file__).resolve().parents[2] / "config"
SHIPPED = CONFIG / "tournament.toml"
BAD_RULE21 = CONFIG / "tournament-bad-rule21.toml"


@pytest.fixture(autouse=True)
def _no_env_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOURNAMENT_ENV, raising=False)
    monkeypatch.delenv(PAYTABLES_ENV, raising=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check-config", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def edited(tmp_path: Path, old: str, new: str) -> Path:
    text = SHIPPED.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "t.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_shipped_files_are_ok_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "ok"
    assert str(SHIPPED) in out
    assert str(CONFIG / "paytables.toml") in out
    for words in ["Africa/Johannesburg", "buy-in R100.00", "denomination R25.00",
                  "Ante R25.00 to R1,000.00", "side bets up to R250.00",
                  "2026-07-03 to 2026-07-30", "13:00-00:00", "last buy-in 00:00",
                  "10 hands", "top 12 advance", "2026-08-01 16:00, 2 heats x 6 seats",
                  "top 6 advance", "2026-08-01 17:00", "3 markers x R500.00", "forfeit",
                  "80% to the Final Prize Pool (60/10/9/8/7/6)",
                  "20% to the Top Score Progressive (60/25/15)", "4 weeks from friday 00:00",
                  "claim within 15 days", "only acknowledged scores qualify",
                  "earlier_acknowledged"]:
        assert words in out, words


def test_rule21_schedule_is_refused_naming_both_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--tournament", str(BAD_RULE21)], capsys)
    assert code == 2
    assert out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"error: {BAD_RULE21}: qualifying.ends: ")
    assert "qualifying.last_day" in first
    assert err.splitlines()[-1] == "1 problem found"


def test_every_problem_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = edited(tmp_path, "final_places = [60, 10, 9, 8, 7, 6]",
                  "final_places = [60, 10, 9, 8, 7, 5]\nbonus = 1")
    code, _out, err = run(["--tournament", str(path)], capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[-1] == "2 problems found"
    assert any("prizes.bonus: unknown key" in ln for ln in lines)
    assert any("prizes.final_places: " in ln and "99%" in ln for ln in lines)


def test_bad_paytables_are_reported_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pay.toml"
    bad.write_text("[trips_plus]\nflush = 7\n", encoding="utf-8")
    code, out, err = run(["--paytables", str(bad)], capsys)
    assert code == 2
    assert out == ""
    assert str(bad) in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(["--tournament", str(tmp_path / "nope.toml")], capsys)
    assert code == 2
    assert "nope.toml" in err
    assert "cannot read the file" in err


def test_toml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = edited(tmp_path, "hands = 10 ", "hands = = 10 ")
    code, _out, err = run(["--tournament", str(path)], capsys)
    assert code == 2
    assert "TOML syntax error" in err


def test_unknown_time_zone(tmp_path: Path) -> None:
    path = edited(tmp_path, '"Africa/Johannesburg"', '"Africa/Atlantis"')
    with pytest.raises(ConfigError) as info:
        read_tournament(path)
    assert info.value.key == "venue.timezone"
    assert "Africa/Atlantis" in str(info.value)


def test_environment_names_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_tournament_path() == SHIPPED
    monkeypatch.setenv(TOURNAMENT_ENV, str(BAD_RULE21))
    assert default_tournament_path() == BAD_RULE21
    with pytest.raises(ConfigErrors, match=r"qualifying\.ends"):
        read_tournament()
    monkeypatch.setenv(TOURNAMENT_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=TOURNAMENT_ENV):
        default_tournament_path()


def test_read_tournament_loads_the_shipped_file() -> None:
    settings = read_tournament(SHIPPED)
    assert settings.source == str(SHIPPED)
    assert settings.final.rules.markers == 3


def test_config_errors_read_as_one_line() -> None:
    # a ConfigErrors raised elsewhere reaches cli.main as one line with the count of the rest
    error = ConfigErrors([ConfigError("a.toml", "x", "bad"), ConfigError("a.toml", "y", "worse")])
    assert str(error) == "a.toml: x: bad (and 1 more problem)"
