"""Serving a web app inside a service's own event loop: a listening socket that names the
setting when it cannot bind, and a uvicorn server that leaves SIGTERM to the service. Used by
the central service's page and desk API and by the table's console and bench.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from game.errors import ConfigError

__all__ = ["InLoopServer", "listen", "serve_until_cancelled"]


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
    (to end event streams), and open requests get ``grace_s`` before the socket closes."""
    server = InLoopServer(uvicorn.Config(app, log_config=None, access_log=False,
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
