"""Serve the technician's bench in the daemon's own event loop, as the console is served
(`controller.console.server`): uvicorn on ``[bench] bind:port`` until the task is cancelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from controller.bench_config import BenchConfig
from controller.sim_bench.app import create_bench_app
from controller.sim_bench.bench import Bench, BenchDevices
from runtime.http_serving import listen as listen_on
from runtime.http_serving import serve_until_cancelled
from runtime.logs import get_logger

if TYPE_CHECKING:
    from controller.app import TableDaemon

__all__ = ["DaemonBenchView", "serve_bench"]

_GRACE_S: Final = 2.0
_log = get_logger("showdown.bench")


class DaemonBenchView:
    """A running daemon as the bench reads it (`controller.sim_bench.bench.BenchTable`)."""

    def __init__(self, daemon: TableDaemon) -> None:
        self.daemon = daemon

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.daemon.config.table

    def status(self) -> Mapping[str, Any]:
        """The daemon's status without its counters."""
        return self.daemon.status(counters=False)

    def chip_holders(self) -> Mapping[bytes, str]:
        """The table's float (empty before the daemon has started)."""
        service = self.daemon.service
        return {} if service is None else service.core.chips.chip_float.holders()

    def hand_cards(self) -> Sequence[str]:
        """The cards the hand in play has read."""
        service = self.daemon.service
        hand = None if service is None else service.core.hand
        return [] if hand is None else [str(card) for _, card in hand.cards()]

    def console_url(self) -> str | None:
        """The dealer's console, once it listens."""
        port = self.daemon.console_port
        if port is None:
            return None
        bind = self.daemon.config.console.bind
        return f"http://{f'[{bind}]' if ':' in bind else bind}:{port}/"


async def serve_bench(daemon: TableDaemon, devices: BenchDevices, config: BenchConfig, *,
                      on_port: Callable[[int], None] | None = None) -> None:
    """Run the bench's web server until cancelled; ``on_port`` gets the port listened on."""
    bench = create_bench_app(Bench(DaemonBenchView(daemon), devices), config)
    sock = listen_on(config.bind, config.port, source=daemon.config.source,
                     key="bench.port", host_key="bench.bind", backlog=16)
    port = int(sock.getsockname()[1])
    if on_port is not None:
        on_port(port)
    host = f"[{config.bind}]" if ":" in config.bind else config.bind
    _log.info("bench serving", url=f"http://{host}:{port}/")
    try:
        await serve_until_cancelled(bench.app, sock, grace_s=_GRACE_S,
                                    name=f"table[{daemon.config.table}].bench.http")
    finally:
        _log.info("bench stopped", port=port)
