"""A simulated table whose broker is away when its virtual desk first sends (controller.wiring).

Produced for real: the table points at a port where nothing listens yet; an embedded broker
starts there a little later. The virtual desk keeps trying, and the heat is played in full.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from controller.app import TableDaemon
from controller.embedded_broker import EmbeddedBroker
from controller.wiring import _SUBSCRIBED_WAIT_S, prepare_sim, virtual_table_task, wire_table
from tests.integration.daemon_support import make_table, short_dir  # noqa: F401

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
    wired = wire_table(table.config, extra_desk_keys=desk_keys)
    daemon = wired.daemon
    dealer = virtual_table_task(wired, desk)
    finished = asyncio.Event()

    async def play(d: TableDaemon) -> None:
        try:
            await dealer(d)
        finally:
            finished.set()

    stop = asyncio.Event()
    async with asyncio.timeout(GUARD_S):
        runner = asyncio.create_task(daemon.run(stop, extra=play))
        await daemon.ready.wait()
        await asyncio.sleep(2 * _SUBSCRIBED_WAIT_S)  # the desk has tried, and waited, twice
        assert not finished.is_set(), "the virtual dealer gave up"
        assert daemon.status()["hands_opened"] == 0
        async with EmbeddedBroker(port=port):
            await finished.wait()
            status = daemon.status()
            journal = daemon.journal
            assert journal is not None
            scores = [m.body for m in journal.messages(1) if m.type == "score.recorded"]
            stop.set()
            await runner
    assert status.get("heat") is None  # opened, played and closed
    assert status["hands_opened"] >= 10  # 10 hands per qualifying entry (tournament.md)
    assert not status["unacknowledged_scores"]
    assert len(scores) == 3, scores  # every seated entry (3 players) was scored
