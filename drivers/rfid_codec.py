"""Sans-I/O codec for the chip RFID reader protocol (docs/protocols/chip-rfid.md); the
messages themselves are in `drivers.rfid_messages`.

Bytes in, typed messages out; messages in, bytes out. No USB, no clock, no threads: the driver,
the simulator, the tests and the fuzz benchmark share this one parser.

Frame (little-endian)::

    A5 5A | VER | TYPE | SEQ u16 | LEN u16 | HCHK | PAYLOAD (LEN bytes) | CRC u32

HCHK is CRC-8/SMBUS over the 8 bytes before it; CRC is CRC-32/ISO-HDLC (zlib's) over every
byte before it. `FrameDecoder.feed` takes chunks of any size, skips garbage, resynchronises
after a bad frame, never raises on device bytes and holds at most two frames' worth of bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from drivers.readings import SPOTS, SpotId
from drivers.rfid_messages import (
    HEADER_LEN,
    HEARTBEAT_INTERVAL_MS,
    MAX_ANTENNAS,
    MAX_CHIPS_PER_REPORT,
    MAX_FRAME_LEN,
    MAX_PAYLOAD,
    MAX_TEXT,
    PROTOCOL_VERSION,
    REPORT_INTERVAL_MS,
    SEATS,
    SYNC,
    TRAILER_LEN,
    UID_LEN,
    UNMAPPED_SEAT,
    UNMAPPED_SPOT,
    WATCHDOG_MS_MAX,
    Ack,
    AckStatus,
    AntennaFault,
    AntennaFaultCode,
    Frame,
    FrameError,
    Heartbeat,
    Identify,
    Identity,
    Inventory,
    Message,
    MsgType,
    Ping,
    Pong,
    SetAntennaMap,
    SetTiming,
    StartInventory,
    StopInventory,
    crc8_smbus,
    crc32_iso_hdlc,
    spot_code,
    spot_from_code,
)

__all__ = [
    "FrameDecoder",
    "decode_all",
    "encode_frame",
    "packetize",
]


# ----------------------------------------------------------------------------- encoding


def _u16(value: int) -> bytes:
    return value.to_bytes(2, "little")


def _text(value: str, what: str) -> bytes:
    if not (value.isascii() and value.isprintable()) or len(value) > MAX_TEXT:
        raise ValueError(f"{what} must be 0..{MAX_TEXT} printable ASCII characters: {value!r}")
    return bytes([len(value)]) + value.encode("ascii")


def _u32(value: int, what: str) -> bytes:
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"{what} must be 0..4294967295, got {value}")
    return value.to_bytes(4, "little")


def _spot_bytes(spot: SpotId | None) -> bytes:
    if spot is None:
        return bytes([UNMAPPED_SEAT, UNMAPPED_SPOT])
    if spot.seat not in SEATS or spot.spot not in SPOTS:
        raise ValueError(f"no betting spot {spot}")
    return bytes([spot.seat, spot_code(spot.spot)])


def _check_antenna(antenna: int) -> None:
    if not 1 <= antenna <= MAX_ANTENNAS:
        raise ValueError(f"antenna must be 1..{MAX_ANTENNAS}, got {antenna}")


def _payload(message: Message) -> tuple[MsgType, bytes]:
    match message:
        case Identify():
            return MsgType.IDENTIFY, b""
        case StartInventory():
            return MsgType.START_INVENTORY, b""
        case StopInventory():
            return MsgType.STOP_INVENTORY, b""
        case SetAntennaMap(assignments):
            if len(assignments) > MAX_ANTENNAS:
                raise ValueError(f"at most {MAX_ANTENNAS} antennas, got {len(assignments)}")
            seen: set[int] = set()
            body = bytearray([len(assignments)])
            for antenna, spot in assignments:
                _check_antenna(antenna)
                if antenna in seen:
                    raise ValueError(f"antenna {antenna} mapped twice")
                seen.add(antenna)
                body += bytes([antenna]) + _spot_bytes(spot)
            return MsgType.SET_ANTENNA_MAP, bytes(body)
        case SetTiming():
            _check_timing(message)
            return MsgType.SET_TIMING, (
                _u16(message.report_interval_ms)
                + _u16(message.heartbeat_interval_ms)
                + _u16(message.watchdog_ms)
            )
        case Ping(token) | Pong(token):
            kind = MsgType.PING if isinstance(message, Ping) else MsgType.PONG
            return kind, _u32(token, "token")
        case Ack():
            if not 0 <= message.cmd_seq <= 0xFFFF or not 0 <= message.cmd_type <= 0xFF:
                raise ValueError("ACK cmd_seq must be 0..65535 and cmd_type 0..255")
            return MsgType.ACK, _u16(message.cmd_seq) + bytes(
                [message.cmd_type, int(message.status)]
            )
        case Identity():
            if not 1 <= message.antenna_count <= MAX_ANTENNAS:
                raise ValueError(f"antenna_count must be 1..{MAX_ANTENNAS}")
            if not message.serial:
                raise ValueError("serial must not be empty")
            return MsgType.IDENTITY, (
                bytes([message.antenna_count])
                + _text(message.model, "model")
                + _text(message.serial, "serial")
                + _text(message.firmware, "firmware")
            )
        case Inventory():
            _check_antenna(message.antenna)
            if not 0 <= message.cycle <= 0xFFFF:
                raise ValueError(f"cycle must be 0..65535, got {message.cycle}")
            if len(message.uids) > MAX_CHIPS_PER_REPORT:
                raise ValueError(f"at most {MAX_CHIPS_PER_REPORT} chips per report")
            if any(len(uid) != UID_LEN for uid in message.uids):
                raise ValueError("every UID must be 8 bytes")
            if len(set(message.uids)) != len(message.uids):
                raise ValueError("a UID appears twice in one report")
            return MsgType.INVENTORY, (
                bytes([message.antenna])
                + _spot_bytes(message.spot)
                + b"\x00"
                + _u16(message.cycle)
                + bytes([len(message.uids)])
                + b"".join(message.uids)
            )
        case Heartbeat():
            if not 0 <= message.mapped_antennas <= MAX_ANTENNAS:
                raise ValueError(f"mapped_antennas must be 0..{MAX_ANTENNAS}")
            return MsgType.HEARTBEAT, (
                _u32(message.uptime_ms, "uptime_ms")
                + bytes([int(message.inventory_running), message.mapped_antennas])
            )
        case AntennaFault():
            _check_antenna(message.antenna)
            return MsgType.ANTENNA_FAULT, bytes([message.antenna, int(message.code)])
    raise TypeError(f"not a protocol message: {message!r}")


def _check_timing(message: SetTiming) -> None:
    if message.report_interval_ms not in REPORT_INTERVAL_MS:
        raise ValueError("report_interval_ms must be 20..10000")
    if message.heartbeat_interval_ms not in HEARTBEAT_INTERVAL_MS:
        raise ValueError("heartbeat_interval_ms must be 20..10000")
    if message.watchdog_ms and not (
        2 * message.heartbeat_interval_ms <= message.watchdog_ms <= WATCHDOG_MS_MAX
    ):
        raise ValueError("watchdog_ms must be 0 (off) or 2 x heartbeat_interval_ms..60000")


def encode_frame(seq: int, message: Message) -> bytes:
    """The wire bytes of one frame; ValueError if the message breaks the protocol's limits."""
    if not 0 <= seq <= 0xFFFF:
        raise ValueError(f"seq must be 0..65535, got {seq}")
    kind, payload = _payload(message)
    header = SYNC + bytes([PROTOCOL_VERSION, int(kind)]) + _u16(seq) + _u16(len(payload))
    head = header + bytes([crc8_smbus(header)])
    body = head + payload
    return body + crc32_iso_hdlc(body).to_bytes(4, "little")


