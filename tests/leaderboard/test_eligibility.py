"""Eligibility (promotion rules 1-3, 5): age 18 on the venue-local date, and the imported lists."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.schema import NameCheckSettings
from leaderboard.eligibility import (
    LIST_KINDS,
    LIST_LABELS,
    Candidate,
    EligibilityError,
    ListFileError,
    ListIndex,
    age_on,
    check,
    import_list,
    normalize_id,
    parse_list,
    read_list,
    record_refusal,
    turns_adult_on,
)
from leaderboard.models import AuditEntry, Exclusion, ExclusionNameKey, Refusal
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import SAST, local, migrated

AT = local(2026, 7, 3, 14, 0)
PERSON = Candidate(id_number="8001015009087", name="Thabo Mokoena", birth_date=date(1980, 1, 1))


@pytest.fixture
def session(database_url: Database) -> Iterator[Session]:
    with migrated(database_url) as engine, Session(engine) as s:
        yield s


def rows(text: str) -> tuple:  # type: ignore[type-arg]
    return parse_list(text, "list.csv")


def put(session: Session, kind: str, text: str, *, source: str = "NGB",
        day: date = date(2026, 7, 1), at: datetime = AT) -> None:
    import_list(session, kind=kind, rows=rows(text), source=source, source_date=day, at=at,
                actor="compliance")
    session.commit()


# ---- parsing list files -------------------------------------------------------------------


def test_a_list_file_is_read_with_header_comments_and_number_formats() -> None:
    parsed = rows("id_number,name,note\n# comment\n\n800101 5009 087, Thabo  Mokoena ,x\n"
                  "a1234-567,Jane Doe\n")
    assert [(r.line, r.id_number, r.name) for r in parsed] == [
        (4, "8001015009087", "Thabo Mokoena"), (5, "A1234567", "Jane Doe")]


@pytest.mark.parametrize(("text", "line", "why"), [
    ("id_number,name\n8001015009087,A\n12,B\n", 3, "not a document or card number"),
    ("8001015009087\n", 1, "needs an id_number and a name"),
    ("8001015009087,A\n9001015009087,\n", 2, "needs an id_number and a name"),
    ("8001015009087,A\n8001015009087,B\n", 2, "already on line 1"),
    ('8001015009087,A\n9001015009087,"B\n', 2, "not valid CSV"),
    ("bad!,A\n", 1, "not a document or card number"),
])
def test_a_bad_row_names_the_file_and_line(text: str, line: int, why: str) -> None:
    with pytest.raises(ListFileError) as err:
        rows(text)
    assert err.value.line == line
    assert str(err.value).startswith(f"list.csv:{line}: ")
    assert why in str(err.value)


def test_an_empty_list_is_refused_and_files_are_read_as_utf8(tmp_path: Path) -> None:
    with pytest.raises(ListFileError, match="no rows"):
        rows("id_number,name\n")
    good = tmp_path / "staff.csv"
    good.write_bytes("\ufeffid_number,name\n8001015009087,Zoë Ndlovu\n".encode())
    assert [r.name for r in read_list(good)] == ["Zoë Ndlovu"]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"8001015009087,A\n9001015009087,\xff\n")
    with pytest.raises(ListFileError, match=r"bad.csv:2: not UTF-8"):
        read_list(bad)
    with pytest.raises(ListFileError, match="cannot read"):
        read_list(tmp_path / "missing.csv")


def test_normalize_id() -> None:
    assert normalize_id(" 800101-5009 087 ") == "8001015009087"
    with pytest.raises(ValueError, match="not a document"):
        normalize_id("12")


# ---- age (rule 1) -------------------------------------------------------------------------


def test_ages_by_hand() -> None:
    assert age_on(date(2008, 7, 3), date(2026, 7, 3)) == 18  # the 18th birthday
    assert age_on(date(2008, 7, 4), date(2026, 7, 3)) == 17  # the day before it
    assert turns_adult_on(date(2008, 2, 29)) == date(2026, 3, 1)  # 2026 is a common year
    assert turns_adult_on(date(2004, 2, 29)) == date(2022, 3, 1)
    assert turns_adult_on(date(2008, 1, 31)) == date(2026, 1, 31)


@pytest.mark.parametrize(("born", "at", "eligible"), [
    (date(2008, 7, 3), local(2026, 7, 3, 0, 0), True),  # 18 today, from midnight
    (date(2008, 7, 4), local(2026, 7, 3, 23, 59, 59), False),  # 18 tomorrow
    # 22:30 UTC on 2 July is already 00:30 on 3 July in Johannesburg: 18 there.
    (date(2008, 7, 3), datetime(2026, 7, 2, 22, 30, tzinfo=UTC), True),
    (date(2008, 7, 3), datetime(2026, 7, 2, 21, 59, tzinfo=UTC), False),  # 23:59 on 2 July
    (date(2008, 2, 29), local(2026, 2, 28, 12, 0), False),
    (date(2008, 2, 29), local(2026, 3, 1, 0, 0), True),
])
def test_age_18_boundary_in_venue_time(session: Session, born: date, at: datetime,
                                       eligible: bool) -> None:
    person = Candidate(id_number="0807035009087", name="Young", birth_date=born)
    verdict = check(session, person, at, tz=SAST)
    assert verdict.eligible is eligible
    if not eligible:
        assert verdict.reasons[0].startswith("under 18 (rule 1)")
        assert str(turns_adult_on(born)) in verdict.reasons[0]


# ---- lists (rules 2, 3) -------------------------------------------------------------------


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_each_list_kind_refuses(session: Session, kind: str) -> None:
    assert check(session, PERSON, AT, tz=SAST).eligible
    put(session, kind, "9999999999999,Someone Else\n800101 5009087,Thabo Mokoena\n")
    verdict = check(session, PERSON, AT, tz=SAST)
    assert not verdict.eligible
    assert verdict.lists == (kind,)
    rule = "rule 3" if kind in ("staff", "associated") else "rule 2"
    assert verdict.reasons == (verdict.reasons[0],)
    assert rule in verdict.reason and "NGB, dated 2026-07-01" in verdict.reason


def test_age_and_several_lists_give_every_reason(session: Session) -> None:
    put(session, "self_exclusion", "8001015009087,T\n")
    put(session, "staff", "8001015009087,T\n", source="HR")
    young = Candidate(id_number="8001015009087", name="T", birth_date=date(2010, 1, 1))
    verdict = check(session, young, AT, tz=SAST)
    assert verdict.lists == ("self_exclusion", "staff")
    assert len(verdict.reasons) == 3


def test_a_newer_list_replaces_the_older_from_the_same_source(session: Session) -> None:
    put(session, "self_exclusion", "8001015009087,T\n", day=date(2026, 6, 1))
    put(session, "self_exclusion", "8001015009087,T\n", source="Casino", day=date(2026, 6, 1))
    assert not check(session, PERSON, AT, tz=SAST).eligible
    # The NGB's July list no longer names him; the casino's own list still does.
    put(session, "self_exclusion", "7001015009087,Other\n", day=date(2026, 7, 1),
        at=local(2026, 7, 3, 15, 0))
    verdict = check(session, PERSON, AT, tz=SAST)
    assert verdict.reasons == ("on the self-exclusion list (rule 2): Casino, dated 2026-06-01",)
    put(session, "self_exclusion", "7001015009087,Other\n", source="Casino",
        day=date(2026, 7, 2), at=local(2026, 7, 3, 16, 0))
    assert check(session, PERSON, AT, tz=SAST).eligible
    # Every row stays on record.
    assert session.scalar(select(Exclusion.id).where(
        Exclusion.id_number == "8001015009087").limit(1)) is not None


def test_a_stale_or_repeated_import_is_refused(session: Session) -> None:
    put(session, "excluded", "8001015009087,T\n", day=date(2026, 7, 1))
    with pytest.raises(EligibilityError, match="older than the one in force"):
        put(session, "excluded", "7001015009087,X\n", day=date(2026, 6, 30),
            at=local(2026, 7, 4, 9, 0))
    session.rollback()
    with pytest.raises(EligibilityError, match="already imported"):
        put(session, "excluded", "7001015009087,X\n", day=date(2026, 7, 1))
    session.rollback()
    with pytest.raises(EligibilityError, match="unknown list kind"):
        put(session, "vip", "7001015009087,X\n")


def test_an_import_is_audited_with_its_source_and_date(session: Session) -> None:
    put(session, "staff", "8001015009087,T\n7001015009087,U\n", source="HR")
    audit = session.scalars(select(AuditEntry)).one()
    assert (audit.actor, audit.action) == ("compliance", "list.imported")
    assert audit.detail == {"kind": "staff", "source": "HR", "source_date": "2026-07-01",
                            "rows": 2, "replaced_rows": 0}


def test_a_refusal_is_recorded_with_its_reason(session: Session) -> None:
    put(session, "refusal_of_entry", "8001015009087,T\n")
    verdict = check(session, PERSON, AT, tz=SAST)
    record_refusal(session, PERSON, verdict, AT, context="registration", actor="desk-1")
    session.commit()
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.id_number, refusal.context) == ("8001015009087", "registration")
    assert refusal.reason == "on the refusal-of-entry list (rule 2): NGB, dated 2026-07-01"


# ---- names as people write them (issue 33) -------------------------------------------------

LISTED_NAMES = ("id_number,name,birth_date\n"
                "8001010001081,Thandí Nomsa Mokoena,1980-01-01\n"
                "7506065001082,Johannes van der Merwe,1975-06-06\n")


def candidate(name: str, born: date, number: str = "RC600000001") -> Candidate:
    return Candidate(id_number=number, name=name, birth_date=born)


@pytest.mark.parametrize("kind", ["self_exclusion", "staff"])
@pytest.mark.parametrize(("name", "born", "listed"), [
    ("Thandi Mokoena", date(1980, 1, 1), "Thandí Nomsa Mokoena"),
    ("Thandie Nomsa Mokoena", date(1980, 1, 1), "Thandí Nomsa Mokoena"),
    ("Thandi Nomsa Mokoena-Dlamini", date(1980, 1, 1), "Thandí Nomsa Mokoena"),
    ("Johannes Vandermerwe", date(1975, 6, 6), "Johannes van der Merwe"),
    ("Johan van der Merwe", date(1975, 6, 6), "Johannes van der Merwe"),
])
def test_the_issues_examples_are_held_naming_the_listed_person(
        session: Session, kind: str, name: str, born: date, listed: str) -> None:
    put(session, kind, LISTED_NAMES)
    verdict = check(session, candidate(name, born), AT, tz=SAST)
    assert verdict.eligible and verdict.held  # held for a supervisor: neither refused nor clear
    assert [m.list_name for m in verdict.possible] == [listed]
    assert f"{listed!r}" in verdict.possible[0].sentence()
    assert LIST_LABELS[kind] in verdict.possible[0].sentence()


def test_a_different_person_or_birth_date_is_clear_and_the_same_name_is_held(
        session: Session) -> None:
    put(session, "self_exclusion", LISTED_NAMES)
    for name, born in (("Thabo Mokoena", date(1980, 1, 1)),
                       ("Thandi Mokoena", date(1984, 3, 9)),
                       ("Johan van der Merwe", date(1975, 6, 7))):
        verdict = check(session, candidate(name, born), AT, tz=SAST)
        assert (verdict.eligible, verdict.held) == (True, False), name
    same = check(session, candidate("MOKOENA, Thandi Nomsa", date(1984, 3, 9)), AT, tz=SAST)
    assert [(m.how, m.score) for m in same.possible] == [("name", 100)]


def test_the_house_thresholds_are_applied_and_the_index_agrees(session: Session) -> None:
    put(session, "self_exclusion", LISTED_NAMES)
    johan = candidate("Johan van der Merwe", date(1975, 6, 6))
    strict = NameCheckSettings(same_birth_date=100)
    assert check(session, johan, AT, tz=SAST).held
    assert not check(session, johan, AT, tz=SAST, names=strict).held
    index = ListIndex.load(session)
    for person in (johan, candidate("Thandi Mokoena", date(1980, 1, 1)),
                   candidate("Thabo Mokoena", date(1980, 1, 1))):
        by_db = check(session, person, AT, tz=SAST)
        by_index = check(session, person, AT, tz=SAST, index=index)
        assert by_db.possible == by_index.possible


def test_each_imported_row_is_stored_with_its_name_keys(session: Session) -> None:
    put(session, "self_exclusion", LISTED_NAMES)
    stored = {e.name: e.id for e in session.scalars(select(Exclusion))}
    keys = session.execute(select(ExclusionNameKey.exclusion_id, ExclusionNameKey.part,
                                  ExclusionNameKey.parts, ExclusionNameKey.key)).all()
    merwe = {(p, k) for e, p, n, k in keys if e == stored["Johannes van der Merwe"]}
    assert {(0, "t:johannes"), (1, "t:vandermerwe"), (1, "t:merwe"),
            (0, "p:za:johannes")} <= merwe
    assert {n for e, _, n, _ in keys if e == stored["Thandí Nomsa Mokoena"]} == {3}
