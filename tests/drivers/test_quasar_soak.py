"""The QuasarMX driver through a long run of every line fault at once, unplugs and moves:
nothing but readings and alerts leaves it, no chip is ever read on a spot it never lay on,
and once the faults stop every spot is read as it lies."""

from __future__ import annotations

import asyncio
import random

import pytest

from drivers.protocols import ChipReading
from drivers.quasar import QuasarChipReader
from drivers.quasar_settings import QuasarSettings
from drivers.readings import ChipInventory, DeviceAlert, SpotId
from simulators.quasar_table import QuasarTable, ReaderPlan

pytestmark = pytest.mark.soak  # about 15 s of faults (docs/testing.md)

FAULTS = {"garbage": 0.1, "drop": 0.03, "duplicate": 0.1, "drop_incoming": 0.03,
          "repeat": 0.1, "delay": 0.002}


async def test_every_fault_at_once_for_a_while() -> None:
    rng = random.Random(30)
    plans = [ReaderPlan(ports={1: SpotId(1, "ante"), 2: SpotId(1, "odds"),
                               5: SpotId(2, "ante")}),
             ReaderPlan(ports={1: SpotId(3, "ante"), 2: SpotId(3, "play")}, transport="tcp")]
    with QuasarTable(plans, speed=20.0) as table:
        for name, value in FAULTS.items():
            table.set_fault(name, value)
        settings = QuasarSettings(readers=table.links(), stall_seconds=0.4,
                                  backoff_initial=0.02, backoff_max=0.2)
        ever: dict[SpotId, set[bytes]] = {s: set() for s in table.spots()}
        got: list[ChipReading] = []
        async with QuasarChipReader(settings, rng=random.Random(1)) as reader:

            async def collect() -> None:
                async for item in reader:
                    got.append(item)

            collector = asyncio.create_task(collect())
            loop = asyncio.get_running_loop()
            end = loop.time() + 12.0
            while loop.time() < end:
                spot = rng.choice(table.spots())
                if table.chips_on(spot.seat, spot.spot) and rng.random() < 0.5:
                    table.remove(spot.seat, spot.spot)
                else:
                    ever[spot].update(table.place(spot.seat, spot.spot, 2500))
                if rng.random() < 0.1:
                    which = rng.randrange(2)
                    table.unplug(reader=which)
                    await asyncio.sleep(0.3)
                    table.plug(reader=which)
                await asyncio.sleep(0.2)
            for name in FAULTS:
                table.set_fault(name, 0.0)
            calm = len(got)
            await asyncio.sleep(3.0)  # reconnects settle, then full sweeps
            collector.cancel()
    assert all(isinstance(i, ChipInventory | DeviceAlert) for i in got)
    stray = [i for i in got if isinstance(i, ChipInventory) and not i.uids <= ever[i.spot]]
    assert not stray, stray[:3]
    kinds = {i.kind for i in got if isinstance(i, DeviceAlert)}
    assert {"connected", "bad_frame"} <= kinds, kinds
    last = {i.spot: i.uids for i in got[calm:] if isinstance(i, ChipInventory)}
    assert last == {s: table.chips_on(s.seat, s.spot) for s in table.spots()}
