"""The error that stops a virtual dealer or desk: apart from simulators/table_play.py so the
table's wiring can catch it without importing the simulators a real table never runs."""

from __future__ import annotations

__all__ = ["TableStuck"]


class TableStuck(RuntimeError):
    """The daemon did not reach the expected state in time (the virtual dealer stops)."""
