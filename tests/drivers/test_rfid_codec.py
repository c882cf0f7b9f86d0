"""The RFID reader codec: checksums from their published parameters, the worked examples of
docs/protocols/chip-rfid.md, round trips, chunked feeding, resynchronisation and fuzzing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.readings import SPOTS, SpotId
from drivers.rfid_codec import FrameDecoder, decode_all, encode_frame, packetize
from drivers.rfid_messages import (
    DEFAULT_ANTENNA_MAP,
    MAX_FRAME_LEN,
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
    Ping,
    Pong,
    SetAntennaMap,
    SetTiming,
    StartInventory,
    StopInventory,
    crc8_smbus,
    crc32_iso_hdlc,
    seq_delta,
)

# ----------------------------------------------------------------------------- checksums


def ref_crc8_smbus(data: bytes) -> int:
    """Bit by bit from the catalogue parameters: width 8, poly 0x07, init 0, no reflection."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def ref_crc32_iso_hdlc(data: bytes) -> int:
    """Bit by bit: poly 0x04C11DB7 reflected (0xEDB88320), init and xorout 0xFFFFFFFF."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def test_check_values_from_the_crc_catalogue() -> None:
    assert ref_crc8_smbus(b"123456789") == 0xF4
    assert ref_crc32_iso_hdlc(b"123456789") == 0xCBF43926
    assert crc8_smbus(b"123456789") == 0xF4
    assert crc32_iso_hdlc(b"123456789") == 0xCBF43926


@given(st.binary(max_size=300))
def test_crcs_match_the_bitwise_reference(data: bytes) -> None:
    assert crc8_smbus(data) == ref_crc8_smbus(data)
    assert crc32_iso_hdlc(data) == ref_crc32_iso_hdlc(data)


# ----------------------------------------------------------------------------- worked examples

IDENTIFY_SEQ1 = "A5 5A 01 01 01 00 00 00 16 F3 78 43 28"
INVENTORY_EXAMPLE = (
    "A5 5A 01 82 0B 0A 17 00 00 09 02 01 00 23 01 02 "
    "E0 5D 01 02 01 00 00 01 E0 5D 01 02 03 00 00 02 02 ED 6D C9"
)


def test_worked_example_identify() -> None:
    wire = bytes.fromhex(IDENTIFY_SEQ1)
    assert wire[8] == ref_crc8_smbus(wire[:8])
    assert int.from_bytes(wire[9:], "little") == ref_crc32_iso_hdlc(wire[:9])
    assert encode_frame(1, Identify()) == wire
    assert decode_all([wire]) == [Frame(1, Identify())]


def test_worked_example_inventory() -> None:
    wire = bytes.fromhex(INVENTORY_EXAMPLE)
    assert wire[8] == ref_crc8_smbus(wire[:8])
    assert int.from_bytes(wire[-4:], "little") == ref_crc32_iso_hdlc(wire[:-4])
    message = Inventory(
        antenna=9,
        spot=SpotId(2, "odds"),
        cycle=0x0123,
        uids=(bytes.fromhex("E05D010201000001"), bytes.fromhex("E05D010203000002")),
    )
    assert encode_frame(0x0A0B, message) == wire
    assert decode_all([wire]) == [Frame(0x0A0B, message)]


def test_default_antenna_map_is_the_documented_table() -> None:
    assert len(DEFAULT_ANTENNA_MAP) == 6 * 7
    assert DEFAULT_ANTENNA_MAP[1] == SpotId(1, "ante")
    assert DEFAULT_ANTENNA_MAP[9] == SpotId(2, "odds")
    assert DEFAULT_ANTENNA_MAP[21] == SpotId(3, "marker")
    assert DEFAULT_ANTENNA_MAP[39] == SpotId(6, "trips_plus")
    assert DEFAULT_ANTENNA_MAP[42] == SpotId(6, "marker")
    assert len(set(DEFAULT_ANTENNA_MAP.values())) == 42


# ----------------------------------------------------------------------------- round trips

uids_st = st.lists(st.binary(min_size=8, max_size=8), max_size=120, unique=True).map(tuple)
spot_st = st.builds(SpotId, st.integers(1, 6), st.sampled_from(SPOTS))
text_st = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=32)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)


@st.composite
def timing_st(draw: st.DrawFn) -> SetTiming:
    heartbeat = draw(st.integers(20, 10_000))
    watchdog = draw(st.one_of(st.just(0), st.integers(2 * heartbeat, 60_000)))
    return SetTiming(
        report_interval_ms=draw(st.integers(20, 10_000)),
        heartbeat_interval_ms=heartbeat,
        watchdog_ms=watchdog,
    )


@st.composite
def antenna_map_st(draw: st.DrawFn) -> SetAntennaMap:
    antennas = draw(st.lists(st.integers(1, 64), unique=True, max_size=42))
    spots = draw(st.lists(spot_st, unique=True, min_size=len(antennas), max_size=len(antennas)))
    return SetAntennaMap(tuple(zip(antennas, spots, strict=True)))


messages_st: st.SearchStrategy[Message] = st.one_of(
    st.just(Identify()),
    st.just(StartInventory()),
    st.just(StopInventory()),
    antenna_map_st(),
    timing_st(),
    st.builds(Ping, u32),
    st.builds(Pong, u32),
    st.builds(Ack, cmd_seq=u16, cmd_type=st.integers(0, 255), status=st.sampled_from(AckStatus)),
    st.builds(
        Identity, model=text_st, serial=text_st.filter(bool), firmware=text_st,
        antenna_count=st.integers(1, 64),
    ),
    st.builds(
        Inventory, antenna=st.integers(1, 64), spot=st.one_of(st.none(), spot_st), cycle=u16,
        uids=uids_st,
    ),
    st.builds(
        Heartbeat, uptime_ms=u32, inventory_running=st.booleans(),
        mapped_antennas=st.integers(0, 64),
    ),
    st.builds(
        AntennaFault, antenna=st.integers(1, 64), code=st.sampled_from(AntennaFaultCode)
    ),
)


@given(u16, messages_st)
def test_every_message_round_trips(seq: int, message: Message) -> None:
    wire = encode_frame(seq, message)
    assert len(wire) <= MAX_FRAME_LEN
    assert decode_all([wire]) == [Frame(seq, message)]


@given(st.lists(st.tuples(u16, messages_st), max_size=12), st.randoms(use_true_random=False))
def test_any_chunking_gives_the_same_frames(
    frames: list[tuple[int, Message]], rnd: random.Random
) -> None:
    stream = b"".join(encode_frame(seq, m) for seq, m in frames)
    cuts = sorted(rnd.sample(range(len(stream) + 1), min(len(stream) + 1, 20)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert decode_all(chunks) == [Frame(seq, m) for seq, m in frames]


def test_byte_by_byte_feeding() -> None:
    frames = [(i, Ping(i)) for i in range(5)]
    stream = b"".join(encode_frame(s, m) for s, m in frames)
    decoder = FrameDecoder()
    out = []
    for b in stream:
        out += decoder.feed(bytes([b]))
    assert out == [Frame(s, m) for s, m in frames]
    assert decoder.buffered == 0


# ----------------------------------------------------------------------------- resync


def test_garbage_between_frames_is_skipped_and_counted() -> None:
    a, b = encode_frame(1, Ping(1)), encode_frame(2, Ping(2))
    decoder = FrameDecoder()
    out = decoder.feed(b"\x00\x01junk" + a + b"\xa5\xa5\x5b" + b + b"\xa5")
    assert [x for x in out if isinstance(x, Frame)] == [Frame(1, Ping(1)), Frame(2, Ping(2))]
    assert decoder.garbage_bytes == 6 + 3
    assert decoder.buffered == 1  # a trailing A5 may start the next sync


def test_a_corrupt_frame_is_refused_and_its_neighbours_survive() -> None:
    frames = [encode_frame(i, Heartbeat(uptime_ms=i, inventory_running=True,
                                        mapped_antennas=42)) for i in range(3)]
    for at in range(2, len(frames[1])):
        bad = bytearray(frames[1])
        bad[at] ^= 0x40
        decoder = FrameDecoder()
        out = decoder.feed(frames[0] + bytes(bad) + frames[2])
        good = [x.seq for x in out if isinstance(x, Frame)]
        assert good == [0, 2], at
        assert decoder.bad_frames >= 1


def test_a_truncated_frame_does_not_swallow_the_next() -> None:
    first = encode_frame(1, Identity(model="m", serial="s", firmware="f", antenna_count=48))
    second = encode_frame(2, Ping(7))
    decoder = FrameDecoder()
    out = decoder.feed(first[:-5] + second)
    assert [x for x in out if isinstance(x, Frame)] == [Frame(2, Ping(7))]


def test_an_oversized_length_is_refused_at_the_header() -> None:
    header = b"\xa5\x5a\x01\x82\x00\x00" + (1025).to_bytes(2, "little")
    decoder = FrameDecoder()
    out = decoder.feed(header + bytes([crc8_smbus(header)]))
    assert out == [FrameError("header", "payload length 1025 exceeds 1024")]
    assert decoder.buffered < 9


def test_an_unknown_version_is_refused_at_the_header() -> None:
    header = b"\xa5\x5a\x02\x81\x00\x00\x00\x00"
    out = FrameDecoder().feed(header + bytes([crc8_smbus(header)]) + b"\x00" * 4)
    assert out[0] == FrameError("header", "unsupported protocol version 2")


def _checked_frame(kind: int, payload: bytes, seq: int = 9) -> bytes:
    header = b"\xa5\x5a\x01" + bytes([kind]) + seq.to_bytes(2, "little") + len(
        payload
    ).to_bytes(2, "little")
    body = header + bytes([crc8_smbus(header)]) + payload
    return body + crc32_iso_hdlc(body).to_bytes(4, "little")


uid = bytes.fromhex("E0045D0000000001")


@pytest.mark.parametrize(
    ("kind", "payload", "why"),
    [
        (0x7F, b"", "unknown message type"),
        (0x01, b"\x00", "payload is 1 bytes"),
        (0x82, bytes([1, 1, 0, 1, 0, 0, 1]) + uid, "reserved byte"),
        (0x82, bytes([1, 1, 0, 0, 0, 0, 2]) + uid + uid, "appears twice"),
        (0x82, bytes([1, 7, 0, 0, 0, 0, 0]), "no betting spot"),
        (0x82, bytes([1, 1, 7, 0, 0, 0, 0]), "no betting spot"),
        (0x82, bytes([0, 1, 0, 0, 0, 0, 0]), "antenna 0 out of range"),
        (0x82, bytes([1, 1, 0, 0, 0, 0, 121]) + uid * 121, "121 chips"),
        (0x82, bytes([1, 1, 0, 0, 0, 0, 2]) + uid, "payload is 15 bytes"),
        (0x81, bytes([48, 1]) + b"\x07" + bytes([1]) + b"s" + bytes([0]), "printable"),
        (0x81, bytes([48, 0, 0, 0]), "empty serial"),
        (0x80, b"\x01\x00\x02\x09", "unknown status"),
        (0x83, b"\x00\x00\x00\x00\x02\x00", "HEARTBEAT"),
        (0x85, b"\x01\x09", "unknown code"),
        (0x05, b"\x0a\x00\xf4\x01\x00\x00", "report_interval_ms"),
        (0x04, bytes([2, 1, 1, 0, 1, 1, 1]), "mapped twice"),
    ],
)
def test_checked_but_malformed_payloads_are_refused(kind: int, payload: bytes, why: str) -> None:
    decoder = FrameDecoder()
    out = decoder.feed(_checked_frame(kind, payload) + encode_frame(10, Ping(1)))
    assert isinstance(out[0], FrameError)
    assert out[0].kind == "malformed"
    assert why in out[0].detail
    assert (out[0].seq, out[0].msg_type) == (9, kind)
    assert out[1:] == [Frame(10, Ping(1))]
    assert decoder.malformed == 1


def test_memory_stays_bounded() -> None:
    decoder = FrameDecoder()
    decoder.feed(bytes(100_000))
    assert decoder.buffered == 0
    header = b"\xa5\x5a\x01\x82\x00\x00" + (1024).to_bytes(2, "little")
    decoder.feed(header + bytes([crc8_smbus(header)]) + b"\x01" * 500)
    assert decoder.buffered <= MAX_FRAME_LEN
    decoder.feed(b"\xa5" * 50_000)
    assert decoder.buffered <= 2 * MAX_FRAME_LEN


# ----------------------------------------------------------------------------- encoder limits


@pytest.mark.parametrize(
    "bad",
    [
        lambda: encode_frame(70_000, Identify()),
        lambda: encode_frame(0, Inventory(antenna=1, spot=None, cycle=0, uids=(b"short",))),
        lambda: encode_frame(0, Inventory(antenna=1, spot=None, cycle=0, uids=(uid, uid))),
        lambda: encode_frame(
            0, Inventory(antenna=1, spot=None, cycle=0,
                         uids=tuple(i.to_bytes(8, "big") for i in range(121)))
        ),
        lambda: encode_frame(0, Inventory(antenna=0, spot=None, cycle=0, uids=())),
        lambda: encode_frame(0, Inventory(antenna=1, spot=SpotId(7, "ante"), cycle=0, uids=())),
        lambda: encode_frame(0, Identity(model="é", serial="s", firmware="", antenna_count=1)),
        lambda: encode_frame(0, Identity(model="m", serial="", firmware="", antenna_count=1)),
        lambda: encode_frame(0, Identity(model="m" * 33, serial="s", firmware="",
                                         antenna_count=1)),
        lambda: encode_frame(0, SetTiming(report_interval_ms=10, heartbeat_interval_ms=500,
                                          watchdog_ms=0)),
        lambda: encode_frame(0, SetTiming(report_interval_ms=200, heartbeat_interval_ms=500,
                                          watchdog_ms=600)),
        lambda: encode_frame(0, SetAntennaMap(((1, SpotId(1, "ante")), (1, SpotId(1, "odds"))))),
        lambda: encode_frame(0, Ping(-1)),
    ],
)
def test_the_encoder_refuses_what_the_protocol_forbids(bad: object) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        bad()  # type: ignore[operator]


def test_sequence_distance_on_the_16_bit_circle() -> None:
    assert seq_delta(1, 0) == 1
    assert seq_delta(0, 65535) == 1
    assert seq_delta(65535, 0) == -1
    assert seq_delta(5, 5) == 0
    assert seq_delta(100, 36) == 64
    assert seq_delta(3, 65533) == 6
    assert seq_delta(0x8000, 0) == -0x8000


def test_packetize_cuts_64_byte_packets_and_ends_full_transfers_with_a_zlp() -> None:
    assert [len(p) for p in packetize(bytes(340))] == [64, 64, 64, 64, 64, 20]
    assert [len(p) for p in packetize(bytes(128))] == [64, 64, 0]
    assert packetize(b"") == [b""]
    assert b"".join(packetize(bytes(range(200)))) == bytes(range(200))


# ----------------------------------------------------------------------------- fuzzing


def _accepted_frames_are_verbatim(data: bytes, chunk: int) -> list[Frame]:
    decoder = FrameDecoder()
    frames: list[Frame] = []
    for i in range(0, len(data), chunk):
        for item in decoder.feed(data[i : i + chunk]):
            if isinstance(item, Frame):
                frames.append(item)
    for frame in frames:
        # the exact wire bytes of every accepted frame (header check and CRC included) are in
        # the input: nothing unverified is ever delivered
        assert encode_frame(frame.seq, frame.message) in data
    assert decoder.buffered <= 2 * MAX_FRAME_LEN
    return frames


@given(st.binary(max_size=4000), st.integers(1, 700))
def test_random_bytes_never_crash_and_never_yield_unverified_frames(
    data: bytes, chunk: int
) -> None:
    _accepted_frames_are_verbatim(data, chunk)


@settings(max_examples=300)
@given(
    st.lists(st.tuples(u16, messages_st), min_size=1, max_size=6),
    st.lists(
        st.tuples(st.sampled_from(["flip", "insert", "delete", "truncate", "dup"]),
                  st.integers(0, 10_000), st.integers(1, 255)),
        max_size=6,
    ),
    st.integers(1, 300),
)
def test_mutated_frames_never_yield_a_wrong_message(
    frames: list[tuple[int, Message]],
    mutations: list[tuple[str, int, int]],
    chunk: int,
) -> None:
    stream = bytearray(b"".join(encode_frame(s, m) for s, m in frames))
    for op, pos, value in mutations:
        at = pos % (len(stream) + 1)
        if op == "flip" and at < len(stream):
            stream[at] ^= value
        elif op == "insert":
            stream[at:at] = bytes([value]) * (value % 7 + 1)
        elif op == "delete":
            del stream[at : at + value % 9 + 1]
        elif op == "truncate":
            del stream[at:]
        elif op == "dup":
            stream[at:at] = stream[max(0, at - value) : at]
    originals = {(s, m) for s, m in frames}
    for frame in _accepted_frames_are_verbatim(bytes(stream), chunk):
        # a mutation that happens to leave a whole frame intact may pass it; anything else not
        assert (frame.seq, frame.message) in originals
