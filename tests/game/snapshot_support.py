"""Checks that a table core's snapshot stands in for its past (game.table.snapshot): at every
safe point of a recorded run of inputs, a fresh core loaded from the snapshot gives the same
snapshot back, and fed the rest of the inputs it answers exactly as the original did and
ends in the same state."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from game.table.core import Decision, TableCore
from game.table.inputs import TableInput
from game.table.snapshot import is_safe_point, restore_snapshot, take_snapshot

Inputs = Sequence[tuple[TableInput, datetime]]


def answer(decision: Decision) -> tuple[Any, ...]:
    """A decision as comparable data: its verdict and every message encoded."""
    return (decision.ok, decision.error, dict(decision.detail),
            [(type(m).__name__, m.encode()) for m in decision.messages])


def as_json(state: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as the journal would keep it: canonical JSON text, read back."""
    loaded: dict[str, Any] = json.loads(json.dumps(state, sort_keys=True))
    return loaded


def check_snapshots(make: Callable[[], TableCore], inputs: Inputs, *,
                    every: int = 1, round_trip: int = 1) -> int:
    """Run ``inputs`` on a fresh core; at every ``every``-th safe point restore a fresh core
    from the snapshot and check it snapshots the same, answers the rest of the inputs the
    same and ends the same (at every ``round_trip``-th only that it snapshots the same).
    Returns how many safe points were followed to the end."""
    original = make()
    answers: list[tuple[Any, ...]] = []
    points: list[tuple[int, dict[str, Any]]] = []
    safe = 0
    for index, (given, at) in enumerate(inputs):
        if is_safe_point(original):
            if safe % every == 0:
                points.append((index, as_json(take_snapshot(original))))
            elif safe % round_trip == 0:
                state = as_json(take_snapshot(original))
                restored = make()
                restore_snapshot(restored, state)
                assert take_snapshot(restored) == state, f"snapshot before input {index}"
            safe += 1
        answers.append(answer(original.apply(given, at)))
    final = take_snapshot(original) if is_safe_point(original) else None
    for index, state in points:
        restored = make()
        restore_snapshot(restored, state)
        assert take_snapshot(restored) == state, f"snapshot before input {index} differs"
        for position in range(index, len(inputs)):
            given, at = inputs[position]
            got = answer(restored.apply(given, at))
            assert got == answers[position], (
                f"restored at input {index}: input {position} {given!r} answered\n{got}\n"
                f"not\n{answers[position]}")
        if final is not None:
            assert take_snapshot(restored) == final
        assert restored.status() == original.status()
    return len(points)
