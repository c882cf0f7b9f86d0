"""A table PC that restarts between the settle and the payout (the crash test's kill can land
there): the new virtual dealer pays the settled hand, the readers verify it, the players pick
up their chips, and the open heat plays on. Before the fix the next hand's wagers went on top
of the payout and the dealer waited for ever for readers that could not see them."""

from __future__ import annotations

from pathlib import Path

from controller.journal import Journal
from controller.wiring import wire_table
from simulators.table_play import VirtualTable
from tests.integration.daemon_support import free_port, make_table, running


class _Settled(Exception):
    """Stops the first dealer right after its first settle, as a power cut would."""


class _StopsAfterSettle(VirtualTable):
    async def settle_payout(self) -> None:
        if self.hands_played:  # the restart's own check (before any hand) passes through
            raise _Settled
        await super().settle_payout()


def _types(path: Path) -> list[str]:
    with Journal.open(path, read_only=True) as journal:
        return [m.type for m in journal.messages(1)]


async def test_a_restart_that_left_a_payout_unpaid_pays_it_and_plays_on(
        tmp_path: Path, short_dir: Path) -> None:
    config = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}").config
    first = wire_table(config)
    async with running(first.daemon) as stop:
        vt = first.virtual_table(seed=11, players=2, heats=1)
        vt.__class__ = _StopsAfterSettle
        try:
            await vt.run()
        except _Settled:
            pass
        else:
            raise AssertionError("the first dealer was to stop after its first settle")
        assert first.daemon.service is not None
        assert first.daemon.status()["payout"] is not None  # settled, not yet paid
        assert await stop() == 0

    second = wire_table(config)  # a new process: the simulated table starts empty
    async with running(second.daemon) as stop:
        again = second.virtual_table(seed=11, players=2, heats=0)  # its config: the same seed
        await again.run()  # pays the settled hand, then plays the open heat out
        status = second.daemon.status()
        assert await stop() == 0
    assert again.payouts_verified >= 2 and again.hands_played >= 1
    assert status["heat"] is None and status["payout"] is None
    types = _types(config.journal)
    assert types.count("hand.settled") == 1 + again.hands_played
    assert "heat.closed" in types or "score.recorded" in types
