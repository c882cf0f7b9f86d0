"""Who dealt a hand and which heat a moment belongs to, from what each table published: its
staff sign-ins and sign-outs (``staff.session``) and its heats opened and closed.

The dealer of a hand is the person signed in at the table's console with the dealer role when
the hand opened (no more bets); with several, the one who signed in last (the relief dealer
signs in before the other signs out). With no dealer signed in, a supervisor signed in is
named (a supervisor or a floor manager may deal); with nobody, the hand has no recorded
dealer and the report says so.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from leaderboard.reports.facts import HeatMark, StaffMark

__all__ = ["NO_DEALER", "NO_HEAT", "Dealer", "DealerTimeline", "HeatTimeline"]

NO_DEALER: Final = "(nobody signed in)"
NO_HEAT: Final = "(no heat open)"


@dataclass(frozen=True, slots=True)
class Dealer:
    """Whom a hand is attributed to, and in which role they were signed in."""

    staff_id: str
    role: str


class DealerTimeline:
    """Per table, who was signed in after each sign-in or sign-out, searchable by time."""

    def __init__(self, marks: Iterable[StaffMark]) -> None:
        by_table: dict[str, list[StaffMark]] = defaultdict(list)
        for mark in marks:
            by_table[mark.table].append(mark)
        self._keys: dict[str, list[tuple[datetime, int]]] = {}
        self._states: dict[str, list[Dealer | None]] = {}
        for table, mine in by_table.items():
            mine.sort(key=lambda m: (m.at, m.seq))
            signed: dict[str, tuple[int, str]] = {}  # staff id -> (order signed in, role)
            keys, states = [], []
            for n, mark in enumerate(mine):
                if mark.signed_in:
                    signed[mark.staff_id] = (n, mark.role or "")
                else:
                    signed.pop(mark.staff_id, None)
                keys.append((mark.at, mark.seq))
                states.append(_pick(signed))
            self._keys[table], self._states[table] = keys, states

    def at(self, table: str, moment: datetime) -> Dealer | None:
        """Who dealt at ``table`` at ``moment`` (None: nobody was signed in)."""
        keys = self._keys.get(table)
        if not keys:
            return None
        i = bisect_right(keys, (moment, 1 << 62))
        return None if i == 0 else self._states[table][i - 1]


def _pick(signed: dict[str, tuple[int, str]]) -> Dealer | None:
    for role in ("dealer", "supervisor"):
        found = [(n, staff) for staff, (n, r) in signed.items() if r == role]
        if found:
            return Dealer(staff_id=max(found)[1], role=role)
    if signed:  # a role this report does not know: name the last one in
        _, staff = max((n, s) for s, (n, _) in signed.items())
        return Dealer(staff_id=staff, role=signed[staff][1] or "unknown")
    return None


class HeatTimeline:
    """Per table, the heat open after each heat opened or closed, searchable by time."""

    def __init__(self, marks: Iterable[HeatMark]) -> None:
        by_table: dict[str, list[HeatMark]] = defaultdict(list)
        for mark in marks:
            by_table[mark.table].append(mark)
        self._keys: dict[str, list[tuple[datetime, int]]] = {}
        self._states: dict[str, list[str | None]] = {}
        self.stages: dict[str, str] = {}
        for table, mine in by_table.items():
            mine.sort(key=lambda m: (m.at, m.seq))
            keys: list[tuple[datetime, int]] = []
            states: list[str | None] = []
            for mark in mine:
                if mark.opened and mark.stage:
                    self.stages[mark.heat_id] = mark.stage
                keys.append((mark.at, mark.seq))
                states.append(mark.heat_id if mark.opened else None)
            self._keys[table], self._states[table] = keys, states

    def at(self, table: str, moment: datetime) -> str | None:
        """The heat open at ``table`` at ``moment`` (None: none was open)."""
        keys = self._keys.get(table)
        if not keys:
            return None
        i = bisect_right(keys, (moment, 1 << 62))
        return None if i == 0 else self._states[table][i - 1]
