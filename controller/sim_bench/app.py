"""The bench's web app: its page and its JSON API (docs/operations/bench.md).

Every request first passes the console's `ClientGuard` with ``[bench] allowed_clients`` (403
for any other address, a cross-site request refused). Each action is a POST with a JSON
object; an answer is ``{"ok": true, "done": "<what was done>", ...}`` or a 4xx with
``{"ok": false, "error": "<why>"}`` and nothing changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from controller.bench_config import BenchConfig
from controller.console.guard import ClientGuard, Refusal, read_json
from controller.sim_bench.bench import DEVICES, Bench, BenchRefusal
from runtime.logs import get_logger

__all__ = ["BenchApp", "create_bench_app"]

STATIC: Final = Path(__file__).parent / "static"
_FILES: Final = {"bench.js": "text/javascript", "bench.css": "text/css"}
_log = get_logger("showdown.bench")
Action = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _table_actions(bench: Bench) -> dict[str, Action]:
    """Deal, place, take and tap."""

    async def deal(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.deal(body.get("card"))

    async def place(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.place(body.get("seat"), body.get("spot"), body.get("cents"),
                                 body.get("from", "stack"))

    async def take(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.take(body.get("seat"), body.get("spot"), body.get("cents"))

    async def tap(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.tap(body.get("number"), body.get("form", "track2"))

    async def state(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.shoe_state(body.get("state"))

    async def power(_: dict[str, Any]) -> dict[str, Any]:
        return await bench.power_cycle()

    async def unknown(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.unknown_chip(body.get("seat"), body.get("spot"), body.get("count", 1))

    return {"shoe/deal": deal, "chips/place": place, "chips/take": take, "ids/tap": tap,
            "shoe/state": state, "shoe/power": power, "chips/unknown": unknown}


def _device_actions(bench: Bench, role: str) -> dict[str, Action]:
    """Unplug, plug and fault of one device."""

    async def unplug(_: dict[str, Any]) -> dict[str, Any]:
        return await bench.plug(role, False)

    async def plug(_: dict[str, Any]) -> dict[str, Any]:
        return await bench.plug(role, True)

    async def fault(body: dict[str, Any]) -> dict[str, Any]:
        return await bench.fault(role, body.get("name"), body.get("value"))

    return {f"{role}/unplug": unplug, f"{role}/plug": plug, f"{role}/fault": fault}


def _refused(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": reason}, status_code=status)


class BenchApp:
    """The routes of one table's bench; `app` is the ASGI app to serve."""

    def __init__(self, bench: Bench, config: BenchConfig) -> None:
        self.bench = bench
        self.page = (STATIC / "bench.html").read_text(encoding="utf-8")
        self.files = {name: (STATIC / name).read_bytes() for name in _FILES}
        self.actions: dict[str, Action] = dict(_table_actions(bench))
        for role in DEVICES:
            self.actions.update(_device_actions(bench, role))
        routes = [
            Route("/", self.index, methods=["GET"]),
            Route("/static/{name}", self.static, methods=["GET"]),
            Route("/api/state", self.state, methods=["GET"]),
            Route("/api/{device}/{action}", self.action, methods=["POST"]),
        ]
        starlette = Starlette(routes=routes,
                              exception_handlers={HTTPException: self._http_error})
        self.app = ClientGuard(starlette, allowed=config.allowed_clients, service="bench",
                               serves="only the technician's machines")

    async def index(self, _: Request) -> Response:
        """The bench page."""
        return HTMLResponse(self.page)

    async def static(self, request: Request) -> Response:
        """The page's script and stylesheet (nothing else is served from disk)."""
        name = request.path_params["name"]
        if name not in self.files:
            return _refused(404, f"no such file: {name[:60]}")
        return Response(self.files[name], media_type=_FILES[name])

    async def state(self, _: Request) -> Response:
        """The simulated devices now."""
        return JSONResponse(self.bench.state())

    async def action(self, request: Request) -> Response:
        """One bench action (`actions`); its answer, or the refusal."""
        name = f"{request.path_params['device']}/{request.path_params['action']}"
        act = self.actions.get(name)
        if act is None:
            return _refused(404, f"no bench action {name[:60]!r}: one of"
                                 f" {', '.join(sorted(self.actions))}")
        try:
            body = await read_json(request)
            answer = await act(body)
        except Refusal as refusal:
            return _refused(refusal.status, refusal.reason)
        except BenchRefusal as refusal:
            _log.info("bench action refused", action=name, error=refusal.reason)
            return _refused(refusal.status, refusal.reason)
        _log.info("bench action", action=name, done=answer.get("done"))
        return JSONResponse(answer)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        words = {404: f"no such page: {request.url.path[:80]}",
                 405: f"{request.method} is not allowed on {request.url.path[:80]}"}
        return _refused(exc.status_code, words.get(exc.status_code, str(exc.detail)))


def create_bench_app(bench: Bench, config: BenchConfig) -> BenchApp:
    """The bench app of these actions (serve ``.app``)."""
    return BenchApp(bench, config)
