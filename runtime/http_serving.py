"""Serving a web app inside a service's own event loop: a listening socket that names the
setting when it cannot bind, a uvicorn server that leaves SIGTERM to the service, and
`BodyDeadline`, which answers 408 and closes a request whose body stops short (uvicorn
itself would wait for the rest for as long as the client keeps the connection). Used by the
central service's page and desk API and by the table's console and bench.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any, Final

import uvicorn

from game.errors import ConfigError
from runtime.logs import get_logger

__all__ = ["BODY_WAIT_S", "BodyDeadline", "InLoopServer", "listen", "serve_until_cancelled"]

BODY_WAIT_S: Final = 5.0  # how long a request's body may pause before it is answered 408

_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_log = get_logger("showdown.http")
_TIMED_OUT: Final = (b"the request's body stopped short: it was not sent in full in time\n")


class BodyDeadline:
    """ASGI middleware: each part of a request's body must arrive within ``seconds`` of the
    app asking for it (D407). A body that stops short (a Content-Length larger than
    what is sent) is answered ``408 Request Timeout`` with ``Connection: close``, logged as
    one warning line, and the app is told the client went away; a large body that keeps
    arriving, however slowly, is never cut. Requests without a body, and an event stream's
    wait for the client to leave, have no deadline."""

    def __init__(self, app: Any, *, seconds: float = BODY_WAIT_S, name: str = "http") -> None:
        self.app = app
        self.seconds = seconds
        self.name = name

    async def __call__(self, scope: _Message, receive: _Receive, send: _Send) -> None:
        """Serve one ASGI connection scope, its body under the deadline."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = {"body_done": False, "started": False, "timed_out": False, "received": 0}

        async def guarded_send(message: _Message) -> None:
            if state["timed_out"]:  # the client was answered 408: the app's late answer goes
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        async def guarded_receive() -> _Message:
            if state["body_done"]:
                return await receive()  # after the body: a wait for the client to leave
            try:
                async with asyncio.timeout(self.seconds):
                    message = await receive()
            except TimeoutError:
                await self._stalled(scope, state, send)
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                state["body_done"] = not message.get("more_body", False)
            else:
                state["body_done"] = True
            return message

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if not state["timed_out"]:
                raise  # whatever the app made of the missing body, the client has its 408

    async def _stalled(self, scope: _Message, state: dict[str, Any], send: _Send) -> None:
        state["timed_out"] = True
        headers = dict(scope.get("headers") or [])
        client = scope.get("client") or ("", 0)
        _log.warning("request_body_stalled", server=self.name, method=scope.get("method"),
                     path=scope.get("path"), client=f"{client[0]}:{client[1]}",
                     received=state["received"],
                     content_length=headers.get(b"content-length", b"").decode("latin-1"),
                     waited_s=self.seconds)
        if state["started"]:
            return
        await send({"type": "http.response.start", "status": 408,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(_TIMED_OUT)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": _TIMED_OUT})


class InLoopServer(uvicorn.Server):
    """uvicorn inside the service's loop: the service handles SIGTERM itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """No signal capture: the service's own handlers stay in place."""
        yield


def listen(host: str, port: int, *, source: str, key: str, backlog: int = 128,
           host_key: str | None = None) -> socket.socket:
    """A non-blocking listening TCP socket on host:port (0: a free port); ConfigError naming
    ``source`` and ``key`` (the port's setting) if it cannot bind, ``host_key`` (the
    address's, when given) if the address is not this machine's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it a response's body waits ~40 ms (Nagle and delayed ACK) behind its headers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(source, key, f"{where} is already in use (another process"
                              " listens there: stop it, or choose another port)") from exc
        if host_key is not None and (isinstance(exc, socket.gaierror)
                                     or exc.errno == errno.EADDRNOTAVAIL):
            key = host_key
        raise ConfigError(source, key,
                          f"cannot listen on {where}: {exc.strerror or exc}") from exc
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


async def serve_until_cancelled(app: Any, sock: socket.socket, *, name: str, grace_s: float,
                                on_stop: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``sock`` in this loop until the task is cancelled; then ``on_stop``
    (to end event streams), and open requests get ``grace_s`` before the socket closes. A
    request body that stops short is answered 408 after `BODY_WAIT_S` (`BodyDeadline`)."""
    server = InLoopServer(uvicorn.Config(BodyDeadline(app, name=name),
                                         log_config=None, access_log=False,
                                         lifespan="off", server_header=False,
                                         timeout_graceful_shutdown=max(1, int(grace_s))))
    task = asyncio.create_task(server.serve(sockets=[sock]), name=name)
    try:
        await asyncio.shield(task)
    finally:
        if on_stop is not None:
            on_stop()
        server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, grace_s + 2)
        sock.close()
