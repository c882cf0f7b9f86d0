"""The card-shoe codec: frame layout, CRC, round trips, chunking, resynchronisation, fuzzing.

Expected bytes come from docs/protocols/card-shoe.md and are checked against a bit-by-bit
CRC-16/CCITT-FALSE written here from the catalogue definition, not against the codec's own CRC.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.readings import ShoeState
from drivers.shoe_codec import (
    MAX_FRAME,
    MAX_PAYLOAD,
    SOF,
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Identify,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    ShoeMessage,
    StatusReport,
    crc16,
    encode,
)
from game.poker.cards import DECK, parse_card


def ref_crc(data: bytes) -> int:
    """CRC-16/CCITT-FALSE bit by bit: poly 0x1021, init 0xFFFF, no reflection, xorout 0."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame_crc_ok(frame: bytes) -> bool:
    return ref_crc(frame[1:-2]) == int.from_bytes(frame[-2:], "big")


def decode_all(decoder: ShoeDecoder, data: bytes = b"") -> list[ShoeMessage | BadFrame]:
    decoder.feed(data)
    out: list[ShoeMessage | BadFrame] = []
    while (event := decoder.next_event()) is not None:
        out.append(event)
    return out


def decode_idle(decoder: ShoeDecoder, data: bytes = b"") -> list[ShoeMessage | BadFrame]:
    """Decode, then let the line go idle: give up on partial frames until nothing is left."""
    out = decode_all(decoder, data)
    while (gave_up := decoder.flush_partial()) is not None:
        out += [gave_up, *decode_all(decoder)]
    return out


def messages(events: list[ShoeMessage | BadFrame]) -> list[ShoeMessage]:
    return [e for e in events if not isinstance(e, BadFrame)]


def sender_of(message: ShoeMessage) -> str:
    return "host" if isinstance(message, Identify | Ack | Nak) else "device"


# ------------------------------------------------------------------------------ strategies

u32 = st.integers(0, 2**32 - 1)
link = {"seq": st.integers(0, 255), "retransmit": st.booleans()}
text = st.text(alphabet=[chr(c) for c in range(0x20, 0x7F)], min_size=1, max_size=15)
states = st.sampled_from(list(ShoeState))
device_messages = st.one_of(
    st.builds(CardReport, evn=u32, read_index=u32, card=st.sampled_from(DECK),
              quality=st.integers(0, 100), **link),
    st.builds(StatusReport, evn=u32, state=states, detail=st.integers(0, 255), reads=u32,
              **link),
    st.builds(Heartbeat, state=states, reads=u32, next_evn=u32, **link),
    st.builds(ShoeIdentity, session_id=u32, proto_minor=st.integers(0, 255),
              heartbeat_ms=st.integers(0, 0xFFFF), reads=u32, unacked_from=u32, model=text,
              serial=text, firmware=text, **link),
)
host_messages = st.one_of(
    st.builds(Identify, **link),
    st.builds(Ack, next_evn=u32, **link),
    st.builds(Nak, next_evn=u32, **link),
)
ACE_HEARTS = parse_card("Ah")
EXAMPLE = CardReport(evn=7, read_index=5, card=ACE_HEARTS, quality=98, seq=0x12)


# ------------------------------------------------------------------------------ CRC and layout


def test_crc_is_ccitt_false_with_the_catalogue_check_value() -> None:
    assert ref_crc(b"123456789") == 0x29B1
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF


@given(st.binary(max_size=200))
def test_crc_matches_the_bitwise_reference(data: bytes) -> None:
    assert crc16(data) == ref_crc(data)


def test_worked_example_from_the_protocol_document() -> None:
    doc = bytes.fromhex("7E 0B 01 02 12 00 00 00 00 07 00 00 00 05 0C 02 62 73 34")
    assert ref_crc(doc[1:-2]) == 0x7334
    assert encode(EXAMPLE) == doc
    assert decode_all(ShoeDecoder("device"), doc) == [EXAMPLE]


@pytest.mark.parametrize(
    ("message", "doc_hex"),
    [
        (CardReport(evn=7, read_index=5, card=ACE_HEARTS, quality=98, seq=0x15, retransmit=True),
         "7E 0B 01 02 15 01 00 00 00 07 00 00 00 05 0C 02 62 BA 49"),
        (Ack(next_evn=8, seq=3), "7E 04 01 82 03 00 00 00 00 08 47 BC"),
        (Identify(seq=0), "7E 00 01 81 00 00 6B D2"),
        (Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13),
         "7E 09 01 04 13 00 00 00 00 00 06 00 00 00 08 10 9D"),
        (StatusReport(evn=8, state=ShoeState.COVER_OPEN, detail=0, reads=6, seq=0x14),
         "7E 0A 01 03 14 00 00 00 00 08 01 00 00 00 00 06 1C D4"),
    ],
)
def test_other_document_examples(message: ShoeMessage, doc_hex: str) -> None:
    doc = bytes.fromhex(doc_hex)
    assert frame_crc_ok(doc)
    assert encode(message) == doc
    assert decode_all(ShoeDecoder(sender_of(message)), doc) == [message]  # type: ignore[arg-type]


