"""`showdown settle`: the JSON contract of docs/settle.md, and every refusal of malformed input.

Expected amounts are worked out by hand from rules.md with the shipped paytables
(config/paytables.toml = rules.md §0; config/paytables-pocket-c.toml = table C).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_ERROR
from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
U = 2_500

ISSUE_EXAMPLE: dict[str, Any] = {
    "dealer": ["Kc", "4c"], "board": ["3h", "8c", "4h", "8h", "4s"],
    "seats": [{"seat": 1, "hole": ["Th", "2h"],
               "wagers": {"ante": 2500, "odds": 2500, "play": 2500,
                          "trips_plus": 2500, "pocket_bonus": 2500, "sweet16": 2500},
               "markers": ["trips_plus"]}],
}


@pytest.fixture(autouse=True)
def _default_paytables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOWDOWN_PAYTABLES", raising=False)


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stdin: str | dict[str, Any], *args: str) -> tuple[int, Any, str]:
    """Run `showdown settle ARGS` with stdin; returns (exit code, parsed stdout or None, stderr)."""
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["settle", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_issue_example(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(monkeypatch, capsys, ISSUE_EXAMPLE)
    assert (code, err) == (0, "")
    assert out["dealer"] == {"hand": "Full house, fours over eights", "opens": True}
    [seat] = out["seats"]
    assert (seat["seat"], seat["hand"], seat["outcome"]) == (1, "Flush, ten high", "lose")
    w = seat["wagers"]
    assert list(w) == ["ante", "odds", "play", "trips_plus", "pocket_bonus", "sweet16"]
    got = {name: (v["result"], v["net"], v.get("line"), v.get("marker", False))
           for name, v in w.items()}
    assert got == {
        "ante": ("lose", -U, None, False),
        "odds": ("win", 5 * U, "flush", False),  # bad beat: flush 5 to 1
        "play": ("lose", -U, None, False),
        "trips_plus": ("win", 7 * (U + 50_000), "flush", True),  # 7 to 1 on R25 + R500
        "pocket_bonus": ("lose", -U, None, False),  # T2 suited: no line
        "sweet16": ("lose", -U, None, False),  # T + 2 = 12
    }
    assert seat["net"] == -U + 5 * U - U + 7 * 52_500 - U - U == 370_000
    assert all(v["stake"] == U for v in w.values())
    assert w["odds"]["reason"].startswith("bad beat: dealer opens with full house, fours over"
                                          " eights; seat's flush, ten high loses to it")
    assert out["paytables"]["source"].endswith("paytables.toml")
    assert out["paytables"]["odds_lose"]["flush"] == "5 to 1"


def test_fold_and_several_seats(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    # rules.md §10 example 2 (seat 4) and example 7 on example 1's cards (seat 2 folds).
    hand = {
        "dealer": ["Kc", "4c"], "board": ["3h", "8c", "4h", "8h", "4s"],
        "seats": [
            {"seat": 4, "hole": ["8d", "8s"],
             "wagers": {"ante": U, "odds": U, "play": 3 * U, "trips_plus": U,
                        "pocket_bonus": U, "sweet16": U}},
            {"seat": 2, "hole": ["Th", "2h"],
             "wagers": {"ante": U, "odds": U, "play": 0, "trips_plus": U, "sweet16": 0}},
        ],
    }
    code, out, _ = run(monkeypatch, capsys, hand)
    assert code == 0
    assert [s["seat"] for s in out["seats"]] == [2, 4]
    folded, winner = out["seats"]
    assert folded["outcome"] == "fold"
    assert {k: (v["result"], v["net"]) for k, v in folded["wagers"].items()} == {
        "ante": ("lose", -U), "odds": ("lose", -U), "play": ("none", 0),
        "trips_plus": ("win", 7 * U), "sweet16": ("none", 0),
    }
    assert folded["net"] == 5 * U
    assert {k: v["net"] for k, v in winner["wagers"].items()} == {
        "ante": U, "odds": 10 * U, "play": 3 * U, "trips_plus": 30 * U, "pocket_bonus": 5 * U,
        "sweet16": 6 * U,
    }
    assert winner["net"] == 55 * U


def test_paytables_option_table_c(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    hand = {"dealer": ["Ac", "Ad"], "board": ["2c", "7d", "9h", "Js", "3s"],
            "seats": [{"seat": 1, "hole": ["Ah", "As"],
                       "wagers": {"ante": U, "odds": U, "play": U, "pocket_bonus": U}}]}
    table_c = str(ROOT / "config" / "paytables-pocket-c.toml")
    _, out_a, _ = run(monkeypatch, capsys, hand)
    code, out_c, _ = run(monkeypatch, capsys, hand, "--paytables", table_c)
    assert code == 0
    assert out_a["seats"][0]["wagers"]["pocket_bonus"]["net"] == 30 * U
    assert out_c["seats"][0]["wagers"]["pocket_bonus"]["net"] == 1000 * U
    assert out_c["paytables"]["source"] == table_c
    assert out_c["paytables"]["pocket_bonus"][0]["dealer"] == "AA"


def test_marker_value_option(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("100", "R100", "100.00"):
        code, out, err = run(monkeypatch, capsys, ISSUE_EXAMPLE, "--marker-value", value)
        assert (code, err) == (0, "")
        assert out["seats"][0]["wagers"]["trips_plus"]["net"] == 7 * (U + 10_000)


def test_the_old_marker_value_in_cents_works_one_release_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(monkeypatch, capsys, ISSUE_EXAMPLE, "--marker-value-cents", "10000")
    assert code == 0
    assert out["seats"][0]["wagers"]["trips_plus"]["net"] == 7 * (U + 10_000)
    assert err == ("showdown settle: warning: --marker-value-cents is now --marker-value in rand"
                   " (--marker-value R100.00); the old name is accepted until the next"
                   " release\n")
    code, _, err = run(monkeypatch, capsys, ISSUE_EXAMPLE, "--marker-value-cents", "10000",
                       "--marker-value", "100")
    assert code == EXIT_ERROR and "give one" in err


def test_marker_alone(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hand = copy.deepcopy(ISSUE_EXAMPLE)
    hand["seats"][0]["wagers"] = {"ante": U, "odds": U, "play": U}
    hand["seats"][0]["markers"] = ["trips_plus", "sweet16"]
    code, out, _ = run(monkeypatch, capsys, hand)
    assert code == 0
    w = out["seats"][0]["wagers"]
    assert (w["trips_plus"]["net"], w["trips_plus"]["stake"]) == (7 * 50_000, 0)
    assert (w["sweet16"]["result"], w["sweet16"]["net"], w["sweet16"]["marker"]) == (
        "lose", 0, True)


def test_bad_paytables_file(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                            tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("[trips_plus]\nflush = -1\n")
    code, out, err = run(monkeypatch, capsys, ISSUE_EXAMPLE, "--paytables", str(bad))
    assert (code, out) == (EXIT_ERROR, None)
    assert str(bad) in err and len(err.strip().splitlines()) == 1


def _with(path: str, value: object, *, delete: bool = False) -> dict[str, Any]:
    """The issue example with one field changed (path like "seats.0.wagers.play")."""
    data = copy.deepcopy(ISSUE_EXAMPLE)
    *parents, last = path.split(".")
    node: Any = data
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    key: Any = int(last) if isinstance(node, list) else last
    if delete:
        del node[key]
    else:
        node[key] = value
    return data


def _second_seat(hole: list[str], **wagers: int) -> dict[str, Any]:
    data = copy.deepcopy(ISSUE_EXAMPLE)
    data["seats"].append({"seat": 2, "hole": hole,
                          "wagers": wagers or {"ante": U, "odds": U, "play": U}})
    return data


MALFORMED: list[tuple[str, str | dict[str, Any], str]] = [
    ("invalid JSON", '{"dealer": ["Kc", "4c"],\n "board": [}',
     "invalid JSON at line 2, column 12: Expecting value"),
    ("empty input", "", "invalid JSON at line 1, column 1"),
    ("trailing comma", json.dumps(ISSUE_EXAMPLE)[:-1] + ",}", "invalid JSON at line 1, column"),
    ("not an object", "[1, 2]", "input: expected a JSON object"),
    ("missing board", _with("board", None, delete=True), "input: missing field 'board'"),
    ("unknown top field", _with("bored", 1), "input: unknown field 'bored'"),
    ("duplicate JSON key", '{"dealer": ["Kc", "4c"], "dealer": ["Kc", "4c"]}',
     "the key 'dealer' appears twice"),
    ("NaN amount", json.dumps(ISSUE_EXAMPLE).replace('"play": 2500', '"play": NaN'),
     "NaN is not a number"),
    ("bad dealer card", _with("dealer.1", "4x"), "dealer: invalid card '4x'"),
    ("bad board card", _with("board.0", "Zz"), "board: invalid card 'Zz'"),
    ("bad hole card", _with("seats.0.hole.0", "1h"), "seat 1: hole: invalid card '1h'"),
    ("card not text", _with("seats.0.hole.0", 10), "seat 1: hole: invalid card 10"),
    ("dealer card on the board", _with("board.0", "Kc"),
     "board: duplicate card Kc (already in dealer)"),
    ("hole card on the board", _with("seats.0.hole.1", "8h"),
     "seat 1: hole: duplicate card 8h (already in board)"),
    ("card in two seats", _second_seat(["Th", "9d"]),
     "seat 2: hole: duplicate card Th (already in seat 1: hole)"),
    ("same card twice in one hole", _with("seats.0.hole.1", "Th"),
     "seat 1: hole: duplicate card Th (already in seat 1: hole)"),
    ("three dealer cards", _with("dealer", ["Kc", "4c", "5d"]), "dealer: expected 2 cards, got 3"),
    ("four board cards", _with("board", ["3h", "8c", "4h", "8h"]),
     "board: expected 5 cards, got 4"),
    ("one hole card", _with("seats.0.hole", ["Th"]), "seat 1: hole: expected 2 cards, got 1"),
    ("hole as text", _with("seats.0.hole", "Th 2h"), "seat 1: hole: expected a list of 2 cards"),
    ("no seats", _with("seats", []), "seats: expected a non-empty list of seats"),
    ("seat number 0", _with("seats.0.seat", 0), "seats[0]: seat: expected a seat number 1 to 6"),
    ("seat number 7", _with("seats.0.seat", 7), "seats[0]: seat: expected a seat number 1 to 6"),
    ("seat number text", _with("seats.0.seat", "1"),
     "seats[0]: seat: expected a seat number 1 to 6"),
    ("seat twice", {**_second_seat(["9d", "9s"]), "seats": [
        *ISSUE_EXAMPLE["seats"], {**ISSUE_EXAMPLE["seats"][0], "hole": ["9d", "9s"]}]},
     "seat 1: appears twice"),
    ("unknown seat field", _with("seats.0.chips", 5), "seat 1: unknown field 'chips'"),
    ("missing wagers", _with("seats.0.wagers", None, delete=True),
     "seat 1: missing field 'wagers'"),
    ("missing hole", _with("seats.0.hole", None, delete=True), "seat 1: missing field 'hole'"),
    ("play 4x", _with("seats.0.wagers.play", 4 * U),
     "seat 1: play: must be exactly 3x (7500), 2x (5000) or 1x (2500) the Ante"),
    ("play 1.5x", _with("seats.0.wagers.play", 3750), "seat 1: play: must be exactly 3x"),
    ("side bet without Ante and Odds",
     _with("seats.0.wagers", {"trips_plus": U}),
     "seat 1: trips_plus: a side bet needs the Ante and the Odds in play"),
    ("marker without Ante and Odds",
     _with("seats.0.wagers", {}),
     "seat 1: trips_plus: a side bet needs the Ante and the Odds in play"),
    ("no Ante at all", {**ISSUE_EXAMPLE, "seats": [
        {"seat": 1, "hole": ["Th", "2h"], "wagers": {}}]}, "seat 1: ante: the Ante is required"),
    ("Odds missing", _with("seats.0.wagers.odds", None, delete=True),
     "seat 1: odds: the Odds must equal the Ante (2500 cents), got 0"),
    ("Odds differs from Ante", _with("seats.0.wagers.odds", 5000),
     "seat 1: odds: the Odds must equal the Ante (2500 cents), got 5000"),
    ("negative amount", _with("seats.0.wagers.sweet16", -2500),
     "seat 1: sweet16: must not be negative, got -2500"),
    ("fractional amount", _with("seats.0.wagers.pocket_bonus", 2500.5),
     "seat 1: pocket_bonus: must be a whole number of cents, got 2500.5"),
    ("float amount", _with("seats.0.wagers.ante", 2500.0),
     "seat 1: ante: must be a whole number of cents, got 2500.0"),
    ("amount as text", _with("seats.0.wagers.ante", "2500"),
     "seat 1: ante: must be a whole number of cents, got '2500'"),
    ("amount true", _with("seats.0.wagers.ante", True),
     "seat 1: ante: must be a whole number of cents, got True"),
    ("unknown wager", _with("seats.0.wagers.tip", 100),
     "seat 1: wagers: unknown wager 'tip'"),
    ("wagers not an object", _with("seats.0.wagers", [2500]),
     "seat 1: wagers: expected an object"),
    ("unknown marker", _with("seats.0.markers", ["jackpot"]),
     "seat 1: markers: unknown marker 'jackpot'"),
    ("marker on a main bet", _with("seats.0.markers", ["ante"]),
     "seat 1: markers: unknown marker 'ante'"),
    ("marker twice", _with("seats.0.markers", ["sweet16", "sweet16"]),
     "seat 1: markers: a side bet carries at most one marker"),
    ("markers not a list", _with("seats.0.markers", "trips_plus"),
     "seat 1: markers: expected a list"),
]


@pytest.mark.parametrize(("stdin", "message"), [(m[1], m[2]) for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
def test_malformed_input_is_refused(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str],
                                    stdin: str | dict[str, Any], message: str) -> None:
    code, out, err = run(monkeypatch, capsys, stdin)
    assert (code, out) == (EXIT_ERROR, None)
    assert err.startswith("showdown settle: error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_bad_marker_value_option(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(monkeypatch, capsys, ISSUE_EXAMPLE, "--marker-value", "0")
    assert code == EXIT_ERROR
    assert "--marker-value must be more than R0.00, got R0.00" in err
    for value, why in (("-5", "cannot be negative"), ("1.005", "a fraction of a cent"),
                       ("lots", "write it as R1,234.50")):
        with pytest.raises(SystemExit) as done:
            run(monkeypatch, capsys, ISSUE_EXAMPLE, "--marker-value", value)
        err = capsys.readouterr().err
        assert done.value.code == EXIT_ERROR and "argument --marker-value:" in err
        assert why in err


def test_docs_example_is_what_the_tool_prints(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    doc = (ROOT / "docs" / "settle.md").read_text(encoding="utf-8")
    block = doc.split("`showdown settle < hand.json` prints:\n\n```json\n", 1)[1].split("```", 1)[0]
    documented = json.loads(block)
    _, out, _ = run(monkeypatch, capsys, ISSUE_EXAMPLE)
    assert out["paytables"]["source"].endswith("/config/paytables.toml")
    out["paytables"]["source"] = documented["paytables"]["source"]
    assert out == documented
