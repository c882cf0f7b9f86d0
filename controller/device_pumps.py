"""The table daemon's device pumps: each reading of the shoe, the chip reader and the ID
reader becomes a journaled input (controller.app's `TableDaemon.inputs`, group commit), in
the order read; the shoe's readings are acknowledged to the shoe only once journaled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from controller.table_service import Applied
from drivers.protocols import IdReader, ShoeReading
from drivers.readings import CardReading, ChipInventory, DeviceAlert, IdTap, ShoeStatus

if TYPE_CHECKING:
    from controller.app import TableDaemon

__all__ = ["pump_ids", "pump_rfid", "pump_shoe"]

_CHIP_BACKLOG = 64  # chip reports waiting for a transaction before the pump waits too


async def pump_shoe(daemon: TableDaemon) -> None:
    """Journal the shoe's readings; acknowledge each to the shoe once journaled."""
    assert daemon.devices is not None
    assert daemon.journal is not None
    shoe = daemon.devices.shoe
    # A shoe driver with ack="on_confirm" acknowledges a reading only once it is journaled.
    confirm = getattr(shoe, "confirm", None)
    # device -> (session, read_index) of the last shoe read journaled: a read the shoe
    # delivers again after a restart (journaled, but the ACK never left) is not applied twice.
    last_read = dict(daemon.shoe_reads)
    # Readings are submitted as they come (those arriving together share a transaction);
    # each is confirmed, in order, once its transaction has committed.
    journaled: asyncio.Queue[tuple[asyncio.Future[Applied], ShoeReading]] = asyncio.Queue()
    async with asyncio.TaskGroup() as tg:
        if confirm is not None:
            tg.create_task(_confirm_journaled(daemon, journaled, confirm))
        async for reading in shoe:
            payload: dict[str, Any] | None = None
            if isinstance(reading, CardReading):
                last = last_read.get(reading.device)
                if (reading.session is not None and last is not None
                        and last[0] == reading.session and reading.read_index <= last[1]):
                    daemon._log.warning("shoe read already journaled; skipped",
                                      device=reading.device, session=reading.session,
                                      read_index=reading.read_index)
                    if confirm is not None:
                        await confirm(reading)
                    continue
                payload = {
                    "card": str(reading.card), "read_index": reading.read_index,
                    "quality": reading.quality, "device": reading.device,
                    "source": reading.source}
                if reading.session is not None:
                    payload["session"] = reading.session
                    last_read[reading.device] = (reading.session, reading.read_index)
                committed = daemon.inputs.submit(("card", payload))
            elif isinstance(reading, ShoeStatus):
                committed = daemon.inputs.submit(("shoe_status", {
                    "state": str(reading.state), "device": reading.device,
                    "detail": reading.detail}))
            else:  # a device alert: nothing to acknowledge
                await daemon.ingest("device_alert", {"device": reading.device,
                                                   "kind": reading.kind,
                                                   "detail": reading.detail,
                                                   "role": "shoe"})
                continue
            if confirm is not None:
                journaled.put_nowait((committed, reading))


async def _confirm_journaled(
        daemon: TableDaemon, journaled: asyncio.Queue[tuple[asyncio.Future[Applied], ShoeReading]],
        confirm: Callable[[ShoeReading], Awaitable[None]]) -> None:
    """Acknowledge each shoe reading to the shoe once journaled (even if refused), in
    order; one not journaled (the error state) is never acknowledged: the shoe keeps it."""
    while True:
        committed, reading = await journaled.get()
        await committed
        if not daemon.faults:
            await confirm(reading)


async def pump_rfid(daemon: TableDaemon) -> None:
    """Journal the chip reader's reports (a sweep's share transactions) and alerts."""
    assert daemon.devices is not None
    from drivers.manual_chips import ManualWager  # noqa: PLC0415
    from game.chips.registry import format_uid  # noqa: PLC0415

    async for reading in daemon.devices.rfid:
        if isinstance(reading, ManualWager):
            await daemon.ingest("manual_wager", {
                "seat": reading.spot.seat, "spot": reading.spot.spot,
                "amount": reading.amount_cents, "by": reading.operator})
        elif isinstance(reading, ChipInventory):
            # Not awaited: a sweep's reports of many spots share one transaction. In the
            # order read; the pump waits only behind a backlog.
            committed = daemon.inputs.submit(("chips", {
                "seat": reading.spot.seat, "spot": reading.spot.spot,
                "uids": sorted(format_uid(u) for u in reading.uids),
                "reader": reading.reader, "antenna": reading.antenna,
                "report_seq": reading.report_seq}))
            if daemon.inputs.waiting >= _CHIP_BACKLOG:
                await committed
        elif isinstance(reading, DeviceAlert):
            await daemon.ingest("device_alert", {"device": reading.device,
                                               "kind": reading.kind,
                                               "detail": reading.detail, "role": "rfid"})


async def pump_ids(daemon: TableDaemon, reader: IdReader) -> None:
    """Hand card taps to the console gate; journal the ID reader's alerts."""
    async for reading in reader:
        if isinstance(reading, IdTap):
            if daemon.gate is not None:
                daemon.gate.offer_tap(reading)
        elif isinstance(reading, DeviceAlert):
            await daemon.ingest("device_alert", {"device": reading.device,
                                               "kind": reading.kind,
                                               "detail": reading.detail, "role": "id_reader"})
