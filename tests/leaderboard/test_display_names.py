"""Short display names (leaderboard.display_names): entry codes derived from the entry id and
collision-checked, checked screen names, first name and initial; and how the page names a
patron under each house setting (leaderboard.standings.rows.display_name)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.display_names import (
    CODE_ALPHABET,
    ScreenNameError,
    check_screen_name,
    code_base,
    entry_code,
    first_name_initial,
    screen_name_key,
)
from leaderboard.standings.rows import display_name

CODE = re.compile(rf"^[{CODE_ALPHABET}]{{2}}-[{CODE_ALPHABET}]{{3,}}$")


def test_an_entry_code_is_short_and_made_of_unambiguous_characters() -> None:
    code = entry_code("E-3f9a0c1d2e4b5a69")
    assert CODE.match(code) and len(code) == 6
    assert not set(code) & set("ILOU")


@settings(deadline=None, max_examples=200)
@given(st.binary(min_size=8, max_size=8))
def test_the_code_is_the_same_for_an_entry_and_the_places_it_wins(raw: bytes) -> None:
    hex_part = raw.hex()
    codes = {entry_code(f"{prefix}-{hex_part}") for prefix in "ESF"}
    assert len(codes) == 1  # E-x, S-x and F-x: the patron keeps one code
    assert hex_part not in next(iter(codes)).lower()


def test_a_colliding_code_gets_longer_until_it_is_free() -> None:
    first = entry_code("E-00000000000000aa")
    taken = {first}
    second = entry_code("E-00000000000000aa", taken.__contains__)
    assert second.startswith(first) and len(second) == len(first) + 1
    taken.add(second)
    third = entry_code("E-00000000000000aa", taken.__contains__)
    assert len(third) == len(first) + 2 and third.startswith(second)


def test_codes_of_ten_thousand_entries_are_told_apart_by_the_collision_check() -> None:
    taken: set[str] = set()
    lengthened = 0
    for n in range(10_000):
        code = entry_code(f"E-{n:016x}", taken.__contains__)
        assert code not in taken
        lengthened += len(code) > 6
        taken.add(code)
    assert len(taken) == 10_000
    assert lengthened < 10  # 32**5 codes: a collision is rare, and then one more character


def test_the_code_depends_on_the_id_only() -> None:
    assert code_base("E-ABCDEF0123456789") == code_base("E-abcdef0123456789")
    assert entry_code("E-LIVE01") != entry_code("E-LIVE02")


@pytest.mark.parametrize(("raw", "shown"), [
    ("Lucky Thandi", "Lucky Thandi"), ("  Ace   of  Spades ", "Ace of Spades"),
    ("O'Brien-2", "O'Brien-2"), ("Zoë", "Zoë"), ("Nomvula_7", "Nomvula_7"),
    ("Deadbeef", "Deadbeef"), ("Mpho-Ace", "Mpho-Ace"),
])
def test_a_screen_name_is_kept_tidied(raw: str, shown: str) -> None:
    assert check_screen_name(raw) == shown


@pytest.mark.parametrize(("raw", "why"), [
    ("A", "2 to 20 characters"), ("x" * 21, "2 to 20 characters"),
    ("<b>Ace</b>", "not '/<>'"), ("Ace\u0007", "control or invisible"),
    ("Ace\u200bKing", "control or invisible"), ("12345", "at least one letter"),
    ("E-3f9a0c1d", "looks like an entry code"), ("K7-42F", "looks like an entry code"),
    ("k7-42f", "looks like an entry code"),
    ('Ace "the" King', "not '\"'"), ("Ace & King", "not '&'"),
])
def test_a_screen_name_that_could_mislead_or_break_the_page_is_refused(raw: str, why: str
                                                                      ) -> None:
    with pytest.raises(ScreenNameError, match=re.escape(why)):
        check_screen_name(raw)


def test_screen_names_are_compared_without_case_or_spacing() -> None:
    assert screen_name_key("Lucky  Thandi") == screen_name_key("lucky thandi")
    assert screen_name_key("Lucky Thandi") != screen_name_key("Lucky Thando")


def test_first_name_and_initial() -> None:
    assert first_name_initial("Thandiwe Mokoena") == "Thandiwe M."
    assert first_name_initial("  Pieter  van der Merwe ") == "Pieter M."
    assert first_name_initial("Cher") == "Cher"
    assert first_name_initial("") == ""


def test_the_house_setting_decides_and_consent_is_needed_for_a_real_name() -> None:
    def shown(mode: str, *, consent: bool, screen: str | None) -> str | None:
        return display_name(mode, full_name="Thandiwe Mokoena",  # type: ignore[arg-type]
                            consent=consent, screen_name=screen)

    assert shown("first_name_initial", consent=True, screen="Lucky") == "Thandiwe M."
    assert shown("first_name_initial", consent=False, screen="Lucky") is None  # their code
    assert shown("screen_name", consent=False, screen="Lucky") == "Lucky"
    assert shown("screen_name", consent=True, screen=None) is None  # no name chosen: code
    assert shown("entry_code", consent=True, screen="Lucky") is None
