"""Staff enrolment: the dealers, supervisors and managers who sign in at the tables' consoles,
their PIN and employee card kept only as game.staff hashes, and the roster the tables are
sent; and the clerks, supervisors and managers who sign in at the desk, their desk passphrase
kept only as a hash too (leaderboard.desk.passphrases; their sessions: leaderboard.desk.auth).

The roster carries dealers, supervisors and managers, each under their own role (a manager
may do at a table all a supervisor may, and lift a sign-in back-off: D345); clerks work only
the desk and are not sent.

Every change (enrol, disable, enable, a new PIN or card) raises the roster's version, a
rising integer: a table takes a roster only when it is newer than the one it holds, and says
why it refused one in its command result. A PIN is hashed with a salt of its own; employee
cards all with the roster's one card salt (drawn once with `secrets`), because a table hashes
a tap once and looks the hash up (`game.staff.StaffRoster.by_card_key`). Nothing here shows
or returns a hash, and nothing raw is ever stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.desk import StaffRoster
from game.staff import Role, StaffMember, hash_secret
from leaderboard.desk.action import begin_action, conflict_on_race, desk_now, write_audit
from leaderboard.desk.command_log import record_command
from leaderboard.desk.credentials import (
    card_number,
    hashed,
    new_card_salt,
    pin_number,
    salt_bytes,
)
from leaderboard.desk.duties import check_duty
from leaderboard.desk.enrolment import ENROLLED, enrolment_detail, enrolment_refusal
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.ids import checked_table_id
from leaderboard.desk.passphrases import hash_passphrase, passphrase
from leaderboard.desk.permissions import STAFF_ROLES, desk_role
from leaderboard.desk.values import DeskCommand
from leaderboard.eligibility import as_utc
from leaderboard.models import DeskSession, RosterState, StaffRecord, TableRecord
from runtime.clocks import WallClock

__all__ = [
    "ROSTER_SENT",
    "StaffView",
    "change_staff_card",
    "change_staff_pin",
    "end_sessions",
    "enrol_staff",
    "list_staff",
    "roster",
    "send_roster",
    "set_desk_passphrase",
    "set_staff_active",
]

ROSTER_SENT: Final = "staff.roster_sent"  # the audit action of a roster sent to a table
_MAX_MEMBERS: Final = 2000  # what a table reads (game.staff.StaffRoster.decode)
_STAFF_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
_ROSTER_ROW: Final = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffView:
    """An enrolled member as the desk shows them: which credentials, never their hashes."""

    staff_id: str
    name: str
    role: str
    active: bool
    has_pin: bool
    has_card: bool
    has_passphrase: bool
    enrolled_at: datetime
    changed_at: datetime
    roster_version: int


def _view(row: StaffRecord, version: int) -> StaffView:
    return StaffView(staff_id=row.staff_id, name=row.name, role=row.role, active=row.active,
                     has_pin=row.pin_hash is not None, has_card=row.card_hash is not None,
                     has_passphrase=row.desk_hash is not None,
                     enrolled_at=row.enrolled_at, changed_at=row.changed_at,
                     roster_version=version)


def _staff_id(staff_id: str) -> str:
    text = str(staff_id).strip()
    if not _STAFF_ID.fullmatch(text):
        raise DeskError(f"staff id {staff_id!r} must be 1 to 40 letters, digits, '_', '.' or"
                        " '-', starting with a letter or digit")
    return text


def _name(name: str) -> str:
    clean = " ".join(str(name).split())
    if not clean:
        raise DeskError("the staff member's name is empty")
    if len(clean) > 200:
        raise DeskError("the staff member's name is longer than 200 characters")
    return clean


def _state(session: Session, now: datetime) -> RosterState:
    """The roster's row, created (with its card salt) the first time it is needed."""
    state = session.get(RosterState, _ROSTER_ROW)
    if state is None:
        state = RosterState(id=_ROSTER_ROW, version=0, card_salt=new_card_salt(),
                            changed_at=as_utc(now))
        session.add(state)
        with conflict_on_race(session, lambda: "another desk created the staff roster at the"
                              " same moment: try again"):
            session.flush()
    return state


def _bump(state: RosterState, now: datetime) -> int:
    state.version += 1
    state.changed_at = as_utc(now)
    return state.version


def _card_hash(session: Session, state: RosterState, number: str, staff_id: str) -> str:
    """The roster's hash of an employee card, refused when another member holds the card."""
    key = hash_secret(card_number(number, "the employee"), salt_bytes(state.card_salt))
    holder = session.scalar(select(StaffRecord.staff_id).where(
        StaffRecord.card_hash == key, StaffRecord.staff_id != staff_id))
    if holder is not None:
        raise Conflict(f"that employee card is already enrolled for {holder}")
    return key


def _member(session: Session, staff_id: str) -> StaffRecord:
    row = session.get(StaffRecord, _staff_id(staff_id))
    if row is None:
        raise NotFound(f"no staff member {staff_id!r}")
    return row


