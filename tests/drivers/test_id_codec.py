"""drivers.id_codec, the ID reader's line protocol without I/O: each line form, each bad read and
its detail, line ends and partial lines across feeds, the 128-byte cap, and properties
(arbitrary bytes never raise, encode -> decode round trip, split points do not matter)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.id_codec import (
    MAX_LINE,
    BadIdRead,
    IdLineDecoder,
    encode_tap,
    parse_line,
    problem,
)
from drivers.readings import IdForm, IdTap, masked

PAN = "6012345678901234"


def decode(data: bytes, *, at_mono: float = 1.0) -> list[IdTap | BadIdRead]:
    return IdLineDecoder("reader-1").feed(data, at_mono=at_mono)


def tap(number: str, form: IdForm, at_mono: float = 1.0) -> IdTap:
    return IdTap(number=number, form=form, device="reader-1", at_mono=at_mono)


def details(reads: list[IdTap | BadIdRead]) -> list[str]:
    return [r.detail for r in reads if isinstance(r, BadIdRead)]


# ---- the line forms ------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "number", "form"), [
    (b";6012345678901234=30121010000000000?", PAN, "track2"),
    (b";6012345678901234?", PAN, "track2"),  # a card that carries only its number
    (b";6012345678901234=3012101?;", PAN, "track2"),  # one LRC character after '?'
    (b";12345678=?", "12345678", "track2"),
    (b";1234567890123456789=1?", "1234567890123456789", "track2"),  # 19 digits
    (b"UID:04A1B2C3", "04A1B2C3", "uid"),  # 4 bytes
    (b"UID:04a1b2c3d4e5f6", "04A1B2C3D4E5F6", "uid"),  # 7 bytes, lower case in
    (b"uid:00112233445566778899", "00112233445566778899", "uid"),  # 10 bytes
    (b"12345678", "12345678", "plain"),
    (b"  6012345678901234\t", PAN, "plain"),  # blanks around the line are no part of it
])
def test_each_form_gives_its_number(line: bytes, number: str, form: IdForm) -> None:
    assert decode(line + b"\r\n") == [tap(number, form)]


@pytest.mark.parametrize(("line", "detail"), [
    (b"", "an empty line"),
    (b"   ", "an empty line"),
    (b";E?", "failed swipe"),
    (b";6012345678901234=3012", "without its end sentinel"),
    (b";6012345678901234=3012?12", "more than one LRC character"),
    (b";6012345678901234=3012?x", "more than one LRC character"),
    (b";601234A678901234?", "outside its character set"),
    (b";=3012?", "no PAN"),
    (b";6012;345678901234?", "PAN is not digits only"),
    (b";6012345678901234=30:2?", "after the PAN's '=' is not digits only"),
    (b";1234567?", "8..19 digits, this one 7"),
    (b";12345678901234567890?", "8..19 digits, this one 20"),
    (b"UID:04A1B2", "8, 14 or 20 hex digits, this one 6"),
    (b"UID:04A1B2C3D4", "8, 14 or 20 hex digits, this one 10"),
    (b"UID:04A1B2CG", "hex digits only"),
    (b"1234567", "plain number: a card number has 8..19 digits, this one 7"),
    (b"12345678901234567890", "this one 20"),
    (b"hello", "no known form"),
    (b"1234 5678", "no known form"),
    (b"6012\x00345678", "byte 0x00 at position 4 is not printable ASCII"),
    (b"\xff\xfe", "byte 0xff at position 0"),
])
def test_anything_else_is_a_bad_read_that_says_why(line: bytes, detail: str) -> None:
    (read,) = decode(line + b"\n")
    assert isinstance(read, BadIdRead)
    assert detail in read.detail
    assert read.length == len(line)


def test_a_bad_read_never_repeats_the_lines_digits() -> None:
    for line in (b";601234567890123?x?", b";6012345678901234=ABCD?", b"60123456789012345678901"):
        (read,) = decode(line + b"\n")
        assert isinstance(read, BadIdRead)
        assert "6012345" not in read.detail


def test_the_line_ends_cr_lf_and_crlf_each_end_one_line() -> None:
    data = b"12345678\r23456789\n34567890\r\n45678901\r\n"
    assert [r.number for r in decode(data) if isinstance(r, IdTap)] == [
        "12345678", "23456789", "34567890", "45678901"]
    assert details(decode(data)) == []


def test_a_blank_line_between_reads_is_an_empty_bad_read() -> None:
    assert details(decode(b"12345678\r\n\r\n23456789\n\n")) == ["an empty line"] * 2
    assert details(decode(b"12345678\r\r")) == ["an empty line"]


def test_crlf_split_across_feeds_is_still_one_line_end() -> None:
    decoder = IdLineDecoder("reader-1")
    assert decoder.feed(b"12345678\r", at_mono=1.0) == [tap("12345678", "plain")]
    assert decoder.feed(b"", at_mono=1.5) == []  # an empty read between does not matter
    assert decoder.feed(b"\n23456789\r\n", at_mono=2.0) == [tap("23456789", "plain", 2.0)]


def test_a_partial_line_waits_for_its_end_and_takes_the_time_of_that_feed() -> None:
    decoder = IdLineDecoder("reader-1")
    assert decoder.feed(b";601234", at_mono=1.0) == []
    assert decoder.unfinished
    assert decoder.feed(b"5678901234?", at_mono=2.0) == []
    assert decoder.feed(b"\r\n", at_mono=3.0) == [tap(PAN, "track2", 3.0)]
    assert not decoder.unfinished


def test_flush_gives_up_an_unfinished_line_as_a_bad_read_and_reset_forgets_it() -> None:
    decoder = IdLineDecoder("reader-1")
    assert decoder.flush(at_mono=1.0) is None
    decoder.feed(b"6012", at_mono=1.0)
    given_up = decoder.flush(at_mono=2.0)
    assert given_up == BadIdRead(device="reader-1", detail="a line of 4 bytes never ended",
                                 length=4, at_mono=2.0)
    decoder.feed(b"9999", at_mono=3.0)
    decoder.reset()
    assert decoder.feed(b"12345678\n", at_mono=4.0) == [tap("12345678", "plain", 4.0)]


# ---- the 128-byte cap --------------------------------------------------------------------


def test_a_line_of_exactly_the_cap_is_read() -> None:
    line = b" " * (MAX_LINE - 8) + b"12345678"
    assert decode(line + b"\n") == [tap("12345678", "plain")]


def test_a_longer_line_is_one_bad_read_and_its_rest_is_dropped() -> None:
    line = b"9" * (MAX_LINE + 1)
    reads = decode(line + b"9" * 500 + b"\r\n12345678\r\n")
    assert details(reads) == [f"a line longer than {MAX_LINE} bytes (dropped up to its line end)"]
    assert reads[1:] == [tap("12345678", "plain")]


def test_an_overlong_line_is_reported_when_it_overflows_even_unfinished() -> None:
    decoder = IdLineDecoder("reader-1")
    assert decoder.feed(b"9" * MAX_LINE, at_mono=1.0) == []
    (read,) = decoder.feed(b"9", at_mono=2.0)
    assert isinstance(read, BadIdRead)
    assert read.at_mono == 2.0
    assert decoder.unfinished  # still dropping up to the line end
    assert decoder.feed(b"9" * 10_000, at_mono=3.0) == []
    assert decoder.flush(at_mono=4.0) is None  # reported once; dropping ends
    assert decoder.feed(b"12345678\n", at_mono=5.0) == [tap("12345678", "plain", 5.0)]


# ---- the encoder -------------------------------------------------------------------------


def test_encode_writes_each_form_as_a_reader_does() -> None:
    assert encode_tap(PAN) == b";6012345678901234=3012101?\r\n"
    assert encode_tap(PAN, rest="") == b";6012345678901234?\r\n"
    assert encode_tap("04a1b2c3", "uid", ending=b"\r") == b"UID:04A1B2C3\r"
    assert encode_tap("12345678", "plain", ending=b"\n") == b"12345678\n"


def test_the_track_2_lrc_is_the_xor_of_the_characters() -> None:
    # ';' (0xB) ^ '1' .. '8' (1..8) ^ '?' (0xF) = 0xB ^ 0x8 ^ 0xF = 0xC -> '<'
    assert encode_tap("12345678", rest="", lrc=True, ending=b"\n") == b";12345678?<\n"


@pytest.mark.parametrize(("number", "form", "why"), [
    ("1234567", "track2", "8..19 digits"),
    ("12345678A", "plain", "digits only"),
    ("١٢٣٤٥٦٧٨", "plain", "digits only"),  # Arabic-Indic digits are no card number
    ("04A1B2", "uid", "8, 14 or 20"),
    ("04A1B2CZ", "uid", "hex"),
])
def test_encode_refuses_a_number_that_does_not_fit_its_form(number: str, form: IdForm,
                                                            why: str) -> None:
    assert why in (problem(number.upper() if form == "uid" else number, form) or "")
    with pytest.raises(ValueError, match=why):
        encode_tap(number, form)


def test_encode_refuses_a_bad_rest_ending_or_form() -> None:
    with pytest.raises(ValueError, match="rest"):
        encode_tap(PAN, rest="30=1")
    with pytest.raises(ValueError, match="ending"):
        encode_tap(PAN, ending=b"\r\n\r\n")
    with pytest.raises(ValueError, match="form"):
        encode_tap(PAN, "barcode")  # type: ignore[arg-type]


def test_parse_line_takes_one_line_without_its_end() -> None:
    assert parse_line(b"UID:04A1B2C3", device="d", at_mono=7.0) == IdTap(
        number="04A1B2C3", form="uid", device="d", at_mono=7.0)


def test_masked_shows_only_the_last_four() -> None:
    assert masked("6012345678900123") == "****0123"
    assert masked("1234") == "****"
    assert masked("") == ""
    assert PAN not in repr(tap(PAN, "track2"))
    assert "****1234" in repr(tap(PAN, "track2"))


# ---- properties --------------------------------------------------------------------------

digits = st.text(alphabet="0123456789", min_size=8, max_size=19)
uids = st.sampled_from([8, 14, 20]).flatmap(
    lambda n: st.text(alphabet="0123456789abcdefABCDEF", min_size=n, max_size=n))
endings = st.sampled_from([b"\r", b"\n", b"\r\n"])
number_forms: tuple[IdForm, IdForm] = ("track2", "plain")
uid_form: IdForm = "uid"
taps: st.SearchStrategy[tuple[str, IdForm]] = st.one_of(
    st.tuples(digits, st.sampled_from(number_forms)), st.tuples(uids, st.just(uid_form)))


@settings(deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_arbitrary_bytes_never_raise(chunks: list[bytes]) -> None:
    decoder = IdLineDecoder("reader-1")
    for at, chunk in enumerate(chunks):
        for read in decoder.feed(chunk, at_mono=float(at)):
            assert isinstance(read, IdTap | BadIdRead)
            if isinstance(read, BadIdRead):
                assert read.detail
    decoder.flush(at_mono=99.0)


@settings(deadline=None)
@given(taps, endings, st.booleans(), st.text(alphabet="0123456789", max_size=20))
def test_encode_then_decode_gives_the_number_back(
        card: tuple[str, IdForm], ending: bytes, lrc: bool, rest: str) -> None:
    number, form = card
    line = encode_tap(number, form, ending=ending, lrc=lrc, rest=rest)
    assert decode(line) == [tap(number.upper(), form)]


@settings(deadline=None)
@given(st.lists(st.one_of(taps.map(lambda c: encode_tap(c[0], c[1])), st.binary(max_size=40),
                          st.just(b"9" * 150)), max_size=8),
       st.data())
def test_split_points_do_not_matter(pieces: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    whole = IdLineDecoder("reader-1").feed(stream, at_mono=1.0)
    decoder = IdLineDecoder("reader-1")
    split: list[IdTap | BadIdRead] = []
    for start, stop in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        split += decoder.feed(stream[start:stop], at_mono=1.0)
    assert split == whole
