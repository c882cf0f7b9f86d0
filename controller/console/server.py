"""Serve the console in the daemon's own event loop: uvicorn on ``[console] bind:port`` until the
task is cancelled, then a clean shutdown (the event streams end, open requests get a moment).

The socket is bound here, so a port of 0 becomes a real free port at once and is reported
through ``on_port`` before the first request can arrive. uvicorn's access log is off and its
own logging is left to the service's structlog set-up; the console logs through
`runtime.logs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

import uvicorn

from controller.console.app import create_console_app
from controller.console_config import ConsoleConfig
from game.errors import ConfigError
from runtime.logs import get_logger

if TYPE_CHECKING:
    from controller.app import TableDaemon

__all__ = ["listen", "serve_console"]

_GRACE_S: Final = 3.0
_log = get_logger("showdown.console")


class _Server(uvicorn.Server):
    """uvicorn inside the daemon's loop: the daemon handles SIGTERM itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0: a free port); ConfigError if it cannot bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError("console", "bind/port",
                          f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def serve_console(daemon: TableDaemon, config: ConsoleConfig, *,
                        on_port: Callable[[int], None] | None = None) -> None:
    """Run the console's web server until cancelled; ``on_port`` gets the port listened on."""
    console = create_console_app(daemon, config)
    sock = listen(config.bind, config.port)
    port = int(sock.getsockname()[1])
    if on_port is not None:
        on_port(port)
    server = _Server(uvicorn.Config(console.app, log_config=None, access_log=False,
                                    lifespan="off", timeout_graceful_shutdown=int(_GRACE_S),
                                    server_header=False))
    host = f"[{config.bind}]" if ":" in config.bind else config.bind
    _log.info("console serving", url=f"http://{host}:{port}/")
    task = asyncio.create_task(server.serve(sockets=[sock]),
                               name=f"table[{daemon.config.table}].console.http")
    try:
        await asyncio.shield(task)
    finally:
        console.closing.set()
        server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, _GRACE_S + 2)
        sock.close()
        _log.info("console stopped", port=port)