def test_card_frame_is_laid_out_byte_by_byte_as_documented() -> None:
    card = parse_card("Td")  # rank 8 (2=0 .. T=8), suit 1 (diamonds)
    body = bytes([11, 1, 0x02, 200, 0x01]) + struct.pack(">IIBBB", 70000, 41, 8, 1, 0)
    expected = bytes([SOF]) + body + ref_crc(body).to_bytes(2, "big")
    message = CardReport(evn=70000, read_index=41, card=card, quality=0, seq=200,
                         retransmit=True)
    assert encode(message) == expected


def test_identity_frame_layout() -> None:
    ident = ShoeIdentity(session_id=0x2079D2B1, proto_minor=0, heartbeat_ms=1000, reads=5,
                         unacked_from=7, model="HUPS-1", serial="SH-0042", firmware="1.0.3",
                         seq=0x10)
    payload = (bytes.fromhex("2079D2B1 00 03E8 00000005 00000007") + b"\x06HUPS-1"
               + b"\x07SH-0042" + b"\x051.0.3")
    body = bytes([len(payload), 1, 0x01, 0x10, 0]) + payload
    assert encode(ident) == bytes([SOF]) + body + ref_crc(body).to_bytes(2, "big")


def test_every_state_code_is_as_documented() -> None:
    codes = {ShoeState.READY: 0, ShoeState.COVER_OPEN: 1, ShoeState.JAM: 2,
             ShoeState.EMPTY: 3, ShoeState.UNREADABLE_CARD: 4}
    for state, code in codes.items():
        frame = encode(Heartbeat(state=state, reads=0, next_evn=0))
        assert frame[6] == code


# ------------------------------------------------------------------------------ round trips


@given(device_messages)
def test_device_messages_round_trip(message: ShoeMessage) -> None:
    frame = encode(message)
    assert 8 <= len(frame) <= MAX_FRAME
    assert frame_crc_ok(frame)
    assert decode_all(ShoeDecoder("device"), frame) == [message]


@given(host_messages)
def test_host_messages_round_trip(message: ShoeMessage) -> None:
    frame = encode(message)
    assert frame_crc_ok(frame)
    assert decode_all(ShoeDecoder("host"), frame) == [message]


def test_largest_identity_fits_the_maximum_frame() -> None:
    ident = ShoeIdentity(session_id=1, proto_minor=0, heartbeat_ms=1000, reads=0,
                         unacked_from=0, model="M" * 15, serial="S" * 15, firmware="F" * 15)
    frame = encode(ident)
    assert len(frame) - 8 <= MAX_PAYLOAD
    assert decode_all(ShoeDecoder("device"), frame) == [ident]


@given(st.lists(device_messages, min_size=1, max_size=12), st.data())
def test_any_split_of_a_stream_gives_the_same_messages(
    sent: list[ShoeMessage], data: st.DataObject
) -> None:
    stream = b"".join(encode(m) for m in sent)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    decoder = ShoeDecoder("device")
    got: list[ShoeMessage | BadFrame] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += decode_all(decoder, stream[a:b])
    assert got == sent
    assert decoder.buffered == 0


def test_one_byte_at_a_time() -> None:
    sent: list[ShoeMessage] = [
        EXAMPLE,
        Heartbeat(state=ShoeState.JAM, reads=3, next_evn=SOF, seq=SOF),  # 0x7E inside
        StatusReport(evn=SOF, state=ShoeState.EMPTY, detail=1, reads=0x7E7E7E7E),
    ]
    stream = b"".join(encode(m) for m in sent)
    decoder = ShoeDecoder("device")
    got: list[ShoeMessage | BadFrame] = []
    for byte in stream:
        got += decode_all(decoder, bytes([byte]))
    assert got == sent
    assert decoder.stats.frames == 3
    assert decoder.stats.bad_frames == 0


# ------------------------------------------------------------------------------ resync and refusals


@given(st.lists(st.tuples(st.binary(max_size=40), device_messages), min_size=1, max_size=8))
def test_garbage_between_frames_is_skipped_and_every_frame_recovered(
    parts: list[tuple[bytes, ShoeMessage]],
) -> None:
    stream = b"".join(g + encode(m) for g, m in parts)
    got = messages(decode_idle(ShoeDecoder("device"), stream))
    sent = [m for _, m in parts]
    # Garbage may by chance hold a frame of its own; the sent frames all come out, in order.
    it = iter(got)
    assert all(any(m == g for g in it) for m in sent)


