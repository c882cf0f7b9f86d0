"""How patrons appear on the page: short entry codes and checked screen names (pure).

An entry code ("K7-42F") is derived from the entry id, so the same id always gives the same
code: the hex part after the stage prefix is hashed and written in Crockford's base 32
(digits and capitals without I, L, O and U, so nothing reads as another character). A
semi-final place S-x and a Final place F-x share their qualifying entry E-x's hex part and
so its code. Two entries whose codes collide are told apart by `entry_code`'s ``taken``:
the later one gets one more character, as many times as needed.

A screen name is what a patron chose at the desk to be shown by: `check_screen_name` says
what is wrong with one, and `screen_name_key` is what two names are compared by.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Final

__all__ = [
    "CODE_ALPHABET",
    "SCREEN_NAME_MAX",
    "SCREEN_NAME_MIN",
    "ScreenNameError",
    "check_screen_name",
    "code_base",
    "display_name",
    "entry_code",
    "first_name_initial",
    "screen_name_key",
]

CODE_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base 32
_SHORT: Final = 5  # "K7-42F": 2 + 3 characters, 32**5 = 33.5 million codes
_LONGEST: Final = 12
SCREEN_NAME_MIN: Final = 2
SCREEN_NAME_MAX: Final = 20
_PREFIX: Final = re.compile(r"^[A-Z]-")
# Letters of any script, digits, spaces and a few joining marks; nothing HTML or control.
_ALLOWED_PUNCTUATION: Final = frozenset(" .-'_")
_LOOKS_LIKE_ID: Final = re.compile(r"^[A-Za-z]-[0-9a-fA-F]{6,}$|^[0-9A-Za-z]{2}-[0-9A-Za-z]{3,}$")


class ScreenNameError(ValueError):
    """A screen name the desk refuses, with a one-line reason."""


def code_base(entry_id: str) -> str:
    """The entry's code characters (`_LONGEST` of them) before any shortening."""
    body = _PREFIX.sub("", entry_id)
    value = int.from_bytes(hashlib.sha256(body.lower().encode("utf-8")).digest()[:8], "big")
    chars = []
    for _ in range(_LONGEST):
        value, digit = divmod(value, 32)
        chars.append(CODE_ALPHABET[digit])
    return "".join(chars)


def _format(chars: str) -> str:
    return f"{chars[:2]}-{chars[2:]}"


def entry_code(entry_id: str, taken: Callable[[str], bool] = lambda _code: False) -> str:
    """The short code of an entry: "K7-42F", longer only while ``taken(code)`` says another
    entry already has it (the desk asks the database)."""
    base = code_base(entry_id)
    for length in range(_SHORT, _LONGEST + 1):
        code = _format(base[:length])
        if not taken(code):
            return code
    raise ValueError(f"no free entry code for {entry_id!r}")  # 2**60 codes: cannot happen


def first_name_initial(full_name: str) -> str:
    """First name and the initial of the last name: "Thandiwe Mokoena" -> "Thandiwe M."."""
    parts = full_name.split()
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return f"{parts[0]} {parts[-1][0].upper()}."


def display_name(names: str, *, full_name: str, consent: bool,
                 screen_name: str | None) -> str | None:
    """How the page names a patron under the house setting ``names`` (leaderboard.config
    NameMode), None for "by their entry code": first name and initial only with their
    consent, the screen name only when they chose one."""
    if names == "first_name_initial" and consent:
        return first_name_initial(full_name) or None
    if names == "screen_name":
        return screen_name or None
    return None


def screen_name_key(name: str) -> str:
    """What two screen names are compared by: case, accents' forms and spacing ignored."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def check_screen_name(raw: str) -> str:
    """The screen name as it will be shown (spaces collapsed, NFC), or ScreenNameError."""
    name = " ".join(unicodedata.normalize("NFC", raw).split())
    if any(unicodedata.category(c).startswith("C") for c in raw if c not in " "):
        raise ScreenNameError("the screen name has a control or invisible character")
    if not SCREEN_NAME_MIN <= len(name) <= SCREEN_NAME_MAX:
        raise ScreenNameError(f"the screen name must be {SCREEN_NAME_MIN} to {SCREEN_NAME_MAX}"
                              f" characters, got {len(name)}")
    bad = sorted({c for c in name if not (c.isalnum() or c in _ALLOWED_PUNCTUATION)})
    if bad:
        raise ScreenNameError(f"the screen name may use letters, digits, spaces and . - ' _"
                              f" only, not {''.join(bad)!r}")
    if not any(c.isalpha() for c in name):
        raise ScreenNameError("the screen name needs at least one letter")
    if _LOOKS_LIKE_ID.match(name):
        raise ScreenNameError("the screen name looks like an entry code or id: choose a name")
    return name
