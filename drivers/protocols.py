"""The one interface per device kind that the daemon sees; real drivers, simulators and manual
entry all satisfy it structurally, and the composition root picks one from config."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Protocol, Self

from drivers.readings import CardRead, ChipInventory, DeviceAlert, DeviceHealth, ShoeStatus

__all__ = ["CardReader", "ChipReader", "ChipReading", "ShoeReading"]

ShoeReading = CardRead | ShoeStatus | DeviceAlert
ChipReading = ChipInventory | DeviceAlert


class CardReader(Protocol):
    """A card shoe: an async context manager yielding readings until closed."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[ShoeReading]: ...

    def health(self) -> DeviceHealth:
        """Connected or not, last heard, counters (retransmits, bad frames, reconnects)."""
        ...


class ChipReader(Protocol):
    """The chip RFID readers of a table: an async context manager yielding inventories."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[ChipReading]: ...

    def health(self) -> DeviceHealth:
        """Connected or not, last heard, counters (bad reports, reconnects)."""
        ...
