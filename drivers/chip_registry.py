"""Chip problems as the drivers report them: a registry problem (`game.chips.registry`) as a device
alert for the pit."""

from __future__ import annotations

from drivers.readings import DeviceAlert
from game.chips.registry import ChipProblem

__all__ = ["problem_alert"]


def problem_alert(problem: ChipProblem, *, device: str, at_mono: float = 0.0) -> DeviceAlert:
    """A chip problem as a device alert for the pit (kind and detail carried over)."""
    return DeviceAlert(device=device, kind=problem.kind, detail=problem.detail, at_mono=at_mono)
