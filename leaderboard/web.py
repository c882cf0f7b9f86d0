"""The leaderboard's web side: the page for the casino's screens, the JSON API and live updates.

    GET /                the page (static/index.html: HTML, CSS and a small inline script)
    GET /api/standings   the standings document (leaderboard/standings/view.py), JSON
    GET /events          server-sent events: ``event: standings`` with the document at once,
                         then again whenever it changes; ``event: status`` (the service's
                         link to the tables and the page's version, see below) at once and
                         every 5 s, or without a status source a ``: keep-alive`` every 15 s
    GET /healthz         {"status": "ok" | "degraded" | "starting", ...}: 503 only before the
                         first standings; "degraded" while the broker is not subscribed
    /api/desk/...        the desk API (leaderboard/desk_api/routes.py, bearer token), when mounted;
                         a desk request that writes makes the standings recompute

`StandingsFeed` holds the latest document and its version. Ingest calls `changed()` after it
commits; the feed recomputes (in a worker thread: the queries are blocking) and wakes every
SSE stream and the retained-topic publisher. The service's feed computes the first change
after a quiet spell at once and then at most once per ``debounce`` seconds (``leading``); a
feed without ``leading`` waits ``debounce`` after each change first. The version only moves
when the content changes, not when only the time of computing does.

The status event is what the page's connection indicator tells, end to end: the service's
``state`` (leaderboard.app.LeaderboardService.link_status: "live", "stale", "waiting",
"offline"), ``page`` (the version of the page served: a page that sees another one reloads
itself, so room screens take a new page after an upgrade) and ``page_seconds`` (how long a
room screen shows each page of rows). The page itself says "reconnecting" when the stream
drops or its status events stop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from runtime.logs import get_logger

__all__ = [
    "KEEPALIVE_SECONDS",
    "PAGE",
    "STATUS_SECONDS",
    "StandingsFeed",
    "create_app",
    "sse_event",
]

KEEPALIVE_SECONDS: Final = 15.0
STATUS_SECONDS: Final = 5.0
_PAGE_VERSION_MARK: Final = "__PAGE_VERSION__"
PAGE: Final = Path(__file__).resolve().parent / "static" / "index.html"
_VOLATILE: Final = frozenset({"version", "generated_at", "generated_local"})
_log = get_logger("leaderboard.web")

Compute = Callable[[], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Current:
    version: int
    doc: dict[str, Any]
    encoded: bytes  # the document as compact JSON (what the API and SSE send)


def _content(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _VOLATILE}


class StandingsFeed:
    """The latest standings document, recomputed after changes; SSE streams wait on it.

    ``compute`` is blocking (database queries) and runs in a worker thread. ``changed`` may be
    called from any thread. With ``leading`` a change after a quiet spell is computed at
    once and the changes that follow within ``debounce`` seconds of the end of a computation
    wait for one more, at the end of that time (a burst costs one computation per
    ``debounce``); without it every computation waits ``debounce`` after the change that
    started it. ``refresh_every`` recomputes anyway (the week, the stage and the clock move
    on without any message). A computation that fails keeps the last good document; a failure
    ``unavailable`` recognises (the database lost in a failover) is one warning line, any other
    is logged with its traceback (a bug).
    """

    def __init__(self, compute: Compute, *, debounce: float = 0.5,
                 refresh_every: float = 60.0, leading: bool = False,
                 unavailable: Callable[[BaseException], bool] = lambda _exc: False) -> None:
        self._compute = compute
        self._unavailable = unavailable
        self._debounce = debounce
        self._leading = leading
        self._refresh_every = refresh_every
        self._current: _Current | None = None
        self._dirty = asyncio.Event()
        self._new = asyncio.Condition()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.failures = 0
        self.computations = 0  # how many times `compute` ran

    @property
    def current(self) -> _Current | None:
        """The latest document (None until the first computation)."""
        return self._current

    @property
    def version(self) -> int:
        """The latest document's version (0 before the first)."""
        return self._current.version if self._current else 0

    def is_closed(self) -> bool:
        """True once close() was called: streams end."""
        return self._closed

    def changed(self, _what: str | None = None) -> None:
        """Something was committed: recompute soon (ingest's on_change hook; thread-safe)."""
        loop = self._loop
        if loop is None:
            self._dirty.set()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._dirty.set()
        else:
            loop.call_soon_threadsafe(self._dirty.set)

    async def refresh(self) -> int:
        """Recompute now; returns the version (raised only when content changed)."""
        self._loop = asyncio.get_running_loop()
        self.computations += 1
        doc = await asyncio.to_thread(self._compute)
        current = self._current
        if current is not None and _content(current.doc) == _content(doc):
            return current.version
        version = (current.version if current else 0) + 1
        doc = {**doc, "version": version}
        encoded = json.dumps(doc, separators=(",", ":"), ensure_ascii=False,
                             allow_nan=False).encode("utf-8")
        async with self._new:
            self._current = _Current(version, doc, encoded)
            self._new.notify_all()
        return version

    async def run(self) -> None:
        """Recompute after changes (see the class) and every `refresh_every` s, until closed."""
        loop = self._loop = asyncio.get_running_loop()
        done = float("-inf")  # when the last computation ended (loop time)
        while not self.is_closed():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._refresh_every):
                    await self._dirty.wait()
            if self.is_closed():
                break
            if self._dirty.is_set() and self._debounce > 0:
                wait = (done + self._debounce - loop.time() if self._leading
                        else self._debounce)
                if wait > 0:
                    await asyncio.sleep(wait)
            self._dirty.clear()
            try:
                await self.refresh()
            except Exception as exc:
                # The page keeps the last good standings; the next change tries again.
                self.failures += 1
                if self._unavailable(exc):
                    _log.warning("standings_refresh_failed", failures=self.failures,
                                 error=str(exc).splitlines()[0] if str(exc) else repr(exc))
                else:
                    _log.exception("standings_refresh_failed", failures=self.failures)
            done = loop.time()

    async def wait_newer(self, version: int, timeout: float | None = None) -> _Current | None:
        """The document once its version is above `version`; None on timeout or close."""
        async with self._new:
            try:
                async with asyncio.timeout(timeout):
                    await self._new.wait_for(
                        lambda: self._closed or (self._current is not None
                                                 and self._current.version > version))
            except TimeoutError:
                return None
        if self._closed:
            return None
        return self._current

    async def close(self) -> None:
        """End every stream and the run loop."""
        self._closed = True
        self._dirty.set()
        async with self._new:
            self._new.notify_all()


