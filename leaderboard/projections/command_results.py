"""A table's answer to a desk command (``command.result``) reaches the desk's record.

Every answer is kept once in ``command_results`` (table, seq). The command it answers is
named by its command id (``{desk key}-{seq}``); its ``desk_commands`` row then takes the
table's verdict: ``accepted``, ``refused`` with the table's reason, or ``held`` (an unseat or
close_heat kept until the hand ends, D63, whose final answer follows). A table applies a
(signer, seq) once and answers every later delivery "duplicate command": such an answer never
replaces the verdict; alone, it is a refusal (the table did not apply this command). An
answer stamped more than `CLOCK_SKEW` before its command was recorded answers an older
command that had the same seq and is not counted (docs/desk-commands.md).

A refusal undoes at the desk what the command had done there: a refused ``seat`` puts the
entry back as it was before it was seated (so it can be seated again), when the desk still
has it in that seat; a refused ``open_heat`` or ``close_heat`` no longer counts in which heat
the desk has open (leaderboard.desk.heats reads the refused commands). Each refusal is
written to the audit (``command.refused``) with the table's reason. Answers may arrive in any
order: the verdict is the table's first answer that is neither a hold nor a duplicate. Should
a lone duplicate be followed by the original answer (messages fetched again out of order),
the verdict becomes the original's, and a seating the table did make comes back with its
``entry.seated`` report (leaderboard.projections.seatings).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Final, cast

from sqlalchemy import Connection, Table, select, update

from game.messages.desk import Seat
from leaderboard.audit_trail.chain import append_audit, audit_values
from leaderboard.models import CommandResultRecord, DeskCommandRecord
from leaderboard.projections.results import INGEST_ACTOR, SEATED, Outcome
from leaderboard.projections.sql import ENTRIES, as_utc, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import CommandResult, Resend

__all__ = [
    "ACCEPTED",
    "ANSWERED",
    "COMMANDS",
    "COMMAND_ACCEPTED",
    "COMMAND_REFUSED",
    "HELD",
    "RECORDED",
    "REFUSED",
    "RESULTS",
    "SEND_FAILED",
    "SENT",
    "STATES",
    "command_result",
    "command_seq_of",
    "is_duplicate",
]

COMMANDS: Final = cast(Table, DeskCommandRecord.__table__)
RESULTS: Final = cast(Table, CommandResultRecord.__table__)

# A desk command's states: recorded (not yet handed to the broker), sent (no answer yet),
# send_failed (the broker was not reached; resend it), held (the table holds it until the
# hand ends), accepted, refused (with the table's reason).
RECORDED: Final = "recorded"
SENT: Final = "sent"
SEND_FAILED: Final = "send_failed"
HELD: Final = "held"
ACCEPTED: Final = "accepted"
REFUSED: Final = "refused"
STATES: Final = (RECORDED, SENT, SEND_FAILED, HELD, ACCEPTED, REFUSED)
ANSWERED: Final = frozenset({ACCEPTED, REFUSED})
COMMAND_ACCEPTED: Final = "command.accepted"  # a projection change
COMMAND_REFUSED: Final = "command.refused"  # a projection change and the audit action

# game.table.core' answer to a (signer, seq) it has seen (tests hold the wording to it).
_DUPLICATE: Final = re.compile(r"duplicate command \d+ from \S+: already applied")
_KEY: Final = ("table_id", "seq")
# How far a table's clock may be behind the desk's: an answer stamped earlier than this before
# its command was recorded cannot be its answer.
CLOCK_SKEW: Final = timedelta(seconds=60)


def is_duplicate(reason: str | None) -> bool:
    """Whether a refusal is the table's answer to a command it has already seen."""
    return reason is not None and _DUPLICATE.fullmatch(reason) is not None


def command_seq_of(command_id: str | None) -> int | None:
    """The desk seq a command id (``{key id}-{seq}``) names, or None if it names none."""
    if not isinstance(command_id, str):
        return None
    _, _, tail = command_id.rpartition("-")
    if not tail.isdigit() or len(tail) > 18:
        return None
    return int(tail)


def _text(value: Any, limit: int) -> str | None:
    """A field a table sent as it is read back (the definition keeps it raw): text, cut to
    its column."""
    return None if value is None else str(value)[:limit]


