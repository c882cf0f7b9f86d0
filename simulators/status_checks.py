"""What the virtual dealer waits to see on a table's status (`VirtualTable.until`): checks on
the plain status mapping a `TableHandle` gives, read at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["cards_read", "devices_up", "heat_is", "seated", "spots_shown"]

StatusCheck = Callable[[Mapping[str, Any]], bool]


def devices_up(status: Mapping[str, Any]) -> bool:
    """No device of the table is faulted."""
    return not status.get("device_faults")


def heat_is(heat_id: str) -> StatusCheck:
    """The table's open heat is ``heat_id``."""
    return lambda status: status.get("heat") == heat_id


def seated(count: int) -> StatusCheck:
    """``count`` seats are taken."""
    return lambda status: len(status.get("seats", {})) == count


def cards_read(count: int) -> StatusCheck:
    """The hand in play has read ``count`` cards."""
    return lambda status: (status.get("hand") or {}).get("cards_read") == count


def spots_shown(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each seat's spots that hold something, as the status shows them."""
    return {k: v for k, v in status.get("spots", {}).items() if v}
