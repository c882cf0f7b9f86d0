"""The ID reader's line protocol, sans-I/O: bytes in, `IdTap` or `BadIdRead` out, and the one
encoder the simulator writes with. No port, no clock: the transport passes ``at_mono`` in.

A reader in "virtual COM" mode sends each read as one ASCII line ending in CR, LF or CRLF
(docs/protocols/id-reader.md). The lines understood:

    ;6012345678901234=30121010000?     magstripe track 2 (PAN 8..19 digits; ``=rest`` and one
                                       LRC character after ``?`` optional) -> form "track2"
    UID:04A1B2C3D4E5F6                 NFC UID, 8/14/20 hex digits (4/7/10 bytes) -> "uid",
                                       the number in upper-case hex
    6012345678901234                   8..19 digits alone -> "plain"

Anything else is a `BadIdRead` whose ``detail`` says what was wrong without repeating the
line's digits (a bad read may still hold most of a card number). A line is at most
`MAX_LINE` bytes: a longer one is one bad read as soon as it overflows, and the rest of it up
to its line end is dropped. `IdLineDecoder.feed` never raises on any bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from drivers.readings import IdForm, IdTap
from game.card_forms import card_problem

__all__ = ["ID_FORMS", "MAX_LINE", "BadIdRead", "IdLineDecoder", "encode_tap", "parse_line",
           "problem"]

MAX_LINE: Final = 128  # bytes in a line, its line end not counted
ID_FORMS: Final[tuple[IdForm, ...]] = ("track2", "uid", "plain")
_CR, _LF = 0x0D, 0x0A
_BLANKS: Final = b" \t"
_TRACK2_CHARS: Final = frozenset(b"0123456789:;<=>?")  # the track 2 character set (0x30..0x3F)


@dataclass(frozen=True, slots=True, kw_only=True)
class BadIdRead:
    """A line the reader sent that is no card read; ``detail`` never repeats its digits."""

    device: str
    detail: str
    length: int  # bytes in the line (up to MAX_LINE + 1 for an overlong one)
    at_mono: float


def problem(number: str, form: IdForm) -> str | None:
    """Why ``number`` cannot be an ID of this form (None when it can): the shared rule the
    decoder applies, `encode_tap` checks and the desk registers a card by
    (game.card_forms)."""
    return card_problem(number, form)


def encode_tap(number: str, form: IdForm = "track2", *, rest: str = "3012101",
               lrc: bool = False, ending: bytes = b"\r\n") -> bytes:
    """The line a reader sends for this card (ValueError if the number does not fit the form).

    ``rest`` is what track 2 carries after the PAN's ``=`` (expiry, service code; digits, ""
    for none), ``lrc`` appends the track's LRC character, ``ending`` is CR, LF or CRLF. A UID
    may be given in either case; it is sent upper-case.
    """
    if form not in ID_FORMS:
        raise ValueError(f"form {form!r} must be one of {', '.join(ID_FORMS)}")
    if form == "uid":
        number = number.upper()
    if (why := problem(number, form)) is not None:
        raise ValueError(why)
    if ending not in (b"\r", b"\n", b"\r\n"):
        raise ValueError(f"ending {ending!r} must be CR, LF or CRLF")
    if form == "uid":
        return b"UID:" + number.encode() + ending
    if form == "plain":
        return number.encode() + ending
    if not (rest == "" or (rest.isascii() and rest.isdigit())):
        raise ValueError("track 2's rest is digits only")
    track = f";{number}={rest}?" if rest else f";{number}?"
    if lrc:
        track += chr(_track2_lrc(track.encode()))
    return track.encode() + ending


def _track2_lrc(track: bytes) -> int:
    """Track 2's LRC character over sentinel..sentinel: the XOR of the 4-bit values."""
    value = 0
    for byte in track:
        value ^= byte - 0x30
    return 0x30 + value


def parse_line(line: bytes, *, device: str, at_mono: float) -> IdTap | BadIdRead:
    """One complete line (its line end removed) as a tap or a bad read; never raises."""
    text = line.strip(_BLANKS)
    why, found = _parse(text)
    if found is not None:
        return IdTap(number=found[0], form=found[1], device=device, at_mono=at_mono)
    return BadIdRead(device=device, detail=why, length=len(line), at_mono=at_mono)


