"""Sans-I/O codec of the card-shoe wire protocol (docs/protocols/card-shoe.md), both directions.

Frame: ``7E LEN VER TYPE SEQ FLAGS PAYLOAD[LEN] CRC_HI CRC_LO``; the CRC is CRC-16/CCITT-FALSE
over LEN..PAYLOAD. `ShoeDecoder` takes bytes in any chunking (``feed``) and hands out typed
messages or `BadFrame` events (``next_event``); it resynchronises after garbage and never raises
on what the wire brings. `encode` turns a message into its one canonical frame. No clock, no I/O.
"""

from __future__ import annotations

import binascii
import struct
from dataclasses import dataclass, field
from typing import Final, Literal

from drivers.readings import ShoeState
from game.poker.cards import DECK, Card

__all__ = [
    "DETAIL_NONE",
    "DETAIL_QUEUE_FULL",
    "FLAG_RETRANSMIT",
    "MAX_FRAME",
    "MAX_PAYLOAD",
    "MAX_TEXT",
    "MIN_FRAME",
    "PROTOCOL_MINOR",
    "PROTOCOL_VERSION",
    "SOF",
    "STATE_CODES",
    "Ack",
    "BadFrame",
    "CardReport",
    "DecoderStats",
    "DeviceMessage",
    "Heartbeat",
    "HostMessage",
    "Identify",
    "Nak",
    "ShoeDecoder",
    "ShoeIdentity",
    "ShoeMessage",
    "StatusReport",
    "crc16",
    "encode",
]

SOF: Final = 0x7E
PROTOCOL_VERSION: Final = 1  # the VER byte: the major version; a new major changes the layout
PROTOCOL_MINOR: Final = 0  # announced in the identity; minors only add message types
HEADER: Final = 6  # SOF LEN VER TYPE SEQ FLAGS
TRAILER: Final = 2  # CRC, high byte first
MAX_PAYLOAD: Final = 64
MIN_FRAME: Final = HEADER + TRAILER
MAX_FRAME: Final = HEADER + MAX_PAYLOAD + TRAILER
MAX_TEXT: Final = 15  # model, serial number and firmware strings: printable ASCII, 1..15 bytes
FLAG_RETRANSMIT: Final = 0x01
_KNOWN_FLAGS: Final = FLAG_RETRANSMIT
_U32: Final = 0xFFFF_FFFF
_COMPACT_AT: Final = 4096

# Shoe state codes on the wire (STATUS and HEARTBEAT); code order is part of the protocol.
STATE_CODES: Final[dict[ShoeState, int]] = {
    ShoeState.READY: 0,
    ShoeState.COVER_OPEN: 1,
    ShoeState.JAM: 2,
    ShoeState.EMPTY: 3,
    ShoeState.UNREADABLE_CARD: 4,
}
_STATES_BY_CODE: Final = {code: state for state, code in STATE_CODES.items()}
DETAIL_NONE: Final = 0
DETAIL_QUEUE_FULL: Final = 1  # with JAM: the shoe holds the gate shut, the host is not acking

# Message type codes; bit 7 set = host to shoe.
T_IDENTITY: Final = 0x01
T_CARD: Final = 0x02
T_STATUS: Final = 0x03
T_HEARTBEAT: Final = 0x04
T_IDENTIFY: Final = 0x81
T_ACK: Final = 0x82
T_NAK: Final = 0x83