def command_result(connection: Connection, envelope: Envelope, message: CommandResult,
                   result: Outcome) -> None:
    """Keep one ``command.result`` and give its command the table's verdict."""
    seq = command_seq_of(message.command_id)
    inserted = insert_new(connection, RESULTS, [{
        "table_id": envelope.table, "seq": envelope.seq,
        "command_id": _text(message.command_id, 200), "command_seq": seq,
        "command": _text(message.command, 32), "accepted": message.accepted,
        "reason": _text(message.reason, 2_000),
        "held_until": _text(message.held_until_hand_ends, 64), "at": wall_of(envelope)}],
        key=_KEY)
    if not inserted or _text(message.command, 32) == Resend.NAME:
        return  # a resend is the ingest's own request (leaderboard.ingest.gaps), no desk's
    if seq is None:
        result.notes.append(f"{envelope.table} answered command id {message.command_id!r},"
                            " which names no desk seq; stored only")
        return
    row = connection.execute(select(COMMANDS).where(COMMANDS.c.seq == seq)).first()
    if row is None or row.table_id != envelope.table:
        elsewhere = "" if row is None else f" for that table (it was for {row.table_id})"
        result.notes.append(f"{envelope.table} answered desk command {seq}"
                            f" ({message.command}), which the desk has no record of"
                            f"{elsewhere}; stored only")
        return
    verdict = _verdict(connection, row)
    if verdict is None:
        return
    state, reason, answer_seq, at = verdict
    if state == row.state and answer_seq == row.result_seq:
        return
    connection.execute(update(COMMANDS).where(COMMANDS.c.seq == seq).values(
        state=state, reason=reason, answered_at=at, result_seq=answer_seq))
    if state == ACCEPTED:
        result.changes.append(COMMAND_ACCEPTED)
    elif state == REFUSED and row.state != REFUSED:
        result.changes.append(COMMAND_REFUSED)
        _undo(connection, envelope, row, reason, result)


def _verdict(connection: Connection, row: Any) -> tuple[str, str | None, int, Any] | None:
    """(state, reason, answer's seq, when) from the table's answers to command ``row`` so far:
    the first that is neither a hold nor a duplicate; else a duplicate (the table had applied
    a command with this seq: it did not apply this one); else a hold. An answer stamped well
    before the command was recorded answers another command that had its seq (one sent
    before a restore from backup, in a database that reused seqs) and is not counted."""
    answers = connection.execute(
        select(RESULTS.c.seq, RESULTS.c.accepted, RESULTS.c.reason, RESULTS.c.held_until,
               RESULTS.c.at)
        .where(RESULTS.c.table_id == row.table_id, RESULTS.c.command_seq == row.seq)
        .order_by(RESULTS.c.seq)).all()
    since = as_utc(row.recorded_at) - CLOCK_SKEW
    answers = [a for a in answers if as_utc(a.at) >= since]
    finals = [a for a in answers if a.held_until is None]
    genuine = [a for a in finals if a.accepted or not is_duplicate(a.reason)]
    if genuine or finals:
        first = (genuine or finals)[0]
        state = ACCEPTED if first.accepted else REFUSED
        return state, (None if first.accepted else first.reason), first.seq, first.at
    held = [a for a in answers if a.held_until is not None]
    if held:
        return HELD, f"held until hand {held[0].held_until} ends", held[0].seq, held[0].at
    return None


def _undo(connection: Connection, envelope: Envelope, row: Any, reason: str | None,
          result: Outcome) -> None:
    """Undo at the desk what a refused command did there, and audit the refusal."""
    detail: dict[str, Any] = {"seq": row.seq, "table": row.table_id, "command": row.command,
                              "reason": reason, "result_seq": envelope.seq}
    undo = row.undo if isinstance(row.undo, dict) else None
    if row.command == Seat.NAME and undo is not None:
        entry_id, seat = undo.get("entry_id"), row.args.get("seat")
        restored = connection.execute(
            update(ENTRIES).where(ENTRIES.c.entry_id == entry_id, ENTRIES.c.status == SEATED,
                                  ENTRIES.c.table_id == row.table_id, ENTRIES.c.seat == seat)
            .values(table_id=undo.get("table_id"), seat=undo.get("seat"),
                    heat_id=undo.get("heat_id"), status=undo.get("status"))).rowcount
        detail.update(entry_id=entry_id, restored=bool(restored))
        result.notes.append(
            f"{row.table_id} refused seating entry {entry_id} in seat {seat} (seq {row.seq}):"
            f" {reason}; " + ("the entry is not seated" if restored else
                              "the desk has moved it since; left as it is"))
    else:
        result.notes.append(f"{row.table_id} refused {row.command} (seq {row.seq}): {reason}")
    append_audit(connection, audit_values([{"at": wall_of(envelope), "actor": INGEST_ACTOR,
                                            "action": COMMAND_REFUSED, "detail": detail}]))
