"""`--json` on the commands that print data: one JSON document on stdout and nothing else
there (the narrative, if any, on stderr), holding what the text shows (amounts in cents).
Commands whose --json is tested beside their other tests: recall, journal verify, dispute
verify, simulate table/floor, leaderboard standings/audit/backup, table status, every desk
command (tests/cli/test_desk*.py), demo (tests/floor/test_demo.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_USAGE
from cli.main import main
from game.money import format_rand


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    """Run a command; its stdout parsed as one JSON document."""
    assert main(list(argv)) == code
    got = capsys.readouterr()
    return json.loads(got.out)  # raises if there is anything else on stdout


def test_heat(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "heat", "--seed", "4", "--players", "2", "--json")
    assert (doc["stage"], doc["seed"], doc["hands_each"]) == ("qualifying", 4, 10)
    assert {s["entry_id"] for s in doc["scores"]} == {"E-1001", "E-1002"}
    assert main(["heat", "--seed", "4", "--players", "2"]) == 0  # the text says the same
    text = capsys.readouterr().out
    for score in doc["scores"]:
        assert f"{score['entry_id']} (seat {score['seat']}): {format_rand(score['score_cents'])}" \
            in text
        start = doc["starting_chips_cents"]
        nets = sum(seat["net_cents"] for hand in doc["hands"] for seat in hand["seats"]
                   if seat["entry_id"] == score["entry_id"])
        assert start + nets == score["score_cents"]


def test_check_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = run_json(capsys, "check-config", "--json")
    assert doc["ok"] is True and doc["problems"] == []
    assert doc["tournament"]["buy_in_cents"] > 0
    assert set(doc["tournament"]["stages"]) == {"qualifying", "semi_final", "final"}
    bad = tmp_path / "t.toml"
    bad.write_text("[venue]\nname = 3\n")
    doc = run_json(capsys, "check-config", "--tournament", str(bad), "--json", code=EXIT_USAGE)
    assert doc["ok"] is False and doc["tournament"] is None
    assert doc["problems"] and all(str(bad) in p for p in doc["problems"])


def test_keys_generate_and_show(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    key = tmp_path / "t07.key"
    made = run_json(capsys, "keys", "generate", "--out", str(key), "--json")
    assert made["name"] == "t07" and made["private_key_file"] == str(key)
    assert Path(made["public_key_file"]).read_text() == made["enrolment_line"] + "\n"
    shown = run_json(capsys, "keys", "show", "--key", str(key), "--json")
    assert (shown["name"], shown["public_key"]) == ("t07", made["public_key"])


def test_evaluate_and_par_sheet(capsys: pytest.CaptureFixture[str]) -> None:
    hand = run_json(capsys, "evaluate", "Kh", "Ah", "Qh", "Jh", "Th", "--json")
    assert (hand["category"], hand["best_five"]) == ("royal_flush", ["Ah", "Kh", "Qh", "Jh", "Th"])
    sheet = run_json(capsys, "par-sheet", "--json")  # the figures: tests/cli/test_par_sheet.py
    lines = sheet["trips_plus"]["lines"]
    assert sum(line["combinations"] for line in lines) <= sheet["trips_plus"]["outcomes"]


def test_report_scores(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = run_json(capsys, "report", "scores", "--heats", "4", "--players", "2", "--seed", "1",
                   "--entries-per-campaign", "20", "--resamples", "10", "--no-plot",
                   "--out", str(tmp_path), "--json")
    assert doc == json.loads((tmp_path / "scores.json").read_text())


@pytest.mark.parametrize("argv", [
    ["report", "tables"], ["chips", "inventory", "--db", "sqlite://"],
    ["dispute", "replay", "x.json", "--public-key", "AAAA"]])
def test_json_is_the_same_as_format_json(argv: list[str]) -> None:
    from cli.main import build_parser

    parser = build_parser(argv[0])
    assert parser.parse_args([*argv, "--json"]).format == "json"
    assert parser.parse_args([*argv, "--format", "json"]).format == "json"


def test_broker_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = run_json(capsys, "broker", "config", "--venue", "v", "--tables", "t01,t02", "--out",
                   str(tmp_path), "--insecure-plaintext", "--show-passwords", "--json")
    assert (doc["venue"], doc["tables"], doc["tls"]) == ("v", ["t01", "t02"], False)
    assert all(Path(f).is_file() for f in doc["files"] + doc["credentials"])
    assert set(doc["passwords"]) == {"leaderboard", "desk", "t01", "t02"}
    for client, password in doc["passwords"].items():
        text = (tmp_path / "credentials" / f"{client}.toml").read_text()
        assert f'password = "{password}"' in text
