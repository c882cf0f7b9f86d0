"""The keyboard wedge's decoder, sans-I/O: key events to the same readings the serial
reader's parser gives for the same line. Checked: every line form, Shift, the keypad, a 2-track
swipe reduced to track 2, an NFC wedge's bare hex UID (even all-decimal), and every way a
line goes bad (a key with no character, Ctrl held, SYN_DROPPED, overlong, never ended), each
followed by a good line. The keymap is checked against python-evdev's names of the kernel's
key codes, and the encoder against the decoder for every typeable character.
"""

from __future__ import annotations

import pytest
from evdev import ecodes

from drivers.id_codec import BadIdRead, parse_line
from drivers.readings import IdTap
from drivers.wedge_codec import (
    EV_KEY,
    EV_SYN,
    KEYMAP,
    SYN_DROPPED,
    InputEvent,
    Typed,
    WedgeDecoder,
    keystrokes,
    typed_line,
    unmapped_keystroke,
)

PAN = "6012345678901234"


def decode(events: list[InputEvent], typed: Typed = "card") -> list[IdTap | BadIdRead]:
    decoder = WedgeDecoder("wedge", typed=typed)
    return [r for e in events if (r := decoder.feed(e, at_mono=1.0)) is not None]


def reads(*lines: str, typed: Typed = "card") -> list[tuple[str, str] | str]:
    events = [e for line in lines for e in keystrokes(line)]
    return [(r.number, r.form) if isinstance(r, IdTap) else r.detail
            for r in decode(events, typed)]


@pytest.mark.parametrize(("line", "typed", "expected"), [
    (f";{PAN}=2912?", "card", (PAN, "track2")),
    (f";{PAN}=29121010000?", "uid", (PAN, "track2")),  # track 2 reads on an NFC wedge too
    (f"%B{PAN}^GUEST/PLAYER^2912101?;{PAN}=2912101?", "card", (PAN, "track2")),
    (f"%B{PAN}^GUEST/PLAYER^2912101?;{PAN}=2912101?+123?", "card", (PAN, "track2")),
    ("12345678", "card", ("12345678", "plain")),
    ("04A1B2C3D4E5F6", "uid", ("04A1B2C3D4E5F6", "uid")),
    ("04a1b2c3d4e5f6", "uid", ("04A1B2C3D4E5F6", "uid")),
    ("12345678", "uid", ("12345678", "uid")),  # an all-decimal UID is still a UID here
    ("UID:DEADBEEF", "card", ("DEADBEEF", "uid")),
])
def test_each_line_a_wedge_types_is_the_reading_the_serial_parser_gives(
        line: str, typed: Typed, expected: tuple[str, str]) -> None:
    assert reads(line, typed=typed) == [expected]
    serial = parse_line(typed_line(line, typed), device="wedge", at_mono=1.0)
    assert isinstance(serial, IdTap)
    assert (serial.number, serial.form) == expected


def test_bare_hex_on_a_card_wedge_and_a_short_uid_are_bad_reads_with_the_serial_details() -> None:
    assert reads("04A1B2C3D4E5F6", "04A1B2", typed="card")[0] == (
        "14 characters in no known form (track 2 ';...?', 'UID:<hex>' or digits)")
    assert reads("04A1B2", typed="uid") == [
        "NFC line: a UID has 8, 14 or 20 hex digits, this one 6"]


def test_the_keypad_types_digits_and_its_enter_ends_the_line() -> None:
    codes = [ecodes.KEY_KP1, ecodes.KEY_KP2, ecodes.KEY_KP3, ecodes.KEY_KP4, ecodes.KEY_KP5,
             ecodes.KEY_KP6, ecodes.KEY_KP7, ecodes.KEY_KP8, ecodes.KEY_KPENTER]
    events = [InputEvent(0.0, EV_KEY, code, value) for code in codes for value in (1, 0)]
    assert [(r.number, r.form) for r in decode(events) if isinstance(r, IdTap)] == [
        ("12345678", "plain")]