def packetize(stream: bytes, packet_size: int = 64) -> list[bytes]:
    """Cut a byte stream into USB packets; a trailing zero-length packet if it fills them all."""
    packets = [stream[i : i + packet_size] for i in range(0, len(stream), packet_size)]
    if not packets or len(packets[-1]) == packet_size:
        packets.append(b"")
    return packets


# ----------------------------------------------------------------------------- decoding


class _Malformed(Exception):
    """Internal: a checked frame whose payload breaks the message layout."""


def _read_text(payload: bytes, at: int, what: str) -> tuple[str, int]:
    if at >= len(payload):
        raise _Malformed(f"{what}: missing length byte")
    size = payload[at]
    raw = payload[at + 1 : at + 1 + size]
    if size > MAX_TEXT or len(raw) != size:
        raise _Malformed(f"{what}: bad length {size}")
    if not all(0x20 <= b <= 0x7E for b in raw):
        raise _Malformed(f"{what}: not printable ASCII")
    return raw.decode("ascii"), at + 1 + size


def _read_spot(seat: int, code: int) -> SpotId | None:
    try:
        return spot_from_code(seat, code)
    except ValueError as exc:
        raise _Malformed(str(exc)) from None


def _need(payload: bytes, size: int, kind: MsgType) -> None:
    if len(payload) != size:
        raise _Malformed(f"{kind.name}: payload is {len(payload)} bytes, expected {size}")


def _antenna(value: int) -> int:
    if not 1 <= value <= MAX_ANTENNAS:
        raise _Malformed(f"antenna {value} out of range 1..{MAX_ANTENNAS}")
    return value


def _le(raw: bytes) -> int:
    return int.from_bytes(raw, "little")


