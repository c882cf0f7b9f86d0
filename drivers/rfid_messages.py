"""The chip RFID reader protocol's vocabulary (docs/protocols/chip-rfid.md): frame limits,
checksums, message types and status codes, spot codes, and every message as a frozen value.
`drivers.rfid_codec` turns these into bytes and back.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from drivers.readings import SPOTS, SpotId

__all__ = [
    "CRC8_CHECK",
    "CRC32_CHECK",
    "DEFAULT_ANTENNA_MAP",
    "DEFAULT_PRODUCT_ID",
    "DEFAULT_VENDOR_ID",
    "HEADER_LEN",
    "MAX_ANTENNAS",
    "MAX_CHIPS_PER_REPORT",
    "MAX_FRAME_LEN",
    "MAX_PAYLOAD",
    "PROTOCOL_VERSION",
    "SEATS",
    "SYNC",
    "TRAILER_LEN",
    "UID_LEN",
    "Ack",
    "AckStatus",
    "AntennaFault",
    "AntennaFaultCode",
    "Frame",
    "FrameError",
    "Heartbeat",
    "HostMessage",
    "Identify",
    "Identity",
    "Inventory",
    "Message",
    "MsgType",
    "Ping",
    "Pong",
    "ReaderMessage",
    "SetAntennaMap",
    "SetTiming",
    "StartInventory",
    "StopInventory",
    "crc8_smbus",
    "crc32_iso_hdlc",
    "seq_delta",
    "spot_code",
    "spot_from_code",
]

DEFAULT_VENDOR_ID = 0x1209  # pid.codes: a placeholder until the reader has its own VID:PID
DEFAULT_PRODUCT_ID = 0x0001  # the pid.codes test PID (in-house testing only)
SYNC = b"\xa5\x5a"
PROTOCOL_VERSION = 1
HEADER_LEN = 9  # sync(2) ver(1) type(1) seq(2) len(2) hchk(1)
TRAILER_LEN = 4  # CRC-32
MAX_PAYLOAD = 1024
MAX_FRAME_LEN = HEADER_LEN + MAX_PAYLOAD + TRAILER_LEN
MAX_CHIPS_PER_REPORT = 120
MAX_ANTENNAS = 64
MAX_TEXT = 32
UID_LEN = 8
SEATS = range(1, 7)
UNMAPPED_SEAT = 0x00
UNMAPPED_SPOT = 0xFF
CRC8_CHECK = 0xF4  # CRC-8/SMBUS of b"123456789"
CRC32_CHECK = 0xCBF43926  # CRC-32/ISO-HDLC of b"123456789"

# Timing limits the reader accepts in SET_TIMING (milliseconds).
REPORT_INTERVAL_MS = range(20, 10_001)
HEARTBEAT_INTERVAL_MS = range(20, 10_001)
WATCHDOG_MS_MAX = 60_000


def _crc8_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
        table.append(crc)
    return tuple(table)


_CRC8 = _crc8_table()


def crc8_smbus(data: bytes | bytearray | memoryview) -> int:
    """CRC-8/SMBUS: poly 0x07, init 0x00, not reflected, xorout 0x00 (check 0xF4)."""
    crc = 0
    for byte in bytes(data):
        crc = _CRC8[crc ^ byte]
    return crc


def crc32_iso_hdlc(data: bytes | bytearray | memoryview) -> int:
    """CRC-32/ISO-HDLC (zlib, Ethernet): poly 0x04C11DB7 reflected, init/xorout 0xFFFFFFFF."""
    return zlib.crc32(data) & 0xFFFFFFFF


def seq_delta(new: int, old: int) -> int:
    """Signed distance from ``old`` to ``new`` on the 16-bit sequence circle (-32768..32767)."""
    return ((new - old + 0x8000) & 0xFFFF) - 0x8000


def spot_code(spot: str) -> int:
    """The wire code of a betting spot name (its index in SPOTS)."""
    return SPOTS.index(spot)


def spot_from_code(seat: int, code: int) -> SpotId | None:
    """The spot a (seat, code) pair on the wire names; None for the 'unmapped' pair."""
    if seat == UNMAPPED_SEAT and code == UNMAPPED_SPOT:
        return None
    if seat not in SEATS or code >= len(SPOTS):
        raise ValueError(f"no betting spot seat={seat} code={code}")
    return SpotId(seat, SPOTS[code])


# Antenna n (1-based) sits under seat (n - 1) // 7 + 1, spot SPOTS[(n - 1) % 7].
DEFAULT_ANTENNA_MAP: Mapping[int, SpotId] = {
    (seat - 1) * len(SPOTS) + i + 1: SpotId(seat, spot)
    for seat in SEATS
    for i, spot in enumerate(SPOTS)
}


class MsgType(IntEnum):
    """Message type byte; 0x01-0x7F host to reader, 0x80-0xFF reader to host."""

    IDENTIFY = 0x01
    START_INVENTORY = 0x02
    STOP_INVENTORY = 0x03
    SET_ANTENNA_MAP = 0x04
    SET_TIMING = 0x05
    PING = 0x06
    ACK = 0x80
    IDENTITY = 0x81
    INVENTORY = 0x82
    HEARTBEAT = 0x83
    PONG = 0x84
    ANTENNA_FAULT = 0x85


class AckStatus(IntEnum):
    """Outcome of a host command, carried in ACK."""

    OK = 0
    BAD_LENGTH = 1
    BAD_VALUE = 2
    UNKNOWN_COMMAND = 3
    BUSY = 4


class AntennaFaultCode(IntEnum):
    """What is wrong with an antenna port (CLEARED ends a fault)."""

    CLEARED = 0
    OPEN_CIRCUIT = 1
    SHORT_CIRCUIT = 2
    DETUNED = 3
    OVERFLOW = 4


# ----------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Identify:
    """Host: ask the reader for its model, serial number and firmware."""


@dataclass(frozen=True, slots=True)
class StartInventory:
    """Host: start scanning the mapped antennas and reporting inventories."""


@dataclass(frozen=True, slots=True)
class StopInventory:
    """Host: stop scanning; heartbeats continue."""


@dataclass(frozen=True, slots=True)
class SetAntennaMap:
    """Host: which antenna sits under which betting spot; only mapped antennas are scanned."""

    assignments: tuple[tuple[int, SpotId], ...]

    @classmethod
    def from_mapping(cls, mapping: Mapping[int, SpotId]) -> SetAntennaMap:
        """The command for an antenna -> spot mapping, antennas in ascending order."""
        return cls(tuple(sorted(mapping.items())))


@dataclass(frozen=True, slots=True, kw_only=True)
class SetTiming:
    """Host: report and heartbeat intervals, and the host watchdog (0 = off), in ms."""

    report_interval_ms: int
    heartbeat_interval_ms: int
    watchdog_ms: int


@dataclass(frozen=True, slots=True)
class Ping:
    """Host: keepalive; the reader answers PONG with the same token."""

    token: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    """Reader: the outcome of the host command with sequence number ``cmd_seq``."""

    cmd_seq: int
    cmd_type: int
    status: AckStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """Reader: model, serial number, firmware and number of antenna ports."""

    model: str
    serial: str
    firmware: str
    antenna_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Inventory:
    """Reader: every UID one antenna sees in scan ``cycle`` (a full list, not a change)."""

    antenna: int
    spot: SpotId | None
    cycle: int
    uids: tuple[bytes, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """Reader: alive; uptime and whether inventory is running."""

    uptime_ms: int
    inventory_running: bool
    mapped_antennas: int


@dataclass(frozen=True, slots=True)
class Pong:
    """Reader: answer to PING."""

    token: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AntennaFault:
    """Reader: an antenna port fault started (or CLEARED ended)."""

    antenna: int
    code: AntennaFaultCode


HostMessage = Identify | StartInventory | StopInventory | SetAntennaMap | SetTiming | Ping
ReaderMessage = Ack | Identity | Inventory | Heartbeat | Pong | AntennaFault
Message = HostMessage | ReaderMessage


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame whose header check and CRC verified, with its decoded message."""

    seq: int
    message: Message


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame the decoder refused: bad header check, bad CRC, or bad content.

    For "malformed" (header and CRC verified, payload broken) ``seq`` and ``msg_type`` are the
    frame's own, so a reader can answer the command with a negative ACK.
    """

    kind: Literal["header", "crc", "malformed"]
    detail: str
    seq: int | None = None
    msg_type: int | None = None
