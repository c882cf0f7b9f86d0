"""Names compared as the lists are checked (leaderboard.name_match): case, accents,
punctuation, whitespace and order never matter; initials are a possible match at most."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from leaderboard.name_match import compare_names, letters_key, name_key, name_tokens

NAME = st.lists(st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9), min_size=2,
                max_size=4)
ACCENTS = ("\u0301", "\u0300", "\u0308", "\u0302", "\u0327")  # acute, grave, umlaut, ...
SEPARATORS = (" ", "  ", ", ", " - ", ".", "\t", "-", " / ")


@st.composite
def written(draw: st.DrawFn, tokens: list[str]) -> str:
    """The same name as a clerk or a list might write it: case, accents, order, punctuation."""
    order = draw(st.permutations(tokens))
    words = []
    for token in order:
        chars = []
        for letter in token:
            c = letter.upper() if draw(st.booleans()) else letter
            if draw(st.integers(0, 4)) == 0:
                c = unicodedata.normalize("NFC", c + draw(st.sampled_from(ACCENTS)))
            chars.append(c)
        words.append("".join(chars))
    text = words[0]
    for word in words[1:]:
        text += draw(st.sampled_from(SEPARATORS)) + word
    return draw(st.sampled_from(("", " ", "  "))) + text + draw(st.sampled_from(("", " ")))


@given(st.data(), NAME)
def test_the_same_name_written_differently_is_the_same_name(data: st.DataObject,
                                                            tokens: list[str]) -> None:
    a, b = data.draw(written(tokens)), data.draw(written(tokens))
    assert name_key(a) == name_key(b) == " ".join(sorted(tokens))
    assert compare_names(a, b) == "name"
    assert letters_key(a) == letters_key(b)


@given(st.data(), NAME)
def test_an_initial_for_a_name_is_only_a_possible_match(data: st.DataObject,
                                                        tokens: list[str]) -> None:
    i = data.draw(st.integers(0, len(tokens) - 1))
    short = [t[0] + "." if n == i else t for n, t in enumerate(tokens)]
    full, initialled = data.draw(written(tokens)), data.draw(written(short))
    assert compare_names(full, initialled) == "initials"
    assert compare_names(initialled, full) == "initials"
    assert letters_key(full) == letters_key(initialled)  # found by the database's lookup


@given(st.data(), NAME, st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=3))
def test_a_different_name_is_no_match(data: st.DataObject, tokens: list[str],
                                      extra: str) -> None:
    i = data.draw(st.integers(0, len(tokens) - 1))
    changed = [t + extra if n == i else t for n, t in enumerate(tokens)]
    if sorted(changed) == sorted(tokens):
        return
    assert compare_names(" ".join(tokens), data.draw(written(changed))) is None
    assert compare_names(" ".join(tokens), " ".join(tokens[:-1])) is None  # a name missing


def test_examples() -> None:
    assert name_tokens("Mokoena, Thandí") == ("mokoena", "thandi")
    assert compare_names("Jean-Luc O'Brien", "OBRIEN jean luc") == "name"
    assert compare_names("T M", "Thandi Mokoena") is None  # initials alone: too loose
    assert compare_names("T. N. Mokoena", "Thandi Nomsa Mokoena") == "initials"
    assert compare_names("Thandi N. Mokoena", "T. Nomsa Mokoena") == "initials"
    assert compare_names("Thandi Mokoena", "Thabo Mokoena") is None
    assert compare_names("", "Thandi") is None
    assert name_key("ﬁona Straße") == "fiona strasse"
