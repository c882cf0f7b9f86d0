"""The one interface per device kind that the daemon sees; real drivers, simulators and manual
entry all satisfy it structurally, and the composition root picks one from config.

`TableHandle` is the other direction: what a running table shows to what stands in for the
people at it (a virtual dealer, players, a desk clerk). The daemon side implements it
(controller.wiring), so a simulator never reaches into the daemon's attributes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

from drivers.readings import (
    CardReading,
    ChipInventory,
    DeviceAlert,
    DeviceHealth,
    IdTap,
    ShoeStatus,
)
from game.hand.deal import Target
from game.wagers.house_limits import HouseRules

__all__ = ["CardReader", "ChipReader", "ChipReading", "IdReader", "IdReading", "ShoeReading",
           "TableHandle"]

ShoeReading = CardReading | ShoeStatus | DeviceAlert
ChipReading = ChipInventory | DeviceAlert
IdReading = IdTap | DeviceAlert


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


class IdReader(Protocol):
    """The table's ID reader (rewards and employee cards): an async context manager yielding
    taps and alerts until closed."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[IdReading]: ...

    def health(self) -> DeviceHealth:
        """Connected or not, last heard, counters (taps, bad reads, reconnects)."""
        ...


class TableHandle(Protocol):
    """A running table as its dealer's console and the desk see it."""

    @property
    def table_id(self) -> str:
        """The table's id (config ``[table] id``)."""
        ...

    def status(self) -> Mapping[str, Any]:
        """Everything `showdown table status` shows (heat, seats, spots, the hand in play)."""
        ...

    async def console(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Press a console button: the same handler as the local API; its answer."""
        ...

    async def desk_input(self, body: Mapping[str, Any]) -> str | None:
        """A desk command handed straight in (no MQTT); None when applied, else the refusal."""
        ...

    def house_rules(self) -> HouseRules:
        """The house rules of the stage in play (a heat must be open)."""
        ...

    def deal_targets(self, seats: Sequence[int]) -> Sequence[Target]:
        """Where each card read goes, in shoe order, for a hand of these seats."""
        ...

    def acknowledge_methods(self) -> Sequence[str]:
        """The proofs a participant gives to acknowledge a score (``[console]
        acknowledge_with``: "card", "pin", "signature"; every one listed is required)."""
        ...

    def waiting_for_tap(self) -> str | None:
        """What the console waits for a card tap for (shown on its screen), or None."""
        ...

    def chip_holders(self) -> Mapping[bytes, str]:
        """Who holds each chip of the table's float now (UID -> entry id; any other chip of
        the set in play is in the float)."""
        ...

    def chips_lying(self) -> Mapping[tuple[int, str], frozenset[bytes]]:
        """The chips the table last read on each spot ((seat, spot) -> UIDs; spots read
        empty or keyed by hand are left out)."""
        ...
