"""`showdown settle --lines`: many hands as JSON lines, one answer line per input line, in order."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_ERROR
from cli.main import main
from tests.cli.test_settle import ISSUE_EXAMPLE

FOLD: dict[str, Any] = {
    "dealer": ["2c", "7d"], "board": ["Ks", "9h", "5c", "3d", "Jh"],
    "seats": [{"seat": 3, "hole": ["4s", "8c"], "wagers": {"ante": 2500, "odds": 2500}},
              {"seat": 5, "hole": ["Ah", "Kd"], "wagers": {"ante": 5000, "odds": 5000,
                                                            "play": 15000}}],
}


@pytest.fixture(autouse=True)
def _default_paytables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOWDOWN_PAYTABLES", raising=False)


def one_hand(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             text: str) -> tuple[int, str, str]:
    """`showdown settle` on one hand: (exit code, stdout, stderr)."""
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["settle"])
    out, err = capsys.readouterr()
    return code, out, err


def lines_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], lines: list[str]) -> tuple[int, list[Any], str]:
    """`showdown settle --lines --input FILE`: (exit code, answers, stderr)."""
    path = tmp_path / "hands.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    code = main(["settle", "--lines", "--input", str(path)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_each_line_gets_the_settlement_of_the_one_hand_mode_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    hands = [ISSUE_EXAMPLE, FOLD, ISSUE_EXAMPLE]
    singles = []
    for hand in hands:
        code, out, err = one_hand(monkeypatch, capsys, json.dumps(hand))
        assert (code, err) == (0, "")
        singles.append(json.loads(out))
    code, answers, err = lines_of(tmp_path, monkeypatch, capsys, [json.dumps(h) for h in hands])
    assert (code, err) == (0, "")
    assert [a["line"] for a in answers] == [1, 2, 3]
    assert [a["settlement"] for a in answers] == singles
    fold = answers[1]["settlement"]["seats"]
    assert [(s["seat"], s["outcome"]) for s in fold] == [(3, "fold"), (5, "win")]


def test_a_bad_line_gets_its_error_and_the_others_are_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    no_ante = copy.deepcopy(FOLD)
    del no_ante["seats"][0]["wagers"]["ante"]
    duplicate = copy.deepcopy(FOLD)
    duplicate["board"][0] = "2c"
    bad = [json.dumps(no_ante), "[1, 2", "   ", json.dumps(duplicate)]
    expected = []
    for text in bad:
        code, out, err = one_hand(monkeypatch, capsys, text)
        assert (code, out) == (EXIT_ERROR, "")
        expected.append(err.removeprefix("showdown settle: error: ").strip())
    expected[2] = "empty line: expected one hand as a JSON object"  # one-hand mode: bad JSON
    lines = [json.dumps(FOLD), bad[0], bad[1], json.dumps(ISSUE_EXAMPLE), bad[2], bad[3]]
    code, answers, err = lines_of(tmp_path, monkeypatch, capsys, lines)
    assert code == EXIT_ERROR
    assert [a["line"] for a in answers] == [1, 2, 3, 4, 5, 6]
    assert [a.get("error") for a in answers] == [None, *expected[:2], None, *expected[2:]]
    assert expected[0] == "seat 3: ante: the Ante is required"
    assert answers[3]["settlement"]["seats"][0]["net"] == 370_000
    assert err == ("showdown settle: error: 4 of 6 lines refused (lines 2, 3, 5, 6);"
                   " each has its error line on stdout\n")


def test_stdin_bytes_that_are_not_utf8_refuse_only_their_line() -> None:
    good = json.dumps(FOLD).encode()
    stdin = good + b"\r\n" + b'{"dealer": ["\xff"]}\n' + good  # CRLF, bad byte, no final EOL
    done = subprocess.run([sys.executable, "-m", "cli", "settle", "--lines"],
                          input=stdin, capture_output=True, timeout=120, check=False)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == EXIT_ERROR
    assert [sorted(a) for a in answers] == [["line", "settlement"], ["error", "line"],
                                             ["line", "settlement"]]
    assert answers[1]["error"] == "not UTF-8 text at byte 14"
    assert done.stderr.decode() == ("showdown settle: error: 1 of 3 lines refused (line 2);"
                                    " each has its error line on stdout\n")


def test_no_input_lines_is_no_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, answers, err = lines_of(tmp_path, monkeypatch, capsys, [])
    assert (code, answers, err) == (0, [], "")


@pytest.mark.parametrize("lines", [True, False])
def test_an_input_file_that_cannot_be_read_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: bool) -> None:
    missing = tmp_path / "nope.jsonl"
    code = main(["settle", *(["--lines"] if lines else []), "--input", str(missing)])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_ERROR, "")
    assert err == f"showdown settle: error: cannot read {missing}: No such file or directory\n"


def test_one_hand_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(ISSUE_EXAMPLE), encoding="utf-8")
    assert main(["settle", "--input", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["seats"][0]["net"] == 370_000