def _parse(text: bytes) -> tuple[str, tuple[str, IdForm] | None]:
    if not text:
        return "an empty line", None
    for at, byte in enumerate(text):
        if not 0x20 <= byte <= 0x7E:
            return f"byte 0x{byte:02x} at position {at} is not printable ASCII", None
    if text[:1] == b";":
        return _track2(text)
    if text[:4].upper() == b"UID:":
        uid = text[4:].decode("ascii").upper()
        why = problem(uid, "uid")
        return (f"NFC line: {why}", None) if why else ("", (uid, "uid"))
    plain = text.decode("ascii")
    if plain.isdigit():
        why = problem(plain, "plain")
        return (f"plain number: {why}", None) if why else ("", (plain, "plain"))
    return (f"{len(text)} characters in no known form (track 2 ';...?', 'UID:<hex>' or "
            "digits)"), None


def _track2(text: bytes) -> tuple[str, tuple[str, IdForm] | None]:
    end = text.find(b"?")
    if end < 0:
        return "track 2 without its end sentinel '?'", None
    after = text[end + 1:]
    if len(after) > 1 or (after and after[0] not in _TRACK2_CHARS):
        return "track 2 has more than one LRC character after its end sentinel", None
    body = text[1:end]
    if body.upper() == b"E":
        return "the reader reports a failed swipe (;E?)", None
    if not set(body) <= _TRACK2_CHARS:
        return "track 2 has a character outside its character set (digits and :;<=>?)", None
    pan, _, rest = body.partition(b"=")
    if not pan:
        return "track 2 has no PAN before its '=' or end sentinel", None
    if not pan.isdigit():
        return "track 2's PAN is not digits only", None
    if rest and not rest.isdigit():
        return "track 2 after the PAN's '=' is not digits only", None
    number = pan.decode("ascii")
    why = problem(number, "track2")
    return (f"track 2: {why}", None) if why else ("", (number, "track2"))


class IdLineDecoder:
    """Cuts the reader's byte stream into lines and decodes each (CR, LF or CRLF ends a line).

    ``feed(data, at_mono=...)`` returns what the bytes completed, in order; a partial line is
    kept for the next feed. `flush` gives up an unfinished line (the transport calls it when
    the line stays unfinished too long), `reset` forgets it (a new connection).
    """

    def __init__(self, device: str) -> None:
        self.device = device
        self._line = bytearray()
        self._after_cr = False  # the last byte ended a line with CR: an LF now is its CRLF
        self._overlong = False  # past MAX_LINE: dropping bytes up to the line end

    @property
    def unfinished(self) -> bool:
        """A line has begun and not ended (an overlong one being dropped counts)."""
        return bool(self._line) or self._overlong

    def feed(self, data: bytes, *, at_mono: float) -> list[IdTap | BadIdRead]:
        """The reads these bytes complete, in order (any bytes; never raises)."""
        out: list[IdTap | BadIdRead] = []
        if not data:
            return out
        start = 0
        if self._after_cr and data[:1] == b"\n":
            start = 1
        self._after_cr = False
        view = memoryview(data)
        while start < len(data):
            cr, lf = data.find(b"\r", start), data.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            stop = min(ends) if ends else len(data)
            self._take(view[start:stop], at_mono, out)
            if stop == len(data):
                break
            self._end_line(at_mono, out)
            start = stop + 1
            if data[stop] == _CR:
                if start == len(data):
                    self._after_cr = True
                elif data[start] == _LF:
                    start += 1
        return out

    def flush(self, *, at_mono: float) -> BadIdRead | None:
        """Give up the unfinished line: a bad read if it held anything (None otherwise; an
        overlong line was reported when it overflowed)."""
        self._overlong = self._after_cr = False
        length = len(self._line)
        if not length:
            return None
        self._line.clear()
        return BadIdRead(device=self.device, detail=f"a line of {length} bytes never ended",
                         length=length, at_mono=at_mono)

    def reset(self) -> None:
        """Forget any unfinished line (the port was closed and opened again)."""
        self._line.clear()
        self._after_cr = self._overlong = False

    def _take(self, chunk: memoryview, at_mono: float, out: list[IdTap | BadIdRead]) -> None:
        if self._overlong or not chunk:
            return
        room = MAX_LINE - len(self._line)
        if len(chunk) <= room:
            self._line += chunk
            return
        self._line.clear()
        self._overlong = True
        out.append(BadIdRead(device=self.device, length=MAX_LINE + 1, at_mono=at_mono,
                             detail=f"a line longer than {MAX_LINE} bytes (dropped up to its "
                                    "line end)"))

    def _end_line(self, at_mono: float, out: list[IdTap | BadIdRead]) -> None:
        if self._overlong:
            self._overlong = False
            return
        out.append(parse_line(bytes(self._line), device=self.device, at_mono=at_mono))
        self._line.clear()
