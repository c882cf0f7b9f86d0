"""The forms a rewards card takes when a reader reads it, and the one normal form of its number
that the desk stores (hashed) and the table compares a tap with (docs/protocols/id-reader.md).

A reader reports a card as a card number of 8 to 19 digits (swiped: ``track2``; typed by a
keypad or magstripe wedge, or sent plain: ``plain``) or as a chip's UID of 4, 7 or 10 bytes in
upper-case hex (``uid``). Which of these a venue's readers produce is a rule of the house
(tournament.toml ``[venue] card_forms``); the desk refuses a card no reader of the venue can
produce, saying why (`read_card`). Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = ["CARD_FORMS", "PAN_DIGITS", "UID_HEX_DIGITS", "CardForm", "card_problem",
           "describe_forms", "read_card"]

CardForm = Literal["track2", "uid", "plain"]
CARD_FORMS: Final[tuple[CardForm, ...]] = ("track2", "uid", "plain")
PAN_DIGITS: Final = range(8, 20)  # ISO/IEC 7812: a card number has 8..19 digits
UID_HEX_DIGITS: Final = (8, 14, 20)  # ISO/IEC 14443 UIDs: 4, 7 or 10 bytes
_HEX: Final = frozenset("0123456789ABCDEF")
_SEPARATORS: Final = re.compile(r"[\s\-/.]+")  # as printed: "6012 3456-7890"
_FORM_WORDS: Final[dict[str, str]] = {
    "track2": "swiped card numbers (track 2)",
    "plain": "typed or plain card numbers",
    "uid": "chip UIDs of 8, 14 or 20 hex digits",
}


def card_problem(number: str, form: CardForm) -> str | None:
    """Why ``number`` cannot be a card read of this form (None when it can): the rule every
    ID reader driver applies to a tap and the desk to a card it registers."""
    if form == "uid":
        if len(number) not in UID_HEX_DIGITS:
            return f"a UID has 8, 14 or 20 hex digits, this one {len(number)}"
        if not set(number) <= _HEX:
            return "a UID is upper-case hex digits only"
        return None
    if not number.isascii() or not number.isdigit():
        return "a card number is digits only"
    if len(number) not in PAN_DIGITS:
        return f"a card number has 8..19 digits, this one {len(number)}"
    return None


def describe_forms(forms: tuple[CardForm, ...]) -> str:
    """The venue's forms in words, e.g. "swiped card numbers (track 2) and chip UIDs ..."."""
    words = [_FORM_WORDS[f] for f in ("track2", "plain", "uid") if f in forms]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def read_card(text: str, forms: tuple[CardForm, ...] = CARD_FORMS) -> str:
    """A rewards card as the desk is given it (printed number with spaces or dashes, a hex UID
    with or without ``UID:``) in the form a reader's tap of it has (`IdTap.number`: the
    digits, or the UID in upper-case hex); ValueError saying why not, naming the card and
    the forms this venue's readers produce."""
    raw = str(text).strip()
    value = _SEPARATORS.sub("", raw).upper()
    if value.startswith("UID:"):
        value, only_uid = value[4:], True
    else:
        only_uid = False
    digits_ok = not only_uid and card_problem(value, "plain") is None
    uid_ok = card_problem(value, "uid") is None
    if (digits_ok and ("track2" in forms or "plain" in forms)) or (uid_ok and "uid" in forms):
        return value
    shown = raw[:40]
    if digits_ok or uid_ok:
        kind = "a card number" if digits_ok else "a chip UID"
        raise ValueError(f"{shown}: {kind} is not read by this venue's card readers; they"
                         f" produce {describe_forms(forms)} (tournament.toml [venue]"
                         " card_forms)")
    raise ValueError(f"{shown}: a rewards card reads as 8 to 19 digits or a hex UID (8, 14 or"
                     f" 20 hex digits), so this card could never be tapped; this venue's"
                     f" readers produce {describe_forms(forms)}")
