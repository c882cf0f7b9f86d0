"""`showdown report scores`: a small simulated campaign (120 heats) is reproducible by its
seed, its JSON agrees with the scores recomputed here, and the PNG is a real image."""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from pathlib import Path

import pytest

from cli.main import build_parser, main
from cli.report.scores import simulate_campaign
from runtime.settings_files import read_paytables, read_tournament

# One worker runs the whole module: its module-scoped fixture is built once, not once per
# worker (docs/testing.md).
pytestmark = pytest.mark.xdist_group("report-scores")

HEATS = 120


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("scores")
    assert main(["report", "scores", "--heats", str(HEATS), "--seed", "77", "--out", str(out),
                 "--entries-per-campaign", "300", "--resamples", "300"]) == 0
    return out, json.loads((out / "scores.json").read_text())


def rank(ordered: list[int], percent: float) -> int:
    """Nearest rank, written out again: the smallest score with at least percent% at or
    below it."""
    for i, score in enumerate(ordered, start=1):
        if i >= percent / 100 * len(ordered):
            return score
    raise AssertionError("no scores")


def test_the_json_agrees_with_the_scores(campaign: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    _, doc = campaign
    scores = simulate_campaign(heats=HEATS, players=3, seed=77, settings=read_tournament(None),
                               paytables=read_paytables(None)).scores
    ordered = sorted(scores)
    assert len(scores) == doc["entries"] == HEATS * 3
    assert all(s >= 0 and s % 1_250 == 0 for s in scores)  # R12.50 is the smallest pay step
    for name, percent in (("p50", 50), ("p75", 75), ("p90", 90), ("p95", 95), ("p99", 99),
                          ("p99.9", 99.9)):
        assert doc["percentiles"][name]["cents"] == rank(ordered, percent), name
    assert doc["percentiles"]["p90"]["rand"] == f"{rank(ordered, 90) / 100:.2f}"
    assert math.isclose(doc["mean"]["cents"], sum(scores) / len(scores), abs_tol=0.01)
    below = sum(1 for s in scores if s < 200_000)
    assert doc["below_start"] == {"entries": below, "share": round(below / len(scores), 6)}
    cut = doc["cut_line"]
    assert (cut["place"], cut["entries_per_campaign"], cut["resamples"]) == (12, 300, 300)
    assert cut["p5"]["cents"] <= cut["expected"]["cents"] <= cut["p95"]["cents"]
    # the 12th best of 300 drawn from 360 lies near the 96th percentile of the scores
    assert rank(ordered, 90) <= cut["expected"]["cents"] <= ordered[-1]


def test_the_same_seed_gives_the_same_campaign(campaign: tuple[Path, dict],  # type: ignore[type-arg]
                                               tmp_path: Path) -> None:
    _, doc = campaign
    assert main(["report", "scores", "--heats", str(HEATS), "--seed", "77", "--out",
                 str(tmp_path), "--entries-per-campaign", "300", "--resamples", "300",
                 "--no-plot"]) == 0
    assert json.loads((tmp_path / "scores.json").read_text()) == doc
    assert not (tmp_path / "scores.png").exists()
    other = simulate_campaign(heats=20, players=3, seed=78, settings=read_tournament(None),
                              paytables=read_paytables(None)).scores
    mine = simulate_campaign(heats=20, players=3, seed=77, settings=read_tournament(None),
                             paytables=read_paytables(None)).scores
    assert other != mine


def test_the_plot_is_a_png_of_sensible_size(campaign: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    out, _ = campaign
    data = (out / "scores.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1210, 682)
    assert 20_000 < len(data) < 2_000_000


@pytest.mark.parametrize(("argv", "message"), [
    (["--heats", "0"], "--heats 0: must be 1 to 1,000,000"),
    (["--heats", "5", "--players", "7"], "--players 7: a table has 1 to 6 seats"),
    (["--heats", "5", "--entries-per-campaign", "11"],
     "--entries-per-campaign 11: fewer entries than the 12 qualifying places"),
])
def test_bad_input_is_one_line(argv: list[str], message: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "scores", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_without_matplotlib_the_error_names_the_extra(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    assert main(["report", "scores", "--heats", "2", "--seed", "1", "--out",
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "matplotlib, the optional extra 'reports'" in err and err.count("\n") == 1


def test_processes_change_nothing_but_the_time() -> None:
    one = simulate_campaign(heats=24, players=2, seed=5, settings=read_tournament(None),
                            paytables=read_paytables(None))
    two = simulate_campaign(heats=24, players=2, seed=5, settings=read_tournament(None),
                            paytables=read_paytables(None), jobs=2)
    assert two == one and len(one.scores) == 48


def test_every_report_and_option_has_help() -> None:
    parser = build_parser()
    report = next(a for a in parser._subparsers._group_actions  # type: ignore[union-attr]
                  if isinstance(a, argparse._SubParsersAction)).choices["report"]
    reports = next(a for a in report._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(reports.choices) == ["dealers", "economics", "heats", "scores", "tables"]
    assert all(choice.help for choice in reports._choices_actions)
    for name, sub in reports.choices.items():
        for action in sub._actions:
            assert action.help, f"report {name} {action.option_strings}"