def test_a_corrupt_frame_is_counted_and_the_next_one_recovered() -> None:
    bad = bytearray(encode(EXAMPLE))
    bad[12] ^= 0x40
    hb = Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13)
    decoder = ShoeDecoder("device")
    events = decode_all(decoder, bytes(bad) + encode(hb))
    assert events == [BadFrame(reason="crc", size=19), hb]
    assert decoder.stats.reasons["crc"] == 1


def test_a_truncated_frame_does_not_hide_the_next_one() -> None:
    hb = Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13)
    stream = encode(EXAMPLE)[:10] + encode(hb) + encode(hb)
    got = decode_all(ShoeDecoder("device"), stream)
    assert messages(got) == [hb, hb]
    assert any(isinstance(e, BadFrame) and e.reason == "crc" for e in got)


def test_a_false_start_in_noise_is_given_up_when_the_line_goes_idle() -> None:
    hb = Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13)
    decoder = ShoeDecoder("device")
    assert decode_all(decoder, bytes([SOF, 0x0E]) + encode(hb)) == []  # waits for 22 bytes
    assert decoder.flush_partial() == BadFrame(reason="truncated", size=19)
    assert decode_all(decoder) == [hb]
    assert decoder.flush_partial() is None
    assert decoder.stats.reasons["truncated"] == 1


def test_an_impossible_length_is_refused_at_once() -> None:
    decoder = ShoeDecoder("device")
    events = decode_all(decoder, bytes([SOF, MAX_PAYLOAD + 1]) + encode(EXAMPLE))
    assert events == [BadFrame(reason="length", size=2), EXAMPLE]


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ((2, 2), "version"),  # VER 2
        ((5, 0x02), "flags"),  # a reserved flag
        ((3, 0x82), "direction"),  # an ACK type arriving at the host
        ((3, 0x05), "unknown_type"),
        ((14, 13), "payload"),  # rank 13
        ((15, 4), "payload"),  # suit 4
        ((16, 101), "payload"),  # quality 101
    ],
)
def test_genuine_frames_with_bad_content_are_refused(patch: tuple[int, int], reason: str) -> None:
    frame = bytearray(encode(EXAMPLE))
    frame[patch[0]] = patch[1]
    frame[-2:] = ref_crc(bytes(frame[1:-2])).to_bytes(2, "big")  # the CRC is right
    decoder = ShoeDecoder("device")
    events = decode_all(decoder, bytes(frame) + encode(EXAMPLE))
    assert events == [BadFrame(reason=reason, size=19, seq=0x12), EXAMPLE]
    assert decoder.stats.reasons[reason] == 1


def _with_payload(type_code: int, payload: bytes) -> bytes:
    body = bytes([len(payload), 1, type_code, 0, 0]) + payload
    return bytes([SOF]) + body + ref_crc(body).to_bytes(2, "big")


@pytest.mark.parametrize(
    "frame",
    [
        _with_payload(0x02, bytes(10)),  # CARD one byte short
        _with_payload(0x02, bytes(12)),  # CARD one byte long
        _with_payload(0x04, bytes([5]) + bytes(8)),  # HEARTBEAT state 5
        _with_payload(0x01, bytes(15) + b"\x00" + b"\x01A\x01B"),  # empty model
        _with_payload(0x01, bytes(15) + b"\x01\x80\x01A\x01B"),  # non-ASCII model
        _with_payload(0x01, bytes(15) + b"\x01A\x01B\x01C\x00"),  # trailing byte
        _with_payload(0x01, bytes(15) + b"\x01A\x05B"),  # text runs past the payload
        _with_payload(0x01, bytes(14)),  # short header
    ],
)
def test_malformed_payloads_are_refused(frame: bytes) -> None:
    assert decode_all(ShoeDecoder("device"), frame) == [
        BadFrame(reason="payload", size=len(frame), seq=0)]


def test_host_decoder_refuses_device_frames_as_wrong_direction() -> None:
    events = decode_all(ShoeDecoder("host"), encode(EXAMPLE) + encode(Ack(next_evn=1)))
    assert events == [BadFrame(reason="direction", size=19, seq=0x12), Ack(next_evn=1)]


def test_memory_stays_bounded() -> None:
    decoder = ShoeDecoder("device")
    assert decode_all(decoder, bytes(range(0x7E)) * 100) == []
    assert decoder.buffered == 0
    assert decoder.stats.skipped_bytes == 0x7E * 100
    decode_all(decoder, bytes([SOF, MAX_PAYLOAD]) + bytes(30))
    assert decoder.buffered <= MAX_FRAME


