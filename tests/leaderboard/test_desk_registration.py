"""The registration desk: registering patrons and buying entries, on SQLite and PostgreSQL.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts are worked out by hand from the rules.
"""

from datetime import UTC, date, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound, Refused
from leaderboard.eligibility import from_db
from leaderboard.models import (
    AuditEntry,
    Entry,
    Patron,
    Refusal,
)
from tests.leaderboard.desk_fields import HEAT_TIME, audit_actions, buy, exclude
from tests.leaderboard.desk_helpers import (
    FakeClock,
    local,
    register,
    settings,
)

# ---- registration ---------------------------------------------------------------------------


def test_register_keeps_pii_here_and_gives_an_opaque_id(session: Session, clock: FakeClock
                                                        ) -> None:
    pid = register(session, clock, "800101 5009 087", name="Thabo  Mokoena")
    patron = session.get(Patron, pid)
    assert patron is not None
    assert pid.startswith("P-") and len(pid) == 18 and "8001" not in pid
    assert (patron.id_number, patron.name) == ("8001015009087", "Thabo Mokoena")
    with pytest.raises(Conflict, match=f"already registered as patron {pid}"):
        register(session, clock, "8001015009087")
    audit = session.scalars(select(AuditEntry)).one()
    assert (audit.actor, audit.action, audit.detail) == (
        "desk-1", "patron.registered", {"patron_id": pid, "id_kind": "id_document",
                                        "documents": ["id_document"]})
    assert from_db(audit.at) == HEAT_TIME


@pytest.mark.parametrize(("born", "ok"), [(date(2008, 7, 3), True), (date(2008, 7, 4), False)])
def test_registration_age_boundary_is_the_18th_birthday(session: Session, clock: FakeClock,
                                                        born: date, ok: bool) -> None:
    if ok:
        register(session, clock, "0807035009087", born=born)
        assert session.scalar(select(func.count()).select_from(Refusal)) == 0
        return
    with pytest.raises(Refused, match="under 18"):
        register(session, clock, "0807045009087", born=born)
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.id_number, refusal.patron_id) == (
        "registration", "0807045009087", None)
    assert "18 only on 2026-07-04" in refusal.reason
    assert session.scalar(select(func.count()).select_from(Patron)) == 0


def test_registration_on_a_list_is_refused_and_recorded(session: Session, clock: FakeClock
                                                        ) -> None:
    exclude(session, "associated", "8001015009087", at=local(2026, 7, 1, 9, 0))
    with pytest.raises(Refused, match="associated-persons list"):
        register(session, clock, "8001015009087")
    assert session.scalars(select(Refusal.context)).all() == ["registration"]
    assert audit_actions(session) == ["list.imported", "eligibility.refused"]


def test_bad_registration_input(session: Session, clock: FakeClock) -> None:
    s = settings()
    with pytest.raises(DeskError, match="unknown document kind"):
        desk.register_patron(session, s, clock, actor="d", name="A", id_kind="passport-ish",
                             id_number="8001015009087", birth_date=date(1980, 1, 1))
    with pytest.raises(DeskError, match="not a date"):
        desk.register_patron(session, s, clock, actor="d", name="A", id_kind="licence",
                             id_number="8001015009087", birth_date="1 Jan 1980")
    with pytest.raises(DeskError, match="not plausible"):
        desk.register_patron(session, s, clock, actor="d", name="A", id_kind="licence",
                             id_number="8001015009087", birth_date=date(2027, 1, 1))
    with pytest.raises(DeskError, match="operator"):
        desk.register_patron(session, s, clock, actor=" ", name="A", id_kind="licence",
                             id_number="8001015009087", birth_date=date(1980, 1, 1))


# ---- buying entries ---------------------------------------------------------------------------


INSIDE = [
    (local(2026, 7, 3, 13, 0), date(2026, 7, 3)),  # the first heat opens
    (local(2026, 7, 3, 23, 59, 59), date(2026, 7, 3)),
    (local(2026, 7, 4, 0, 0), date(2026, 7, 3)),  # "final buy-in at 00:00", inclusive
    (local(2026, 7, 30, 13, 0), date(2026, 7, 30)),  # the last heat day
    (local(2026, 7, 31, 0, 0), date(2026, 7, 30)),  # its last buy-in
    (datetime(2026, 7, 3, 11, 0, tzinfo=UTC), date(2026, 7, 3)),  # 13:00 local, given in UTC
]
OUTSIDE = [
    local(2026, 7, 3, 12, 59, 59),  # before 13:00
    local(2026, 7, 4, 0, 0, 1),  # after the last buy-in
    local(2026, 7, 4, 9, 0),
    local(2026, 7, 3, 0, 0),  # the midnight before the first heat (2 July's "heat")
    local(2026, 7, 2, 20, 0),  # before 03 Jul
    local(2026, 7, 31, 13, 0),  # after 30 Jul
    local(2026, 7, 31, 0, 0, 1),
    datetime(2026, 7, 3, 10, 59, tzinfo=UTC),  # 12:59 local
]


def test_buy_in_only_inside_the_window(session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    for at in OUTSIDE:
        clock.now = at
        with pytest.raises(Conflict, match=r"no buy-in at .*13:00 to 00:00"):
            desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment="cash")
    assert session.scalar(select(func.count()).select_from(Entry)) == 0
    for at, heat_day in INSIDE:
        clock.now = at
        entry = desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                               payment="cash")
        assert (entry.heat_day, entry.buy_in_cents, entry.stage) == (
            heat_day, 10_000, "qualifying"), at


def test_a_patron_buys_many_entries_each_its_own(session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    ids = [buy(session, clock, pid) for _ in range(3)]
    assert len(set(ids)) == 3 and all(i.startswith("E-") for i in ids)
    entries = session.scalars(select(Entry).where(Entry.patron_id == pid)).all()
    assert sum(e.buy_in_cents for e in entries) == 30_000
    bought = session.scalars(select(AuditEntry).where(AuditEntry.action == "entry.bought")).all()
    assert [a.detail["entry_id"] for a in bought] == ids
    assert bought[0].detail == {"entry_id": ids[0], "patron_id": pid, "buy_in_cents": 10_000,
                                "heat_day": "2026-07-03", "payment": "cash"}
    with pytest.raises(NotFound):
        buy(session, clock, "P-nobody")


def test_buy_in_checks_eligibility_again(session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    exclude(session, "self_exclusion", "8001015009087", at=local(2026, 7, 3, 13, 30))
    with pytest.raises(Refused, match="self-exclusion"):
        buy(session, clock, pid)
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.patron_id) == ("buy_in", pid)
    assert session.scalar(select(func.count()).select_from(Entry)) == 0
