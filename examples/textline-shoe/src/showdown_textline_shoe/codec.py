"""The text-line shoe's wire format, sans-I/O: bytes in, `CardLine`, `IdleLine` or `BadLine`
out, and the one encoder the simulator writes with. No port, no clock, no exception on any
bytes.

A simple card-reading shoe sends each card as one line of text (README.md of this package):

    AS          ace of spades        Td / TD / td / 10d / 10D   ten of diamonds
    kc          king of clubs        A♠ / 7♥                    the suit as its symbol (UTF-8)
    (blank)     an idle line         some readers send one every few seconds as a keep-alive

A line ends with CR, LF or CRLF (a CR directly followed by an LF is one line end, even when
the two bytes arrive in different reads). Blanks (space, tab) around the line, and between
the rank and the suit, are ignored. Anything else is a `BadLine` whose ``detail`` says what
was wrong: a line of more than one card, an unknown rank or suit, a control byte, bytes that
are not UTF-8, or a line longer than `MAX_LINE` bytes (one bad line as soon as it overflows;
the rest of it, up to its line end, is dropped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from game.poker.cards import RANK_CHARS, SUIT_CHARS, Card

__all__ = ["ENDINGS", "MAX_LINE", "STYLES", "BadLine", "CardLine", "IdleLine", "LineDecoder",
           "LineEvent", "encode_card", "parse_line"]

MAX_LINE: Final = 32  # bytes in a line, its line end not counted
ENDINGS: Final = (b"\r\n", b"\n", b"\r")
# How a reader may write a card: "upper" AS TD, "lower" as td, "ten" AS 10D (a ten as 10),
# "symbol" A♠ T♦ (the suit as its UTF-8 symbol).
Style = Literal["upper", "lower", "ten", "symbol"]
STYLES: Final[tuple[Style, ...]] = ("upper", "lower", "ten", "symbol")
_BLANKS: Final = b" \t"
_CR, _LF = 0x0D, 0x0A
_SYMBOLS: Final = {"♣": 0, "♦": 1, "♥": 2, "♠": 3, "♧": 0, "♢": 1, "♡": 2, "♤": 3}
_SYMBOL_OF: Final = ("♣", "♦", "♥", "♠")
_RANKS: Final = {**{c: i for i, c in enumerate(RANK_CHARS)}, "10": RANK_CHARS.index("T")}


@dataclass(frozen=True, slots=True)
class CardLine:
    """A line naming one card; ``text`` is the line as sent (blanks around it removed)."""

    card: Card
    text: str


@dataclass(frozen=True, slots=True)
class IdleLine:
    """A blank line: the reader is alive and has nothing to say (its keep-alive, if any)."""


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is no card; ``detail`` says why, ``length`` its bytes (line end not
    counted; `MAX_LINE` + 1 for an overlong one)."""

    detail: str
    length: int


LineEvent = CardLine | IdleLine | BadLine


def parse_line(line: bytes) -> LineEvent:
    """One complete line (its line end removed) as a card, an idle line or a bad line; never
    raises."""
    raw = bytes(line).strip(_BLANKS)
    if not raw:
        return IdleLine()
    for at, byte in enumerate(raw):
        if (byte < 0x20 and byte != 0x09) or byte == 0x7F:  # a tab is a blank
            return BadLine(f"byte 0x{byte:02x} at position {at} is a control character",
                           len(line))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(f"byte 0x{raw[exc.start]:02x} at position {exc.start} is not UTF-8",
                       len(line))
    return _card(text, len(line))