@given(st.binary(max_size=600))
def test_after_draining_at_most_one_partial_frame_is_buffered(data: bytes) -> None:
    decoder = ShoeDecoder("device")
    decode_all(decoder, data)
    assert decoder.buffered < MAX_FRAME


# ------------------------------------------------------------------------------ fuzzing


def _on_the_wire(event: ShoeMessage, data: bytes) -> bool:
    frame = encode(event)
    return frame in data and frame_crc_ok(frame)


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash_or_invent_a_message(data: bytes) -> None:
    for sender in ("device", "host"):
        decoder = ShoeDecoder(sender)
        for event in decode_all(decoder, data):
            if not isinstance(event, BadFrame):
                assert _on_the_wire(event, data)


@st.composite
def mutated_streams(draw: st.DrawFn) -> tuple[list[ShoeMessage], bytes]:
    sent: list[ShoeMessage] = draw(st.lists(device_messages, min_size=1, max_size=5))
    data = bytearray(b"".join(encode(m) for m in sent))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "sof"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if not data:
            break
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[i:]
        else:
            data[i:i] = bytes([SOF])
    return sent, bytes(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_streams(), st.integers(1, 17))
def test_mutated_frames_never_yield_a_message_whose_crc_did_not_check(
    case: tuple[list[ShoeMessage], bytes], chunk: int
) -> None:
    _, data = case
    decoder = ShoeDecoder("device")
    got: list[ShoeMessage | BadFrame] = []
    for i in range(0, len(data), chunk):
        got += decode_all(decoder, data[i : i + chunk])
    for event in got:
        if not isinstance(event, BadFrame):
            assert _on_the_wire(event, data)
    assert decoder.stats.frames == len(messages(got))


def _flip(frame: bytes, *bits: int) -> bytes:
    data = bytearray(frame)
    for bit in bits:
        data[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(data)


def test_every_one_and_two_bit_error_is_caught() -> None:
    """CRC-16/CCITT has Hamming distance 4 at these lengths: with LEN intact (so the CRC covers
    the same bytes), no 1- or 2-bit error yields a message. Flips in LEN move the frame's end;
    they must still never yield a message that was not on the wire."""
    frame = encode(EXAMPLE)
    tail = encode(Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13))
    nbits = len(frame) * 8
    len_bits = range(8, 16)
    flips = [(a,) for a in range(nbits)] + [
        (a, b) for a in range(nbits) for b in range(a + 1, nbits)]
    for bits in flips:
        data = _flip(frame, *bits) + tail
        got = messages(decode_all(ShoeDecoder("device"), data))
        if any(b in len_bits for b in bits):
            assert all(_on_the_wire(m, data) for m in got), bits
        else:
            assert got == [Heartbeat(state=ShoeState.READY, reads=6, next_evn=8, seq=0x13)], bits


# ------------------------------------------------------------------------------ programming errors


@pytest.mark.parametrize(
    "message",
    [
        CardReport(evn=-1, read_index=0, card=ACE_HEARTS, quality=1),
        CardReport(evn=0, read_index=2**32, card=ACE_HEARTS, quality=1),
        CardReport(evn=0, read_index=0, card=ACE_HEARTS, quality=101),
        Ack(next_evn=1, seq=256),
        StatusReport(evn=0, state=ShoeState.JAM, detail=256, reads=0),
        Heartbeat(state=ShoeState.READY, reads=0, next_evn=True),  # bool is not a count
        ShoeIdentity(session_id=1, proto_minor=0, heartbeat_ms=70000, reads=0, unacked_from=0,
                     model="M", serial="S", firmware="F"),
        ShoeIdentity(session_id=1, proto_minor=0, heartbeat_ms=1000, reads=0, unacked_from=0,
                     model="M" * 16, serial="S", firmware="F"),
        ShoeIdentity(session_id=1, proto_minor=0, heartbeat_ms=1000, reads=0, unacked_from=0,
                     model="Modèle", serial="S", firmware="F"),
        ShoeIdentity(session_id=1, proto_minor=0, heartbeat_ms=1000, reads=0, unacked_from=0,
                     model="", serial="S", firmware="F"),
    ],
)
def test_encoding_an_out_of_range_field_is_a_value_error(message: ShoeMessage) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        encode(message)


def test_programming_errors_raise() -> None:
    with pytest.raises(TypeError):
        ShoeDecoder("device").feed("7e")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sender"):
        ShoeDecoder("shoe")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode("not a message")  # type: ignore[arg-type]
