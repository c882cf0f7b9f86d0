"""The desk API's edges: a request body read within its limit while it streams and parsed as
JSON within a depth, the errors of an operation mapped to the answer a caller can act on, and
404/405 answers in JSON for paths and methods the API does not have.

Only a database that does not answer is 503; a value or a constraint the database refuses is
the caller's 4xx (400, 409); anything else is a bug: 500, logged, with an id to quote.
"""

from __future__ import annotations

import json
import re
import secrets
from itertools import accumulate
from typing import Any, Final

import structlog
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match, Route

from game.errors import GameError
from leaderboard.central_lease import LeaseLost
from leaderboard.desk import Conflict, DeskError, NotFound, Refused
from runtime.errors import one_line

__all__ = ["MAX_BODY", "MAX_DEPTH", "TooLarge", "error_answer", "fallback_route", "read_json"]

MAX_BODY: Final = 2 * 1024 * 1024 + 64 * 1024  # a list upload of some tens of thousands of rows
MAX_DEPTH: Final = 32
_STRINGS: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS: Final = re.compile(rb"[\[\]{}]")
_STEP: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_log = structlog.get_logger("leaderboard.desk_api.routes")


class TooLarge(DeskError):
    """The request body is over the limit (HTTP 413)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the request body is larger than {limit} bytes")


async def read_json(request: Request, *, limit: int = MAX_BODY,
                    depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The request's JSON object ({} for an empty body): Content-Length checked first, then
    the stream counted as it arrives (TooLarge past `limit`); DeskError (400) saying what is
    wrong for anything but a JSON object nested at most `depth` deep."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit() or len(declared) > 20:
            raise DeskError(f"Content-Length {declared[:40]!r} is not a number of bytes")
        if int(declared) > limit:
            raise TooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(limit)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    deepest = max(accumulate(_STEP[b[0]] for b in _BRACKETS.findall(
        _STRINGS.sub(b'""', raw))), default=0)
    if deepest > depth:
        raise DeskError(f"the request body is nested {deepest} deep; at most {depth} is"
                        " allowed")
    try:
        data = json.loads(raw)
    except RecursionError:  # an unbalanced body the scan above under-counted
        raise DeskError(f"the request body is nested more than {depth} deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DeskError(f"the request body is not JSON: {one_line(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise DeskError("the request body must be a JSON object")
    return data


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def error_answer(exc: Exception, path: str) -> JSONResponse:
    """The answer for an operation's error: 4xx naming what is wrong, 503 when the database
    does not answer, 500 (logged, with an id) for a bug."""
    if isinstance(exc, Refused):
        return _error(403, str(exc), reasons=list(exc.verdict.reasons),
                      refusal_id=exc.refusal_id)
    if isinstance(exc, TooLarge):  # the rest of the body is not read: the connection ends
        answer = _error(413, str(exc), limit_bytes=exc.limit)
        answer.headers["Connection"] = "close"
        return answer
    if isinstance(exc, ClientDisconnect):  # nobody reads this answer; nothing was done
        return _error(400, "the client went away before the request body was complete")
    if isinstance(exc, NotFound):
        return _error(404, str(exc))
    if isinstance(exc, Conflict):
        return _error(409, str(exc))
    if isinstance(exc, GameError | ValueError | OverflowError):
        return _error(400, one_line(exc))
    if isinstance(exc, IntegrityError):
        _log.warning("desk_integrity_error", path=path, error=one_line(exc.orig or exc))
        return _error(409, "the action conflicts with a stored record (another desk may have"
                      " just done it); look the record up before trying again",
                      detail=one_line(exc.orig or exc)[:200])
    if isinstance(exc, DataError):
        return _error(400, "the database refused a value of the request (too long or out of"
                      " range)", detail=one_line(exc.orig or exc)[:200])
    if isinstance(exc, LeaseLost):  # the fence refused it (leaderboard.central_lease)
        return _error(503, "this central instance is no longer the active one: the action was"
                      " not recorded; send it again to the active instance",
                      detail=one_line(exc)[:200])
    if _unavailable(exc):
        _log.error("desk_database_error", path=path, error=repr(exc))
        return _error(503, "the database did not answer (unreachable, or busy with another"
                      " desk's action); the audit (GET /api/desk/audit) shows whether the"
                      " action was recorded before trying again",
                      detail=one_line(getattr(exc, "orig", None) or exc)[:200])
    incident = secrets.token_hex(4)
    _log.exception("desk_internal_error", path=path, incident=incident, exc_info=exc)
    return _error(500, f"internal error {incident} (a bug: it is logged); the audit shows"
                  " whether the action was recorded")


def _unavailable(exc: Exception) -> bool:
    """A connection that failed or timed out, or a database busy past its timeout."""
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def fallback_route(routes: list[BaseRoute]) -> Route:
    """A last route answering, in JSON, 405 (with Allow) for a known path with another method
    and 404 for any other path under the desk API."""
    async def not_here(request: Request) -> JSONResponse:
        scope = {**request.scope, "method": "__NONE__"}
        allowed = sorted({m for r in routes if isinstance(r, Route)
                          and r.matches(scope)[0] is Match.PARTIAL for m in r.methods or ()})
        if allowed:
            return JSONResponse({"error": f"{request.method} is not allowed on this path;"
                                 f" it takes {', '.join(allowed)}", "allowed": allowed},
                                status_code=405, headers={"Allow": ", ".join(allowed)})
        return _error(404, f"no desk API path {request.url.path[:200]!r} (see"
                      " GET /api/desk/openapi.json)")
    return Route("/{rest:path}", not_here, methods=["GET", "HEAD", "POST", "PUT", "PATCH",
                                                      "DELETE", "OPTIONS"])

