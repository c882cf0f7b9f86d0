"""Desk sign-in: each clerk, supervisor and manager signs in with their own staff id and desk
passphrase and gets a session; every desk action then runs as that person (docs/desk-auth.md).

A session's token is 32 random bytes from `secrets`, given to the person once; the database
keeps only its SHA-256 (a token is not guessable, so a fast hash is enough), with the
session's absolute expiry and idle timeout, so the command line, the API and several service
workers all agree on who is signed in. Repeated wrong passphrases lock the account for a while;
every sign-in, failure, lock-out and sign-out is in the audit log.

Errors: `SignInRefused` (HTTP 401: no or a bad credential or session, with a ``reason`` code)
and `RoleRefused` (HTTP 403: signed in, but the action needs a higher role).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.errors import Refusal
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.enrolment import enrolment_refusal
from leaderboard.desk.errors import DeskError, NotFound
from leaderboard.desk.passphrases import passphrase, passphrase_matches
from leaderboard.desk.permissions import PERMISSIONS, desk_role, role_refusal
from leaderboard.desk.policy import AuthPolicy
from leaderboard.desk.staff import StaffView, enrol_staff
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import DeskSession, StaffRecord
from runtime.clocks import WallClock

__all__ = [
    "DEFAULT_POLICY",
    "AuthPolicy",
    "DeskIdentity",
    "RoleRefused",
    "SessionView",
    "SignIn",
    "SignInRefused",
    "authenticate",
    "authorise",
    "init_first_manager",
    "may_set_passphrase",
    "open_sessions",
    "revoke_session",
    "sign_in",
    "sign_out",
    "token_hash",
]

_UNKNOWN_ACTOR: Final = "(unknown staff id)"
_CLIENTS: Final = ("api", "cli", "demo")
DEFAULT_POLICY: Final = AuthPolicy()


class SignInRefused(DeskError, Refusal):
    """No valid credential or session (HTTP 401); ``reason`` is a short code."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class RoleRefused(DeskError, Refusal):
    """Signed in, but the action needs a higher role (HTTP 403); ``needed`` names it."""

    def __init__(self, needed: str, message: str) -> None:
        self.needed = needed
        super().__init__(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskIdentity:
    """Who a session belongs to, and until when it holds."""

    staff_id: str
    name: str
    role: str
    expires_at: datetime
    idle_until: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class SignIn:
    """A new session: the token (shown once, never stored) and whose it is."""

    token: str
    identity: DeskIdentity


def token_hash(token: str) -> str:
    """The stored form of a session token (SHA-256, hex)."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def _identity(row: StaffRecord, s: DeskSession) -> DeskIdentity:
    return DeskIdentity(staff_id=row.staff_id, name=row.name, role=row.role,
                        expires_at=from_db(s.expires_at),
                        idle_until=from_db(s.last_seen_at) + timedelta(seconds=s.idle_seconds))


def _failed(session: Session, row: StaffRecord, now: datetime, policy: AuthPolicy,
            client: str) -> SignInRefused:
    """Count a wrong passphrase (and lock the account at the limit), audited and committed."""
    first = None if row.desk_failed_at is None else from_db(row.desk_failed_at)
    if first is None or now - first >= policy.window:
        row.desk_failures, row.desk_failed_at = 1, as_utc(now)
    else:
        row.desk_failures += 1
    left = policy.failures - row.desk_failures
    write_audit(session, now, row.staff_id, "desk.sign_in_failed",
                detail={"staff_id": row.staff_id, "reason": "wrong_passphrase",
                        "failures": row.desk_failures, "client": client})
    if left <= 0:
        until = now + policy.lock
        row.desk_locked_until = as_utc(until)
        write_audit(session, now, row.staff_id, "desk.locked",
                    detail={"staff_id": row.staff_id, "until": as_utc(until).isoformat(),
                            "failures": row.desk_failures})
        session.commit()
        return SignInRefused("locked", f"wrong passphrase for {row.staff_id}: that was"
                             f" {row.desk_failures} in a row, so the account is locked until"
                             f" {as_utc(until):%H:%M} UTC")
    session.commit()
    return SignInRefused("wrong_passphrase", f"wrong passphrase for {row.staff_id}"
                         f" ({left} {'try' if left == 1 else 'tries'} left before the account"
                         " is locked)")


def _refuse(session: Session, now: datetime, actor: str, *, staff_id: str, reason: str,
            message: str, client: str) -> SignInRefused:
    write_audit(session, now, actor, "desk.sign_in_failed",
                detail={"staff_id": staff_id[:40], "reason": reason, "client": client})
    session.commit()
    return SignInRefused(reason, message)


def sign_in(session: Session, clock: WallClock, *, staff_id: str, passphrase_text: str,
            client: str, policy: AuthPolicy = DEFAULT_POLICY, terminal: str | None = None,
            address: str | None = None) -> SignIn:
    """Check a staff id and desk passphrase and open a session (recording the ``terminal``
    and client ``address`` it is opened from); SignInRefused (audited, committed) for an
    unknown id, a wrong passphrase, a locked, disabled or dealer's account."""
    if client not in _CLIENTS:
        raise DeskError(f"unknown desk client {client!r}")
    given = " ".join(str(staff_id).split())
    if not given:
        raise SignInRefused("no_staff_id", "give your staff id to sign in")
    begin_action(session, given[:200])
    now = desk_now(clock)
    row = session.get(StaffRecord, given)
    if row is None:
        raise _refuse(session, now, _UNKNOWN_ACTOR, staff_id=given, reason="unknown_staff_id",
                      message=f"no staff member {given[:40]!r} is enrolled", client=client)
    if (unenrolled := enrolment_refusal(session, now, row, client=client)) is not None:
        raise _refuse(session, now, row.staff_id, staff_id=row.staff_id,
                      reason="no_enrolment", message=unenrolled, client=client)
    locked = None if row.desk_locked_until is None else from_db(row.desk_locked_until)
    if locked is not None and now < locked:
        raise _refuse(session, now, row.staff_id, staff_id=row.staff_id, reason="locked",
                      message=f"{row.staff_id}'s desk account is locked until"
                      f" {locked:%H:%M} UTC after repeated wrong passphrases (a manager can"
                      " set a new passphrase)", client=client)
    if locked is not None:  # the lock has run out: a fresh count
        row.desk_failures, row.desk_failed_at, row.desk_locked_until = 0, None, None
    if desk_role(row.role) is None:
        raise _refuse(session, now, row.staff_id, staff_id=row.staff_id, reason="not_desk_staff",
                      message=f"{row.staff_id} is a {row.role}: the desk is for clerks, supervisors"
                      " and managers", client=client)
    if not row.active:
        raise _refuse(session, now, row.staff_id, staff_id=row.staff_id, reason="disabled",
                      message=f"{row.staff_id}'s credentials are disabled", client=client)
    if row.desk_hash is None:
        raise _refuse(session, now, row.staff_id, staff_id=row.staff_id, reason="no_passphrase",
                      message=f"{row.staff_id} has no desk passphrase yet: a manager sets one"
                      " (showdown desk staff passphrase)", client=client)
    if not passphrase_matches(passphrase_text, row.desk_hash):
        raise _failed(session, row, now, policy, client)
    row.desk_failures, row.desk_failed_at, row.desk_locked_until = 0, None, None
    token = secrets.token_urlsafe(32)
    record = DeskSession(token_hash=token_hash(token), staff_id=row.staff_id,
                         created_at=as_utc(now), expires_at=as_utc(now + policy.lifetime),
                         last_seen_at=as_utc(now),
                         idle_seconds=int(policy.idle.total_seconds()), client=client,
                         terminal=None if terminal is None else terminal[:64],
                         address=None if address is None else address[:64])
    session.add(record)
    write_audit(session, now, row.staff_id, "desk.signed_in",
                detail={"staff_id": row.staff_id, "role": row.role, "client": client,
                        "terminal": record.terminal, "address": record.address,
                        "expires_at": record.expires_at.isoformat()})
    session.commit()
    return SignIn(token=token, identity=_identity(row, record))


def _open_session(session: Session, now: datetime, token: str | None
                  ) -> tuple[StaffRecord, DeskSession]:
    """The open session of ``token`` and its member; SignInRefused (the lapse recorded)."""
    if token is None or not token.strip():
        raise SignInRefused("no_session", "sign in first (showdown desk login, or"
                            " POST /api/desk/session) and send Authorization: Bearer <token>")
    if len(token) > 200:
        raise SignInRefused("unknown_session", "that is not a desk session token")
    record = session.get(DeskSession, token_hash(token))
    if record is None:
        raise SignInRefused("unknown_session", "that desk session is not known (signed in on"
                            " another database, or a mistyped token): sign in again")
    if record.ended_at is not None:
        raise SignInRefused(record.ended_why or "ended",
                            f"that desk session ended ({record.ended_why or 'ended'}"
                            f" at {from_db(record.ended_at):%H:%M} UTC): sign in again")
    row = session.get(StaffRecord, record.staff_id)
    assert row is not None  # a foreign key
    lapse = None
    if now >= from_db(record.expires_at):
        lapse = ("expired", "the desk session has expired (sessions last"
                 f" {from_db(record.expires_at) - from_db(record.created_at)}): sign in again")
    elif now >= from_db(record.last_seen_at) + timedelta(seconds=record.idle_seconds):
        lapse = ("idle", f"the desk session ended after {record.idle_seconds // 60} minutes"
                 " without use: sign in again")
    elif not row.active:
        lapse = ("disabled", f"{row.staff_id}'s credentials are disabled")
    elif desk_role(row.role) is None:
        lapse = ("not_desk_staff", f"{row.staff_id} is a {row.role}: no desk access")
    if lapse is not None:
        record.ended_at, record.ended_why = as_utc(now), lapse[0]
        session.commit()
        raise SignInRefused(*lapse)
    return row, record


def authenticate(session: Session, clock: WallClock, token: str | None) -> DeskIdentity:
    """Who holds the session ``token`` (its idle time restarts); SignInRefused when none."""
    now = desk_now(clock)
    row, record = _open_session(session, now, token)
    record.last_seen_at = as_utc(now)
    who = _identity(row, record)  # before the commit, which expires both rows
    session.commit()
    return who


def authorise(session: Session, clock: WallClock, token: str | None, action: str
              ) -> DeskIdentity:
    """`authenticate`, then RoleRefused unless the person's role may take ``action``."""
    who = authenticate(session, clock, token)
    refusal = role_refusal(who.staff_id, who.role, action)
    if refusal is not None:
        raise RoleRefused(PERMISSIONS.get(action, "none"), refusal)
    return who


def may_set_passphrase(session: Session, *, actor: str, staff_id: str) -> None:
    """RoleRefused unless ``actor`` sets their own passphrase or may set anyone's."""
    if staff_id == actor:
        return
    me = session.get(StaffRecord, actor)
    refusal = ("unknown staff member" if me is None
               else role_refusal(me.staff_id, me.role, "staff.passphrase"))
    if refusal is not None:
        raise RoleRefused(PERMISSIONS["staff.passphrase"], refusal)


def sign_out(session: Session, clock: WallClock, token: str | None) -> DeskIdentity:
    """End the session ``token`` (audited); SignInRefused when it is not open."""
    now = desk_now(clock)
    row, record = _open_session(session, now, token)
    begin_action(session, row.staff_id)
    record = session.get(DeskSession, record.token_hash) or record
    record.ended_at, record.ended_why = as_utc(now), "signed_out"
    write_audit(session, now, row.staff_id, "desk.signed_out",
                detail={"staff_id": row.staff_id, "client": record.client})
    session.commit()
    return _identity(row, record)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionView:
    """An open desk session as listed: its short id (the start of its token's hash), who,
    where from, and when."""

    id: str
    staff_id: str
    terminal: str | None
    address: str | None
    client: str
    signed_in_at: datetime
    last_used_at: datetime
    expires_at: datetime
    idle_until: datetime


SESSION_ID_LENGTH: Final = 12  # hex digits of the token's SHA-256 a session is shown by


def _view(record: DeskSession) -> SessionView:
    seen = from_db(record.last_seen_at)
    return SessionView(id=record.token_hash[:SESSION_ID_LENGTH], staff_id=record.staff_id,
                       terminal=record.terminal, address=record.address, client=record.client,
                       signed_in_at=from_db(record.created_at), last_used_at=seen,
                       expires_at=from_db(record.expires_at),
                       idle_until=seen + timedelta(seconds=record.idle_seconds))


def _sees_all(session: Session, actor: str) -> bool:
    me = session.get(StaffRecord, actor)
    return me is not None and role_refusal(me.staff_id, me.role, "sessions.all") is None


def open_sessions(session: Session, clock: WallClock, *, actor: str) -> list[SessionView]:
    """The desk sessions still open (not ended, expired or idle): a manager's view has
    everyone's, anyone else's their own; oldest first."""
    now = desk_now(clock)
    query = select(DeskSession).where(DeskSession.ended_at.is_(None)).order_by(
        DeskSession.created_at, DeskSession.token_hash)
    if not _sees_all(session, actor):
        query = query.where(DeskSession.staff_id == actor)
    views = [_view(r) for r in session.scalars(query)]
    return [v for v in views if now < v.expires_at and now < v.idle_until]


def revoke_session(session: Session, clock: WallClock, *, actor: str, session_id: str,
                   why: str | None = None) -> SessionView:
    """End the open session whose id is ``session_id`` (audited): one's own, or (a manager)
    anyone's; NotFound for no such open session, RoleRefused for another's."""
    given = session_id.strip().lower()
    if len(given) != SESSION_ID_LENGTH or any(c not in "0123456789abcdef" for c in given):
        raise NotFound(f"no desk session {session_id[:40]!r} (an id from `showdown desk"
                       " sessions`: 12 hex digits)")
    actor = begin_action(session, actor)
    now = desk_now(clock)
    record = session.scalars(select(DeskSession).where(
        DeskSession.token_hash.startswith(given, autoescape=True),
        DeskSession.ended_at.is_(None))).first()
    if record is None:
        raise NotFound(f"no open desk session {given}")
    if record.staff_id != actor and not _sees_all(session, actor):
        raise RoleRefused(PERMISSIONS["sessions.all"],
                          f"session {given} is {record.staff_id}'s: only a manager may end"
                          " another person's session")
    record.ended_at, record.ended_why = as_utc(now), "revoked"
    view = _view(record)
    write_audit(session, now, actor, "desk.session_revoked",
                detail={"session": given, "staff_id": record.staff_id,
                        "terminal": record.terminal, "why": why})
    session.commit()
    return view


def init_first_manager(session: Session, clock: WallClock, *, staff_id: str, name: str,
                       passphrase_text: str) -> StaffView:
    """Enrol the first manager of a new desk database (``showdown leaderboard init``); refused once
    any manager is enrolled: after that a manager enrols staff."""
    passphrase(passphrase_text, "the manager's")
    begin_action(session, staff_id)
    managers = session.scalars(select(StaffRecord.staff_id)
                               .where(StaffRecord.role == "manager")).all()
    session.rollback()
    if managers:
        raise DeskError(f"the desk already has a manager ({', '.join(managers)}): managers"
                        " enrol staff (showdown desk staff add)")
    return enrol_staff(session, clock, actor=staff_id, staff_id=staff_id, name=name,
                       role="manager", desk_passphrase=passphrase_text,
                       why="the first manager, enrolled by showdown leaderboard init")