def _empty(kind: MsgType, message: Message) -> Callable[[bytes], Message]:
    def decode(payload: bytes) -> Message:
        _need(payload, 0, kind)
        return message

    return decode


def _dec_antenna_map(payload: bytes) -> Message:
    if not payload:
        raise _Malformed("SET_ANTENNA_MAP: empty payload")
    count = payload[0]
    _need(payload, 1 + 3 * count, MsgType.SET_ANTENNA_MAP)
    pairs = []
    for i in range(count):
        antenna, seat, code = payload[1 + 3 * i : 4 + 3 * i]
        spot = _read_spot(seat, code)
        if spot is None:
            raise _Malformed("SET_ANTENNA_MAP: an assignment names no spot")
        pairs.append((_antenna(antenna), spot))
    if len({a for a, _ in pairs}) != len(pairs):
        raise _Malformed("SET_ANTENNA_MAP: an antenna is mapped twice")
    return SetAntennaMap(tuple(pairs))


def _dec_timing(payload: bytes) -> Message:
    _need(payload, 6, MsgType.SET_TIMING)
    timing = SetTiming(
        report_interval_ms=_le(payload[0:2]),
        heartbeat_interval_ms=_le(payload[2:4]),
        watchdog_ms=_le(payload[4:6]),
    )
    try:
        _check_timing(timing)
    except ValueError as exc:
        raise _Malformed(f"SET_TIMING: {exc}") from None
    return timing


def _dec_ping(payload: bytes) -> Message:
    _need(payload, 4, MsgType.PING)
    return Ping(_le(payload))


def _dec_pong(payload: bytes) -> Message:
    _need(payload, 4, MsgType.PONG)
    return Pong(_le(payload))


def _dec_ack(payload: bytes) -> Message:
    _need(payload, 4, MsgType.ACK)
    try:
        status = AckStatus(payload[3])
    except ValueError:
        raise _Malformed(f"ACK: unknown status {payload[3]}") from None
    return Ack(cmd_seq=_le(payload[0:2]), cmd_type=payload[2], status=status)


def _dec_identity(payload: bytes) -> Message:
    if not payload:
        raise _Malformed("IDENTITY: empty payload")
    antenna_count = payload[0]
    if not 1 <= antenna_count <= MAX_ANTENNAS:
        raise _Malformed(f"IDENTITY: antenna_count {antenna_count}")
    model, at = _read_text(payload, 1, "model")
    serial, at = _read_text(payload, at, "serial")
    firmware, at = _read_text(payload, at, "firmware")
    if at != len(payload):
        raise _Malformed("IDENTITY: trailing bytes")
    if not serial:
        raise _Malformed("IDENTITY: empty serial")
    return Identity(model=model, serial=serial, firmware=firmware, antenna_count=antenna_count)


def _dec_inventory(payload: bytes) -> Message:
    if len(payload) < 7:
        raise _Malformed("INVENTORY: payload shorter than 7 bytes")
    antenna, seat, code, reserved = payload[0:4]
    count = payload[6]
    if count > MAX_CHIPS_PER_REPORT:
        raise _Malformed(f"INVENTORY: {count} chips (at most {MAX_CHIPS_PER_REPORT})")
    _need(payload, 7 + UID_LEN * count, MsgType.INVENTORY)
    if reserved:
        raise _Malformed(f"INVENTORY: reserved byte is 0x{reserved:02X}, must be 0")
    uids = tuple(payload[7 + UID_LEN * i : 7 + UID_LEN * (i + 1)] for i in range(count))
    if len(set(uids)) != count:
        raise _Malformed("INVENTORY: a UID appears twice")
    return Inventory(
        antenna=_antenna(antenna), spot=_read_spot(seat, code), cycle=_le(payload[4:6]), uids=uids
    )


def _dec_heartbeat(payload: bytes) -> Message:
    _need(payload, 6, MsgType.HEARTBEAT)
    if payload[4] > 1 or payload[5] > MAX_ANTENNAS:
        raise _Malformed(f"HEARTBEAT: state {payload[4]}, mapped antennas {payload[5]}")
    return Heartbeat(
        uptime_ms=_le(payload[0:4]), inventory_running=bool(payload[4]), mapped_antennas=payload[5]
    )


def _dec_antenna_fault(payload: bytes) -> Message:
    _need(payload, 2, MsgType.ANTENNA_FAULT)
    try:
        code = AntennaFaultCode(payload[1])
    except ValueError:
        raise _Malformed(f"ANTENNA_FAULT: unknown code {payload[1]}") from None
    return AntennaFault(antenna=_antenna(payload[0]), code=code)


