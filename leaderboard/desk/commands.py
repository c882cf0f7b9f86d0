"""Recorded table commands: read back by their seq, and sent again unchanged (their state:
`leaderboard.desk.command_log`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.errors import NotFound
from leaderboard.desk.values import DeskCommand
from leaderboard.models import AuditEntry, DeskCommandRecord
from runtime.clocks import WallClock


def recorded_command(session: Session, seq: int) -> DeskCommand:
    """A command as it was recorded (``desk_commands``; before revision 0005, the audit row
    whose id was its seq)."""
    recorded = session.get(DeskCommandRecord, seq)
    if recorded is not None:
        return DeskCommand(seq=recorded.seq, table=recorded.table_id, command=recorded.command,
                           args=dict(recorded.args))
    row = session.get(AuditEntry, seq)
    if row is None or "command" not in row.detail or "args" not in row.detail:
        raise NotFound(f"no desk command with seq {seq}")
    return DeskCommand(seq=row.id, table=str(row.detail["table"]),
                       command=str(row.detail["command"]), args=dict(row.detail["args"]))


def resend_command(session: Session, clock: WallClock, *, actor: str, seq: int,
                   why: str | None = None) -> DeskCommand:
    """The recorded command `seq`, to send again unchanged (after a failed delivery): a
    table applies a seq once and refuses a repeat, so a resend is always safe."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    command = recorded_command(session, seq)
    write_audit(session, now, actor, "command.resent",
                detail={"seq": seq, "table": command.table, "resent": command.command}, why=why)
    session.commit()
    return command
