"""The QuasarMX codec: commands encoded as the protocol writes them, answers decoded into
frames and typed values, and no bytes at all raising anything but the codec's own error."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import quasar_codec as qc

UID_A = bytes.fromhex("E0040150954F02B1")
UID_B = bytes.fromhex("E004015012345678")


def frames(data: bytes) -> list[qc.Frame | qc.FrameError]:
    return qc.FrameDecoder().feed(data)


def one(data: bytes) -> qc.Frame:
    [frame] = frames(data)
    assert isinstance(frame, qc.Frame)
    return frame


def test_commands_are_upper_case_words_ended_by_cr() -> None:
    assert qc.revision() == b"REV\r"
    assert qc.serial_number() == b"RSN\r"
    assert qc.rf_on() == b"SRI SS 100\r"
    assert qc.antenna_report() == b"SAP ARP ON\r"
    assert qc.antenna_report(on=False) == b"SAP ARP OFF\r"
    assert qc.select_antenna(7) == b"SAP 7\r"
    assert qc.inventory() == b"INV\r"
    assert qc.break_command() + qc.end_of_frame() == b"BRK\rEOF\r"


@pytest.mark.parametrize("port", [0, 17, -1])
def test_a_port_out_of_range_is_refused_before_it_is_sent(port: int) -> None:
    with pytest.raises(ValueError, match=r"1\.\.16"):
        qc.select_antenna(port)


def test_a_command_word_with_a_line_end_or_space_is_refused() -> None:
    for word in ("REV\r", "A B", "inv", ""):
        with pytest.raises(ValueError, match="command word"):
            qc.encode_command(word)


def test_an_inventory_answer_gives_its_uids_msb_first_and_its_antenna() -> None:
    frame = one(b"E0040150954F02B1\rE004015012345678\rARP 03\rIVF 02\r\n")
    inv = qc.parse_inventory(frame)
    assert isinstance(inv, qc.Inventory)
    assert inv.uids == {UID_A, UID_B}
    assert next(iter(sorted(inv.uids)))[0] == 0xE0  # as the registry keys ISO 15693 UIDs
    assert inv.antenna == 3
    assert inv.tag_errors == ()


def test_an_empty_inventory_and_one_without_antenna_report() -> None:
    inv = qc.parse_inventory(one(b"IVF 00\r\n"))
    assert isinstance(inv, qc.Inventory)
    assert inv.uids == frozenset()
    assert inv.antenna is None


def test_tag_errors_inside_an_inventory_are_kept_apart_from_the_uids() -> None:
    inv = qc.parse_inventory(one(b"E0040150954F02B1\rCER\rARP 01\rIVF 01\r\n"))
    assert isinstance(inv, qc.Inventory)
    assert inv.uids == {UID_A}
    assert inv.tag_errors == ("CER",)


@pytest.mark.parametrize(("data", "why"), [
    (b"E0040150954F02B1\rIVF 02\r\n", "IVF says 2"),
    (b"E0040150954F02B1\rE0040150954F02B1\rIVF 02\r\n", "same UID twice"),
    (b"E0040150954F02B\rIVF 01\r\n", "not a UID"),
    (b"e0040150954f02b1\rIVF 01\r\n", "not a UID"),
    (b"ARP 01\rE0040150954F02B1\rIVF 01\r\n", "after the antenna report"),
    (b"E0040150954F02B1\r\n", "ends with IVF"),
    (b"ARP 01\rARP 02\rIVF 00\r\n", "two antenna reports"),
])
def test_an_inconsistent_inventory_is_the_codecs_error(data: bytes, why: str) -> None:
    with pytest.raises(qc.QuasarProtocolError, match=why):
        qc.parse_inventory(one(data))


def test_a_reader_error_is_a_value_with_its_meaning() -> None:
    for parse in (qc.parse_inventory, qc.parse_ok, qc.parse_revision, qc.parse_serial):
        answer = parse(one(b"ARH\r\n"))
        assert answer == qc.ReaderError("ARH", qc.ERROR_CODES["ARH"])
    assert qc.parse_ok(one(b"OK!\r\n")) is None
    with pytest.raises(qc.QuasarProtocolError, match="OK!"):
        qc.parse_ok(one(b"YES\r\n"))


def test_the_revision_gives_model_hardware_and_firmware() -> None:
    rev = qc.parse_revision(one(b"QUASAR_MX      02000218\r\n"))
    assert rev == qc.Revision(model="QUASAR_MX", hardware="0200", firmware="0218")
    assert isinstance(rev, qc.Revision)
    assert rev.firmware_version == (2, 18)
    assert rev.firmware_text == "2.18"
    assert qc.parse_revision(one(b"QUASAR_MX 01000307\r\n")).firmware_version == (3, 7)  # type: ignore[union-attr]
    with pytest.raises(qc.QuasarProtocolError, match="revision"):
        qc.parse_revision(one(b"QUASAR_MX\r\n"))


def test_the_serial_number() -> None:
    assert qc.parse_serial(one(b"2019-00123\r\n")) == "2019-00123"
    with pytest.raises(qc.QuasarProtocolError, match="serial"):
        qc.parse_serial(one(b"two words\r\n"))


def test_an_answer_ends_at_its_lf_and_may_arrive_byte_by_byte() -> None:
    decoder = qc.FrameDecoder()
    data = b"NCM\rOK!\r\nE0040150954F02B1\rIVF 01\r\n"
    out: list[qc.Frame | qc.FrameError] = []
    for byte in data:
        out += decoder.feed(bytes([byte]))
        assert decoder.unfinished or byte == 0x0A
    assert out == [qc.Frame(("NCM", "OK!")), qc.Frame(("E0040150954F02B1", "IVF 01"))]
    assert not decoder.unfinished


def test_noise_and_overlong_lines_are_frame_errors_and_the_next_answer_is_whole() -> None:
    out = frames(b"\x00\xffE00401\r\n" + b"A" * 100 + b"\r\nOK!\r\n")
    assert isinstance(out[0], qc.FrameError)
    assert "0x00" in out[0].detail
    assert isinstance(out[1], qc.FrameError)
    assert "longer than" in out[1].detail
    assert out[2] == qc.Frame(("OK!",))
    assert frames(b"\r\n") == [qc.FrameError("an empty answer (LF alone)")]


def test_lines_without_their_lf_are_taken_as_one_answer_when_asked() -> None:
    decoder = qc.FrameDecoder()
    assert decoder.feed(b"NCM\rOK!\r") == []
    assert decoder.take_partial() == [qc.Frame(("NCM", "OK!"))]
    assert decoder.take_partial() == []


PARSERS = (qc.parse_inventory, qc.parse_ok, qc.parse_revision, qc.parse_serial)


@settings(deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_any_bytes_raise_nothing_but_the_codecs_error(chunks: list[bytes]) -> None:
    decoder = qc.FrameDecoder()
    out = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    out += decoder.take_partial()
    for item in out:
        assert isinstance(item, qc.Frame | qc.FrameError)
        if isinstance(item, qc.Frame):
            assert all(len(line) <= qc.MAX_LINE for line in item.lines)
            for parse in PARSERS:
                with contextlib.suppress(qc.QuasarProtocolError):
                    parse(item)


answer_lines = st.one_of(
    st.binary(min_size=8, max_size=8).map(lambda b: b.hex().upper()),
    st.sampled_from(["IVF 00", "IVF 01", "IVF 02", "ARP 01", "OK!", "CER", "NRF",
                     "QUASAR_MX      02000218"]),
    st.text(alphabet="0123456789ABCDEFIVFARP !", max_size=20),
)


@settings(deadline=None)
@given(st.lists(st.lists(answer_lines, min_size=1, max_size=6), max_size=6))
def test_answers_made_of_plausible_lines_raise_nothing_but_the_codecs_error(
    answers: list[list[str]],
) -> None:
    data = b"".join(("".join(f"{line}\r" for line in lines) + "\n").encode()
                    for lines in answers)
    for item in qc.FrameDecoder().feed(data):
        if isinstance(item, qc.Frame):
            for parse in PARSERS:
                try:
                    result = parse(item)
                except qc.QuasarProtocolError:
                    continue
                if isinstance(result, qc.Inventory):
                    assert all(len(uid) == 8 for uid in result.uids)
