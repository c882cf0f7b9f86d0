"""A fault at a simulated table never ends its daemon (issue 14 §2): the daemon's own virtual
dealer (what `showdown table run` starts when `[sim]` names it) meets a jammed shoe, and the
virtual desk is there without the virtual dealer.

The reported crash ("internal error: ExceptionGroup" from `showdown table run`): the shoe
jams, the simulator refuses to draw, the virtual dealer's error left its task and ended the
daemon's task group. Produced for real here: the simulated shoe is jammed before the first
card.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from controller.app import TableDaemon
from controller.journal import Journal
from controller.wiring import virtual_desk_task, virtual_table_task, wire_table
from tests.integration.daemon_support import GUARD_S, make_table

SUBSCRIBED_WAIT_S = 0.3


async def _run_until(daemon: TableDaemon, task: object, done: asyncio.Event) -> int:
    stop = asyncio.Event()
    async with asyncio.timeout(GUARD_S):
        runner = asyncio.create_task(daemon.run(stop, extra=task))  # type: ignore[arg-type]
        await daemon.ready.wait()
        await done.wait()
        stop.set()
        return await runner


async def test_a_jammed_shoe_is_cleared_by_the_virtual_dealer_and_the_daemon_plays_on(
        tmp_path: Path, short_dir: Path) -> None:
    table = make_table(tmp_path, short_dir, "embedded", players=1, seed=11)
    desk = table.desk  # the desk key the test enrolled in the table's config
    wired = wire_table(table.config)
    dealer = virtual_table_task(wired, desk, subscribed_wait_s=SUBSCRIBED_WAIT_S)
    finished = asyncio.Event()
    after: dict[str, object] = {}

    async def play(daemon: TableDaemon) -> None:
        assert wired.devices.shoe_sim is not None
        wired.devices.shoe_sim.set_state("jam")  # jammed before the first card is drawn
        try:
            await dealer(daemon)
            after.update(daemon.status())
        finally:
            finished.set()

    assert await _run_until(wired.daemon, play, finished) == 0  # no ExceptionGroup
    with Journal.open(wired.daemon.config.journal, read_only=True) as journal:
        messages = [(m.type, m.body) for m in journal.messages(1)]
    states = [b["state"] for t, b in messages if t == "device"]
    assert "jam" in states and "ready" in states[states.index("jam"):]  # cleared
    settled = [b for t, b in messages if t == "hand.settled"]
    assert settled, "no hand was played after the jam was cleared"
    assert [t for t, _ in messages].count("score.recorded") == 1
    assert after["heat"] is None and after["hands_opened"] == 10  # played out and closed


async def test_the_virtual_desk_seats_a_heat_without_the_virtual_dealer(
        tmp_path: Path, short_dir: Path) -> None:
    table = make_table(tmp_path, short_dir, "embedded", players=2)
    desk = table.desk  # the desk key the test enrolled in the table's config
    wired = wire_table(table.config)
    said: list[str] = []  # what the desk tells the technician (also in the log)
    task = virtual_desk_task(wired, desk, subscribed_wait_s=SUBSCRIBED_WAIT_S,
                             on_ready=said.append)
    finished = asyncio.Event()
    seen: dict[str, object] = {}

    async def desk_only(daemon: TableDaemon) -> None:
        try:
            await task(daemon)
            seen.update(daemon.status())
            [ready] = said
            # The technician signs in on the console as the dealer the desk enrolled.
            found = re.search(r"as dealer (\S+) PIN (\S+) ", ready)
            assert found is not None, ready
            staff_id, pin = found.groups()
            answer = await daemon.on_console({"action": "sign_in", "staff_id": staff_id,
                                              "pin": pin})
            seen["signed_in"] = answer.get("ok")
            seen["hands_dealt"] = daemon.status()["hands_opened"]
        finally:
            finished.set()

    assert await _run_until(wired.daemon, desk_only, finished) == 0
    assert seen["signed_in"] is True
    assert seen["heat"] is not None and seen["roster_version"] == 1
    assert sorted(seen["seats"]) == ["1", "2"]  # type: ignore[call-overload]
    assert seen["hands_dealt"] == 0  # nobody dealt: the dealing is the technician's
