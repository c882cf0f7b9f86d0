"""bench/evaluator.py: its order cross-check catches disagreements, and a quick run passes."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "evaluator.py"
PEERS = ("treys", "phevaluator", "eval7")
MISSING = [name for name in PEERS if importlib.util.find_spec(name) is None]
needs_peers = pytest.mark.skipif(
    bool(MISSING),
    reason=f"bench-only libraries not installed ({', '.join(MISSING)}); "
    "`make bench` or pip install -e '.[bench]' installs them",
)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_evaluator", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    with warnings.catch_warnings():  # eval7 uses deprecated pyparsing names
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    return module


def test_order_check_accepts_any_strictly_increasing_relabelling(bench: ModuleType) -> None:
    ours = np.array([5, 1, 9, 5, 3], dtype=np.int64)
    theirs = -(7000 - ours * 3)  # lower-is-better ranks, negated: still increasing in ours
    result = bench.order_check("peer", ours, theirs)
    assert (result.ties, result.order, result.mismatches) == (0, 0, 0)
    assert result.distinct == 4


def test_order_check_counts_a_split_the_peer_does_not_see(bench: ModuleType) -> None:
    ours = np.array([5, 1, 9, 5, 3], dtype=np.int64)
    theirs = np.array([50, 10, 90, 51, 30], dtype=np.int64)  # rows 0 and 3: we tie, peer not
    result = bench.order_check("peer", ours, theirs)
    assert (result.ties, result.order) == (1, 0)
    assert set(result.examples[0]) == {0, 3}


def test_order_check_counts_an_inversion_and_a_merged_pair(bench: ModuleType) -> None:
    ours = np.array([1, 2, 3, 4], dtype=np.int64)
    theirs = np.array([10, 30, 20, 20], dtype=np.int64)  # 2 beats 3 for the peer; 3 ~ 4 tied
    result = bench.order_check("peer", ours, theirs)
    assert (result.ties, result.order) == (0, 2)
    assert result.mismatches == 2


@pytest.mark.soak  # a whole run of the bench script
@needs_peers
def test_quick_run_cross_checks_every_peer_with_no_mismatch() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    for name in ("evaluate_batch", *PEERS):
        assert re.search(rf"^cross-check {name} +: [\d,]+ hands, .* 0 mismatches ", out, re.M), out
    for row, kind in (
        ("game.poker.evaluate.evaluate (HandValue)", "per call"),
        ("game.poker.evaluate.hand_value (int)", "per call"),
        ("treys Evaluator.evaluate", "per call"),
        ("phevaluator.evaluate_cards", "per call"),
        ("eval7.evaluate", "per call"),
        ("game.poker.evaluate_batch.evaluate_batch check=True", "batch"),
        ("game.poker.evaluate_batch.evaluate_batch check=False", "batch"),
    ):
        assert re.search(rf"^{re.escape(row)} .*\b{kind} +[\d,]+ ", out, re.M), row
    assert "result: OK (0 correctness mismatches)" in out
