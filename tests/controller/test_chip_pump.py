"""The daemon's chip pump (controller.device_pumps.pump_rfid): a chip driver reports every spot
in every sweep (the adapter seam's promise), and the pump journals a spot's report only when
it differs from what that spot last reported, and every spot afresh after the reader
(re)connects (D315)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Self

from controller.device_pumps import pump_rfid
from controller.table_service import Applied
from drivers.protocols import ChipReading
from drivers.readings import ChipInventory, DeviceAlert, DeviceHealth, SpotId
from game.table.inputs import ChipsSeen, DeviceInput, DeviceTrouble

A, B = SpotId(1, "ante"), SpotId(2, "play")
CHIP1, CHIP2 = bytes.fromhex("E004000000000001"), bytes.fromhex("E004000000000002")


class Played:
    """A chip reader that plays a list of readings, then ends."""

    def __init__(self, readings: Sequence[ChipReading]) -> None:
        self.readings = readings

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[ChipReading]:
        return self._play()

    async def _play(self) -> AsyncIterator[ChipReading]:
        for reading in self.readings:
            yield reading

    def health(self) -> DeviceHealth:
        return DeviceHealth(device="played", connected=True)


def sweep(n: int, **spots: frozenset[bytes]) -> list[ChipInventory]:
    """Sweep n: both spots, A's and B's chips as given (empty by default)."""
    return [ChipInventory(reader="R1", antenna=i, spot=spot, uids=spots.get(name, frozenset()),
                          report_seq=n)
            for i, (name, spot) in enumerate((("a", A), ("b", B)), 1)]


async def journaled(readings: Sequence[ChipReading]) -> list[DeviceInput]:
    submitted: list[DeviceInput] = []

    def submit(item: DeviceInput) -> asyncio.Future[Applied]:
        submitted.append(item)
        done: asyncio.Future[Applied] = asyncio.get_running_loop().create_future()
        done.set_result(Applied(ok=True))
        return done

    await pump_rfid(Played(readings), submit=submit, backlog=lambda: 0)
    return submitted


def up(kind: str) -> DeviceAlert:
    return DeviceAlert(device="R1", kind=kind, detail="QUASAR_MX")


async def test_a_repeated_report_is_not_journaled_again() -> None:
    one = frozenset({CHIP1})
    got = await journaled([up("connected"), *sweep(1), *sweep(2), *sweep(3, a=one),
                           *sweep(4, a=one), *sweep(5)])
    seen = [(i.seat, i.spot, len(i.uids), i.report_seq) for i in got if isinstance(i, ChipsSeen)]
    # Sweep 1 in full; 2 repeats it; 3 changes A; 4 repeats 3; 5 takes the chip off A.
    assert seen == [(1, "ante", 0, 1), (2, "play", 0, 1), (1, "ante", 1, 3), (1, "ante", 0, 5)]


async def test_after_a_reconnect_every_spot_is_journaled_afresh() -> None:
    both = frozenset({CHIP1, CHIP2})
    got = await journaled([up("connected"), *sweep(1, b=both), up("disconnected"),
                           up("reconnected"), *sweep(7, b=both), *sweep(8, b=both)])
    kinds = [i.kind if isinstance(i, DeviceTrouble) else f"{i.spot}@{i.report_seq}"
             for i in got if isinstance(i, DeviceTrouble | ChipsSeen)]
    assert kinds == ["connected", "ante@1", "play@1", "disconnected", "reconnected",
                     "ante@7", "play@7"]
