"""The keyboard-wedge ID reader's keystrokes, sans-I/O: Linux input events in, `IdTap` or
`BadIdRead` out at each Enter, and the keystrokes a wedge types for a line (the simulator's
encoder). No device, no clock: the transport passes ``at_mono`` in.

A USB "keyboard wedge" reader is a HID keyboard: for each card it types characters and Enter.
The kernel gives each key as input events (``EV_KEY``, the key's code, value 1 pressed /
0 released / 2 auto-repeat), framed by ``EV_SYN`` reports and usually preceded by an
``EV_MSC``/``MSC_SCAN`` with the HID usage. The decoder follows the shift keys, maps each
pressed key to its character on a **US layout** (wedges type by key position: the layout the
reader assumes is US unless reprogrammed), and at Enter hands the line to
`drivers.id_codec.parse_line`, the serial reader's own parser, so the same card gives the
same (number, form) on both:

    ;6012345678901234=2912?   magstripe track 2                    -> "track2"
    %B6012...^NAME^2912?;6012345678901234=2912?   a 2- or 3-track magstripe wedge: track 2
                                                  is read, the other tracks are ignored
    6012345678901234          digits                               -> "plain"  (typed="card")
    04A1B2C3D4E5F6            an NFC wedge's hex UID               -> "uid"    (typed="uid")
    UID:04A1B2C3D4E5F6        a UID with the serial reader's prefix -> "uid"   (either)

``typed`` says what bare text is: "card" (a magstripe or keypad wedge: digits are a card
number) or "uid" (an NFC wedge: the line is the card's UID in hex, even when its hex digits
happen to all be decimal). A key with no character (a function key, Ctrl or Alt held), the
kernel's ``SYN_DROPPED`` (events lost), or more than `MAX_LINE` characters make the line a
bad read; a line never ended is given up by `WedgeDecoder.flush`. Auto-repeat is ignored (a
wedge never holds a key). `WedgeDecoder.feed` never raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from drivers.id_codec import MAX_LINE, BadIdRead, parse_line
from drivers.readings import IdTap

__all__ = [
    "EV_KEY",
    "EV_MSC",
    "EV_SYN",
    "KEYMAP",
    "KEY_ENTER",
    "MSC_RAW",
    "MSC_SCAN",
    "TYPED",
    "InputEvent",
    "Typed",
    "WedgeDecoder",
    "events_of",
    "keystrokes",
    "typed_line",
    "unmapped_keystroke",
]

Typed = Literal["card", "uid"]
TYPED: Final[tuple[Typed, ...]] = ("card", "uid")

# linux/input-event-codes.h (the kernel's ABI: these numbers never change)
EV_SYN, EV_KEY, EV_MSC = 0x00, 0x01, 0x04
SYN_REPORT, SYN_DROPPED = 0, 3
MSC_RAW, MSC_SCAN = 0x03, 0x04
KEY_ENTER, KEY_KPENTER = 28, 96
KEY_LEFTSHIFT, KEY_RIGHTSHIFT = 42, 54
_MODIFIERS: Final = {29: "Ctrl", 97: "Ctrl", 56: "Alt", 100: "AltGr", 125: "Meta", 126: "Meta"}
_IGNORED: Final = frozenset({58, 69, 70})  # Caps, Num and Scroll Lock: no character, harmless

# The US layout: key code -> (character, character with Shift).
KEYMAP: Final[dict[int, tuple[str, str]]] = {
    **{code: (d, s) for code, d, s in zip(range(2, 12), "1234567890", "!@#$%^&*()", strict=True)},
    12: ("-", "_"), 13: ("=", "+"), 26: ("[", "{"), 27: ("]", "}"), 39: (";", ":"),
    40: ("'", '"'), 41: ("`", "~"), 43: ("\\", "|"), 51: (",", "<"), 52: (".", ">"),
    53: ("/", "?"), 57: (" ", " "),
    **{code: (c, c.upper()) for code, c in zip(range(16, 26), "qwertyuiop", strict=True)},
    **{code: (c, c.upper()) for code, c in zip(range(30, 39), "asdfghjkl", strict=True)},
    **{code: (c, c.upper()) for code, c in zip(range(44, 51), "zxcvbnm", strict=True)},
    # the keypad (Num Lock on: wedges that type digits on the keypad)
    **{code: (d, d) for code, d in ((71, "7"), (72, "8"), (73, "9"), (75, "4"), (76, "5"),
                                    (77, "6"), (79, "1"), (80, "2"), (81, "3"), (82, "0"))},
    55: ("*", "*"), 74: ("-", "-"), 78: ("+", "+"), 83: (".", "."), 98: ("/", "/"),
}
# character -> (key code, shifted), for typing; the main keys, never the keypad
_TYPING: Final[dict[str, tuple[int, bool]]] = {}
for _code, (_plain, _shifted) in sorted(KEYMAP.items(), reverse=True):
    if _code in range(2, 58):
        _TYPING[_plain] = (_code, False)
        _TYPING.setdefault(_shifted, (_code, True))
# HID keyboard usages (usage page 7) of the keys typed, for the MSC_SCAN a real wedge sends
_USAGES: Final[dict[int, int]] = {
    **{code: 0x1E + i for i, code in enumerate(range(2, 12))},
    **{code: 0x04 + "abcdefghijklmnopqrstuvwxyz".index(c)
       for code, (c, _) in KEYMAP.items() if c.isalpha() and code < 58},
    KEY_ENTER: 0x28, 57: 0x2C, 12: 0x2D, 13: 0x2E, 26: 0x2F, 27: 0x30, 43: 0x31, 39: 0x33,
    40: 0x34, 41: 0x35, 51: 0x36, 52: 0x37, 53: 0x38, KEY_LEFTSHIFT: 0xE1,
}


@dataclass(frozen=True, slots=True)
class InputEvent:
    """One Linux input event as evdev gives it: the kernel's timestamp, type, code, value."""

    sec: float
    type: int
    code: int
    value: int


