"""The table daemon's device pumps: each reading of the shoe, the chip reader and the ID
reader becomes its typed input (controller.device_inputs) and is submitted to the daemon's
group commit (`TableDaemon.submit`), in the order read; the shoe's readings are
acknowledged to the shoe only once journaled.

Each pump gets what it needs as arguments (a device, a submit function, and so on): the
daemon composes them, they never reach into it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from controller.device_inputs import (
    card_seen,
    chips_seen,
    device_trouble,
    shoe_reported,
    wager_keyed,
)
from controller.table_service import Applied
from drivers.manual_chips import ManualWager
from drivers.protocols import CardReader, ChipReader, IdReader, ShoeReading
from drivers.readings import (
    RECOVERED,
    CardReading,
    ChipInventory,
    DeviceAlert,
    DeviceHealth,
    IdTap,
    ShoeStatus,
    SpotId,
)
from game.table.inputs import DeviceInput, DeviceTrouble

__all__ = ["RecoveryWatch", "Submit", "pump_ids", "pump_rfid", "pump_shoe",
           "recovered_since"]

# Queues a typed input for the next transaction; its result once committed (not awaited,
# inputs submitted in turn keep their order).
Submit: TypeAlias = Callable[[DeviceInput], "asyncio.Future[Applied]"]

_CHIP_BACKLOG = 64  # chip reports waiting for a transaction before the pump waits too
_UP = frozenset({"connected", "reconnected"})  # a reader's news that it reads again


async def pump_shoe(shoe: CardReader, *, submit: Submit,
                    last_reads: Mapping[str, tuple[int, int]],
                    halted: Callable[[], bool], log: Any) -> None:
    """Journal the shoe's readings; acknowledge each to the shoe once journaled.

    ``last_reads``: device -> (session, read_index) of the last shoe read journaled, so a
    read the shoe delivers again after a restart (journaled, but the ACK never left) is not
    applied twice; ``halted()``: the table is in the error state (nothing is acknowledged).
    """
    # A shoe driver with ack="on_confirm" acknowledges a reading only once it is journaled.
    confirm = getattr(shoe, "confirm", None)
    last_read = dict(last_reads)
    # Readings are submitted as they come (those arriving together share a transaction);
    # each is confirmed, in order, once its transaction has committed.
    journaled: asyncio.Queue[tuple[asyncio.Future[Applied], ShoeReading]] = asyncio.Queue()
    async with asyncio.TaskGroup() as tg:
        if confirm is not None:
            tg.create_task(_confirm_journaled(journaled, confirm, halted))
        async for reading in shoe:
            if isinstance(reading, CardReading):
                last = last_read.get(reading.device)
                if (reading.session is not None and last is not None
                        and last[0] == reading.session and reading.read_index <= last[1]):
                    log.warning("shoe read already journaled; skipped",
                                device=reading.device, session=reading.session,
                                read_index=reading.read_index)
                    if confirm is not None:
                        await confirm(reading)
                    continue
                if reading.session is not None:
                    last_read[reading.device] = (reading.session, reading.read_index)
                committed = submit(card_seen(reading))
            elif isinstance(reading, ShoeStatus):
                committed = submit(shoe_reported(reading))
            else:  # a device alert: nothing to acknowledge
                await submit(device_trouble(reading, "shoe"))
                continue
            if confirm is not None:
                journaled.put_nowait((committed, reading))


async def _confirm_journaled(
        journaled: asyncio.Queue[tuple[asyncio.Future[Applied], ShoeReading]],
        confirm: Callable[[ShoeReading], Awaitable[None]], halted: Callable[[], bool],
) -> None:
    """Acknowledge each shoe reading to the shoe once journaled (even if refused), in
    order; one not journaled (the error state) is never acknowledged: the shoe keeps it."""
    while True:
        committed, reading = await journaled.get()
        await committed
        if not halted():
            await confirm(reading)


async def pump_rfid(rfid: ChipReader, *, submit: Submit, backlog: Callable[[], int]) -> None:
    """Journal the chip reader's reports (a sweep's share transactions) and alerts;
    ``backlog()``: inputs submitted and not yet taken into a transaction.

    A chip driver reports every spot in every sweep (drivers/adapter.py: a full inventory,
    never deltas); a report that repeats what its spot last reported changes nothing at the
    table and is not journaled again. After a reader (re)connects, every spot's first report
    is journaled afresh (D315)."""
    last: dict[SpotId, frozenset[bytes]] = {}
    async for reading in rfid:
        if isinstance(reading, ManualWager):
            await submit(wager_keyed(reading))
        elif isinstance(reading, ChipInventory):
            if last.get(reading.spot) == reading.uids:
                continue
            last[reading.spot] = reading.uids
            # Not awaited: a sweep's reports of many spots share one transaction. In the
            # order read; the pump waits only behind a backlog.
            committed = submit(chips_seen(reading))
            if backlog() >= _CHIP_BACKLOG:
                await committed
        elif isinstance(reading, DeviceAlert):
            if reading.kind in _UP:
                last.clear()
            await submit(device_trouble(reading, "rfid"))


async def pump_ids(reader: IdReader, *, submit: Submit,
                   offer_tap: Callable[[IdTap], object]) -> None:
    """Hand card taps to the console gate (``offer_tap``); journal the ID reader's alerts."""
    async for reading in reader:
        if isinstance(reading, IdTap):
            offer_tap(reading)
        elif isinstance(reading, DeviceAlert):
            await submit(device_trouble(reading, "id_reader"))


def recovered_since(before: Mapping[str, int], health: DeviceHealth) -> dict[str, int]:
    """What the driver healed since ``before`` (its counters then): counter -> how many more,
    only the counters that moved on."""
    now = health.counters
    return {name: now[name] - before.get(name, 0) for name in RECOVERED
            if now.get(name, 0) > before.get(name, 0)}


class RecoveryWatch:
    """Journals one `device_alert` of kind "recovered" per device (role -> its ``health``)
    whose driver healed trouble since the last one, with the counts (D347): every ``every``
    seconds (`run`), and when asked (`flush`: a rehearsal's end). A device down now waits
    until it is back (its counts carry over)."""

    def __init__(self, devices: Mapping[str, Callable[[], DeviceHealth]], *,
                 submit: Submit, every: float) -> None:
        self.devices = dict(devices)
        self.submit = submit
        self.every = every
        self._last = {role: dict(health().counters) for role, health in self.devices.items()}
        self._since = dict.fromkeys(self.devices, 0.0)  # loop time of the last notice
        self.notices = 0

    async def run(self) -> None:
        """Look every ``every`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(self.every)
            await self.flush()

    async def flush(self) -> None:
        """Journal a notice for every device that healed something since its last one."""
        now_s = asyncio.get_running_loop().time()
        for role, health in self.devices.items():
            now = health()
            healed = recovered_since(self._last[role], now)
            if not healed or not now.connected:
                continue
            self._last[role] = dict(now.counters)
            words = ", ".join(f"{n} {RECOVERED[k]}" for k, n in healed.items())
            span = now_s - self._since[role] if self._since[role] else None
            self._since[role] = now_s
            within = f" in the last {span:.0f} s" if span is not None else ""
            self.notices += 1
            await self.submit(DeviceTrouble(
                device=now.device, kind="recovered", role=role,
                detail=f"recovered by itself{within}: {words}",
                counts=tuple(sorted(healed.items()))))
