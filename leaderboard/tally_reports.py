"""The centre's reports of the tables' tallies, read from the stored rows: each heat's opening
and closing chip counts (``chip_counts``; the heats from the stored ``heat.opened`` and
``heat.closed`` messages, so a heat with no count shows as missing), and the deck inventory per
table and venue day (``deck_events``), its balance checked again here from the steps
themselves, not taken from the table's word.

`showdown leaderboard counts` and `showdown leaderboard decks` print them (cli.leaderboard).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection, select

from game.decks.inventory import Position, balance_problems
from game.money import format_rand
from leaderboard.models import ChipCountRecord, DeckEventRecord, Message
from wire.messages import HeatClosed, HeatOpened

__all__ = ["CountLine", "DeckDayReport", "HeatCounts", "deck_days", "heat_counts"]

_HEAT_TYPES: Final = (HeatOpened.TYPE, HeatClosed.TYPE)
_STAGES: Final = ("opening", "closing")


@dataclass(frozen=True, slots=True, kw_only=True)
class CountLine:
    """One confirmed count as stored."""

    stage: str
    total_cents: int
    expected_cents: int | None
    difference_cents: int | None
    tolerance_cents: int
    over_tolerance: bool
    dealer_id: str
    supervisor_id: str
    confirmed_at: str
    counted: dict[str, int]

    def text(self) -> str:
        """One line for the report."""
        words = (f"{format_rand(self.total_cents)} counted by {self.dealer_id}, confirmed by"
                 f" {self.supervisor_id} at {self.confirmed_at}")
        if self.expected_cents is None:
            return words + "; nothing expected to compare with"
        diff = self.difference_cents or 0
        words += (f"; expected {format_rand(self.expected_cents)}, difference"
                  f" {'+' if diff > 0 else ''}{format_rand(diff)}")
        if self.over_tolerance:
            words += f" ALERT: over the tolerance of {format_rand(self.tolerance_cents)}"
        return words


@dataclass(slots=True, kw_only=True)
class HeatCounts:
    """A heat at a table: its opening and closing counts, and whether it has closed."""

    table_id: str
    heat_id: str
    closed: bool = False
    counts: dict[str, CountLine] = field(default_factory=dict)

    @property
    def alerts(self) -> list[str]:
        """What is wrong: a difference over the tolerance, a count missing."""
        out = [f"{s} count differs by {format_rand(c.difference_cents or 0)}, over the"
               f" tolerance of {format_rand(c.tolerance_cents)}"
               for s, c in sorted(self.counts.items()) if c.over_tolerance]
        for stage in _STAGES:
            if stage not in self.counts and (stage == "opening" or self.closed):
                out.append(f"no confirmed {stage} count")
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON data."""
        def line(c: CountLine | None) -> dict[str, Any] | None:
            return None if c is None else {
                "total_cents": c.total_cents, "expected_cents": c.expected_cents,
                "difference_cents": c.difference_cents, "tolerance_cents": c.tolerance_cents,
                "over_tolerance": c.over_tolerance, "dealer_id": c.dealer_id,
                "supervisor_id": c.supervisor_id, "confirmed_at": c.confirmed_at,
                "counted": c.counted}
        return {"table_id": self.table_id, "heat_id": self.heat_id, "closed": self.closed,
                "opening": line(self.counts.get("opening")),
                "closing": line(self.counts.get("closing")), "alerts": self.alerts}


