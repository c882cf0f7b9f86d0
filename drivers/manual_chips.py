"""Manual wager entry (promotion rule 58: when the chip reader fails, "another suitable device
or method" is used): the dealer keys each spot's wager by seat, spot and amount.

`ManualChipReader` is one more `drivers.protocols.ChipReader`; the composition root swaps it in
for the USB reader. Manual entry has no chips, so each keyed wager is a `ManualWager`: a
`ChipInventory` of the spot with no UIDs (``source="manual"``, ``antenna=0``) plus the keyed
``amount_cents`` and the operator. A consumer that does not know `ManualWager` sees a spot with
no chips, i.e. no value: it can undercount, never invent money.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

from drivers.protocols import ChipReading
from drivers.readings import SPOTS, ChipInventory, DeviceAlert, DeviceHealth, SpotId
from game.errors import InvalidWager

__all__ = ["ManualChipReader", "ManualWager"]

_OPERATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CLOSED: Final = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualWager(ChipInventory):
    """A wager keyed by hand: the whole amount now on one spot (0 clears it), and who keyed it.

    Like an inventory it is the spot's full state, not a change. ``uids`` is always empty,
    ``antenna`` 0, ``source`` "manual", ``reader`` "manual:<operator>"; ``report_seq`` counts
    keyed wagers from 0 for the life of the reader.
    """

    amount_cents: int
    operator: str


class ManualChipReader:
    """Wagers keyed by the dealer, one `ManualWager` each, in the order keyed."""

    def __init__(
        self,
        *,
        name: str = "manual",
        unit_cents: int | None = 2500,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if unit_cents is not None and unit_cents < 1:
            raise ValueError(f"unit_cents must be positive, got {unit_cents}")
        self.name = name
        self.unit_cents = unit_cents  # every amount is a multiple of the table unit (R25)
        self._clock = clock
        self._queue: asyncio.Queue[object] | None = None
        self._seq = 0
        self._wagers: dict[SpotId, int] = {}
        self._last_keyed: float | None = None
        self._operators: set[str] = set()

    async def __aenter__(self) -> Self:
        if self._queue is not None:
            raise RuntimeError("ManualChipReader is not reentrant")
        self._queue = asyncio.Queue()
        self._queue.put_nowait(
            DeviceAlert(device=self.device, kind="manual_entry",
                        detail="chip wagers are keyed by hand (rule 58)", at_mono=self._clock())
        )
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._queue is not None:
            self._queue.put_nowait(_CLOSED)
        self._queue = None

    @property
    def device(self) -> str:
        """The name readings and alerts carry: "manual:<name>"."""
        return f"manual:{self.name}"

    def __aiter__(self) -> AsyncIterator[ChipReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ChipReading]:
        queue = self._queue
        if queue is None:
            raise RuntimeError("use `async with ManualChipReader()` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            assert isinstance(item, ChipInventory | DeviceAlert)
            yield item
        queue.put_nowait(_CLOSED)

    def health(self) -> DeviceHealth:
        """Open or not, when a wager was last keyed, how many were keyed."""
        return DeviceHealth(
            device=self.device,
            connected=self._queue is not None,
            last_seen_mono=self._last_keyed,
            counters={"wagers_keyed": self._seq, "operators": len(self._operators)},
        )

    def wagers(self) -> dict[SpotId, int]:
        """Every spot with a non-zero keyed amount, in cents."""
        return {spot: cents for spot, cents in self._wagers.items() if cents}

    async def key_wager(self, seat: int, spot: str, amount_cents: int, *, operator: str
                        ) -> ManualWager:
        """The dealer keys the whole wager on one spot; InvalidWager if it cannot be one."""
        if self._queue is None:
            raise RuntimeError("use `async with ManualChipReader()` before keying")
        if not _OPERATOR.fullmatch(operator):
            raise ValueError(f"operator must be an id of letters, digits and ._- : {operator!r}")
        if type(seat) is not int or seat not in range(1, 7):
            raise InvalidWager(None, spot, f"seat must be 1..6, got {seat!r}")
        if spot not in SPOTS:
            raise InvalidWager(seat, str(spot), f"not a betting spot; spots are {', '.join(SPOTS)}")
        if type(amount_cents) is not int or amount_cents < 0:
            raise InvalidWager(seat, spot, f"amount must be whole cents >= 0, got {amount_cents!r}")
        if self.unit_cents and amount_cents % self.unit_cents:
            raise InvalidWager(
                seat, spot, f"{amount_cents} cents is not a multiple of {self.unit_cents}"
            )
        where = SpotId(seat, spot)
        now = self._clock()
        wager = ManualWager(
            reader=f"manual:{operator}", antenna=0, spot=where, uids=frozenset(),
            report_seq=self._seq, source="manual", at_mono=now, amount_cents=amount_cents,
            operator=operator,
        )
        self._seq += 1
        self._wagers[where] = amount_cents
        self._operators.add(operator)
        self._last_keyed = now
        self._queue.put_nowait(wager)
        return wager

    async def clear_table(self, *, operator: str) -> list[ManualWager]:
        """Key 0 on every spot that holds a keyed amount (end of a hand)."""
        return [
            await self.key_wager(spot.seat, spot.spot, 0, operator=operator)
            for spot in sorted(self.wagers(), key=lambda s: (s.seat, SPOTS.index(s.spot)))
        ]
