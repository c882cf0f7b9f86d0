"""`showdown par-sheet`, through the real command line entry point."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from cli.main import main
from game.errors import ConfigError
from runtime.settings_files import PAYTABLES_ENV, default_paytables_path, read_paytables

CONFIG = Path(__file__).resolve().parents[2] / "config"


@pytest.fixture(autouse=True)
def _no_env_paytables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PAYTABLES_ENV, raising=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["par-sheet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_shows_every_line_and_the_published_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run([], capsys)
    assert code == 0
    assert err == ""
    assert str(CONFIG / "paytables.toml") in out
    # rules.md: Trips Plus 96.6637%, Pocket Bonus A 1266/1326 = 95.4751%
    assert "96.6637%" in out
    assert "95.4751%" in out
    assert "= 211/221" in out  # 1266/1326 in lowest terms
    # Sweet 16 single deck by hand: (161 + 23*17 + 26*13 + 52*7)/1326 = 1254/1326 = 209/221
    assert "= 209/221" in out
    assert "= 12/221" in out  # its house edge
    for label in ["Royal flush", "Three of a kind", "A-K, A-Q or A-J suited", "Any other pair",
                  "Sweet 16 (A♥ 5♥)", "Mixed colour 16"]:
        assert label in out
    assert "133,784,560" in out
    assert "6,461,620" in out  # three of a kind, textbook count
    # the Odds tables in force are always shown (rules.md §0 item 1)
    assert "Odds, seat wins" in out
    assert "Odds, seat loses (bad beat)" in out
    win = out.split("Odds, seat wins")[1].split("Odds, seat loses")[0]
    assert "3 to 2" in win
    assert "500 to 1" in win
    lose = out.split("Odds, seat loses")[1]
    for pays in ["500 to 1", "25 to 1", "6 to 1", "5 to 1", "4 to 1"]:
        assert pays in lose


def test_json_is_exact_and_keyed_by_bet(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {"trips_plus", "pocket_bonus", "sweet16"} <= set(data)
    for bet in ("trips_plus", "pocket_bonus", "sweet16"):
        sheet = data[bet]
        rtp, edge = Fraction(sheet["return"]), Fraction(sheet["house_edge"])
        assert sheet["return"] == f"{rtp.numerator}/{rtp.denominator}"  # lowest terms
        assert rtp + edge == 1
        total = sum(Fraction(ln["probability"]) * (1 + Fraction(ln["pays"].replace(" to ", "/")))
                    for ln in sheet["lines"])
        assert total == rtp
        for ln in sheet["lines"]:
            assert set(ln) >= {"name", "pays", "combinations", "probability"}
            assert isinstance(ln["combinations"], int)
            assert Fraction(ln["probability"]) == Fraction(ln["combinations"], sheet["outcomes"])
    assert Fraction(data["trips_plus"]["return"]) == Fraction(129_321_060, 133_784_560)
    assert Fraction(data["pocket_bonus"]["return"]) == Fraction(1266, 1326)
    assert Fraction(data["sweet16"]["return"]) == Fraction(209, 221)
    assert data["pocket_bonus"]["lines"][0] == {
        "name": "A-A", "pays": "30 to 1", "combinations": 6, "probability": "1/221",
        "contribution": "31/221",
    }
    assert data["trips_plus"]["lines"][0]["name"] == "royal_flush"
    assert {ln["name"]: ln["pays"] for ln in data["odds_win"]["lines"]}["flush"] == "3 to 2"
    assert {ln["name"]: ln["pays"] for ln in data["odds_lose"]["lines"]} == {
        "straight_flush": "500 to 1", "four_of_a_kind": "25 to 1", "full_house": "6 to 1",
        "flush": "5 to 1", "straight": "4 to 1",
    }


@pytest.mark.soak  # a long walk: make test-soak (D387)
def test_table_c_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = CONFIG / "paytables-pocket-c.toml"
    code, out, _ = run(["--paytables", str(path), "--json"], capsys)
    assert code == 0
    pocket = json.loads(out)["pocket_bonus"]
    assert pocket["outcomes"] == 1326 * 1225
    assert pocket["lines"][0]["name"] == "A-A, dealer A-A"
    assert pocket["lines"][0]["pays"] == "1000 to 1"
    assert pocket["lines"][0]["probability"] == "1/270725"  # rules.md §7.2
    code, out, _ = run(["--paytables", str(path)], capsys)
    assert "91.4594%" in out  # rules.md §7.2 table C
    assert "AA with dealer AA" in out


def test_environment_variable_names_the_default_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PAYTABLES_ENV, str(CONFIG / "paytables-pocket-c.toml"))
    assert default_paytables_path() == CONFIG / "paytables-pocket-c.toml"
    code, out, _ = run([], capsys)
    assert code == 0
    assert "91.4594%" in out
    monkeypatch.setenv(PAYTABLES_ENV, str(CONFIG / "no-such.toml"))
    with pytest.raises(ConfigError, match="SHOWDOWN_PAYTABLES"):
        default_paytables_path()


def test_default_path_is_the_repository_config() -> None:
    assert default_paytables_path() == CONFIG / "paytables.toml"
    assert read_paytables(None).source == str(CONFIG / "paytables.toml")


BAD_FILES = [
    ("[trips_plus]\nflush = -7\n", "trips_plus.flush", "positive"),
    ("[trips_plus\nflush = 7\n", "", "TOML syntax error"),
    ((CONFIG / "paytables.toml").read_text(encoding="utf-8").replace(
        'hands = "22-KK"', 'hands = "22-KKK"'), "pocket_bonus[4].hands", "malformed range"),
    ((CONFIG / "paytables.toml").read_text(encoding="utf-8").replace(
        'hands = "22-KK"', 'hands = "22+"'), "pocket_bonus[4].hands", "never pay for AA"),
    ((CONFIG / "paytables.toml").read_text(encoding="utf-8") + "\n[bonus]\nx = 1\n",
     "bonus", "unknown section"),
]


@pytest.mark.parametrize(("text", "key", "reason"), BAD_FILES)
def test_a_bad_file_is_one_line_naming_file_key_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, reason: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(["--paytables", str(path)], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("showdown par-sheet: error: ")
    assert str(path) in err
    assert key in err
    assert reason in err
    assert "Traceback" not in err


def test_syntax_error_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[trips_plus]\nflush = 7\nstraight = = 4\n", encoding="utf-8")
    code, _, err = run(["--paytables", str(path)], capsys)
    assert code == 2
    assert "line 3" in err


@pytest.mark.parametrize("kind", ["missing", "directory", "binary"])
def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = tmp_path / "tables.toml"
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe[trips_plus]\n")
    code, out, err = run(["--paytables", str(path)], capsys)
    assert code == 2
    assert out == ""
    assert str(path) in err
    assert err.count("\n") == 1


def test_help_mentions_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["par-sheet", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--paytables" in out
    assert "--json" in out
