"""Each device reading as the typed input the table journals and decides on
(`game.table.inputs`): the one place a reading's fields are mapped to an input's.

    given = card_seen(reading)            # a CardSeen, with the read's device and session
    kind, payload = encode_input(given)   # game.table.inputs: its one journal encoding
    decode_input(kind, payload) == given  # and its one decoder, for replay

A reading is valid by construction (its driver checked the frame: a real card, 8-byte
UIDs), so its input encodes and decodes back to itself; the daemon decides on the input
as it is, and replay decides on the same value decoded (tests/controller/test_device_inputs.py).
"""

from __future__ import annotations

from typing import Literal

from drivers.manual_chips import ManualWager
from drivers.readings import CardReading, ChipInventory, DeviceAlert, ShoeStatus
from game.table.inputs import (
    CardSeen,
    ChipsSeen,
    DeviceTrouble,
    ShoeReported,
    WagerKeyed,
    operator_of,
)

__all__ = ["DeviceRole", "card_seen", "chips_seen", "device_trouble", "shoe_reported",
           "wager_keyed"]

DeviceRole = Literal["shoe", "rfid", "id_reader"]  # which of the table's devices alerts


def card_seen(reading: CardReading) -> CardSeen:
    """A card the shoe read, or the dealer keyed on the manual shoe (its device names them)."""
    manual = reading.source == "manual"
    return CardSeen(card=reading.card, source="manual" if manual else "shoe",
                    read_index=reading.read_index, quality=reading.quality,
                    device=reading.device, session=reading.session,
                    by=operator_of(reading.device) if manual else None)


def shoe_reported(status: ShoeStatus) -> ShoeReported:
    """The shoe's report of its state."""
    return ShoeReported(device=status.device, state=str(status.state), detail=status.detail)


def chips_seen(inventory: ChipInventory) -> ChipsSeen:
    """An antenna's inventory of one spot."""
    return ChipsSeen(seat=inventory.spot.seat, spot=inventory.spot.spot, uids=inventory.uids,
                     reader=inventory.reader, antenna=inventory.antenna,
                     report_seq=inventory.report_seq)


def wager_keyed(wager: ManualWager) -> WagerKeyed:
    """A whole wager the dealer keyed on the manual chip reader."""
    return WagerKeyed(seat=wager.spot.seat, spot=wager.spot.spot,
                      amount_cents=wager.amount_cents, by=wager.operator)


def device_trouble(alert: DeviceAlert, role: DeviceRole) -> DeviceTrouble:
    """A device driver's alert (or good news), naming which of the table's devices it is."""
    return DeviceTrouble(device=alert.device, kind=alert.kind, detail=alert.detail, role=role)