def _credentials(staff_id: str, role: str, pin: str | None, card: str | None,
                 desk_passphrase: str | None) -> None:
    """Refuse a credential the role cannot use, or none to sign in with."""
    if role not in STAFF_ROLES:
        raise DeskError(f"role {role!r} is not one of {', '.join(STAFF_ROLES)}")
    if desk_role(role) is None and desk_passphrase is not None:
        raise DeskError(f"{staff_id} is a {role}: dealers do not sign in at the desk, so"
                        " they get no desk passphrase")
    if role == "clerk" and (pin is not None or card is not None):
        raise DeskError(f"{staff_id} is a clerk: clerks do not sign in at the tables'"
                        " consoles, so they get no PIN or employee card")
    if role == "clerk" and desk_passphrase is None:
        raise DeskError(f"{staff_id} is a clerk and needs a desk passphrase to sign in with")
    if pin is None and card is None and desk_passphrase is None:
        raise DeskError(f"{staff_id} needs a PIN or an employee card to sign in with"
                        + ("" if desk_role(role) is None else " (or a desk passphrase)"))


def enrol_staff(session: Session, clock: WallClock, *, actor: str, staff_id: str, name: str,
                role: str, pin: str | None = None, card: str | None = None,
                desk_passphrase: str | None = None, why: str | None = None) -> StaffView:
    """Enrol a dealer, clerk, supervisor or manager: a PIN (4-8 digits) and/or an employee
    card for the tables' consoles, a desk passphrase for the desk (clerks: only that)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    staff_id, name = _staff_id(staff_id), _name(name)
    _credentials(staff_id, role, pin, card, desk_passphrase)
    if session.get(StaffRecord, staff_id) is not None:
        raise Conflict(f"staff member {staff_id} is already enrolled")
    desk_hash = (None if desk_passphrase is None
                 else hash_passphrase(passphrase(desk_passphrase, f"{staff_id}'s")))
    pin_hash = None if pin is None else hashed(pin_number(pin, f"{staff_id}'s"))
    number = None if card is None else card_number(card, "the employee")
    state = _state(session, now)
    card_hash = None if number is None else _card_hash(session, state, number, staff_id)
    row = StaffRecord(staff_id=staff_id, name=name, role=role, pin_hash=pin_hash,
                      card_hash=card_hash, active=True, enrolled_at=as_utc(now),
                      changed_at=as_utc(now), desk_hash=desk_hash, desk_failures=0)
    version = _bump(state, now)
    vouched = enrolment_detail(session, actor=actor, staff_id=staff_id, name=name, role=role,
                               enrolled_at=row.enrolled_at)
    with conflict_on_race(session, lambda: f"staff member {staff_id} was enrolled at the same"
                          " moment at another desk"):
        session.add(row)
        write_audit(session, now, actor, ENROLLED, detail={
            "staff_id": staff_id, "role": role, "pin": pin_hash is not None,
            "card": card_hash is not None, "desk": desk_hash is not None,
            "roster_version": version, **vouched}, why=why)
        session.commit()
    return _view(row, version)


def set_staff_active(session: Session, clock: WallClock, *, actor: str, staff_id: str,
                     active: bool, why: str | None = None) -> StaffView:
    """Disable (``active=False``) or enable a member's credentials; tables learn it from the
    next roster sent."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = _member(session, staff_id)
    check_duty("own staff record", actor=actor, earlier=(row.staff_id,))
    if row.active == active:
        raise Conflict(f"{row.staff_id} is already {'enabled' if active else 'disabled'}")
    state = _state(session, now)
    row.active, row.changed_at = active, as_utc(now)
    version = _bump(state, now)
    write_audit(session, now, actor, "staff.enabled" if active else "staff.disabled",
                detail={"staff_id": row.staff_id, "roster_version": version}, why=why)
    session.commit()
    return _view(row, version)


def change_staff_pin(session: Session, clock: WallClock, *, actor: str, staff_id: str,
                     pin: str, why: str | None = None) -> StaffView:
    """Give a member a new PIN (hashed with a new salt)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = _member(session, staff_id)
    check_duty("own staff record", actor=actor, earlier=(row.staff_id,))
    row.pin_hash = hashed(pin_number(pin, f"{row.staff_id}'s"))
    row.changed_at = as_utc(now)
    version = _bump(_state(session, now), now)
    write_audit(session, now, actor, "staff.pin_changed",
                detail={"staff_id": row.staff_id, "roster_version": version}, why=why)
    session.commit()
    return _view(row, version)


def change_staff_card(session: Session, clock: WallClock, *, actor: str, staff_id: str,
                      card: str, why: str | None = None) -> StaffView:
    """Give a member a new employee card (the old one no longer signs in)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = _member(session, staff_id)
    check_duty("own staff record", actor=actor, earlier=(row.staff_id,))
    number = card_number(card, "the employee")
    state = _state(session, now)
    row.card_hash = _card_hash(session, state, number, row.staff_id)
    row.changed_at = as_utc(now)
    version = _bump(state, now)
    write_audit(session, now, actor, "staff.card_changed",
                detail={"staff_id": row.staff_id, "roster_version": version}, why=why)
    session.commit()
    return _view(row, version)