def sse_event(current: _Current) -> bytes:
    """One server-sent event carrying a standings document."""
    return b"id: %d\nevent: standings\ndata: %s\n\n" % (current.version, current.encoded)


def status_event(status: Mapping[str, Any]) -> bytes:
    """One server-sent event carrying the service's status (no id: it is not a version)."""
    data = json.dumps(status, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return b"event: status\ndata: %s\n\n" % data.encode("utf-8")


def page_version(html: str) -> str:
    """The version of a page: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(html.encode("utf-8")).hexdigest()[:12]


_NO_STORE: Final = {"Cache-Control": "no-store"}


def _inline_hashes(html: str, tag: str) -> list[str]:
    pattern = re.compile(rf"<{tag}>(.*?)</{tag}>", re.DOTALL)
    return ["'sha256-" + base64.b64encode(hashlib.sha256(m.encode("utf-8")).digest()).decode()
            + "'" for m in pattern.findall(html)]


def _security_headers(html: str) -> dict[str, str]:
    scripts = " ".join(_inline_hashes(html, "script")) or "'none'"
    styles = " ".join(_inline_hashes(html, "style")) or "'none'"
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; script-src {scripts}; style-src {styles}; "
            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'"),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        **_NO_STORE,
    }


def create_app(feed: StandingsFeed, *, desk: Sequence[BaseRoute] | None = None,
               health: Callable[[], Mapping[str, Any]] | None = None,
               status: Callable[[], Mapping[str, Any]] | None = None,
               page_seconds: float = 10.0, page: Path = PAGE) -> Starlette:
    """The Starlette app of the page, the JSON API, SSE and health; the desk API when given.

    ``status`` (the service's link to the tables) is sent on the event stream as it is,
    with the page's version and ``page_seconds``. The desk routes (leaderboard.desk_api.routes.
    desk_routes) check the desk's bearer token themselves; the service builds them only when
    a desk token is configured.
    """
    template = page.read_text(encoding="utf-8")
    version = page_version(template)
    html = template.replace(_PAGE_VERSION_MARK, version)
    page_headers = _security_headers(html)

    def status_now() -> dict[str, Any] | None:
        if status is None:
            return None
        return {**status(), "page": version, "page_seconds": page_seconds}

    async def index(_: Request) -> Response:
        return HTMLResponse(html, headers=page_headers)

    async def api_standings(_: Request) -> Response:
        current = feed.current
        if current is None:
            return JSONResponse({"status": "starting", "error": "standings not computed yet"},
                                status_code=503, headers=_NO_STORE)
        return Response(current.encoded, media_type="application/json", headers=_NO_STORE)

    async def events(request: Request) -> Response:
        last = request.headers.get("last-event-id", "")
        return StreamingResponse(
            _stream(feed, int(last) if last.isdigit() else 0, status_now),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def healthz(_: Request) -> Response:
        extra = dict(health()) if health is not None else {}
        if feed.current is None:
            state, code = "starting", 503
        elif extra.pop("ok", True) is False:
            state, code = "degraded", 200  # the page is served; the broker is not subscribed
        else:
            state, code = "ok", 200
        body = {"status": state, "version": feed.version, "refresh_failures": feed.failures,
                **extra}
        return JSONResponse(body, status_code=code, headers=_NO_STORE)

    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET", "HEAD"]),
        Route("/api/standings", api_standings, methods=["GET", "HEAD"]),
        Route("/events", events, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
    ]
    if desk is not None:
        routes.append(Mount("/api/desk", app=_ChangesStandings(Router(routes=list(desk)), feed)))
    return Starlette(routes=routes)


class _ChangesStandings:
    """After a desk request that may write (not GET/HEAD), the standings are recomputed:
    buy-ins move the pools, seatings the line-ups, without waiting for the periodic refresh."""

    def __init__(self, app: ASGIApp, feed: StandingsFeed) -> None:
        self.app = app
        self.feed = feed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "http" and scope.get("method") not in ("GET", "HEAD"):
                self.feed.changed("desk")


async def _stream(feed: StandingsFeed, seen: int,
                  status: Callable[[], dict[str, Any] | None]) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    yield b"retry: 3000\n\n"
    first = status()
    if first is not None:
        yield status_event(first)
    told = loop.time()  # when the status was last sent
    current = feed.current
    if current is not None:
        # Always send the document on connect: after a service restart versions start again.
        yield sse_event(current)
        seen = current.version
    wait = KEEPALIVE_SECONDS if first is None else STATUS_SECONDS
    while not feed.is_closed():
        newer = await feed.wait_newer(seen, timeout=max(0.0, told + wait - loop.time()))
        if feed.is_closed():
            break
        if newer is not None:
            seen = newer.version
            yield sse_event(newer)
        if loop.time() - told >= wait:  # also while the standings change all the time
            now = status()
            yield b": keep-alive\n\n" if now is None else status_event(now)
            told = loop.time()
