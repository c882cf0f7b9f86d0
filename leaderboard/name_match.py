"""Names compared as a casino's list checks compare them: case, accents, punctuation,
whitespace and the order of the names do not matter; an initial may stand for a name, but
that is only ever a possible match (promotion rules 2, 3; issue 13).

`name_tokens` is the normal form (sorted tokens), `name_key` and `letters_key` the two
stored forms (the key itself, and the first letters, which every name an initial could
stand for shares: the database looks candidates up by it), and `compare_names` the
verdict: ``"name"`` (the same name), ``"initials"`` (the same but for initials), or None.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Final, Literal

__all__ = ["NameMatch", "compare_names", "letters_key", "name_key", "name_tokens",
           "ordered_tokens"]

NameMatch = Literal["name", "initials"]

_APOSTROPHES: Final = re.compile(r"['\u2019\u2018`\u02bc]")  # O'Brien is OBrien
_SEPARATORS: Final = re.compile(r"[\W_]+")  # every other punctuation mark separates


def ordered_tokens(text: str) -> tuple[str, ...]:
    """A name's tokens in written order: accents removed, case folded, apostrophes dropped,
    every other punctuation mark a space ("Mokoena, Thandí" -> ("mokoena", "thandi"))."""
    decomposed = unicodedata.normalize("NFKD", str(text))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    # casefold can leave composed characters (e.g. from ligatures); decompose once more.
    plain = "".join(c for c in unicodedata.normalize("NFKD", plain)
                    if not unicodedata.combining(c))
    plain = _APOSTROPHES.sub("", plain)
    return tuple(t for t in _SEPARATORS.split(plain) if t)


def name_tokens(text: str) -> tuple[str, ...]:
    """A name's normal form: its tokens (`ordered_tokens`) sorted."""
    return tuple(sorted(ordered_tokens(text)))


def name_key(text: str) -> str:
    """The stored normal form of a name (its tokens, sorted, one space apart)."""
    return " ".join(name_tokens(text))


def letters_key(text: str) -> str:
    """The first letters of a name's tokens, sorted: equal for any two names that could be
    the same person written with initials ("T. Mokoena", "Thandi Mokoena": "m t")."""
    return " ".join(sorted(t[0] for t in name_tokens(text)))


def compare_names(first: str, second: str) -> NameMatch | None:
    """``"name"`` when two names are the same once normalised; ``"initials"`` when they are
    but for initials standing for names (at least one full name in common, every initial
    the first letter of a name on the other side, as many names on each side); else None."""
    a, b = name_tokens(first), name_tokens(second)
    if not a or not b:
        return None
    if a == b:
        return "name"
    if len(a) != len(b):
        return None
    left, right = Counter(a), Counter(b)
    common = left & right
    if not any(len(t) > 1 for t in common.elements()):
        return None  # initials alone ("T M") would match half the floor
    rest_a, rest_b = left - common, right - common
    for letter in {t[0] for t in (rest_a + rest_b).elements()}:
        full_a = sum(n for t, n in rest_a.items() if t[0] == letter and len(t) > 1)
        init_a = sum(n for t, n in rest_a.items() if t == letter)
        full_b = sum(n for t, n in rest_b.items() if t[0] == letter and len(t) > 1)
        init_b = sum(n for t, n in rest_b.items() if t == letter)
        # Each full name left on one side must be met by an initial on the other.
        if full_a + init_a != full_b + init_b or full_a > init_b or full_b > init_a:
            return None
    return "initials"
