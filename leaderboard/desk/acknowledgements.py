"""A score acknowledged at the desk: the participant signed a paper slip or showed their ID
to the clerk, and the desk tells the score's table (``ack_score``), which publishes the
acknowledgement as if given at the table."""

from __future__ import annotations

from typing import Final

from sqlalchemy.orm import Session

from game.messages.desk import AckScore
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.command_log import record_command
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.lookups import get_entry
from leaderboard.desk.values import DeskCommand
from leaderboard.models import Score
from runtime.clocks import WallClock

__all__ = ["DESK_ACK_METHODS", "acknowledge_score"]

DESK_ACK_METHODS: Final = ("desk_signature", "desk_id_check")
ACK_SENT: Final = "score.ack_sent"  # the audit action of the command


def acknowledge_score(session: Session, clock: WallClock, *, actor: str, entry_id: str,
                      method: str, why: str | None = None) -> DeskCommand:
    """Record and return the ``ack_score`` command for the table that recorded the entry's
    score; refused unless that score is recorded, not voided and not yet acknowledged."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    if method not in DESK_ACK_METHODS:
        raise DeskError(f"method {method!r} is not one of {', '.join(DESK_ACK_METHODS)}")
    entry = get_entry(session, entry_id)
    score = session.get(Score, entry.entry_id)
    if score is None:
        raise NotFound(f"entry {entry.entry_id} has no recorded score to acknowledge")
    if score.voided_at is not None or score.status == "voided":
        raise Conflict(f"entry {entry.entry_id}'s score is voided: there is nothing to"
                       " acknowledge")
    if score.acknowledged_at is not None:
        raise Conflict(f"entry {entry.entry_id}'s score was already acknowledged"
                       f" ({score.ack_method})")
    command = AckScore(entry_id=entry.entry_id, method=method)
    row = write_audit(session, now, actor, ACK_SENT, detail={
        "table": score.table_id, "command": command.NAME, "args": command.args(),
        "entry_id": entry.entry_id, "score_cents": score.score_cents, "method": method},
        why=why)
    sent = record_command(session, row, score.table_id, command)
    session.commit()
    return sent
