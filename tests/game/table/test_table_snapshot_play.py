"""A table core restored from its snapshot stands in for the original (game.table.snapshot):
whole seeded days of play at one table (simulators.core_day: qualifying, semi-final and a
Final with bonus markers; payouts checked by the readers or not; sign-in lock-outs, refused
presses, a reader lost mid-hand, cards read twice, voids, keyed wagers, overpays, commands
held until the hand ends, rulings on disputed hands, disputed scores, chips pooled and
reconciled) are cut at safe points; from each cut a fresh core loaded from the snapshot must
answer every remaining input exactly as the original did and end in the same state."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.messages.console import PayoutChecked, StaffEvent
from game.messages.table import Alert, CommandResult, HandSettled
from simulators.core_day import day, new_core
from tests.game.snapshot_support import Inputs, check_snapshots

# What seed 2's day is known to contain (checked below, so the test cannot lose it quietly).
COVERED = {"held:unseat", "held:correct_hand", "HandCorrected", "staff:locked",
           "ChipsReconciled", "payout:overridden", "payout:verified", "ScoreDisputed",
           "markers_used", "HandVoided", "alert:deck_suspect", "alert:device_lost",
           "alert:payout_overpaid", "refused", "alert:chip_pooling", "manual_hand",
           "EntryUnseated", "ScoreAcknowledged", "HandDisputed", "stage:final"}


def what_happened(inputs: Inputs, *, verify_payouts: bool) -> set[str]:
    """The kinds of things a run of inputs did, replayed on a fresh core."""
    core, seen = new_core(verify_payouts=verify_payouts), set()
    for given_input, at in inputs:
        decision = core.apply(given_input, at)
        if not decision.ok:
            seen.add("refused")
        for m in decision.messages:
            seen.add(_kind(m))
            if isinstance(m, HandSettled):
                seats = m.record["settlement"]["seats"]
                if any(s["markers_used"] for s in seats):
                    seen.add("markers_used")
                if m.record["manual"]:
                    seen.add("manual_hand")
                seen.add(f"stage:{m.record['stage']}")
    return seen


def _kind(message: Any) -> str:
    if isinstance(message, Alert):
        return f"alert:{message.kind}"
    if isinstance(message, CommandResult) and message.held_until_hand_ends:
        return f"held:{message.command}"
    if isinstance(message, StaffEvent):
        return f"staff:{message.event}"
    if isinstance(message, PayoutChecked):
        return f"payout:{message.outcome}"
    return type(message).__name__


@pytest.mark.soak  # a whole day restored at every safe point: make test-soak (D387)
def test_a_day_with_payouts_checked_restores_at_any_safe_point() -> None:
    floor = day(seed=2, heats=3)
    assert what_happened(floor.inputs, verify_payouts=True) >= COVERED
    checked = check_snapshots(new_core, floor.inputs, every=100, round_trip=7)
    assert checked >= 8


@pytest.mark.soak  # a whole day restored at every safe point: make test-soak (D387)
def test_a_day_without_payout_checks_restores_at_any_safe_point() -> None:
    floor = day(seed=4, heats=2, verify_payouts=False)
    checked = check_snapshots(lambda: new_core(verify_payouts=False), floor.inputs,
                              every=150, round_trip=11)
    assert checked >= 4


@settings(deadline=None, max_examples=3)
@given(seed=st.integers(0, 2**32), trouble=st.floats(0.0, 0.4), verify=st.booleans())
def test_any_seeded_heat_restores_at_any_safe_point(seed: int, trouble: float,
                                                     verify: bool) -> None:
    floor = day(seed=seed, heats=1, verify_payouts=verify, trouble=trouble)
    check_snapshots(lambda: new_core(verify_payouts=verify), floor.inputs, every=90,
                    round_trip=13)