def heat_counts(connection: Connection, *, table: str | None = None,
                heat: str | None = None) -> list[HeatCounts]:
    """Every heat the tables reported (or only ``table``'s, ``heat``), in table and heat
    order, with its confirmed counts."""
    heats: dict[tuple[str, str], HeatCounts] = {}
    query = select(Message.table_id, Message.type, Message.body).where(
        Message.type.in_(_HEAT_TYPES)).order_by(Message.table_id, Message.seq)
    if table is not None:
        query = query.where(Message.table_id == table)
    for table_id, kind, body in connection.execute(query):
        heat_id = body.get("heat_id") if isinstance(body, dict) else None
        if not isinstance(heat_id, str) or (heat is not None and heat_id != heat):
            continue
        found = heats.setdefault((table_id, heat_id),
                                 HeatCounts(table_id=table_id, heat_id=heat_id))
        found.closed = found.closed or kind == HeatClosed.TYPE
    rows = select(ChipCountRecord).order_by(ChipCountRecord.table_id, ChipCountRecord.seq)
    if table is not None:
        rows = rows.where(ChipCountRecord.table_id == table)
    if heat is not None:
        rows = rows.where(ChipCountRecord.heat_id == heat)
    for r in _records(connection, rows):
        found = heats.setdefault((r.table_id, r.heat_id),
                                 HeatCounts(table_id=r.table_id, heat_id=r.heat_id))
        found.counts[r.stage] = CountLine(
            stage=r.stage, total_cents=r.total_cents, expected_cents=r.expected_cents,
            difference_cents=r.difference_cents, tolerance_cents=r.tolerance_cents,
            over_tolerance=r.over_tolerance, dealer_id=r.dealer_id,
            supervisor_id=r.supervisor_id, confirmed_at=r.confirmed_at.isoformat(),
            counted=dict(r.counted))
    return [heats[k] for k in sorted(heats)]


def _records(connection: Connection, query: Any) -> list[Any]:
    return list(connection.execute(query))


@dataclass(slots=True, kw_only=True)
class DeckDayReport:
    """One table's decks on one venue day: the steps, the day's figures, the position it
    started and ended with, and what breaks the balance (checked here from the steps)."""

    table_id: str
    day: str
    start: Position
    end: Position
    received: int = 0
    opened: int = 0
    used: int = 0
    destroyed: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON data."""
        return {"table_id": self.table_id, "day": self.day, "start": self.start.encode(),
                "end": self.end.encode(), "received": self.received, "opened": self.opened,
                "used": self.used, "destroyed": self.destroyed,
                "balanced": not self.problems, "problems": self.problems,
                "steps": self.steps}


def deck_days(connection: Connection, day: str, *, table: str | None = None
              ) -> list[DeckDayReport]:
    """Each table's decks on ``day`` (YYYY-MM-DD; a table with steps only before it: the
    position it carries). The balance is recomputed from every stored step up to the day's
    end, and a position the table reported that does not follow from its steps is a problem
    too."""
    query = select(DeckEventRecord).where(DeckEventRecord.day <= day).order_by(
        DeckEventRecord.table_id, DeckEventRecord.seq)
    if table is not None:
        query = query.where(DeckEventRecord.table_id == table)
    out: dict[str, DeckDayReport] = {}
    positions: dict[str, Position] = {}
    for r in _records(connection, query):
        before = positions.get(r.table_id, Position())
        after = before.after(r.kind, r.decks)
        positions[r.table_id] = after
        if r.day != day:
            continue
        report = out.get(r.table_id)
        if report is None:
            report = out[r.table_id] = DeckDayReport(table_id=r.table_id, day=day,
                                                     start=before, end=before)
        setattr(report, r.kind, getattr(report, r.kind) + r.decks)
        report.end = after
        told = Position(sealed=r.sealed, in_play=r.in_play, awaiting=r.awaiting)
        if told != after:
            report.problems.append(f"seq {r.seq}: the table reported {told.encode()}, its"
                                   f" steps give {after.encode()}")
        report.problems.extend(p for p in balance_problems(after)
                               if p not in balance_problems(before))
        report.problems.extend(p for p in r.problems if p.startswith("seal "))
        report.steps.append({"seq": r.seq, "kind": r.kind, "decks": r.decks, "by": r.by,
                             "witness": r.witness, "seals": list(r.seals), "lot": r.lot,
                             "source": r.source, "at": r.at.isoformat()})
    for table_id, carried in positions.items():  # tables with no step that day
        out.setdefault(table_id, DeckDayReport(table_id=table_id, day=day, start=carried,
                                               end=carried))
    return [out[t] for t in sorted(out)]
