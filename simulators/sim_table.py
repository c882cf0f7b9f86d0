"""What a simulated table needs besides its simulated devices: its own key (made on first
run), a virtual desk with a fresh key enrolled for this run, and the virtual dealer task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from runtime.backoff import Backoff
from runtime.logs import get_logger
from simulators.desk import VirtualDesk
from simulators.virtual_table import TableStuck, VirtualTable
from wire.mqtt import MqttError
from wire.signing import Signer, load_private_key, save_private_key

if TYPE_CHECKING:
    from controller.app import TableDaemon
    from controller.config import TableConfig

__all__ = ["DESK_NAME", "prepare_sim", "virtual_table_task"]

DESK_NAME = "virtual-desk"
_DESK_PATIENCE_S = 120.0  # how long the virtual desk keeps trying an unreachable broker
_SUBSCRIBED_WAIT_S = 3.0  # then it says it is still waiting for the table
_log = get_logger("showdown.sim")


def prepare_sim(config: TableConfig) -> tuple[dict[str, str], Signer]:
    """Make the table's key if this simulated table has none; a desk key for this run."""
    if not config.table_key.exists():
        config.table_key.parent.mkdir(parents=True, exist_ok=True)
        save_private_key(Signer.generate(config.table), config.table_key)
        _log.info("simulated table: made a table key", path=str(config.table_key))
    load_private_key(config.table_key)  # refuse a key file with loose permissions now
    desk = Signer.generate(DESK_NAME)
    return {DESK_NAME: desk.public_key.base64}, desk


def virtual_table_task(config: TableConfig, desk_signer: Signer
                       ) -> Callable[[TableDaemon], Coroutine[Any, Any, None]]:
    """The coroutine the daemon runs beside its own tasks: the virtual desk and dealer."""
    sim = config.sim
    assert sim is not None

    async def run(daemon: TableDaemon) -> None:
        link = daemon.link
        assert link is not None
        desk = VirtualDesk(host=link.settings.host, port=link.settings.port,
                           venue=config.venue, signer=desk_signer)

        async def send(command: str, **body: Any) -> None:
            # The broker away (restarting, a network cut): try again, as a desk clerk would;
            # the daemon reconnects by itself meanwhile. Give up after _DESK_PATIENCE_S.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _DESK_PATIENCE_S
            backoff = Backoff(initial=0.5, maximum=5.0)
            while True:
                try:
                    # A command published before the table ever subscribed would be lost:
                    # the broker queues only for a session it knows.
                    try:
                        async with asyncio.timeout(_SUBSCRIBED_WAIT_S):
                            await link.wait_subscribed()
                    except TimeoutError:
                        raise OSError("the table is not connected to the broker") from None
                    await desk.send(config.table, command, **body)
                    return
                except (MqttError, OSError) as exc:
                    if loop.time() > deadline:
                        raise TableStuck(f"the virtual desk could not send {command}:"
                                         f" {exc}") from exc
                    _log.warning("virtual desk: broker unreachable, retrying",
                                 command=command, error=str(exc))
                    await asyncio.sleep(backoff.next_delay())

        table = VirtualTable(daemon, desk=send, seed=sim.seed, stage=sim.stage,
                             players=sim.players, heats=sim.heats, hand_pause=sim.hand_pause)
        try:
            await table.run()
        except TableStuck as exc:
            _log.error("virtual dealer stopped", reason=str(exc))
            return
        _log.info("virtual dealer finished", heats=sim.heats, hands=table.hands_played)

    return run
