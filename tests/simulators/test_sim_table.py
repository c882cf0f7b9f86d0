"""A simulated table whose broker is away when its virtual desk first sends (simulators.sim_table).

Produced for real: the table points at a port where nothing listens yet; an embedded broker
starts there a little later. The virtual desk keeps trying, and the heat is played in full.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from controller.app import TableDaemon
from controller.embedded_broker import EmbeddedBroker
from simulators import sim_table
from simulators.sim_table import prepare_sim, virtual_table_task
from tests.integration.test_table_daemon import make_table, short_dir  # noqa: F401

GUARD_S = 120.0  # against hangs only
SUBSCRIBED_WAIT_S = 0.3  # the desk's wait for the table's subscription (3 s in production)


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_virtual_desk_waits_for_an_unreachable_broker(
        tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setattr(sim_table, "_SUBSCRIBED_WAIT_S", SUBSCRIBED_WAIT_S)
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
    async with asyncio.timeout(GUARD_S):
        runner = asyncio.create_task(daemon.run(stop, extra=play))
        await daemon.ready.wait()
        # The desk has tried, and waited, twice (two waits and the backoff of at most 0.5 s).
        await asyncio.sleep(2 * SUBSCRIBED_WAIT_S + 0.5)
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