def crc16(data: bytes | bytearray | memoryview) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, xorout 0); check 0x29B1."""
    return binascii.crc_hqx(data, 0xFFFF)


# ---------------------------------------------------------------------------------------------
# Messages. Every message carries the link fields ``seq`` (0..255) and ``retransmit``.


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeIdentity:
    """Shoe → host, TYPE 0x01: who the shoe is and where its event stream stands."""

    session_id: int  # u32, new at every power-on (read indices restart with it)
    proto_minor: int  # u8
    heartbeat_ms: int  # u16, the shoe's heartbeat interval
    reads: int  # u32, cards read this session (= the next read index)
    unacked_from: int  # u32, event number of the oldest unacknowledged event (or the next one)
    model: str
    serial: str
    firmware: str
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CardReport:
    """Shoe → host, TYPE 0x02 (reliable): one card read."""

    evn: int  # u32 event number, the position in the shoe's reliable event stream
    read_index: int  # u32, reads since the session started, 0-based
    card: Card
    quality: int  # 0..100
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusReport:
    """Shoe → host, TYPE 0x03 (reliable): the shoe's state changed."""

    evn: int
    state: ShoeState
    detail: int  # u8, DETAIL_* code
    reads: int  # u32, cards read when the state changed
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """Shoe → host, TYPE 0x04 (unreliable, periodic): state and stream position."""

    state: ShoeState
    reads: int  # u32
    next_evn: int  # u32, the event number the next reliable event will get
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Identify:
    """Host → shoe, TYPE 0x81: please send your identity, then resend what is unacknowledged."""

    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    """Host → shoe, TYPE 0x82: every event numbered below ``next_evn`` is received."""

    next_evn: int
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Nak:
    """Host → shoe, TYPE 0x83: events below ``next_evn`` received; resend the rest now."""

    next_evn: int
    seq: int = 0
    retransmit: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BadFrame:
    """A frame the decoder refused; ``reason`` is one of the DecoderStats reasons."""

    reason: str
    size: int  # bytes the refused candidate frame spanned (SOF included)
    seq: int | None = None  # the sender's SEQ when the frame was genuine (its CRC checked)


DeviceMessage = ShoeIdentity | CardReport | StatusReport | Heartbeat
HostMessage = Identify | Ack | Nak
ShoeMessage = DeviceMessage | HostMessage

_MESSAGE_TYPES: Final = (ShoeIdentity, CardReport, StatusReport, Heartbeat, Identify, Ack, Nak)
_REASONS: Final = ("length", "crc", "truncated", "version", "flags", "direction", "unknown_type",
                   "payload")


@dataclass(slots=True)
class DecoderStats:
    """Running counts of one decoder: good frames, refused frames by reason, skipped bytes."""

    frames: int = 0
    bad_frames: int = 0
    skipped_bytes: int = 0
    reasons: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_REASONS, 0))


# ---------------------------------------------------------------------------------------------
# Encoding


def encode(message: ShoeMessage) -> bytes:
    """The canonical frame of a message; ValueError if a field is out of range (caller's bug)."""
    if not isinstance(message, _MESSAGE_TYPES):
        raise TypeError(f"not a shoe message: {message!r}")
    _check_u8("seq", message.seq)
    type_code, payload = _payload(message)
    flags = FLAG_RETRANSMIT if message.retransmit else 0
    body = bytes((len(payload), PROTOCOL_VERSION, type_code, message.seq, flags)) + payload
    return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")


def _payload(m: ShoeMessage) -> tuple[int, bytes]:
    if isinstance(m, CardReport):
        _check_u32("evn", m.evn)
        _check_u32("read_index", m.read_index)
        _check_card(m.card)
        if not 0 <= m.quality <= 100:
            raise ValueError(f"quality {m.quality} is not 0..100")
        return T_CARD, struct.pack(">IIBBB", m.evn, m.read_index, m.card.rank, m.card.suit,
                                   m.quality)
    if isinstance(m, StatusReport):
        _check_u32("evn", m.evn)
        _check_u8("detail", m.detail)
        _check_u32("reads", m.reads)
        return T_STATUS, struct.pack(">IBBI", m.evn, STATE_CODES[m.state], m.detail, m.reads)
    if isinstance(m, Heartbeat):
        _check_u32("reads", m.reads)
        _check_u32("next_evn", m.next_evn)
        return T_HEARTBEAT, struct.pack(">BII", STATE_CODES[m.state], m.reads, m.next_evn)
    if isinstance(m, ShoeIdentity):
        _check_u32("session_id", m.session_id)
        _check_u8("proto_minor", m.proto_minor)
        if not 0 <= m.heartbeat_ms <= 0xFFFF:
            raise ValueError(f"heartbeat_ms {m.heartbeat_ms} is not a u16")
        _check_u32("reads", m.reads)
        _check_u32("unacked_from", m.unacked_from)
        head = struct.pack(">IBHII", m.session_id, m.proto_minor, m.heartbeat_ms, m.reads,
                           m.unacked_from)
        return T_IDENTITY, head + b"".join(
            _text(name, value)
            for name, value in (("model", m.model), ("serial", m.serial), ("firmware", m.firmware))
        )
    if isinstance(m, Identify):
        return T_IDENTIFY, b""
    if isinstance(m, Ack):
        _check_u32("next_evn", m.next_evn)
        return T_ACK, struct.pack(">I", m.next_evn)
    if isinstance(m, Nak):
        _check_u32("next_evn", m.next_evn)
        return T_NAK, struct.pack(">I", m.next_evn)
    raise TypeError(f"not a shoe message: {m!r}")