def test_bad_lines_are_bad_reads_and_the_next_line_still_reads() -> None:
    ctrl_c = [InputEvent(0, EV_KEY, ecodes.KEY_LEFTCTRL, 1), InputEvent(0, EV_KEY, 46, 1),
              InputEvent(0, EV_KEY, 46, 0), InputEvent(0, EV_KEY, ecodes.KEY_LEFTCTRL, 0)]
    events = [
        *unmapped_keystroke(ecodes.KEY_F5, 0.0), *keystrokes(PAN),
        *ctrl_c, *keystrokes(PAN),
        *keystrokes(";6012", enter=False), InputEvent(0, EV_SYN, SYN_DROPPED, 0),
        *keystrokes("345678?"),
        *keystrokes("9" * 200),
        *keystrokes(""),  # Enter alone
        *keystrokes(PAN),
    ]
    out = decode(events)
    assert [r.detail if isinstance(r, BadIdRead) else (r.number, r.form) for r in out] == [
        "key code 63 has no character on a US layout",
        "key code 46 typed with Ctrl held",
        "the kernel dropped input events (SYN_DROPPED): the reader typed faster than they"
        " were read",
        "a line longer than 128 characters",
        "an empty line",
        (PAN, "plain"),
    ]


def test_auto_repeat_and_releases_type_nothing_and_shift_is_followed() -> None:
    one = ecodes.KEY_1
    events = [InputEvent(0, EV_KEY, one, 1), InputEvent(0, EV_KEY, one, 2),
              InputEvent(0, EV_KEY, one, 2), InputEvent(0, EV_KEY, one, 0),
              *keystrokes("2345678")]
    assert [(r.number, r.form) for r in decode(events) if isinstance(r, IdTap)] == [
        ("12345678", "plain")]
    shifted = [InputEvent(0, EV_KEY, ecodes.KEY_RIGHTSHIFT, 1), InputEvent(0, EV_KEY, one, 1),
               InputEvent(0, EV_KEY, ecodes.KEY_RIGHTSHIFT, 0), *keystrokes("2345678")]
    (bad,) = decode(shifted)
    assert isinstance(bad, BadIdRead)  # "!2345678": the Shift made the 1 a "!"
    assert bad.detail == "8 characters in no known form (track 2 ';...?', 'UID:<hex>' or digits)"


def test_a_line_never_ended_is_given_up_by_flush_and_the_decoder_starts_afresh() -> None:
    decoder = WedgeDecoder("wedge")
    for event in keystrokes(";60123", enter=False):
        assert decoder.feed(event, at_mono=1.0) is None
    assert decoder.unfinished
    given_up = decoder.flush(at_mono=2.0)
    assert given_up is not None
    assert given_up.detail == "6 characters typed and no Enter"
    assert not decoder.unfinished
    assert decoder.flush(at_mono=3.0) is None
    out = [r for e in keystrokes(PAN) if (r := decoder.feed(e, at_mono=4.0))]
    assert [(r.number, r.form) for r in out if isinstance(r, IdTap)] == [(PAN, "plain")]


def test_the_keymap_is_the_kernels_key_codes_by_name() -> None:
    names = {code: ecodes.KEY[code] for code in KEYMAP}
    assert names[2] == "KEY_1"
    assert names[39] == "KEY_SEMICOLON"
    assert names[53] == "KEY_SLASH"
    for code, (plain, _) in KEYMAP.items():
        name = ecodes.KEY[code]
        if plain.isalnum() and not name.startswith("KEY_KP"):
            assert name == f"KEY_{plain.upper()}", (code, plain, name)
        if name.startswith("KEY_KP") and plain.isdigit():
            assert name == f"KEY_KP{plain}"


def test_every_typeable_character_round_trips_through_the_encoder_and_decoder() -> None:
    chars = sorted({c for pair in KEYMAP.values() for c in pair})
    decoder = WedgeDecoder("wedge")
    for char in chars:
        for event in keystrokes(char, enter=False):
            decoder.feed(event, at_mono=0.0)
    assert decoder._line == list("".join(chars))  # the decoder's own buffer
    with pytest.raises(ValueError, match="no key types"):
        keystrokes("é")
