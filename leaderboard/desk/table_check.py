"""The desk's view of each table against the table's own: which heat is open and which
entries are seated, so that the two never disagree silently.

The table's view is what it published (``heat.opened``, ``heat.closed``, ``entry.seated``,
``entry.unseated``, ``score.recorded``, in its seq order, as stored by the ingest); the desk's
is its record (the heats it opened and did not close, less those the table refused, and the
entries seated without a score). Every difference is a `Finding`, with the desk's commands to
that table still awaiting an answer (the usual reason for a difference that lasts seconds)
and any hole in the table's stored sequence (the table's view may then be out of date).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.table import EntrySeated, EntryUnseated, HeatClosed, HeatOpened, ScoreRecorded
from leaderboard.desk.command_log import command_views
from leaderboard.desk.heats import occupied_entries, open_heats_by_table
from leaderboard.models import Message, TableProgress, TableRecord

__all__ = ["Finding", "TableView", "check_tables"]

_TYPES: Final = (HeatOpened.TYPE, HeatClosed.TYPE, EntrySeated.TYPE, EntryUnseated.TYPE,
                 ScoreRecorded.TYPE)
HEAT: Final = "open_heat"
SEATING: Final = "seating"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One difference between the desk and a table."""

    table: str
    kind: str  # open_heat | seating
    desk: Any
    reported: Any  # what the table has published
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"table": self.table, "kind": self.kind, "desk": self.desk,
                "table_view": self.reported, "message": self.message}


@dataclass(slots=True, kw_only=True)
class TableView:
    """One table as the desk has it and as the table reports it, and their differences."""

    table: str
    desk_heat: str | None = None
    table_heat: str | None = None
    desk_seated: dict[str, int] = field(default_factory=dict)  # entry -> seat
    table_seated: dict[str, int] = field(default_factory=dict)
    awaiting: list[int] = field(default_factory=list)  # seqs of commands with no answer yet
    gaps: list[Any] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"table": self.table, "desk_heat": self.desk_heat, "table_heat": self.table_heat,
                "desk_seated": self.desk_seated, "table_seated": self.table_seated,
                "awaiting": self.awaiting, "gaps": self.gaps,
                "findings": [f.as_dict() for f in self.findings]}


def _reported(session: Session) -> dict[str, tuple[str | None, dict[str, int]]]:
    """table -> (open heat, entry -> seat) from what each table has published."""
    rows = session.execute(
        select(Message.table_id, Message.type, Message.body)
        .where(Message.type.in_(_TYPES)).order_by(Message.table_id, Message.seq)).all()
    views: dict[str, tuple[str | None, dict[str, int]]] = {}
    for table, kind, stored in rows:
        heat, seated = views.get(table, (None, {}))
        body = stored if isinstance(stored, dict) else {}
        entry = body.get("entry_id")
        if kind == HeatOpened.TYPE:
            heat, seated = str(body.get("heat_id")), {}
        elif kind == HeatClosed.TYPE:
            heat, seated = None, {}
        elif kind == EntrySeated.TYPE and isinstance(entry, str):
            seat = body.get("seat")
            seated[entry] = seat if isinstance(seat, int) else 0
        elif isinstance(entry, str):  # unseated, or its score recorded: the seat is free
            seated.pop(entry, None)
        views[table] = (heat, seated)
    return views


def check_tables(session: Session, tables: Iterable[str] | None = None) -> list[TableView]:
    """Every table (enrolled, or known to either side), or these: each view and finding."""
    reported = _reported(session)
    desk_heats = open_heats_by_table(session)
    names = set(tables) if tables is not None else (
        set(session.scalars(select(TableRecord.table_id))) | set(reported) | set(desk_heats))
    progress = {p.table_id: p for p in session.scalars(select(TableProgress))}
    awaiting: dict[str, list[int]] = {}
    for command in command_views(session, pending=True, limit=10_000):
        awaiting.setdefault(command.table, []).append(command.seq)
    out = []
    for name in sorted(names):
        heat, seated = reported.get(name, (None, {}))
        desk_heat = desk_heats.get(name)
        view = TableView(table=name, desk_heat=None if desk_heat is None else desk_heat[0],
                         table_heat=heat, table_seated=dict(seated),
                         desk_seated={e.entry_id: e.seat or 0
                                      for e in occupied_entries(session, table=name)},
                         awaiting=sorted(awaiting.get(name, [])))
        row = progress.get(name)
        if row is not None and row.gaps:
            view.gaps = list(row.gaps)
        view.findings = _differences(view)
        out.append(view)
    return out


def _differences(view: TableView) -> list[Finding]:
    """The findings of one table's two views."""
    why = ""
    if view.awaiting:
        why += f" (the desk awaits the table's answer to seq {', '.join(map(str, view.awaiting))})"
    if view.gaps:
        why += f" (the table's record here has gaps {view.gaps}: it is fetching them)"
    found = []
    if view.desk_heat != view.table_heat:
        found.append(Finding(
            table=view.table, kind=HEAT, desk=view.desk_heat, reported=view.table_heat,
            message=f"table {view.table}: the desk has heat {view.desk_heat or 'none'} open,"
                    f" the table reports {view.table_heat or 'none'}{why}"))
    for entry in sorted(set(view.desk_seated) | set(view.table_seated)):
        desk_seat, table_seat = view.desk_seated.get(entry), view.table_seated.get(entry)
        if desk_seat == table_seat:
            continue
        desk_text = "not seated" if desk_seat is None else f"seat {desk_seat}"
        table_text = "not seated" if table_seat is None else f"seat {table_seat}"
        found.append(Finding(
            table=view.table, kind=SEATING, desk=desk_seat, reported=table_seat,
            message=f"table {view.table}: entry {entry} is {desk_text} at the desk and"
                    f" {table_text} at the table{why}"))
    return found
