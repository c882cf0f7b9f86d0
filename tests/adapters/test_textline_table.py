"""A whole table on the example adapter: the table daemon, its config choosing the text-line
shoe (`[shoe] kind = "sim"`, `driver = "text-line"`), plays a qualifying heat with the virtual
dealer drawing every card through the example's simulator and its driver; every hand settles,
and the journal's card records name the text-line driver's device and count its reads.

No broker is needed: the daemon's link keeps trying in the background and the virtual desk's
commands go straight in (as tests/integration/test_table_daemon.py does).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from showdown_textline_shoe.driver import TextLineShoe
from showdown_textline_shoe.simulator import TextLineShoeSimulator

from controller.config import read_table_config
from controller.journal import Journal
from controller.wiring import wire_table
from tests.integration.daemon_support import GUARD_S, free_port, make_table, running, short_dir

__all__ = ["short_dir"]  # the fixture (a short folder for the console socket)


async def test_a_heat_is_played_through_the_text_line_shoe(tmp_path: Path,
                                                           short_dir: Path) -> None:
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    text = table.path.read_text("utf-8")
    assert '[shoe]\nkind = "sim"\n' in text
    table.path.write_text(text.replace('[shoe]\nkind = "sim"\n',
                                       '[shoe]\nkind = "sim"\ndriver = "text-line"\n'))
    table = replace(table, config=read_table_config(table.path))
    assert table.config.shoe.driver == "text-line"
    wired = wire_table(table.config)
    daemon = wired.daemon
    async with running(daemon) as stop:
        assert isinstance(wired.devices.shoe_sim, TextLineShoeSimulator)
        assert daemon.devices is not None
        assert isinstance(daemon.devices.shoe, TextLineShoe)
        vt = wired.virtual_table(seed=11, players=1, heats=1)
        async with asyncio.timeout(GUARD_S * 2):
            await vt.run()
        dealt = list(wired.devices.shoe_sim.dealt)
        assert await stop() == 0
    assert vt.hands_played >= 10  # a qualifying heat: ten hands an entry
    with Journal.open(table.config.journal, read_only=True) as journal:
        records = list(journal.records())
    cards = [r.payload for r in records if r.kind == "card"]
    settles = [r for r in records if r.kind == "dealer" and r.payload["action"] == "settle"]
    assert len(cards) == len(dealt)
    assert [c["card"] for c in cards] == [str(c) for c in dealt]
    assert [c["read_index"] for c in cards] == list(range(len(dealt)))
    assert {c["device"] for c in cards} == {"sim-shoe"}
    assert {c.get("session") for c in cards} == {None}
    assert len(settles) == vt.hands_played  # each hand settled on the cards it read