def typed_line(line: str, typed: Typed) -> bytes:
    """What `parse_line` reads for a line a wedge typed: track 2 alone when the line holds
    magstripe tracks, ``UID:`` before a bare line of an NFC wedge."""
    text = line.strip(" \t")
    if text.startswith(("%", ";")) and ";" in text:  # tracks: keep track 2, ";" to its "?"
        start = text.index(";")
        end = text.find("?", start)
        text = text[start:] if end < 0 else text[start:end + 1]
    elif typed == "uid" and not text.upper().startswith("UID:"):
        text = "UID:" + text
    return text.encode("ascii", errors="replace")


class WedgeDecoder:
    """Key events to readings: ``feed(event, at_mono=...)`` returns the read an Enter
    completes (None otherwise); `flush` gives up an unfinished line; `reset` forgets it."""

    def __init__(self, device: str, *, typed: Typed = "card") -> None:
        if typed not in TYPED:
            raise ValueError(f"typed {typed!r} must be one of {', '.join(TYPED)}")
        self.device = device
        self.typed = typed
        self._line: list[str] = []
        self._shift: set[int] = set()
        self._held: set[int] = set()  # Ctrl, Alt, Meta held
        self._fault: str | None = None  # why the line is already a bad read
        self._overlong = False

    @property
    def unfinished(self) -> bool:
        """A line has begun (a key typed) and no Enter has ended it."""
        return bool(self._line) or self._fault is not None or self._overlong

    def feed(self, event: InputEvent, *, at_mono: float) -> IdTap | BadIdRead | None:
        """The read this event completes, if any (any event; never raises)."""
        if event.type == EV_SYN and event.code == SYN_DROPPED:
            self._fault = self._fault or ("the kernel dropped input events (SYN_DROPPED): the"
                                          " reader typed faster than they were read")
            return None
        if event.type != EV_KEY:
            return None
        code, value = event.code, event.value
        if code in (KEY_LEFTSHIFT, KEY_RIGHTSHIFT):
            (self._shift.add if value else self._shift.discard)(code)
            return None
        if code in _MODIFIERS:
            (self._held.add if value else self._held.discard)(code)
            return None
        if value != 1:  # a release, or auto-repeat
            return None
        if code in (KEY_ENTER, KEY_KPENTER):
            return self._end_line(at_mono)
        if code in _IGNORED:
            return None
        self._take(code)
        return None

    def flush(self, *, at_mono: float) -> BadIdRead | None:
        """Give up the unfinished line: a bad read if it held anything (an overlong line was
        reported when it overflowed)."""
        length, fault, overlong = len(self._line), self._fault, self._overlong
        self.reset(keep_keys=True)
        if overlong or not (length or fault):
            return None
        return BadIdRead(device=self.device, length=length, at_mono=at_mono,
                         detail=f"{length} characters typed and no Enter" +
                                (f" ({fault})" if fault else ""))

    def reset(self, *, keep_keys: bool = False) -> None:
        """Forget the line (and, unless ``keep_keys``, which keys are held: a new device)."""
        self._line.clear()
        self._fault = None
        self._overlong = False
        if not keep_keys:
            self._shift.clear()
            self._held.clear()

    def _take(self, code: int) -> None:
        if self._overlong:
            return
        if self._held:
            names = sorted({_MODIFIERS[c] for c in self._held})
            self._fault = self._fault or f"key code {code} typed with {'+'.join(names)} held"
        chars = KEYMAP.get(code)
        if chars is None:
            self._fault = self._fault or f"key code {code} has no character on a US layout"
            self._line.append("\x00")
        else:
            self._line.append(chars[1] if self._shift else chars[0])
        if len(self._line) > MAX_LINE:
            self._overlong = True

    def _end_line(self, at_mono: float) -> IdTap | BadIdRead | None:
        line, fault, overlong = "".join(self._line), self._fault, self._overlong
        self.reset(keep_keys=True)
        if overlong:
            return BadIdRead(device=self.device, length=MAX_LINE + 1, at_mono=at_mono,
                             detail=f"a line longer than {MAX_LINE} characters")
        if fault is not None:
            return BadIdRead(device=self.device, detail=fault, length=len(line),
                             at_mono=at_mono)
        return parse_line(typed_line(line, self.typed), device=self.device, at_mono=at_mono)


