"""The example text-line shoe's line codec (examples/textline-shoe, `showdown_textline_shoe
.codec`): every form a simple reader writes reads as its card; anything else is a bad line
saying why, never an exception; line ends CR, LF and CRLF, split anywhere, are one line end.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from showdown_textline_shoe.codec import (
    MAX_LINE,
    STYLES,
    BadLine,
    CardLine,
    IdleLine,
    LineDecoder,
    encode_card,
    parse_line,
)

from game.poker.cards import DECK, parse_card


@pytest.mark.parametrize(("line", "card"), [
    (b"AS", "As"), (b"as", "As"), (b"aS", "As"), (b"Td", "Td"), (b"TD", "Td"), (b"td", "Td"),
    (b"10d", "Td"), (b"10D", "Td"), (b"KC", "Kc"), (b"2h", "2h"), (b"  Qh\t", "Qh"),
    (b"A S", "As"), (b"10\th", "Th"), ("A♠".encode(), "As"), ("7♥".encode(), "7h"),
    ("j♢".encode(), "Jd"),
])
def test_each_form_a_reader_writes_is_its_card(line: bytes, card: str) -> None:
    assert parse_line(line) == CardLine(card=parse_card(card), text=line.decode().strip(" \t"))


@pytest.mark.parametrize(("line", "detail"), [
    (b"XS", "'XS': unknown rank 'X' (2-9, T or 10, J, Q, K, A)"),
    (b"1S", "'1S': unknown rank '1' (2-9, T or 10, J, Q, K, A)"),
    (b"AX", "'AX': unknown suit 'X' (c, d, h, s or a symbol)"),
    (b"A", "'A' is not a card (a rank and a suit, such as AS or 10h)"),
    (b"AS KD", "'AS KD' is not one card: a line names one card, such as AS"),
    (b"ACE OF SPADES", "'ACE OF SPADE...' is not one card: a line names one card, such as AS"),
    (b"A\x00S", "byte 0x00 at position 1 is a control character"),
    (b"\x1b[2J", "byte 0x1b at position 0 is a control character"),
    (b"A\xffS", "byte 0xff at position 1 is not UTF-8"),
    (b"??", "'??': unknown rank '?' (2-9, T or 10, J, Q, K, A)"),
])
def test_anything_else_is_a_bad_line_saying_why(line: bytes, detail: str) -> None:
    assert parse_line(line) == BadLine(detail, len(line))


def test_a_blank_line_is_an_idle_line() -> None:
    assert parse_line(b"") == IdleLine()
    assert parse_line(b" \t ") == IdleLine()


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r"])
def test_every_card_in_every_style_and_ending_reads_back(style: str, ending: bytes) -> None:
    decoder = LineDecoder()
    stream = b"".join(encode_card(card, style=style, ending=ending)  # type: ignore[arg-type]
                      for card in DECK)
    assert [e.card for e in decoder.feed(stream) if isinstance(e, CardLine)] == list(DECK)
    assert not decoder.unfinished


def test_the_styles_write_what_readers_write() -> None:
    ten = parse_card("Td")
    assert [encode_card(ten, style=s) for s in STYLES] == [
        b"TD\r\n", b"td\r\n", b"10D\r\n", "T♦\r\n".encode()]
    with pytest.raises(ValueError, match="style 'x'"):
        encode_card(ten, style="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ending"):
        encode_card(ten, ending=b"\n\r")


def test_a_crlf_split_between_two_reads_is_one_line_end() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b"AS\r") == [CardLine(parse_card("As"), "AS")]
    assert decoder.feed(b"\nKD\r\n\r\n") == [CardLine(parse_card("Kd"), "KD"), IdleLine()]


def test_a_line_too_long_is_one_bad_line_and_the_next_card_reads() -> None:
    decoder = LineDecoder()
    events = decoder.feed(b"9" * 40)
    assert events == [BadLine(f"a line longer than {MAX_LINE} bytes (dropped up to its line"
                              " end)", MAX_LINE + 1)]
    assert decoder.unfinished
    assert decoder.feed(b"9" * 100 + b"\nQS\n") == [CardLine(parse_card("Qs"), "QS")]


def test_an_unfinished_line_is_given_up_on_flush() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b"A") == []
    assert decoder.unfinished
    assert decoder.flush() == BadLine(
        "a line left unfinished (no line end): 'A' is not a card (a rank and a suit, such as"
        " AS or 10h)", 1)
    assert not decoder.unfinished
    decoder.feed(b"7c")  # even a whole card, without its line end, is not taken as one
    assert decoder.flush() == BadLine("a line left unfinished (no line end): b'7c'", 2)
    decoder.feed(b"  ")
    assert decoder.flush() is None  # blanks alone: nothing was lost


def test_reset_forgets_a_partial_line() -> None:
    decoder = LineDecoder()
    decoder.feed(b"Q")
    decoder.reset()
    assert decoder.feed(b"h\n") == [BadLine("'h' is not a card (a rank and a suit, such as AS"
                                            " or 10h)", 1)]


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_no_bytes_make_it_raise_and_cuts_change_nothing(data: bytes, cuts: list[int]) -> None:
    """Any bytes, cut anywhere, decode to the same events as in one piece."""
    whole = LineDecoder().feed(data)
    decoder = LineDecoder()
    pieces, start = [], 0
    for cut in sorted(c for c in cuts if c <= len(data)):
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])
    assert [e for p in pieces for e in decoder.feed(p)] == whole
