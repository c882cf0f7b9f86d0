"""The chip registry for the drivers and simulators: the pure registry (`game.chips`) and its
problems as device alerts."""

from __future__ import annotations

from drivers.readings import DeviceAlert
from game.chips import (
    CSV_COLUMNS,
    Chip,
    ChipProblem,
    ChipRegistry,
    ProblemKind,
    Resolution,
    format_uid,
    parse_registry_csv,
    parse_registry_toml,
    parse_uid,
)

__all__ = [
    "CSV_COLUMNS",
    "Chip",
    "ChipProblem",
    "ChipRegistry",
    "ProblemKind",
    "Resolution",
    "format_uid",
    "parse_registry_csv",
    "parse_registry_toml",
    "parse_uid",
    "problem_alert",
]


def problem_alert(problem: ChipProblem, *, device: str, at_mono: float = 0.0) -> DeviceAlert:
    """A chip problem as a device alert for the pit (kind and detail carried over)."""
    return DeviceAlert(device=device, kind=problem.kind, detail=problem.detail, at_mono=at_mono)
