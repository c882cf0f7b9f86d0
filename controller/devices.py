"""The table's devices as the daemon reads them, and where it gets them: the composition
root (controller.wiring) is a `DeviceSource`; the daemon (controller.app) opens it once the
journal is loaded and hands each device to its pump (controller.device_pumps), telling it where
the journal left off (`Resume`)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Protocol

from drivers.protocols import CardReader, ChipReader, IdReader
from game.chips.registry import ChipRegistry

__all__ = ["DeviceSource", "Resume", "TableDevices"]


@dataclass(frozen=True, slots=True)
class TableDevices:
    """The table's card shoe and chip readers, as the daemon's pumps read them, and its ID
    reader when it has one."""

    shoe: CardReader
    rfid: ChipReader
    ids: IdReader | None = None  # the ID-card reader (rewards and employee cards), if fitted


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """Where the table's journal left off when the daemon opens its devices: a simulated
    device powered on again by a restart starts from it, as a real one would (D405,
    D406): the chips lie where the table last read them, and the shoe deals new decks."""

    # the journal's last record before this start, above its message seq base (0: a new
    # journal, nothing played yet); never the same at two starts of one table
    position: int = 0
    chips_lying: Mapping[tuple[int, str], frozenset[bytes]] = field(default_factory=dict)


class DeviceSource(Protocol):
    """Where the daemon gets its chip registry and its devices (controller.wiring)."""

    def chip_registry(self) -> ChipRegistry:
        """The registry of the chips in play (raises ConfigError when there is none)."""
        ...

    def open(self, stack: AsyncExitStack, registry: ChipRegistry, *,
             resume: Resume | None = None) -> TableDevices:
        """The devices, not yet entered; anything they need closed goes on `stack`;
        `resume`: where the journal left off (None: a new journal)."""
        ...
