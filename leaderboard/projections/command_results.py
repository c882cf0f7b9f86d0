"""A table's answer to a desk command (``command.result``) reaches the desk's record.

Every answer is kept once in ``command_results`` (table, seq). The command it answers is
named by its command id (``{desk key}-{seq}``); its ``desk_commands`` row then takes the
table's verdict: ``accepted``, ``refused`` with the table's reason, or ``held`` (an unseat or
close_heat kept until the hand ends, D63, whose final answer follows). A table applies a
(signer, seq) once and answers every later delivery "duplicate command": such an answer never
replaces the verdict (docs/desk-commands.md).

A refusal undoes at the desk what the command had done there: a refused ``seat`` puts the
entry back as it was before it was seated (so it can be seated again), when the desk still
has it in that seat; a refused ``open_heat`` or ``close_heat`` no longer counts in which heat
the desk has open (leaderboard.desk.heats reads the refused commands). Each refusal is
written to the audit (``command.refused``) with the table's reason. Answers may arrive in any
order: the verdict is the table's first answer that is neither a hold nor a duplicate, the
same whatever order they came in.
"""

from __future__ import annotations

import re
from typing import Any, Final, cast

from sqlalchemy import Connection, Table, select, update

from leaderboard.models import CommandResultRecord, DeskCommandRecord
from leaderboard.projections.results import INGEST_ACTOR, SEATED, Outcome
from leaderboard.projections.sql import AUDIT, ENTRIES, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import CommandResult

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

# game.table_rules' answer to a (signer, seq) it has seen (tests hold the wording to it).
_DUPLICATE: Final = re.compile(r"duplicate command \d+ from \S+: already applied")
_KEY: Final = ("table_id", "seq")


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


def command_result(connection: Connection, envelope: Envelope, message: CommandResult,
                   result: Outcome) -> None:
    """Keep one ``command.result`` and give its command the table's verdict."""
    seq = command_seq_of(message.command_id)
    inserted = insert_new(connection, RESULTS, [{
        "table_id": envelope.table, "seq": envelope.seq, "command_id": message.command_id,
        "command_seq": seq, "command": message.command, "accepted": message.accepted,
        "reason": message.reason, "held_until": message.held_until_hand_ends,
        "at": wall_of(envelope)}], key=_KEY)
    if not inserted:
        return
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
    verdict = _verdict(connection, envelope.table, seq)
    if verdict is None:
        return
    state, reason, answer_seq, at = verdict
    if state == row.state and answer_seq == row.result_seq:
        return
    if row.state in ANSWERED and row.result_seq is not None and row.result_seq < answer_seq:
        return  # its verdict came first; this one cannot replace it
    connection.execute(update(COMMANDS).where(COMMANDS.c.seq == seq).values(
        state=state, reason=reason, answered_at=at, result_seq=answer_seq))
    if state == ACCEPTED:
        result.changes.append(COMMAND_ACCEPTED)
    elif state == REFUSED and row.state != REFUSED:
        result.changes.append(COMMAND_REFUSED)
        _undo(connection, envelope, row, reason, result)


def _verdict(connection: Connection, table: str, seq: int
             ) -> tuple[str, str | None, int, Any] | None:
    """(state, reason, answer's seq, when) from the table's answers to ``seq`` so far."""
    answers = connection.execute(
        select(RESULTS.c.seq, RESULTS.c.accepted, RESULTS.c.reason, RESULTS.c.held_until,
               RESULTS.c.at)
        .where(RESULTS.c.table_id == table, RESULTS.c.command_seq == seq)
        .order_by(RESULTS.c.seq)).all()
    held = None
    for answer in answers:
        if answer.held_until is not None:
            held = held or answer
        elif not (not answer.accepted and is_duplicate(answer.reason)):
            state = ACCEPTED if answer.accepted else REFUSED
            return state, (None if answer.accepted else answer.reason), answer.seq, answer.at
    if held is not None:
        return HELD, f"held until hand {held.held_until} ends", held.seq, held.at
    return None


def _undo(connection: Connection, envelope: Envelope, row: Any, reason: str | None,
          result: Outcome) -> None:
    """Undo at the desk what a refused command did there, and audit the refusal."""
    detail: dict[str, Any] = {"seq": row.seq, "table": row.table_id, "command": row.command,
                              "reason": reason, "result_seq": envelope.seq}
    undo = row.undo if isinstance(row.undo, dict) else None
    if row.command == "seat" and undo is not None:
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
    connection.execute(AUDIT.insert(), [{"at": wall_of(envelope), "actor": INGEST_ACTOR,
                                         "action": COMMAND_REFUSED, "detail": detail}])
