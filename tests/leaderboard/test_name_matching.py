"""Names as people write them (issue 33; leaderboard.name_similarity and
leaderboard.eligibility.name_verdict): dropped and added middle names, short and pet forms,
surname particles, double-barrelled surnames, spelling and phonetic variants, weighed with the
birth date. Pure: no database (the list checks on SQLite and PostgreSQL are in
test_eligibility.py and test_eligibility_population.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.tournament.schema import NameCheckSettings
from leaderboard.eligibility import name_verdict
from leaderboard.name_similarity import blocking_keys, compare, name_parts, query_keys
from leaderboard.name_variants import PARTICLES, are_variants
from tests.leaderboard.test_name_match import NAME, written

BORN = date(1980, 1, 1)
OTHER_DAY = date(1981, 6, 9)
THANDI = "Thandí Nomsa Mokoena"
JOHANNES = "Johannes van der Merwe"
DATA = Path(__file__).resolve().parents[2] / "leaderboard" / "name_data"


@pytest.mark.parametrize(("name", "listed", "notes"), [
    # the examples, same birth date
    ("Thandi Mokoena", THANDI, ["1 listed name not given"]),
    ("Thandie Nomsa Mokoena", THANDI, ["pet form"]),
    ("Thandi Nomsa Mokoena-Dlamini", THANDI, ["1 name not on the list"]),
    ("Johannes Vandermerwe", JOHANNES, []),
    ("Johan van der Merwe", JOHANNES, ["pet form"]),
    # the other kinds
    ("Thandi Lindiwe Nomsa Mokoena", THANDI, ["1 name not on the list"]),
    ("Bill Smith", "William Smith", ["pet form"]),
    ("Koos Botha", "Jacobus Botha", ["pet form"]),
    ("Merwe, Johannes van der", JOHANNES, []),
    ("Johannes Merwe", JOHANNES, ["particles"]),
    ("Johannes Van Der Merwe", "Johannes Vandermerwe", []),
    ("Thandi Dlamini", "Thandi Mokoena-Dlamini", ["1 listed name not given"]),
    ("Thandi Nomsa Mokwena", THANDI, ["spelling"]),
    ("Priya Naidu", "Priya Naidoo", ["sounds alike"]),
    ("Sifo Dube", "Sipho Dube", ["sounds alike"]),
    ("MOKOENA,  thandí   nomsa", THANDI, []),
    ("T. N. Mokoena", THANDI, ["initial"]),
])
def test_each_variant_kind_with_the_same_birth_date_is_a_possible_match(
        name: str, listed: str, notes: list[str]) -> None:
    verdict = name_verdict(name, BORN, listed, BORN)
    assert verdict is not None, name
    how, score, detail = verdict
    assert 80 <= score <= 100
    for note in notes:
        assert note in detail
    assert (how == "name") == (not notes and score == 100)


@pytest.mark.parametrize(("name", "listed"), [
    ("Thabo Mokoena", THANDI),  # another given name
    ("Lindiwe Zulu", THANDI),
    ("T M", "Thandi Mokoena"),  # initials alone
    ("Thandi", THANDI),  # one name of three
    ("Nomsa Dlamini", THANDI),  # a middle name and another surname
    ("Samuel Jones", "Samuel Johnson"),
])
def test_a_different_person_is_no_match_even_on_the_same_birth_date(name: str,
                                                                    listed: str) -> None:
    assert name_verdict(name, BORN, listed, BORN) is None


def test_another_birth_date_needs_the_same_name_and_a_missing_one_the_shipped_85() -> None:
    assert name_verdict("MOKOENA, Thandi Nomsa", OTHER_DAY, THANDI, BORN) == (
        "name", 100, f"the same names; listed birth date {BORN}")
    for weaker in ("Thandi Mokoena", "Thandie Nomsa Mokoena", "Johan van der Merwe"):
        listed = JOHANNES if "Merwe" in weaker else THANDI
        assert name_verdict(weaker, OTHER_DAY, listed, BORN) is None, weaker
        assert name_verdict(weaker, OTHER_DAY, listed, None) is not None, weaker
    # An initial counts 0.8: "T. Mokoena" is 90% of "Thandi Mokoena", 85 needed.
    assert name_verdict("T. Mokoena", OTHER_DAY, "Thandi Mokoena", None) is not None
    assert name_verdict("T. N. Mokoena", OTHER_DAY, "Thandi Nomsa Mokoena", None) is not None


def test_the_house_thresholds_decide() -> None:
    strict = NameCheckSettings(same_birth_date=100, no_birth_date=100, other_birth_date=100)
    assert name_verdict("Thandi Mokoena", BORN, THANDI, BORN, strict) is not None  # 2 of 2
    assert name_verdict("Johan van der Merwe", BORN, JOHANNES, BORN, strict) is None  # 95
    loose = NameCheckSettings(other_birth_date=95)
    assert name_verdict("Johan van der Merwe", OTHER_DAY, JOHANNES, BORN, loose) == (
        "similar", 95, f"pet form; listed birth date {BORN}")


def test_names_are_read_into_parts_with_particles_joined() -> None:
    assert name_parts("Johannes van der Merwe") == ("johannes", "vandermerwe")
    assert name_parts("VAN DER MERWE, Johannes") == ("johannes", "vandermerwe")
    assert name_parts("Gert Janse van Rensburg") == ("gert", "janse", "vanrensburg")
    assert name_parts("Thandi Mokoena-Dlamini") == ("thandi", "mokoena", "dlamini")
    assert name_parts("Sean O'Brien") == ("sean", "obrien")
    assert compare("Dean Smith", "An Smith").pairs[0].kind == "same"  # "de" is no particle here
    assert [p.kind for p in compare("Dean Smith", "An Smith").pairs] == ["same"]


def test_a_matching_name_shares_keys_on_two_parts() -> None:
    """The lookup's promise (D368): any name the matcher may pair shares blocking keys with
    the listed name on as many parts as a match needs."""
    for name, listed in (("Thandi Nomsa Mokwena", THANDI), ("Thandie Mokoena", THANDI),
                         ("Johan Vandermerwe", JOHANNES), ("T. Mokoena", "Thandi Mokoena"),
                         ("Thandi Mokoena", "T Mokoena"), ("Ofentse Taru", "Ofentse Tau"),
                         ("Anelie Tzu", "Anelie Tau"), ("Robert Ne", "Robert Nel"),
                         ("Liezl Govender", "Lyzl Govender")):
        asked = query_keys(name)
        parts = {part for part, key in blocking_keys(listed) if key in asked}
        assert len(parts) >= 2, (name, listed)


def test_the_name_data_files_are_lowercase_names() -> None:
    assert {"van", "der", "de", "du", "le", "la", "von", "da", "dos"} <= PARTICLES
    seen_lines = set()
    for line in (DATA / "given_name_variants.csv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        names = line.split(",")
        assert all(n == n.strip().lower() and n.isalpha() and n.isascii() for n in names), line
        assert len(names) == len(set(names)) >= 2, line
        assert line not in seen_lines
        seen_lines.add(line)
    assert are_variants("johan", "johannes") and are_variants("bill", "william")
    assert are_variants("thabo", "thabiso") and not are_variants("thabo", "thandi")


@given(st.data(), NAME.filter(lambda tokens: not PARTICLES & set(tokens)))
def test_the_same_name_written_any_way_is_the_same_name(data: st.DataObject,
                                                        tokens: list[str]) -> None:
    """Case, accents, order and punctuation never matter (particles aside: their order does)."""
    a, b = data.draw(written(tokens)), data.draw(written(tokens))
    assert name_verdict(a, BORN, b, OTHER_DAY) == (
        "name", 100, f"the same names; listed birth date {OTHER_DAY}")


@given(st.data(), NAME.filter(lambda tokens: not PARTICLES & set(tokens)))
def test_a_dropped_part_or_an_initial_is_held_with_the_same_birth_date(
        data: st.DataObject, tokens: list[str]) -> None:
    listed = " ".join(tokens)
    if len(tokens) > 2:
        dropped = tokens[:1] + tokens[2:]
        assert name_verdict(data.draw(written(dropped)), BORN, listed, BORN) is not None
    i = data.draw(st.integers(0, len(tokens) - 1))
    initialled = [t[0] + "." if n == i else t for n, t in enumerate(tokens)]
    assert name_verdict(data.draw(written(initialled)), BORN, listed, BORN) is not None
