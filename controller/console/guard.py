"""The console's checks on every request, before anything reaches the table.

- `ClientGuard` (ASGI middleware): a client address not in ``[console] allowed_clients`` gets
  403; a ``Host`` that is not an address literal or ``localhost`` gets 421 (a DNS-rebinding
  page cannot name the console); an ``Origin`` other than the console's own, or a
  ``Sec-Fetch-Site: cross-site`` request, gets 403 (CSRF). It also puts the security headers
  (CSP, frame and sniffing rules, no caching) on every answer.
- `read_json`: a POST body must be ``application/json``, at most `MAX_BODY` bytes (checked
  from Content-Length and again while reading, so a large body is never held in memory),
  UTF-8 JSON with no NaN or Infinity, an object, nested at most `MAX_DEPTH` deep.

A refusal is a `Refusal` with the HTTP status and a reason a person can read; nothing has
been changed when one is raised.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CSP", "MAX_BODY", "MAX_DEPTH", "ClientGuard", "Refusal", "read_json"]

MAX_BODY: Final = 512 * 1024
MAX_DEPTH: Final = 20
CSP: Final = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
              " connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none';"
              " form-action 'self'; frame-ancestors 'none'")
_HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


class Refusal(Exception):
    """A request the console refuses: ``status`` and a reason for the person."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        found = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _host_name(host: str) -> str:
    """The name part of a Host header: ``[::1]:8080`` -> ``::1``, ``a:80`` -> ``a``."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class ClientGuard:
    """Refuses requests from elsewhere and cross-site requests; adds the security headers."""

    def __init__(self, app: ASGIApp, *, allowed: Iterable[str], service: str = "console",
                 serves: str = "only the table's own screens") -> None:
        """``service``: the config section named in a refusal (the console, the bench);
        ``serves``: who it is for."""
        self.app = app
        self.allowed = {a for a in (_address(x) for x in allowed) if a is not None}
        self.service, self.serves = service, serves

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is not None:
            await _refuse(send, refusal)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (n, v) for n, v in _HEADERS if n not in present]
            await send(message)

        await self.app(scope, receive, with_headers)

    def check(self, scope: Scope) -> Refusal | None:
        """Why a request must be refused (None: let it in)."""
        client = scope.get("client")
        address = None if not client else _address(str(client[0]))
        if address is None or address not in self.allowed:
            who = client[0] if client else "an unknown address"
            return Refusal(403, f"the {self.service} does not serve {who}: {self.serves}"
                                f" ({self.service}.allowed_clients) may use it")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        name = _host_name(host)
        if name != "localhost" and _address(name) is None:
            return Refusal(421, f"the {self.service} answers to its address, not to the name"
                                f" {name[:60]!r}")
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            return Refusal(403, f"a request from another site ({origin[:80]}) is refused:"
                                f" use the {self.service}'s own pages")
        if headers.get("sec-fetch-site") == "cross-site":
            return Refusal(403, f"a cross-site request is refused: use the {self.service}'s own"
                                " pages")
        return None


async def _refuse(send: Send, refusal: Refusal) -> None:
    body = json.dumps({"ok": False, "error": refusal.reason}).encode()
    await send({"type": "http.response.start", "status": refusal.status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *_HEADERS]})
    await send({"type": "http.response.body", "body": body})


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows here")


def _depth(value: Any) -> int:
    """How deeply objects and arrays nest in ``value`` (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object, or a `Refusal` saying what is wrong with it."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Refusal(415, f"send JSON (Content-Type: application/json), not"
                           f" {kind[:60] or 'no content type'}")
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise Refusal(400, "the Content-Length header is not a number")
        if int(length) > MAX_BODY:
            raise Refusal(413, f"the request body is over {MAX_BODY // 1024} KiB")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise Refusal(413, f"the request body is over {MAX_BODY // 1024} KiB")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        raise Refusal(400, "the request has no body: send a JSON object")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise Refusal(400, "the body is not UTF-8 text") from None
    except RecursionError:
        raise Refusal(400, f"the JSON nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise Refusal(400, f"the body is not valid JSON: {str(exc)[:120]}") from None
    if not isinstance(data, dict):
        raise Refusal(400, f"the body must be a JSON object, not {type(data).__name__}")
    if _depth(data) > MAX_DEPTH:
        raise Refusal(400, f"the JSON nests deeper than {MAX_DEPTH} levels")
    return data