def _check_u8(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise ValueError(f"{name} {value!r} is not a u8")


def _check_u32(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _U32:
        raise ValueError(f"{name} {value!r} is not a u32")


def _check_card(card: Card) -> None:
    if not isinstance(card, Card):
        raise TypeError(f"card {card!r} is not a game.poker.cards.Card")


def _text(name: str, value: str) -> bytes:
    raw = value.encode("ascii", errors="replace") if isinstance(value, str) else b""
    if not value.isascii() or not 1 <= len(raw) <= MAX_TEXT or not _printable(raw):
        raise ValueError(f"{name} {value!r} must be 1..{MAX_TEXT} printable ASCII characters")
    return bytes((len(raw),)) + raw


def _printable(raw: bytes) -> bool:
    return all(0x20 <= b <= 0x7E for b in raw)


# ---------------------------------------------------------------------------------------------
# Decoding


class _Malformed(Exception):
    """A CRC-valid frame whose payload breaks the layout (internal; becomes a BadFrame)."""


_DEVICE_TYPES: Final = frozenset({T_IDENTITY, T_CARD, T_STATUS, T_HEARTBEAT})
_HOST_TYPES: Final = frozenset({T_IDENTIFY, T_ACK, T_NAK})


class ShoeDecoder:
    """Bytes from one direction of the link in, messages out (h11 style: feed, then next_event).

    ``sender="device"`` decodes what a shoe sends (the host's decoder); ``sender="host"``
    decodes what a host sends (the shoe's, i.e. the simulator's). Frames from the other
    direction are refused as ``direction`` (an echoing line shows up that way).
    """

    def __init__(self, sender: Literal["device", "host"]) -> None:
        if sender not in ("device", "host"):
            raise ValueError(f"sender must be 'device' or 'host', not {sender!r}")
        self._accept = _DEVICE_TYPES if sender == "device" else _HOST_TYPES
        self._other = _HOST_TYPES if sender == "device" else _DEVICE_TYPES
        self._buf = bytearray()
        self._pos = 0
        self.stats = DecoderStats()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (any chunking, including one byte at a time)."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"feed() takes bytes, not {type(data).__name__}")
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received and not yet consumed (at most one partial frame once drained)."""
        return len(self._buf) - self._pos

    def reset(self) -> None:
        """Forget buffered bytes (a new connection); the statistics are kept."""
        self._buf.clear()
        self._pos = 0

    def next_event(self) -> ShoeMessage | BadFrame | None:
        """The next message or refused frame, or None until more bytes are fed."""
        buf = self._buf
        start = buf.find(SOF, self._pos)
        if start < 0:
            self.stats.skipped_bytes += len(buf) - self._pos
            buf.clear()
            self._pos = 0
            return None
        self.stats.skipped_bytes += start - self._pos
        self._pos = start
        if start >= _COMPACT_AT:
            del buf[:start]
            self._pos = start = 0
        if len(buf) - start < 2:
            return None
        length = buf[start + 1]
        if length > MAX_PAYLOAD:
            return self._refuse("length", 1, 2)  # resynchronise on the next SOF
        total = length + HEADER + TRAILER
        if len(buf) - start < total:
            return None
        end = start + total
        body = memoryview(buf)[start + 1 : end - TRAILER]
        good = crc16(body) == (buf[end - 2] << 8 | buf[end - 1])
        body.release()
        if not good:
            return self._refuse("crc", 1, total)  # maybe a false SOF: rescan from the next byte
        # From here the frame is genuine (its CRC checks), so refusals skip all of it.
        if buf[start + 2] != PROTOCOL_VERSION:
            return self._refuse("version", total, total, buf[start + 4])
        type_code, seq, flags = buf[start + 3], buf[start + 4], buf[start + 5]
        if flags & ~_KNOWN_FLAGS:
            return self._refuse("flags", total, total, seq)
        if type_code not in self._accept:
            return self._refuse("direction" if type_code in self._other else "unknown_type",
                                total, total, seq)
        payload = bytes(buf[start + HEADER : end - TRAILER])
        try:
            message = _decode_payload(type_code, payload, seq, bool(flags & FLAG_RETRANSMIT))
        except _Malformed:
            return self._refuse("payload", total, total, seq)
        self._pos = end
        self.stats.frames += 1
        return message

    def flush_partial(self) -> BadFrame | None:
        """The line went idle with a frame unfinished: refuse it (``truncated``) and rescan.

        Call it only after `next_event` returned None. A false 0x7E in noise can announce a
        length that later bytes never complete; without this, a good frame inside those bytes
        would wait for the next frame to arrive. Returns None if nothing is buffered.
        """
        if self._pos >= len(self._buf):
            return None
        return self._refuse("truncated", 1, len(self._buf) - self._pos)

    def _refuse(self, reason: str, skip: int, size: int, seq: int | None = None) -> BadFrame:
        self._pos += skip
        self.stats.bad_frames += 1
        self.stats.reasons[reason] += 1
        return BadFrame(reason=reason, size=size, seq=seq)


def _decode_payload(type_code: int, p: bytes, seq: int, retransmit: bool) -> ShoeMessage:
    if type_code == T_CARD:
        _need(p, 11)
        evn, read_index, rank, suit, quality = struct.unpack(">IIBBB", p)
        if rank > 12 or suit > 3 or quality > 100:
            raise _Malformed
        return CardReport(evn=evn, read_index=read_index, card=DECK[rank * 4 + suit],
                          quality=quality, seq=seq, retransmit=retransmit)
    if type_code == T_STATUS:
        _need(p, 10)
        evn, code, detail, reads = struct.unpack(">IBBI", p)
        return StatusReport(evn=evn, state=_state(code), detail=detail, reads=reads, seq=seq,
                            retransmit=retransmit)
    if type_code == T_HEARTBEAT:
        _need(p, 9)
        code, reads, next_evn = struct.unpack(">BII", p)
        return Heartbeat(state=_state(code), reads=reads, next_evn=next_evn, seq=seq,
                         retransmit=retransmit)
    if type_code == T_IDENTITY:
        if len(p) < 15:
            raise _Malformed
        session_id, minor, hb_ms, reads, unacked_from = struct.unpack_from(">IBHII", p)
        texts, pos = [], 15
        for _ in range(3):
            text, pos = _read_text(p, pos)
            texts.append(text)
        if pos != len(p):
            raise _Malformed
        return ShoeIdentity(session_id=session_id, proto_minor=minor, heartbeat_ms=hb_ms,
                            reads=reads, unacked_from=unacked_from, model=texts[0],
                            serial=texts[1], firmware=texts[2], seq=seq, retransmit=retransmit)
    if type_code == T_IDENTIFY:
        _need(p, 0)
        return Identify(seq=seq, retransmit=retransmit)
    _need(p, 4)
    (next_evn,) = struct.unpack(">I", p)
    if type_code == T_ACK:
        return Ack(next_evn=next_evn, seq=seq, retransmit=retransmit)
    return Nak(next_evn=next_evn, seq=seq, retransmit=retransmit)


def _need(payload: bytes, size: int) -> None:
    if len(payload) != size:
        raise _Malformed


def _state(code: int) -> ShoeState:
    state = _STATES_BY_CODE.get(code)
    if state is None:
        raise _Malformed
    return state


def _read_text(p: bytes, pos: int) -> tuple[str, int]:
    if pos >= len(p):
        raise _Malformed
    size = p[pos]
    raw = p[pos + 1 : pos + 1 + size]
    if not 1 <= size <= MAX_TEXT or len(raw) != size or not _printable(raw):
        raise _Malformed
    return raw.decode("ascii"), pos + 1 + size