_DECODERS: dict[int, Callable[[bytes], Message]] = {
    MsgType.IDENTIFY: _empty(MsgType.IDENTIFY, Identify()),
    MsgType.START_INVENTORY: _empty(MsgType.START_INVENTORY, StartInventory()),
    MsgType.STOP_INVENTORY: _empty(MsgType.STOP_INVENTORY, StopInventory()),
    MsgType.SET_ANTENNA_MAP: _dec_antenna_map,
    MsgType.SET_TIMING: _dec_timing,
    MsgType.PING: _dec_ping,
    MsgType.ACK: _dec_ack,
    MsgType.IDENTITY: _dec_identity,
    MsgType.INVENTORY: _dec_inventory,
    MsgType.HEARTBEAT: _dec_heartbeat,
    MsgType.PONG: _dec_pong,
    MsgType.ANTENNA_FAULT: _dec_antenna_fault,
}


def _decode_payload(kind: int, payload: bytes) -> Message:
    decode = _DECODERS.get(kind)
    if decode is None:
        raise _Malformed(f"unknown message type 0x{kind:02X}")
    return decode(payload)


class FrameDecoder:
    """Stream parser: feed bytes in any chunks, get verified frames and refusals back.

    Never raises on input; keeps at most ``2 * MAX_FRAME_LEN`` bytes. Counters: ``frames``,
    ``header_errors``, ``crc_errors``, ``malformed``, ``garbage_bytes`` (skipped looking for sync).
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.frames = 0
        self.header_errors = 0
        self.crc_errors = 0
        self.malformed = 0
        self.garbage_bytes = 0

    @property
    def bad_frames(self) -> int:
        """Frames refused for any reason (header check, CRC, content)."""
        return self.header_errors + self.crc_errors + self.malformed

    @property
    def buffered(self) -> int:
        """Bytes held waiting for the rest of a frame."""
        return len(self._buf)

    def counters(self) -> dict[str, int]:
        """All counters as a plain dict."""
        return {
            "frames": self.frames,
            "bad_frames": self.bad_frames,
            "header_errors": self.header_errors,
            "crc_errors": self.crc_errors,
            "malformed": self.malformed,
            "garbage_bytes": self.garbage_bytes,
        }

    def reset(self) -> None:
        """Forget buffered bytes (after a reconnect); counters are kept."""
        self._buf.clear()

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame | FrameError]:
        """Take the next bytes from the device; return what became complete, in order."""
        out: list[Frame | FrameError] = []
        view = memoryview(bytes(data))
        for start in range(0, len(view), MAX_FRAME_LEN):
            self._buf += view[start : start + MAX_FRAME_LEN]
            self._drain(out)
        return out

    def _drain(self, out: list[Frame | FrameError]) -> None:
        buf = self._buf
        while True:
            at = buf.find(SYNC)
            if at < 0:
                keep = 1 if buf[-1:] == SYNC[:1] else 0
                self.garbage_bytes += len(buf) - keep
                del buf[: len(buf) - keep]
                return
            if at:
                self.garbage_bytes += at
                del buf[:at]
            if len(buf) < HEADER_LEN:
                return
            length = int.from_bytes(buf[6:8], "little")
            if crc8_smbus(buf[:8]) != buf[8] or buf[2] != PROTOCOL_VERSION or length > MAX_PAYLOAD:
                self.header_errors += 1
                out.append(FrameError("header", _header_detail(buf)))
                del buf[:1]
                continue
            total = HEADER_LEN + length + TRAILER_LEN
            if len(buf) < total:
                return
            crc = int.from_bytes(buf[total - 4 : total], "little")
            if crc32_iso_hdlc(memoryview(buf)[: total - 4]) != crc:
                self.crc_errors += 1
                out.append(FrameError("crc", f"CRC mismatch in a {total}-byte frame"))
                del buf[:1]
                continue
            seq = int.from_bytes(buf[4:6], "little")
            payload = bytes(buf[HEADER_LEN : total - 4])
            kind = buf[3]
            del buf[:total]
            try:
                message = _decode_payload(kind, payload)
            except _Malformed as exc:
                self.malformed += 1
                out.append(FrameError("malformed", f"seq {seq}: {exc}", seq, kind))
                continue
            self.frames += 1
            out.append(Frame(seq, message))


def _header_detail(buf: bytearray) -> str:
    if crc8_smbus(buf[:8]) != buf[8]:
        return "header check failed"
    if buf[2] != PROTOCOL_VERSION:
        return f"unsupported protocol version {buf[2]}"
    return f"payload length {int.from_bytes(buf[6:8], 'little')} exceeds {MAX_PAYLOAD}"


def decode_all(data: Iterable[bytes]) -> list[Frame | FrameError]:
    """Decode a sequence of chunks with a fresh decoder (for tests and tools)."""
    decoder = FrameDecoder()
    out: list[Frame | FrameError] = []
    for chunk in data:
        out += decoder.feed(chunk)
    return out
