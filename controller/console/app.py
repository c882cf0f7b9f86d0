"""The console's web app (Starlette): the dealer's touch screen, the participant's view, the
score slip, live updates and the one action endpoint, all in front of `TableDaemon.on_console`.

    GET  /                 the dealer's screen (static/dealer.html)
    GET  /player           the participant's view (static/player.html)
    GET  /slip/{entry_id}  the printable score slip (404 page when this table has no score)
    GET  /static/{file}    the scripts and stylesheet in static/ (no external assets:
                           the table is offline)
    GET  /events           server-sent events: ``event: view`` with {"me", "view"} at once and
                           each time an input is applied; ``: keep-alive`` every 15 s
    GET  /api/view         the same {"me", "view"} once
    GET  /api/slips        the receipt printer ({"kind", "auto", ...}) and the latest scores
                           recorded here, to print ({"printer", "slips"})
    POST /api/sign-in      {"staff_id", "pin"} or {"method": "card", "wait": s}: sets the
                           session cookie (HttpOnly, SameSite=Strict); the token is never in
                           an answer. Failures back off per client address (the terminal)
                           and staff id (D344)
    POST /api/sign-out     ends this screen's session and clears the cookie
    POST /api/action       {"action", ...}: a staff action (with the cookie's session) or a
                           participant's acknowledge / dispute / cancel_tap

Every request first passes `controller.console.guard.ClientGuard` (client address, Host,
Origin; security headers). A request the table answered is HTTP 200 with ``{"ok", "error"?,
"detail"?}``: a refusal by the table (a dealer's void, a wrong PIN) is ``ok: false`` with its
reason, journaled as the table journals it. A request the console could not take (bad JSON,
too large, wrong content type, unknown action, no valid session, another client) is 4xx with
the reason, and nothing reaches the table. So is a staff action with a bad field (an amount
not in whole cents or not in the smallest chip, a seat, spot, card, position, alert or hand
that does not exist here, a field the action does not take): 400 with ``{"ok": false,
"error": "amount: R0.125 is not a whole number of cents", "field": "amount"}``, checked by
the daemon against the table before anything is journaled (game.table.console_fields).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from controller.console.guard import ClientGuard, Refusal, read_json
from controller.console.slip import not_found_page, slip_page
from controller.console.views import ConsoleViews
from controller.console_config import ConsoleConfig
from controller.ports import ConsoleTable
from game.staff import ACTIONS
from runtime.logs import get_logger

__all__ = ["COOKIE", "KEEPALIVE_SECONDS", "PARTICIPANT_ACTIONS", "ConsoleApp",
           "create_console_app"]

COOKIE: Final = "showdown_session"
KEEPALIVE_SECONDS: Final = 15.0
PARTICIPANT_ACTIONS: Final = frozenset({"acknowledge", "dispute", "cancel_tap"})
STATIC: Final = Path(__file__).resolve().parent / "static"
_TYPES: Final = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# Every script and stylesheet in static/ (read once at start; nothing else is served from disk)
_FILES: Final = {p.name: _TYPES[p.suffix] for p in sorted(STATIC.iterdir()) if p.suffix in _TYPES}
_PIN_FIELDS: Final = ("staff_id", "pin")
_log = get_logger("showdown.console")


def _answer(answer: Mapping[str, Any]) -> JSONResponse:
    if not answer.get("ok") and isinstance(answer.get("field"), str):
        # refused at the door for a bad field: nothing reached the table (D341)
        return JSONResponse({"ok": False, "error": answer.get("error"),
                             "field": answer["field"]}, status_code=400)
    body = {k: v for k, v in answer.items() if k in ("ok", "error", "detail")}
    if isinstance(body.get("detail"), Mapping):
        body["detail"] = {k: v for k, v in body["detail"].items() if k != "session"}
    return JSONResponse(body)


def _refused(refusal: Refusal) -> JSONResponse:
    return JSONResponse({"ok": False, "error": refusal.reason}, status_code=refusal.status)


class ConsoleApp:
    """The routes of one daemon's console; `app` is the ASGI app to serve."""

    def __init__(self, daemon: ConsoleTable, config: ConsoleConfig) -> None:
        self.daemon = daemon
        self.config = config
        self.views = ConsoleViews(daemon)
        self.closing = asyncio.Event()  # set at shutdown: the event streams end
        self.pages = {name: (STATIC / f"{name}.html").read_text(encoding="utf-8")
                      for name in ("dealer", "player")}
        self.files = {name: (STATIC / name).read_bytes() for name in _FILES}
        routes = [
            Route("/", self.dealer, methods=["GET"]),
            Route("/player", self.player, methods=["GET"]),
            Route("/slip/{entry_id}", self.slip, methods=["GET"]),
            Route("/static/{name}", self.static, methods=["GET"]),
            Route("/events", self.events, methods=["GET"]),
            Route("/api/view", self.view, methods=["GET"]),
            Route("/api/slips", self.slips, methods=["GET"]),
            Route("/api/sign-in", self.sign_in, methods=["POST"]),
            Route("/api/sign-out", self.sign_out, methods=["POST"]),
            Route("/api/action", self.action, methods=["POST"]),
        ]
        starlette = Starlette(routes=routes,
                              exception_handlers={HTTPException: self._http_error})
        self.app = ClientGuard(starlette, allowed=config.allowed_clients)

    # ---- pages ------------------------------------------------------------------------

    async def dealer(self, _: Request) -> Response:
        """The dealer's touch screen."""
        return HTMLResponse(self.pages["dealer"])

    async def player(self, _: Request) -> Response:
        """The participant's view."""
        return HTMLResponse(self.pages["player"])

    async def static(self, request: Request) -> Response:
        """The console's script and stylesheet (nothing else is served from disk)."""
        name = request.path_params["name"]
        if name not in self.files:
            return JSONResponse({"ok": False, "error": f"no such file: {name[:60]}"},
                                status_code=404)
        return Response(self.files[name], media_type=_FILES[name])

    async def slip(self, request: Request) -> Response:
        """A participant's printable score slip."""
        entry_id = str(request.path_params["entry_id"])
        found = None if len(entry_id) > 40 else await self.views.slip(entry_id)
        if found is None:
            return HTMLResponse(not_found_page(entry_id), status_code=404)
        return HTMLResponse(slip_page(found))

    # ---- reading ------------------------------------------------------------------------

    async def _framed(self, token: str | None) -> tuple[int, bytes]:
        version, view = await self.views.encoded()
        who = self.views.me(token)
        me = json.dumps(who).encode()
        if who is not None:
            view = self.views.staff_view(version, view)
        return version, b'{"me":' + me + b',"view":' + view + b"}"

    async def view(self, request: Request) -> Response:
        """The screen document once (with who this screen's session is)."""
        _, data = await self._framed(request.cookies.get(COOKIE))
        return Response(data, media_type="application/json")

    async def slips(self, _: Request) -> Response:
        """The receipt printer and the latest scores recorded at this table (the dealer's
        screen offers their slips to print), each with its last print this run."""
        printing = self.daemon.slips
        recent = await self.views.recent_slips()
        for item in recent:
            item["last_print"] = printing.last.get(item["entry_id"])
        return JSONResponse({"printer": printing.describe(), "slips": recent})

    async def events(self, request: Request) -> Response:
        """Server-sent events: the document now and after every applied input."""
        return StreamingResponse(self._stream(request.cookies.get(COOKIE)),
                                 media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def _stream(self, token: str | None) -> AsyncIterator[bytes]:
        yield b"retry: 2000\n\n"
        while not self.closing.is_set():
            seen, data = await self._framed(token)
            yield b"event: view\ndata: " + data + b"\n\n"
            while not self.closing.is_set():
                if await self._wait(seen):
                    break
                if not self.closing.is_set():
                    yield b": keep-alive\n\n"

    async def _wait(self, seen: int) -> bool:
        """Wait for a version after ``seen`` (True), a keep-alive's time or shutdown (False)."""
        changed = asyncio.ensure_future(self.daemon.changed(seen, KEEPALIVE_SECONDS))
        closing = asyncio.ensure_future(self.closing.wait())
        try:
            await asyncio.wait({changed, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (changed, closing):
                task.cancel()
        return changed.done() and not changed.cancelled() and changed.result() > seen

    # ---- acting -------------------------------------------------------------------------

    async def sign_in(self, request: Request) -> Response:
        """Sign a dealer or supervisor in at this screen (replacing its previous session)."""
        try:
            body = await read_json(request)
        except Refusal as refusal:
            return _refused(refusal)
        if body.get("method") == "card":
            ask: dict[str, Any] = {"action": "sign_in", "method": "card",
                                   "wait": body.get("wait")}
        else:
            ask = {"action": "sign_in", **{k: body.get(k) for k in _PIN_FIELDS}}
        client = request.client
        terminal = client.host if client is not None else "unknown client"
        answer = await self.daemon.on_console(ask, terminal=terminal)
        if not answer.get("ok"):
            return _answer(answer)
        token = str(dict(answer.get("detail") or {}).get("session", ""))
        old = request.cookies.get(COOKIE)
        if old and old != token:
            await self.daemon.on_console({"action": "sign_out", "session": old})
        response = _answer(answer)
        response.set_cookie(COOKIE, token, max_age=self.config.session_minutes * 60,
                            path="/", httponly=True, samesite="strict")
        return response

    async def sign_out(self, request: Request) -> Response:
        """End this screen's session."""
        token = request.cookies.get(COOKIE)
        answer: Mapping[str, Any] = {"ok": False, "error": "not signed in"}
        if token:
            answer = await self.daemon.on_console({"action": "sign_out", "session": token})
        response = _answer(answer)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def action(self, request: Request) -> Response:
        """One console action: a staff action with this screen's session, or a participant's."""
        try:
            body = await read_json(request)
        except Refusal as refusal:
            return _refused(refusal)
        action = body.get("action")
        if not isinstance(action, str) or not action:
            return _refused(Refusal(400, "a request names its action"))
        if action not in ACTIONS and action not in PARTICIPANT_ACTIONS:
            return _refused(Refusal(400, f"unknown console action {action[:40]!r}"))
        fields = {k: v for k, v in body.items() if k not in ("session", "by", "id")}
        token = request.cookies.get(COOKIE)
        if action in ACTIONS:
            gate = self.daemon.gate
            found = None if gate is None else await gate.session(token)
            if found is None:
                response = _refused(Refusal(401, f"{action!r} needs a signed-in dealer or"
                                                 " supervisor: your session has ended or"
                                                 " was never valid; sign in"))
                if token:
                    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
                return response
            fields["session"] = token
        client = request.client  # the terminal: a vouching person's failures back off there
        answer = await self.daemon.on_console(
            fields, terminal=client.host if client is not None else "unknown client")
        if not answer.get("ok"):
            _log.info("console action refused", action=action, error=answer.get("error"))
        return _answer(answer)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        words = {404: f"no such page: {request.url.path[:80]}",
                 405: f"{request.method} is not allowed on {request.url.path[:80]}"}
        return JSONResponse({"ok": False, "error": words.get(exc.status_code, exc.detail)},
                            status_code=exc.status_code)


def create_console_app(daemon: ConsoleTable, config: ConsoleConfig) -> ConsoleApp:
    """The console of ``daemon`` (serve ``.app``; set ``.closing`` to end the streams)."""
    return ConsoleApp(daemon, config)
