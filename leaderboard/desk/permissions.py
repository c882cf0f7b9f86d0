"""Who may do what at the registration desk: the one permission matrix of every desk action,
the API's and the command line's alike (docs/desk-auth.md).

The staff registry (leaderboard.desk.staff) serves the tables and the desk: a member's one
``role`` is dealer, clerk, supervisor or manager. Dealers work the tables and never the desk;
clerks register, check, sell and seat; supervisors also rule (scores, disputes, unseating,
refunds, table faults, heats); managers also enrol staff, import the lists, allocate places,
draw the Final's seats and award prizes. Each role may do everything the one below it may.

To add an action: one line in `PERMISSIONS` (its name and the lowest role allowed), then use
the name where the action is served (``api.endpoint("name", operation)`` in the desk API,
the command line only calls the API). An action missing here is refused
everywhere (the API refuses to start with a route naming one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

__all__ = [
    "DESK_ROLES",
    "PERMISSIONS",
    "STAFF_ROLES",
    "DeskRole",
    "allowed",
    "desk_role",
    "lowest_role",
    "role_refusal",
]

DeskRole = Literal["clerk", "supervisor", "manager"]
DESK_ROLES: Final[tuple[DeskRole, ...]] = ("clerk", "supervisor", "manager")  # rising
STAFF_ROLES: Final = ("dealer", "clerk", "supervisor", "manager")  # the registry's roles

_CLERK: Final[DeskRole] = "clerk"
_SUPERVISOR: Final[DeskRole] = "supervisor"
_MANAGER: Final[DeskRole] = "manager"

# action -> the lowest desk role that may take it (every role above it may too).
PERMISSIONS: Final[Mapping[str, DeskRole]] = {
    # patrons, eligibility, entries, seats: the clerk's counter work
    "patron.register": _CLERK,
    "patron.show": _CLERK,
    "patron.credentials": _CLERK,
    "patron.display": _CLERK,
    "eligibility.check": _CLERK,
    "lists.show": _CLERK,
    "entry.buy": _CLERK,
    "patron.document_add": _CLERK,
    "holds.show": _CLERK,
    "fees.show": _CLERK,
    "entry.seat": _CLERK,
    "score.acknowledge": _CLERK,
    "places.show": _CLERK,
    "place.proxy": _CLERK,
    "place.choose_seat": _CLERK,
    "draw.replay": _CLERK,
    "prizes.show": _CLERK,
    "disputes.show": _CLERK,
    "dispute.raise": _CLERK,
    "payouts.show": _CLERK,
    "command.resend": _CLERK,
    "commands.show": _CLERK,
    "tables.check": _CLERK,
    "passphrase.own": _CLERK,
    "sessions.show": _CLERK,  # one's own; everyone's: sessions.all
    "sessions.revoke": _CLERK,  # one's own; anyone's: sessions.all
    # rulings and floor decisions: a supervisor's
    "entry.refund": _SUPERVISOR,
    "hold.approve": _SUPERVISOR,
    "hold.refuse": _SUPERVISOR,
    "patron.disqualify": _SUPERVISOR,
    "entry.unseat": _SUPERVISOR,
    "score.void": _SUPERVISOR,
    "score.correct": _SUPERVISOR,
    "dispute.resolve": _SUPERVISOR,
    "dispute.rule": _SUPERVISOR,
    "dispute.close": _SUPERVISOR,
    "dispute.countersign": _SUPERVISOR,
    "table.fault": _SUPERVISOR,
    "heat.open": _SUPERVISOR,
    "heat.close": _SUPERVISOR,
    "prize.claim": _SUPERVISOR,
    "staff.list": _SUPERVISOR,
    "staff.send_roster": _SUPERVISOR,
    "audit.show": _SUPERVISOR,
    # the tournament's set-up and its money: a manager's
    "staff.enrol": _MANAGER,
    "staff.disable": _MANAGER,
    "staff.enable": _MANAGER,
    "staff.pin": _MANAGER,
    "staff.card": _MANAGER,
    "staff.passphrase": _MANAGER,
    "lists.import": _MANAGER,
    "places.allocate": _MANAGER,
    "draw.final": _MANAGER,
    "draw.commit": _MANAGER,
    "prize.award": _MANAGER,
    "sessions.all": _MANAGER,
}


def desk_role(staff_role: str) -> DeskRole | None:
    """The desk role of a staff registry role (None: a dealer, or unknown: no desk access)."""
    return next((r for r in DESK_ROLES if r == staff_role), None)


def lowest_role(action: str) -> DeskRole:
    """The lowest role that may take ``action``; KeyError for an action not in the matrix."""
    return PERMISSIONS[action]


def allowed(role: str, action: str) -> bool:
    """True when a desk member of ``role`` may take ``action``."""
    mine, needed = desk_role(role), PERMISSIONS.get(action)
    if mine is None or needed is None:
        return False
    return DESK_ROLES.index(mine) >= DESK_ROLES.index(needed)


def role_refusal(staff_id: str, role: str, action: str) -> str | None:
    """Why ``staff_id`` (of ``role``) may not take ``action``; None when they may."""
    if allowed(role, action):
        return None
    needed = PERMISSIONS.get(action)
    if needed is None:
        return f"{action!r} is not a desk action"
    if desk_role(role) is None:
        return f"{staff_id} is a {role}: the desk is for clerks, supervisors and managers"
    above = DESK_ROLES[DESK_ROLES.index(needed):]
    return (f"{action!r} needs a {' or '.join(above)}; {staff_id} is signed in as {role}")
