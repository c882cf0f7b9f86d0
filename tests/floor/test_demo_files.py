"""`showdown demo --tournament FILE --paytables FILE`: the demo plays the settings it is given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.main import main
from runtime.settings_files import default_paytables_path, default_tournament_path


def test_the_table_only_demo_plays_the_tournament_file_it_is_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = default_tournament_path().read_text("utf-8")
    assert shipped.count("\nhands = 10 ") == 1  # the qualifying stage's
    short = tmp_path / "short-heats.toml"
    short.write_text(shipped.replace("\nhands = 10 ", "\nhands = 4 "), encoding="utf-8")
    paytables = tmp_path / "paytables.toml"
    paytables.write_text(default_paytables_path().read_text("utf-8"), encoding="utf-8")
    assert main(["demo", "--table-only", "--seed", "11", "--players", "1",
                 "--tournament", str(short), "--paytables", str(paytables)]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"\] t01-\d{6}: board", out)) == 4
    assert len(re.findall(r"SCORE T01-1-S\d: R", out)) == 1


@pytest.mark.parametrize("flag", ["--tournament", "--paytables"])
def test_a_missing_settings_file_is_one_line_naming_the_flag(
        flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.toml"
    assert main(["demo", "--table-only", flag, str(missing)]) == 2
    assert capsys.readouterr().err == f"showdown demo: error: {flag} {missing}: no such file\n"


def test_the_floor_demo_makes_its_settings_from_the_tournament_file(tmp_path: Path) -> None:
    from floor.plan import TournamentPlan, tournament_settings

    shipped = default_tournament_path().read_text("utf-8")
    short = tmp_path / "short-heats.toml"
    short.write_text(shipped.replace("\nhands = 10 ", "\nhands = 4 "), encoding="utf-8")
    plan = TournamentPlan(directory=tmp_path, tables=2, players=3, days=2, heats_per_day=2)
    assert tournament_settings(plan)[2].qualifying.rules.hands == 10
    assert tournament_settings(TournamentPlan(directory=tmp_path, tables=2, players=3, days=2,
                                   heats_per_day=2, tournament_file=short)
                         )[2].qualifying.rules.hands == 4