def keystrokes(text: str, *, start: float = 0.0, interval: float = 0.004,
               enter: bool = True) -> list[InputEvent]:
    """The events a US-layout wedge sends typing ``text`` (and Enter): for each key its
    MSC_SCAN, press, SYN_REPORT, then release, with Shift around shifted characters;
    ``interval`` seconds between keys. ValueError for a character no key types."""
    events: list[InputEvent] = []
    at = start

    def key(code: int, value: int) -> None:
        nonlocal at
        events.append(InputEvent(at, EV_MSC, MSC_SCAN, 0x70000 + _USAGES.get(code, 0)))
        events.append(InputEvent(at, EV_KEY, code, value))
        events.append(InputEvent(at, EV_SYN, SYN_REPORT, 0))
        at += interval / 2

    for char in text:
        if char not in _TYPING:
            raise ValueError(f"no key types {char!r} on a US layout")
        code, shifted = _TYPING[char]
        if shifted:
            key(KEY_LEFTSHIFT, 1)
        key(code, 1)
        key(code, 0)
        if shifted:
            key(KEY_LEFTSHIFT, 0)
    if enter:
        key(KEY_ENTER, 1)
        key(KEY_ENTER, 0)
    return events


def unmapped_keystroke(code: int, at: float) -> list[InputEvent]:
    """A press and release of a key the decoder gives no character (noise on the line)."""
    return [InputEvent(at, EV_KEY, code, 1), InputEvent(at, EV_SYN, SYN_REPORT, 0),
            InputEvent(at, EV_KEY, code, 0), InputEvent(at, EV_SYN, SYN_REPORT, 0)]


def events_of(lines: Iterable[str], *, start: float = 0.0, interval: float = 0.004,
              gap: float = 0.5) -> list[InputEvent]:
    """The events of several typed lines, ``gap`` seconds apart."""
    out: list[InputEvent] = []
    at = start
    for line in lines:
        typed = keystrokes(line, start=at, interval=interval)
        out.extend(typed)
        at = (typed[-1].sec if typed else at) + gap
    return out
