"""Typed readings the devices produce, shared by drivers, simulators, manual entry and the daemon.

Everything here is plain frozen data. Times are passed in by the transport (``at_mono`` from
``time.monotonic()``); the codecs never read a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, Literal

from game.poker.cards import Card

__all__ = [
    "RECOVERED",
    "SPOTS",
    "CardReading",
    "ChipInventory",
    "DeviceAlert",
    "DeviceHealth",
    "DeviceIdentity",
    "IdForm",
    "IdTap",
    "ShoeState",
    "ShoeStatus",
    "Source",
    "SpotId",
    "masked",
]

Source = Literal["device", "manual"]
# How an ID card was read: a magstripe's track 2, an NFC chip's UID, or a bare number.
IdForm = Literal["track2", "uid", "plain"]
# Betting spots under each seat, one RFID antenna each; "marker" is the Final's bonus marker spot.
SPOTS = ("ante", "odds", "play", "trips_plus", "pocket_bonus", "sweet16", "marker")


class ShoeState(StrEnum):
    """What the shoe says about itself."""

    READY = "ready"
    COVER_OPEN = "cover_open"
    JAM = "jam"
    EMPTY = "empty"
    UNREADABLE_CARD = "unreadable_card"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceIdentity:
    """Who a device says it is (model, serial number, firmware)."""

    kind: Literal["shoe", "rfid"]
    model: str
    serial: str
    firmware: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CardReading:
    """One card leaving the shoe: ``read_index`` counts reads since the shoe started (0-based)."""

    card: Card
    read_index: int
    quality: int  # 0..100, the shoe's confidence in the read
    device: str  # the shoe's serial number, or "manual:<operator>"
    source: Source = "device"
    at_mono: float = 0.0
    # The shoe's power-on session (IDENTITY SESSION_ID) that ``read_index`` counts in; None when
    # the source has no sessions (manual entry). (device, session, read_index) names one read.
    session: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeStatus:
    """A change of the shoe's state (cover open, jam, empty, unreadable card, ready)."""

    state: ShoeState
    device: str
    detail: str = ""
    at_mono: float = 0.0


@dataclass(frozen=True, slots=True)
class SpotId:
    """A betting spot: seat 1..6 and one of SPOTS."""

    seat: int
    spot: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipInventory:
    """The chips one antenna sees now: RFID UIDs (8 bytes each) on one betting spot."""

    reader: str  # the reader's serial number, or "manual:<operator>"
    antenna: int
    spot: SpotId
    uids: frozenset[bytes]
    report_seq: int
    source: Source = "device"
    at_mono: float = 0.0


# Alert kinds that report a device working as it should: logged at info, not warning.
ROUTINE_ALERT_KINDS = frozenset({"connected", "reconnected", "antenna_fault_cleared"})


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceAlert:
    """Something the pit must know about a device: lost, back, bad frames, unknown chip..."""

    device: str
    kind: str  # e.g. "disconnected", "reconnected", "stalled", "bad_frame", "unknown_chip"
    detail: str
    at_mono: float = 0.0

    @property
    def log_level(self) -> str:
        """"info" for routine news (a device connected, or back), "warning" for a fault."""
        return "info" if self.kind in ROUTINE_ALERT_KINDS else "warning"


# A driver's counters of trouble it put right by itself (D347), and how people read them: a
# refused frame the device sent again, a frame it flagged as sent again, a command resent after
# no answer, a connection back after it was lost or stalled.
RECOVERED: Final[Mapping[str, str]] = {
    "bad_frames": "bad frames refused and sent again",
    "retransmits": "frames retransmitted",
    "resends": "commands resent",
    "reconnects": "reconnections",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceHealth:
    """A driver's health now: connected or not, when it last heard the device, its counters."""

    device: str
    connected: bool
    identity: DeviceIdentity | None = None
    last_seen_mono: float | None = None
    counters: Mapping[str, int] = field(default_factory=dict)


def masked(number: str) -> str:
    """An ID number as logs and screens may show it: only its last 4 characters ("****0123")."""
    return "****" + number[-4:] if len(number) > 4 else "*" * len(number)


@dataclass(frozen=True, slots=True, kw_only=True)
class IdTap:
    """A rewards or employee card tapped (NFC) or swiped (magstripe) on the table's ID reader.

    ``number`` is the card number (track 2's PAN, or a plain number: digits) or the chip's UID
    (upper-case hex, ``form="uid"``); a UID and a card number are different identifiers even
    when the characters agree. Its repr shows the number masked (`masked`).
    """

    number: str
    form: IdForm
    device: str
    at_mono: float

    def __repr__(self) -> str:
        return (f"IdTap(number={masked(self.number)!r}, form={self.form!r}, "
                f"device={self.device!r}, at_mono={self.at_mono!r})")
