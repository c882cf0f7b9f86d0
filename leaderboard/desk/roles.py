"""Who may take an identity decision at the desk: a possible list match's approval or
refusal, and a rule 57 disqualification, are a supervisor's (or a manager's).

The desk's permission matrix (leaderboard.desk.permissions) refuses the action at the API and the
command line before it runs; this check is the desk function's own, for every caller: the
operator (``actor``, the signed-in person) must be an active supervisor or manager in the
staff registry (`StaffRecord`).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy.orm import Session

from game.errors import Refusal
from leaderboard.desk.errors import DeskError
from leaderboard.models import StaffRecord

__all__ = ["DECIDERS", "SUPERVISOR", "NotPermitted", "require_supervisor"]

SUPERVISOR: Final = "supervisor"
DECIDERS: Final = (SUPERVISOR, "manager")  # the roles that take a supervisor's decision


class NotPermitted(DeskError, Refusal):
    """The operator's role does not allow the action (HTTP 403)."""


def require_supervisor(session: Session, actor: str, action: str) -> None:
    """Refuse `action` unless the operator may take a supervisor's decision (see module)."""
    member = session.get(StaffRecord, actor)
    if member is None:
        raise NotPermitted(f"{actor} is not in the staff registry and may not take this"
                           f" decision ({action}): a supervisor's")
    if not member.active:
        raise NotPermitted(f"staff member {actor} is disabled and may not act")
    if member.role not in DECIDERS:
        raise NotPermitted(f"{action} is a supervisor's decision; {actor} is a {member.role}")
