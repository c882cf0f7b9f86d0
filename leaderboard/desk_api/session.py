"""The desk API's sign-in, mounted with the others under ``/api/desk`` by
`leaderboard.desk_api.routes.desk_routes` (leaderboard.desk.auth does the work):

    POST   /session   {staff_id, passphrase[, terminal]}   sign in: 201 {token, staff_id,
                                    name, role, expires_at, idle_minutes}; 401 with ``reason``
                                    (the terminal and the client's address are recorded)
    GET    /sessions                           the open sessions: a manager's all, else one's own
    POST   /sessions/{id}/revoke               end one: one's own, or (a manager) anyone's
    GET    /session                            who the bearer token's session belongs to
    DELETE /session                            sign out (the token no longer works)

    POST   /staff/{staff_id}/passphrase {passphrase}   a new desk passphrase: one's own, or
                                                       (a manager) anyone's at the desk

A passphrase is never repeated in an answer, a log or the audit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from leaderboard import desk
from leaderboard.desk.auth import (
    DeskIdentity,
    SessionView,
    SignInRefused,
    authenticate,
    may_set_passphrase,
    open_sessions,
    revoke_session,
    sign_in,
    sign_out,
)
from leaderboard.desk.policy import AuthPolicy
from leaderboard.desk_api.http import Body, Result, iso
from leaderboard.desk_api.input import error_answer
from runtime.clocks import WallClock

__all__ = ["SessionApi", "session_json", "unauthorised"]


def unauthorised(exc: SignInRefused) -> JSONResponse:
    """The 401 answer of a refused sign-in or session, with its reason code."""
    return JSONResponse({"error": str(exc), "reason": exc.reason}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="showdown-desk"'})


def _who(who: DeskIdentity) -> dict[str, Any]:
    return {"staff_id": who.staff_id, "name": who.name, "role": who.role,
            "expires_at": iso(who.expires_at), "idle_until": iso(who.idle_until)}


def session_json(v: SessionView) -> dict[str, Any]:
    """An open session as listed (never its token)."""
    return {"id": v.id, "staff_id": v.staff_id, "terminal": v.terminal, "address": v.address,
            "client": v.client, "signed_in_at": iso(v.signed_in_at),
            "last_used_at": iso(v.last_used_at), "expires_at": iso(v.expires_at),
            "idle_until": iso(v.idle_until)}


def _bearer(request: Request) -> str | None:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


class SessionApi:
    """Sign-in, who-am-I and sign-out over HTTP."""

    def __init__(self, sessions: sessionmaker[Session], clock: WallClock,
                 read_body: Callable[[Request], Awaitable[Body]], policy: AuthPolicy) -> None:
        self.sessions = sessions
        self.policy = policy
        self.clock = clock
        self.read_body = read_body

    async def _answer(self, work: Callable[[Session], tuple[int, dict[str, Any]]]) -> Response:
        def run() -> tuple[int, dict[str, Any]]:
            with self.sessions() as session:
                try:
                    return work(session)
                except BaseException:
                    session.rollback()
                    raise
        try:
            status, body = await run_in_threadpool(run)
        except SignInRefused as exc:
            return unauthorised(exc)
        except Exception as exc:  # every error gets its answer (a bug: 500, logged)
            return error_answer(exc, "/api/desk/session")
        return JSONResponse(body, status_code=status)

    async def sign_in(self, request: Request) -> Response:
        """POST /session: a new session for a staff id and desk passphrase."""
        try:
            body = await self.read_body(request)
            staff_id, secret = body.text("staff_id"), body.text("passphrase")
            terminal = body.optional_text("terminal")
        except Exception as exc:  # a malformed request (4xx), or a bug (500, logged)
            return error_answer(exc, request.url.path)
        address = request.client.host if request.client is not None else None

        def work(session: Session) -> tuple[int, dict[str, Any]]:
            signed = sign_in(session, self.clock, staff_id=staff_id, passphrase_text=secret,
                             client="api", policy=self.policy, terminal=terminal,
                             address=address)
            idle = signed.identity.idle_until - self.clock()
            return 201, {"token": signed.token, **_who(signed.identity),
                         "idle_minutes": round(idle.total_seconds() / 60)}
        return await self._answer(work)

    async def whoami(self, request: Request) -> Response:
        """GET /session: whose session the bearer token is."""
        token = _bearer(request)
        return await self._answer(
            lambda session: (200, _who(authenticate(session, self.clock, token))))

    async def sign_out(self, request: Request) -> Response:
        """DELETE /session: end the bearer token's session."""
        token = _bearer(request)

        def work(session: Session) -> tuple[int, dict[str, Any]]:
            who = sign_out(session, self.clock, token)
            return 200, {"signed_out": who.staff_id}
        return await self._answer(work)

    def open_sessions(self, s: Session, b: Body, _: Request) -> Result:
        """GET /sessions (action ``sessions.show``): the open sessions, a manager's all."""
        views = open_sessions(s, self.clock, actor=b.actor)
        return Result({"sessions": [session_json(v) for v in views]})

    def revoke(self, s: Session, b: Body, _: Request) -> Result:
        """POST /sessions/{id}/revoke (action ``sessions.revoke``): end a session."""
        view = revoke_session(s, self.clock, actor=b.actor, session_id=b.path_text("session_id"),
                              why=b.optional_text("why"))
        return Result({**session_json(view), "revoked": True})

    def passphrase(self, s: Session, b: Body, _: Request) -> Result:
        """POST /staff/{id}/passphrase (action ``passphrase.own``): one's own new desk
        passphrase; anyone else's needs the ``staff.passphrase`` role."""
        target = b.path_text("staff_id")
        may_set_passphrase(s, actor=b.actor, staff_id=target)
        view = desk.set_desk_passphrase(s, self.clock, actor=b.actor, staff_id=target,
                                        new_passphrase=b.text("passphrase"),
                                        why=b.optional_text("why"))
        return Result({"staff_id": view.staff_id, "passphrase_set": True})