def set_desk_passphrase(session: Session, clock: WallClock, *, actor: str, staff_id: str,
                        new_passphrase: str, why: str | None = None) -> StaffView:
    """Give a clerk, supervisor or manager a new desk passphrase: their lock-out is cleared
    and every desk session they hold is ended (leaderboard.desk.auth)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = _member(session, staff_id)
    if desk_role(row.role) is None:
        raise DeskError(f"{row.staff_id} is a {row.role}: dealers do not sign in at the desk")
    row.desk_hash = hash_passphrase(passphrase(new_passphrase, f"{row.staff_id}'s"))
    row.desk_failures, row.desk_failed_at, row.desk_locked_until = 0, None, None
    row.changed_at = as_utc(now)
    ended = end_sessions(session, row.staff_id, now, "passphrase_changed")
    write_audit(session, now, actor, "staff.passphrase_set",
                detail={"staff_id": row.staff_id, "sessions_ended": ended}, why=why)
    session.commit()
    state = session.get(RosterState, _ROSTER_ROW)
    return _view(row, 0 if state is None else state.version)


def end_sessions(session: Session, staff_id: str, now: datetime, why: str) -> int:
    """End every open desk session of ``staff_id`` (in the caller's transaction); how many."""
    rows = session.scalars(select(DeskSession).where(DeskSession.staff_id == staff_id,
                                                     DeskSession.ended_at.is_(None))).all()
    for row in rows:
        row.ended_at, row.ended_why = as_utc(now), why
    return len(rows)


def list_staff(session: Session) -> list[StaffView]:
    """Every enrolled member, by staff id (no hashes)."""
    state = session.get(RosterState, _ROSTER_ROW)
    version = 0 if state is None else state.version
    rows = session.scalars(select(StaffRecord).order_by(StaffRecord.staff_id)).all()
    return [_view(row, version) for row in rows]


def roster(session: Session, *, leave_out: frozenset[str] = frozenset()) -> StaffRoster:
    """The roster as tables are sent it: its version, every member (disabled ones marked
    inactive) with their hashes, and the card salt; not the staff ids in ``leave_out``."""
    state = session.get(RosterState, _ROSTER_ROW)
    if state is None:
        return StaffRoster(version=0)
    rows = session.scalars(select(StaffRecord).order_by(StaffRecord.staff_id)).all()
    members = tuple(StaffMember(staff_id=r.staff_id, name=r.name, role=_table_role(r.role),
                                pin_hash=r.pin_hash, card_hash=r.card_hash, active=r.active)
                    for r in rows if r.role != "clerk" and r.staff_id not in leave_out)
    return StaffRoster(version=state.version, members=members, card_salt=state.card_salt)


def _table_role(role: str) -> Role:
    """A member's role at a table: dealer, supervisor or manager (a manager may do there all a
    supervisor may, and lift a sign-in back-off: D345); clerks are not sent."""
    return cast(Role, role)


def _tables(session: Session, table: str | None) -> Sequence[str]:
    if table is None:
        names = session.scalars(select(TableRecord.table_id).where(TableRecord.active)
                                .order_by(TableRecord.table_id)).all()
        if not names:
            raise Conflict("no table is enrolled and active: enrol the tables first")
        return names
    row = session.get(TableRecord, table)
    if row is None:
        raise NotFound(f"no enrolled table {table!r}")
    if not row.active:
        raise Conflict(f"table {table} is not active")
    return [table]


def send_roster(session: Session, clock: WallClock, *, actor: str, table: str | None = None,
                why: str | None = None) -> tuple[DeskCommand, ...]:
    """Record the roster command (``StaffRoster``) for every active enrolled table (or one); the
    caller sends them. A table refuses a version it already holds (its command result). A
    member the audit trail holds no valid enrolment for is left out, with an alert."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    table = None if table is None else checked_table_id(table)
    left_out = frozenset(
        r.staff_id for r in session.scalars(select(StaffRecord).order_by(StaffRecord.staff_id))
        if r.role != "clerk" and enrolment_refusal(session, now, r, client="roster") is not None)
    current = roster(session, leave_out=left_out)
    if current.version == 0:
        raise Conflict("no staff member is enrolled yet: nothing to send")
    if len(current.members) > _MAX_MEMBERS:
        raise Conflict(f"the roster has {len(current.members)} members; a table reads at most"
                       f" {_MAX_MEMBERS}")
    commands = []
    for name in _tables(session, table):
        row = write_audit(session, now, actor, ROSTER_SENT, detail={
            "table": name, "command": StaffRoster.NAME, "args": current.args(),
            "roster_version": current.version, "members": len(current.members),
            **({"left_out": sorted(left_out)} if left_out else {})}, why=why)
        commands.append(record_command(session, row, name, current))
    session.commit()
    return tuple(commands)
