"""`showdown demo` (what `make demo` runs): a simulated daemon watched over MQTT."""

from __future__ import annotations

import re

import pytest

from controller.cli import main


def test_demo_plays_a_heat_and_every_score_arrives(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "11", "--players", "2"]) == 0
    out = capsys.readouterr().out
    assert "table daemon t01 ready" in out
    summary = re.search(r"(\d+) messages received, signatures verified, seq 1\.\.(\d+) with "
                        r"(\d+) gaps; (\d+) scores", out)
    assert summary is not None, out[-2000:]
    assert summary.group(3) == "0"
    assert summary.group(4) == "2"
    assert out.count("hand.settled") == 0  # logs stay quiet at warning level
    assert len(re.findall(r"\] t01-\d{6}: board", out)) >= 10
    assert len(re.findall(r"SCORE T01-1-S\d: R", out)) == 2