def _card(text: str, length: int) -> LineEvent:
    body = text.replace(" ", "").replace("\t", "")
    shown = text if len(text) <= 12 else text[:12] + "..."
    if len(body) < 2:
        return BadLine(f"{shown!r} is not a card (a rank and a suit, such as AS or 10h)", length)
    rank_text, suit_text = body[:-1].upper(), body[-1]
    rank = _RANKS.get(rank_text)
    if rank is None:
        if len(body) > 3 or text.strip().count(" ") or text.count("\t"):
            return BadLine(f"{shown!r} is not one card: a line names one card, such as AS",
                           length)
        return BadLine(f"{shown!r}: unknown rank {body[:-1]!r} (2-9, T or 10, J, Q, K, A)",
                       length)
    suit = _SYMBOLS.get(suit_text)
    if suit is None:
        lowered = suit_text.lower()
        if lowered not in SUIT_CHARS:
            return BadLine(f"{shown!r}: unknown suit {suit_text!r} (c, d, h, s or a symbol)",
                           length)
        suit = SUIT_CHARS.index(lowered)
    return CardLine(card=Card(rank, suit), text=text)


def encode_card(card: Card, *, style: Style = "upper", ending: bytes = b"\r\n") -> bytes:
    """The line a reader sends for ``card`` in one of `STYLES`, ending in CR, LF or CRLF
    (ValueError for another style or ending)."""
    if style not in STYLES:
        raise ValueError(f"style {style!r} must be one of {', '.join(STYLES)}")
    if ending not in ENDINGS:
        raise ValueError(f"ending {ending!r} must be CR, LF or CRLF")
    rank, suit = RANK_CHARS[card.rank], SUIT_CHARS[card.suit]
    if style == "symbol":
        return (rank + _SYMBOL_OF[card.suit]).encode() + ending
    if style == "ten" and rank == "T":
        rank = "10"
    text = rank + suit
    return (text.lower() if style == "lower" else text.upper()).encode() + ending


class LineDecoder:
    """Cuts the shoe's byte stream into lines and decodes each (CR, LF or CRLF ends a line).

    `feed` returns what the bytes completed, in order, and keeps a partial line for the next
    feed; `flush` gives up an unfinished line (the transport calls it when a line stays
    unfinished too long: noise without a line end must not swallow the next card); `reset`
    forgets it (a new connection).
    """

    def __init__(self) -> None:
        self._line = bytearray()
        self._after_cr = False  # the last byte ended a line with CR: an LF now is its CRLF
        self._overlong = False  # past MAX_LINE: dropping bytes up to the line end

    @property
    def unfinished(self) -> bool:
        """A line has begun and not ended (an overlong one being dropped counts)."""
        return bool(self._line) or self._overlong

    def feed(self, data: bytes) -> list[LineEvent]:
        """The lines these bytes complete, in order (any bytes; never raises)."""
        out: list[LineEvent] = []
        start = 0
        if self._after_cr and data[:1] == b"\n":
            start = 1
        if data:
            self._after_cr = False
        while start < len(data):
            cr, lf = data.find(b"\r", start), data.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            stop = min(ends) if ends else len(data)
            self._take(data[start:stop], out)
            if stop == len(data):
                break
            self._end_line(out)
            start = stop + 1
            if data[stop] == _CR:
                if start == len(data):
                    self._after_cr = True
                elif data[start] == _LF:
                    start += 1
        return out

    def flush(self) -> BadLine | None:
        """Give up the unfinished line: a bad line if it held anything but blanks (None
        otherwise, or for an overlong line already reported)."""
        line, overlong = bytes(self._line), self._overlong
        self.reset()
        if overlong or not line.strip(_BLANKS):
            return None
        event = parse_line(line)
        detail = event.detail if isinstance(event, BadLine) else f"{line.strip(_BLANKS)!r}"
        return BadLine(f"a line left unfinished (no line end): {detail}", len(line))

    def reset(self) -> None:
        """Forget any partial line (the connection it came on is gone)."""
        self._line.clear()
        self._after_cr = self._overlong = False

    def _take(self, chunk: bytes, out: list[LineEvent]) -> None:
        if self._overlong or not chunk:
            return
        self._line += chunk
        if len(self._line) > MAX_LINE:
            out.append(BadLine(f"a line longer than {MAX_LINE} bytes (dropped up to its line"
                               " end)", MAX_LINE + 1))
            self._line.clear()
            self._overlong = True

    def _end_line(self, out: list[LineEvent]) -> None:
        if self._overlong:
            self._overlong = False
            return
        out.append(parse_line(bytes(self._line)))
        self._line.clear()
