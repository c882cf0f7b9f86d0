"""Serve the console in the daemon's own event loop: uvicorn on ``[console] bind:port`` until the
task is cancelled, then a clean shutdown (the event streams end, open requests get a moment).

The socket is bound here, so a port of 0 becomes a real free port at once and is reported
through ``on_port`` before the first request can arrive. uvicorn's access log is off and its
own logging is left to the service's structlog set-up; the console logs through
`runtime.logs`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Final

from controller.console_config import ConsoleConfig
from controller.ports import ConsoleTable
from runtime.logs import get_logger

__all__ = ["listen", "serve_console"]

_GRACE_S: Final = 3.0
_log = get_logger("showdown.console")


def listen(host: str, port: int, *, source: str = "console") -> socket.socket:
    """A listening socket for the console on host:port (0: a free port); ConfigError naming
    the config file (``source``) and ``console.port`` or ``console.bind`` if it cannot
    bind."""
    from runtime.http_serving import listen as listen_on  # noqa: PLC0415 (D415)
    return listen_on(host, port, source=source, key="console.port", host_key="console.bind",
                     backlog=64)


async def serve_console(daemon: ConsoleTable, config: ConsoleConfig, *,
                        on_port: Callable[[int], None] | None = None) -> None:
    """Run the console's web server until cancelled; ``on_port`` gets the port listened on."""
    # The web stack (Starlette, uvicorn, segno) is imported here, in the task the daemon
    # starts just before READY=1, not at the daemon's import: a restart is ready without it.
    from controller.console.app import create_console_app  # noqa: PLC0415 (D415)
    from runtime.http_serving import serve_until_cancelled  # noqa: PLC0415 (D415)

    console = create_console_app(daemon, config)
    sock = listen(config.bind, config.port, source=daemon.config.source)
    port = int(sock.getsockname()[1])
    if on_port is not None:
        on_port(port)
    host = f"[{config.bind}]" if ":" in config.bind else config.bind
    _log.info("console serving", url=f"http://{host}:{port}/")
    try:
        await serve_until_cancelled(console.app, sock, grace_s=_GRACE_S,
                                    name=f"table[{daemon.config.table}].console.http",
                                    on_stop=console.closing.set)
    finally:
        _log.info("console stopped", port=port)
