"""The table's devices as the daemon reads them, and where it gets them: the composition
root (controller.wiring) is a `DeviceSource`; the daemon (controller.app) opens it once the
journal is loaded and hands each device to its pump (controller.device_pumps)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Protocol

from drivers.protocols import CardReader, ChipReader, IdReader
from game.chips.registry import ChipRegistry

__all__ = ["DeviceSource", "TableDevices"]


@dataclass(frozen=True, slots=True)
class TableDevices:
    """The table's card shoe and chip readers, as the daemon's pumps read them, and its ID
    reader when it has one."""

    shoe: CardReader
    rfid: ChipReader
    ids: IdReader | None = None  # the ID-card reader (rewards and employee cards), if fitted


class DeviceSource(Protocol):
    """Where the daemon gets its chip registry and its devices (controller.wiring)."""

    def chip_registry(self) -> ChipRegistry:
        """The registry of the chips in play (raises ConfigError when there is none)."""
        ...

    def open(self, stack: AsyncExitStack, registry: ChipRegistry) -> TableDevices:
        """The devices, not yet entered; anything they need closed goes on `stack`."""
        ...
