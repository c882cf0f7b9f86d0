"""Seatings a table reports: ``entry.seated`` moves the entry to the table's seat, and
``entry.unseated`` withdraws it (it records no score, rule 14).

A seat other than the desk's is recorded and also written to the audit; a seating the desk
has since undone (a refund, a release from a failed table, a seating elsewhere) is audited
and moves nothing. `seating` is the one rule, used one message at a time and in batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from game.tournament.entries import Stage
from leaderboard.audit_trail.chain import append_audit, audit_values
from leaderboard.projections.results import (
    ENTRY_SEATED,
    ENTRY_UNSEATED,
    INGEST_ACTOR,
    REFUNDED,
    SEAT_MISMATCH,
    SEAT_STALE,
    SEATED,
    Outcome,
)
from leaderboard.projections.sql import LaterMessages, Statements, wall_of
from wire.envelope import Envelope
from wire.messages import EntrySeated, EntryUnseated

__all__ = ["entry_seated", "entry_unseated", "seating", "undone_because", "unregistered"]

Row = dict[str, Any]


def entry_seated(connection: Connection, sql: Statements, envelope: Envelope,
                 message: EntrySeated, *, later: LaterMessages | None,
                 result: Outcome) -> None:
    """Apply one seating report (a later seating of the same entry from the table wins)."""
    entry_id = message.entry_id
    if later is not None and any(
        isinstance(b, Mapping) and b.get("entry_id") == entry_id
        for _, _, _, b in later(envelope.table, envelope.seq, (ENTRY_SEATED,))
    ):
        result.notes.append(f"entry {entry_id}: a later seating from {envelope.table} applies")
        return
    held = connection.execute(sql.places_of, {"entries": [entry_id]}).first()
    seat, audit = seating(connection, sql, held, envelope, message, result=result)
    if seat is not None:
        connection.execute(sql.seat_many, [seat])
    if audit is not None:
        append_audit(connection, audit_values([audit]))


def unregistered(envelope: Envelope, message: EntrySeated) -> str:
    """The note for a seating of an entry this service does not know."""
    return f"entry {message.entry_id} seated at {envelope.table} is not registered here"


def seating(connection: Connection, sql: Statements, held: Any, envelope: Envelope,
            message: EntrySeated, *, result: Outcome
            ) -> tuple[Row | None, Row | None]:
    """What a table's seating report writes, given the entry's row ``held`` (None: unknown):
    the entry's table and seat (None when the desk has since undone that seating) and an
    audit row (a mismatch or a stale report); the change and notes go to ``result``."""
    if held is None:
        result.notes.append(unregistered(envelope, message))
        return None, None
    stale = undone_because(connection, sql, held, envelope.table)
    if stale is None:
        row = {"entry": held.entry_id, "table": envelope.table, "seat": message.seat}
        result.changes.append(ENTRY_SEATED)
        audit = _seat_mismatch(held, envelope, message)
    else:
        note = (f"entry {held.entry_id}: {envelope.table} reports seat {message.seat},"
                f" but {stale}; the report is stored, the entry stays as the desk has it")
        row, audit = None, {
            "at": wall_of(envelope), "actor": INGEST_ACTOR, "action": SEAT_STALE,
            "detail": {"entry_id": held.entry_id, "desk_table": held.table_id,
                       "desk_seat": held.seat, "status": held.status, "table": envelope.table,
                       "seat": message.seat, "seq": envelope.seq, "note": note}}
    if audit is not None:
        result.notes.append(audit["detail"]["note"])
    return row, audit


def undone_because(connection: Connection, sql: Statements, held: Any,
                   table: str) -> str | None:
    """Why the desk's record no longer has the entry at `table`, or None. The desk commits a
    seating before it sends the command, so a table's report of it always finds the entry
    seated there, unless the desk has since refunded it, released it from a failed table or
    seated it at another table."""
    if held.status == REFUNDED:
        return "the desk has refunded it"
    if held.status == SEATED and held.table_id not in (None, table):
        return f"the desk has it seated at table {held.table_id}"
    if held.status == SEATED or held.table_id is not None or held.stage == Stage.QUALIFYING:
        return None
    released = any(isinstance(d, Mapping) and d.get("entry_id") == held.entry_id
                   and d.get("table") == table for (d,) in connection.execute(sql.releases))
    return f"the desk released it from table {table} (out of service)" if released else None


def _seat_mismatch(held: Any, envelope: Envelope, message: EntrySeated) -> Row | None:
    """The audit row for a table's seating that differs from the desk's (the table's report
    is recorded, and the difference kept for the supervisors), else None."""
    desk_table, desk_seat = held.table_id, held.seat
    seat = message.seat
    if desk_seat is None or (desk_table in (None, envelope.table) and desk_seat == seat):
        return None
    desk_place = f"table {desk_table} seat {desk_seat}" if desk_table else f"seat {desk_seat}"
    note = (f"entry {held.entry_id}: {envelope.table} reports seat {seat}, the desk gave "
            f"{desk_place}; the table's report is recorded")
    return {"at": wall_of(envelope), "actor": INGEST_ACTOR, "action": SEAT_MISMATCH,
            "detail": {"entry_id": held.entry_id, "desk_table": desk_table,
                       "desk_seat": desk_seat, "table": envelope.table, "seat": seat,
                       "seq": envelope.seq, "note": note}}


def entry_unseated(connection: Connection, sql: Statements, envelope: Envelope,
                   message: EntryUnseated, result: Outcome) -> None:
    """Withdraw an entry its table reports unseated (seated there, no score here)."""
    entry_id = message.entry_id
    withdrawn = connection.execute(sql.withdraw, {"entry": entry_id,
                                                  "table": envelope.table}).first()
    if withdrawn is None:
        result.notes.append(f"entry {entry_id} unseated at {envelope.table}: not seated there"
                            " without a score here; stored only")
        return
    hands = "?" if message.hands_played is None else message.hands_played
    result.changes.append(ENTRY_UNSEATED)
    result.notes.append(f"entry {entry_id} withdrawn at {envelope.table} seat {message.seat}"
                        f" after {hands} hands: no score (rule 14)")
