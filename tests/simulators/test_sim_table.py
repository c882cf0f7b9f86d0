"""A simulated table whose broker is away when its virtual desk first sends (simulators.sim_table).

Produced for real: the table points at a port where nothing listens yet; an embedded broker
starts there a little later. The virtual desk keeps trying, and the heat is played in full.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import structlog

from controller.app import TableDaemon
from controller.embedded_broker import EmbeddedBroker
from simulators.sim_table import prepare_sim, virtual_table_task
from tests.integration.test_table_daemon import make_table, short_dir  # noqa: F401

GUARD_S = 120.0  # against hangs only


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_virtual_desk_waits_for_an_unreachable_broker(tmp_path: Path,
                                                                short_dir: Path  # noqa: F811
                                                                ) -> None:
    port = _unused_port()
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{port}")
    desk_keys, desk = prepare_sim(table.config)
    daemon = TableDaemon(table.config, extra_desk_keys=desk_keys)
    dealer = virtual_table_task(table.config, desk)
    finished = asyncio.Event()

    async def play(d: TableDaemon) -> None:
        try:
            await dealer(d)
        finally:
            finished.set()

    stop = asyncio.Event()
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(GUARD_S):
            runner = asyncio.create_task(daemon.run(stop, extra=play))
            await daemon.ready.wait()
            while not any(e["event"].startswith("virtual desk: broker unreachable")
                          for e in logs):
                assert not finished.is_set(), "the virtual dealer gave up at once"
                await asyncio.sleep(0.05)
            async with EmbeddedBroker(port=port):
                await finished.wait()
                status = daemon.status()
                stop.set()
                await runner
    assert status.get("heat") is None  # opened, played and closed
    assert status["hands_opened"] >= 10  # 10 hands per qualifying entry (tournament.md)
    assert not [e for e in logs if e["event"] == "virtual dealer stopped"]
    assert [e for e in logs if e["event"] == "virtual dealer finished"]
