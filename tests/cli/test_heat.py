"""`showdown heat`: a reproducible, self-consistent heat."""

from __future__ import annotations

import re

import pytest

from cli.main import main
from game.money import parse_rand


def run_demo(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["heat", *args]) == 0
    return capsys.readouterr().out


def test_demo_plays_a_whole_heat_and_scores_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_demo(capsys, "--seed", "7", "--seats", "4")
    assert "seed 7" in out
    nets: dict[str, int] = {}
    hands: dict[str, int] = {}
    per_seat = r"seat \d (E-\d+) \[.*?\n(?:    .*\n)*?    net (-?R[\d,.]+);"
    for entry, net in re.findall(per_seat, out):
        nets[entry] = nets.get(entry, 0) + parse_rand(net)
        hands[entry] = hands.get(entry, 0) + 1
    scores = dict(re.findall(r"  (E-\d+) \(seat \d\): (-?R[\d,.]+)", out))
    assert set(scores) == {"E-1001", "E-1002", "E-1003", "E-1004"}
    for entry, score in scores.items():
        assert parse_rand(score) == 200_000 + nets[entry]
        assert hands[entry] == 10 or "ended early" in out


def test_demo_is_reproducible_from_its_seed(capsys: pytest.CaptureFixture[str]) -> None:
    first = run_demo(capsys, "--seed", "3")
    assert run_demo(capsys, "--seed", "3") == first
    assert run_demo(capsys, "--seed", "4") != first


def test_demo_final_uses_markers(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_demo(capsys, "--stage", "final", "--seats", "6", "--seed", "5")
    assert "3 bonus markers" in out
    assert "+marker" in out
    assert out.count("after its last hand") + out.count("ended early") == 6
