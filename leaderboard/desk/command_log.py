"""The desk's commands to its tables: each one's seq, recorded with its audit row, and its
state (sent, held, accepted, refused with the table's reason, or no answer yet).

A command's ``seq`` (the envelope's) must never repeat for the desk's key: a table applies a
(signer, seq) once and refuses every later delivery as a duplicate. The audit row's id cannot
be it, since a database restored from a backup hands out the same ids again. `next_seq` is
the greatest of: the desk clock in milliseconds since the epoch, one above every seq the
desk has recorded, and one above every seq a table has answered (read back from the tables'
``command.result`` messages, which the ingest fetches again after a restore). Taken under the
desk lock, so two desks or service workers never take the same one; a millisecond value is
far below the microsecond seqs the service's own resend requests use (leaderboard.ingest.
gaps), so the leaderboard key's two kinds of command never meet (docs/desk-commands.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from game.messages.desk import AckScore, ParticipantProofs, Resend, Seat, TableCommand, Unseat
from leaderboard.audit_trail.chain import amend_tip
from leaderboard.desk.errors import DeskError
from leaderboard.desk.values import DeskCommand
from leaderboard.eligibility import as_utc
from leaderboard.models import AuditEntry, CommandResultRecord, DeskCommandRecord
from leaderboard.projections.command_results import (
    ANSWERED,
    RECORDED,
    SEND_FAILED,
    SENT,
    STATES,
)
from leaderboard.projections.sql import as_utc as stored_utc

__all__ = ["CommandView", "command_views", "mark_sent", "next_seq", "record_command"]


# The three maxima in one statement, built once (it keeps its compiled cache key).
_SEQS: Final = select(
    select(func.max(DeskCommandRecord.seq)).scalar_subquery(),
    select(func.max(CommandResultRecord.command_seq)).where(
        CommandResultRecord.command != Resend.NAME  # the ingest's resends: microseconds
    ).scalar_subquery(),
    select(func.max(AuditEntry.id)).scalar_subquery(),  # seqs before revision 0005
)


def next_seq(session: Session, now: datetime) -> int:
    """A seq no command of the desk's key has had (call it under the desk lock)."""
    recorded, answered, audited = session.execute(_SEQS).one()
    return max(int(now.timestamp() * 1000),
               max(recorded or 0, answered or 0, audited or 0) + 1)


def record_command(session: Session, row: AuditEntry, table: str, command: TableCommand, *,
                   undo: Mapping[str, Any] | None = None) -> DeskCommand:
    """Record the command of the desk action audited in ``row`` (flushed) and return it for
    sending; ``undo``: what a refusal by the table puts back at the desk."""
    seq = next_seq(session, row.at)
    session.add(DeskCommandRecord(
        seq=seq, audit_id=row.id, table_id=table, command=command.NAME, args=command.args(),
        undo=None if undo is None else dict(undo), state=RECORDED, recorded_at=row.at))
    amend_tip(session, row, {**row.detail, "seq": seq})  # the row is the chain's last
    return DeskCommand.of(seq=seq, table=table, command=command)


def mark_sent(engine: Engine, commands: Iterable[DeskCommand], at: datetime, *,
              error: str | None = None) -> None:
    """Record that these commands were handed to the broker (or, with ``error``, were not);
    an answer the table has already given is kept."""
    seqs = [c.seq for c in commands]
    if not seqs:
        return
    values: dict[str, Any] = ({"state": SENT, "reason": None}
                              if error is None else {"state": SEND_FAILED, "reason": error})
    with Session(engine) as session:
        if error is None:  # when it was first handed to the broker (an answer may be in)
            session.execute(update(DeskCommandRecord).where(
                DeskCommandRecord.seq.in_(seqs), DeskCommandRecord.sent_at.is_(None))
                .values(sent_at=as_utc(at)))
        session.execute(update(DeskCommandRecord).where(
            DeskCommandRecord.seq.in_(seqs),
            DeskCommandRecord.state.in_((RECORDED, SENT, SEND_FAILED))).values(**values))
        session.commit()


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandView:
    """A desk command as the clerk sees it: what, for which table, and its state."""

    seq: int
    table: str
    command: str
    args: Mapping[str, Any]
    state: str
    reason: str | None
    recorded_at: datetime
    sent_at: datetime | None
    answered_at: datetime | None
    actor: str
    action: str

    @property
    def answered(self) -> bool:
        """Whether the table's verdict is in (accepted or refused)."""
        return self.state in ANSWERED

    @property
    def pending(self) -> bool:
        """Sent or recorded, or held, with no final answer from the table yet."""
        return self.state not in ANSWERED

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (API and ``--json``)."""
        def iso(value: datetime | None) -> str | None:
            return None if value is None else stored_utc(value).isoformat()
        return {"seq": self.seq, "table": self.table, "command": self.command,
                "args": dict(self.args), "state": self.state, "reason": self.reason,
                "recorded_at": iso(self.recorded_at), "sent_at": iso(self.sent_at),
                "answered_at": iso(self.answered_at), "actor": self.actor,
                "action": self.action}


def command_views(session: Session, *, state: str | None = None, pending: bool = False,
                  table: str | None = None, seqs: Iterable[int] | None = None,
                  entry: str | None = None, limit: int = 200) -> list[CommandView]:
    """The desk's commands, newest first: all, those in one ``state``, the ``pending`` ones
    (no final answer: recorded, sent, send_failed, held), of one ``table``, these ``seqs``,
    or those naming one ``entry`` (its seatings, unseatings, acknowledgements and proofs)."""
    if state is not None and state not in STATES:
        raise DeskError(f"state {state!r} is not one of {', '.join(STATES)}")
    query = (select(DeskCommandRecord, AuditEntry)
             .join(AuditEntry, AuditEntry.id == DeskCommandRecord.audit_id))
    if state is not None:
        query = query.where(DeskCommandRecord.state == state)
    if pending:
        query = query.where(DeskCommandRecord.state.not_in(tuple(ANSWERED)))
    if table is not None:
        query = query.where(DeskCommandRecord.table_id == table)
    if seqs is not None:
        query = query.where(DeskCommandRecord.seq.in_(list(seqs)))
    if entry is not None:  # the audit's entry_id, written for every command naming an entry
        query = query.where(DeskCommandRecord.command.in_(
            (Seat.NAME, Unseat.NAME, AckScore.NAME, ParticipantProofs.NAME)))
    rows = session.execute(query.order_by(DeskCommandRecord.seq.desc())
                           .limit(None if entry is not None else limit)).all()
    if entry is not None:
        rows = [r for r in rows if r[0].args.get("entry_id") == entry][:limit]
    return [CommandView(seq=c.seq, table=c.table_id, command=c.command, args=dict(c.args),
                        state=c.state, reason=c.reason, recorded_at=c.recorded_at,
                        sent_at=c.sent_at, answered_at=c.answered_at, actor=a.actor,
                        action=a.action) for c, a in rows]

