"""Who may take an identity decision at the desk: a possible list match's approval or
refusal, and a rule 57 disqualification, are a supervisor's.

The desk's operator (``actor``) is checked against the staff registry (`StaffRecord`): when
a member with that staff id is enrolled, they must be active and a supervisor. An operator
the registry does not know is passed to `deskauth_permission_hook`, which the per-person
desk sign-in (issue 13, deskauth) replaces with its permission matrix; until then it lets
the action through, and the record names the operator as given. A manager (the role the
desk sign-in adds) may take every supervisor's decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from sqlalchemy.orm import Session

from leaderboard.desk.errors import DeskError
from leaderboard.models import StaffRecord

__all__ = [
    "DECIDERS",
    "IDENTITY_ACTIONS",
    "SUPERVISOR",
    "NotPermitted",
    "deskauth_permission_hook",
    "require_supervisor",
]

SUPERVISOR: Final = "supervisor"
DECIDERS: Final = (SUPERVISOR, "manager")  # the roles that take a supervisor's decision
# The identity actions and the role each needs (the report lists them for deskauth's matrix).
IDENTITY_ACTIONS: Final = {
    "identity.document_added": "clerk",
    "identity.holds_listed": "clerk",
    "identity.hold_approved": SUPERVISOR,
    "identity.hold_refused": SUPERVISOR,
    "patron.disqualified": SUPERVISOR,
    "entry.fees_listed": "clerk",
}


class NotPermitted(DeskError):
    """The operator's role does not allow the action (HTTP 403)."""


def _allow_unknown(actor: str, action: str) -> bool:
    """Until deskauth's sign-in: an operator not in the staff registry is let through."""
    del actor, action
    return True


# Replaced by deskauth's permission matrix: (operator, action) -> allowed.
deskauth_permission_hook: Callable[[str, str], bool] = _allow_unknown


def require_supervisor(session: Session, actor: str, action: str) -> None:
    """Refuse `action` unless the operator may take a supervisor's decision (see module)."""
    member = session.get(StaffRecord, actor)
    if member is None:
        if not deskauth_permission_hook(actor, action):
            raise NotPermitted(f"{actor} may not take this decision ({action}): a"
                               " supervisor's")
        return
    if not member.active:
        raise NotPermitted(f"staff member {actor} is disabled and may not act")
    if member.role not in DECIDERS:
        raise NotPermitted(f"{action} is a supervisor's decision; {actor} is a {member.role}")
