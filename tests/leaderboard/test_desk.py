"""The registration desk: every rule it enforces, on SQLite and PostgreSQL.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts below are worked out by hand from the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from game.draw import RECOMMENDED_BYTES, draw_seats
from game.standings import qualifying_leaderboard
from game.tournament import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound, Refused, seat_draw
from leaderboard.eligibility import from_db, import_list, parse_list
from leaderboard.models import (
    AuditEntry,
    Draw,
    Entry,
    Patron,
    PrizeAward,
    Proxy,
    Refusal,
    Score,
)
from leaderboard.projections import Projected, project
from leaderboard.standings_view import Snapshot, load_snapshot
from tests.leaderboard.desk_helpers import (
    FakeClock,
    add_score,
    local,
    register,
    settings,
)
from wire.envelope import seal
from wire.signing import Signer

HEAT_TIME = local(2026, 7, 3, 14, 0)
AFTER_QUALIFYING = local(2026, 8, 1, 10, 0)
AFTER_SEMIS = local(2026, 8, 1, 16, 50)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(HEAT_TIME)


def exclude(session: Session, kind: str, number: str, *, at: datetime,
            source: str = "NGB") -> None:
    import_list(session, kind=kind, rows=parse_list(f"{number},Listed Person\n", "l.csv"),
                source=source, source_date=at.astimezone(UTC).date(), at=at, actor="compliance")
    session.commit()


def buy(session: Session, clock: FakeClock, patron: str) -> str:
    return desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=patron).entry_id


def audit_actions(session: Session) -> list[str]:
    return list(session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))


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
        "desk-1", "patron.registered", {"patron_id": pid, "id_kind": "id_document"})
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
            desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid)
    assert session.scalar(select(func.count()).select_from(Entry)) == 0
    for at, heat_day in INSIDE:
        clock.now = at
        entry = desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid)
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
                                "heat_day": "2026-07-03"}
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


# ---- heats and seating ------------------------------------------------------------------------


def test_seat_sends_a_command_and_refuses_taken_seats(session: Session, clock: FakeClock
                                                      ) -> None:
    s = settings()
    a, b = register(session, clock, "8001015009087"), register(session, clock, "7001015009087")
    e1, e2, e3 = buy(session, clock, a), buy(session, clock, a), buy(session, clock, b)
    with pytest.raises(Conflict, match="no heat is open at table t01"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=1)
    opened = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    assert opened.command == "open_heat" and opened.args["stage"] == "qualifying"
    heat_id = opened.args["heat_id"]
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01",
                              seat=3)
    cmd = seating.command
    assert (cmd.table, cmd.command, dict(cmd.args)) == ("t01", "seat",
                                                       {"entry_id": e1, "seat": 3})
    assert cmd.seq > opened.seq
    assert cmd.body("desk-a") == {"table": "t01", "command": "seat",
                                  "command_id": f"desk-a-{cmd.seq}", "entry_id": e1, "seat": 3}
    row = session.get(AuditEntry, cmd.seq)
    assert row is not None and row.action == "entry.seated" and row.detail["player"] == a
    entry = session.get(Entry, e1)
    assert entry is not None
    assert (entry.table_id, entry.seat, entry.heat_id, entry.status) == ("t01", 3, heat_id,
                                                                         "seated")
    with pytest.raises(Conflict, match="seat 3 at table t01 is taken"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e3, table="t01", seat=3)
    with pytest.raises(Conflict, match=f"already playing entry {e1}"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=4)
    with pytest.raises(Conflict, match="already seated"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=5)
    with pytest.raises(DeskError, match="seat must be 1 to 6"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e3, table="t01", seat=7)
    with pytest.raises(Conflict, match="entries still seated"):
        desk.close_heat(session, clock, actor="desk-1", table="t01")
    # Once e1's score is in, its seat and its patron are free again.
    add_score(session, e1, 250_000, stage="qualifying", acknowledged=HEAT_TIME,
              recorded=HEAT_TIME)
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=3)
    with pytest.raises(Conflict, match="already has a score"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=5)


def table_reports(session: Session, kind: str, body: dict[str, Any], *, table: str,
                  seq: int = 9) -> Projected:
    """Project a table's message as the ingest does (same transaction rules)."""
    envelope = seal(venue="gold-reef", table=table, seq=seq, wall=HEAT_TIME, type=kind,
                    body=body, boot="b", mono=seq, signer=Signer.from_seed(table, bytes(32)))
    projected = project(session.connection(), envelope)
    session.commit()
    return projected


def table_reports_unseated(session: Session, entry_id: str, *, table: str, seat: int,
                           hands: int = 4, reason: str = "left") -> tuple[str, ...]:
    """Project the table's entry.unseated; the projection's changes."""
    return tuple(table_reports(session, "entry.unseated", {
        "entry_id": entry_id, "seat": seat, "hands_played": hands, "reason": reason,
        "at": "2026-07-03T12:30:00Z"}, table=table).changes)


def table_reports_seated(session: Session, entry_id: str, *, table: str, seat: int,
                         seq: int = 9) -> Projected:
    """Project the table's entry.seated (a late one, when `seq` is low)."""
    return table_reports(session, "entry.seated", {"entry_id": entry_id, "seat": seat},
                         table=table, seq=seq)


def test_an_entry_that_leaves_is_unseated_withdrawn_and_never_seated_again(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    a, b = register(session, clock, "8001015009087"), register(session, clock, "7001015009087")
    e1, e2, e3 = buy(session, clock, a), buy(session, clock, b), buy(session, clock, a)
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    with pytest.raises(Conflict, match=f"entry {e1} is not seated"):
        desk.unseat_entry(session, clock, actor="desk-1", entry_id=e1, why="left")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=2)
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=3)
    with pytest.raises(DeskError, match="say why"):
        desk.unseat_entry(session, clock, actor="desk-1", entry_id=e1, why="  ")
    command = desk.unseat_entry(session, clock, actor="desk-1", entry_id=e1,
                                why="patron  felt unwell")
    assert (command.table, command.command, dict(command.args)) == (
        "t01", "unseat", {"seat": 2, "entry_id": e1, "reason": "patron felt unwell"})
    row = session.get(AuditEntry, command.seq)
    assert row is not None and row.action == "entry.unseat" and row.detail["why"] == (
        "patron felt unwell")
    assert desk.recorded_command(session, command.seq) == command  # it can be sent again
    # Until the table confirms, the entry still holds its seat and the heat cannot close.
    with pytest.raises(Conflict, match=f"entries still seated at table t01 without a score: "
                                       f"{min(e1, e2)}, {max(e1, e2)}"):
        desk.close_heat(session, clock, actor="desk-1", table="t01")
    assert table_reports_unseated(session, e1, table="t01", seat=2) == ("entry.unseated",)
    entry = session.get(Entry, e1)
    assert entry is not None
    session.refresh(entry)
    assert (entry.status, entry.table_id, entry.seat) == ("withdrawn", "t01", 2)
    with pytest.raises(Conflict, match="has already left table t01"):
        desk.unseat_entry(session, clock, actor="desk-1", entry_id=e1, why="again")
    with pytest.raises(Conflict, match="records no score \\(rule 14\\) and is not seated again"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=2)
    # Its seat and its patron are free: patron A plays another entry at seat 2.
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e3, table="t01", seat=2)
    add_score(session, e2, 250_000, stage="qualifying", acknowledged=HEAT_TIME,
              recorded=HEAT_TIME)
    with pytest.raises(Conflict, match="has played its hands and has a score"):
        desk.unseat_entry(session, clock, actor="desk-1", entry_id=e2, why="late")
    add_score(session, e3, 150_000, stage="qualifying", acknowledged=HEAT_TIME,
              recorded=HEAT_TIME, seq=2)
    closed = desk.close_heat(session, clock, actor="desk-1", table="t01")
    assert closed.command == "close_heat"


def _snapshot(session: Session) -> Snapshot:
    session.expire_all()
    return load_snapshot(session, settings())


def test_an_entry_not_yet_seated_is_refunded_and_leaves_the_pools(session: Session,
                                                                  clock: FakeClock) -> None:
    s = settings()
    a = register(session, clock, "8001015009087")
    e1, e2 = buy(session, clock, a), buy(session, clock, a)
    assert _snapshot(session).paid_entries == 2
    with pytest.raises(DeskError, match="say why the entry is refunded"):
        desk.refund_entry(session, clock, actor="desk-1", entry_id=e1, why=" ")
    refunded = desk.refund_entry(session, clock, actor="desk-1", entry_id=e1,
                                 why="bought by mistake")
    assert (refunded.entry_id, refunded.status, refunded.buy_in_cents) == (e1, "refunded",
                                                                          10_000)
    row = session.scalars(select(AuditEntry).where(AuditEntry.action == "entry.refunded")).one()
    assert (row.actor, row.detail["refund_cents"], row.detail["cause"], row.detail["why"]) == (
        "desk-1", 10_000, "desk", "bought by mistake")
    snap = _snapshot(session)
    assert (snap.paid_entries, snap.buy_ins_cents) == (1, 10_000)
    with pytest.raises(Conflict, match="already been refunded"):
        desk.refund_entry(session, clock, actor="desk-1", entry_id=e1, why="again")
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    with pytest.raises(Conflict, match="was refunded: the patron buys a new entry"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=1)
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=1)
    with pytest.raises(Conflict, match="is seated: only an entry not yet seated is refunded"):
        desk.refund_entry(session, clock, actor="desk-1", entry_id=e2, why="changed mind")


def test_a_table_out_of_service_refunds_its_unfinished_entries_and_closes_its_heat(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    a, b = register(session, clock, "8001015009087"), register(session, clock, "7001015009087")
    e1, e2, e3 = buy(session, clock, a), buy(session, clock, b), buy(session, clock, a)
    opened = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=1)
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=2)
    add_score(session, e2, 310_000, stage="qualifying", acknowledged=HEAT_TIME,
              recorded=HEAT_TIME)  # e2 finished before the table failed
    with pytest.raises(DeskError, match="say why the table is out of service"):
        desk.table_fault(session, clock, actor="pit-boss", table="t01", why="")
    with pytest.raises(Conflict, match="no heat open at table t02"):
        desk.table_fault(session, clock, actor="pit-boss", table="t02", why="dead")
    fault = desk.table_fault(session, clock, actor="pit-boss", table="t01",
                             why="shoe  jammed, PC will not boot")
    assert (fault.table, fault.heat_id, dict(fault.refunded), fault.released) == (
        "t01", opened.args["heat_id"], {e1: 10_000}, ())
    unseat, close = fault.commands
    assert (unseat.command, dict(unseat.args)) == ("unseat", {
        "seat": 1, "entry_id": e1, "reason": "table out of service: shoe jammed, PC will not boot"})
    assert (close.command, dict(close.args), close.table) == ("close_heat", {}, "t01")
    assert unseat.seq < close.seq
    # Both are recorded, so a desk can send them again when the table is back.
    assert desk.recorded_command(session, unseat.seq) == unseat
    assert desk.recorded_command(session, close.seq) == close
    session.expire_all()
    assert session.get(Entry, e1).status == "refunded"  # type: ignore[union-attr]
    assert session.get(Entry, e2).status == "seated"  # type: ignore[union-attr]
    assert audit_actions(session)[-3:] == ["entry.unseat", "entry.refunded", "heat.closed"]
    snap = _snapshot(session)
    assert (snap.paid_entries, snap.buy_ins_cents) == (2, 20_000)  # e2 and e3; e1 refunded
    # Patron A is free to play again, and the repaired table opens a new heat.
    desk.open_heat(session, s, clock, actor="desk-1", table="t02", stage="qualifying")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e3, table="t02", seat=1)
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    # The table comes back and reports e1 unseated, or even a score for it: neither counts.
    assert table_reports_unseated(session, e1, table="t01", seat=1, hands=6,
                                  reason=unseat.args["reason"]) == ()
    session.expire_all()
    assert session.get(Entry, e1).status == "refunded"  # type: ignore[union-attr]
    # Its seating report, delayed until now, is stored and audited, and moves nothing (D62).
    late = table_reports_seated(session, e1, table="t01", seat=1, seq=3)
    assert late.changes == ()
    assert late.notes == (f"entry {e1}: t01 reports seat 1, but the desk has refunded it; the"
                          " report is stored, the entry stays as the desk has it",)
    assert audit_actions(session)[-1] == "entry.seat_stale"
    add_score(session, e1, 990_000, stage="qualifying", acknowledged=HEAT_TIME,
              recorded=HEAT_TIME, seq=10)
    snap = _snapshot(session)
    assert [r.entry_id for r in snap.records] == [e2]
    assert [(x.entry_id, x.reason) for x in snap.excluded] == [(e1, "the entry was refunded")]
    assert [(r.entry_id, r.voided) for r in desk.score_records(session, s, Stage.QUALIFYING)
            if r.entry_id == e1] == [(e1, True)]


def test_seating_checks_eligibility_again(session: Session, clock: FakeClock) -> None:
    s = settings()
    pid = register(session, clock, "8001015009087")
    entry_id = buy(session, clock, pid)
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    exclude(session, "staff", "8001015009087", at=local(2026, 7, 3, 14, 30), source="HR")
    clock.now = local(2026, 7, 3, 15, 0)
    with pytest.raises(Refused, match="staff"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=entry_id, table="t01",
                        seat=1)
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.patron_id) == ("seating", pid)
    entry = session.get(Entry, entry_id)
    assert entry is not None and entry.status == "registered" and entry.seat is None
    assert "entry.seated" not in audit_actions(session)


def test_an_entry_is_seated_on_its_heat_day_only(session: Session, clock: FakeClock) -> None:
    s = settings()
    pid = register(session, clock, "8001015009087")
    entry_id = buy(session, clock, pid)
    clock.now = local(2026, 7, 4, 13, 0)  # the next day's heat
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    with pytest.raises(Conflict, match="is for the heat of 2026-07-03"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=entry_id, table="t01",
                        seat=1)


def test_heats_open_and_close_once(session: Session, clock: FakeClock) -> None:
    s = settings()
    desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    with pytest.raises(Conflict, match="still open"):
        desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    with pytest.raises(DeskError, match="semi-final-1, semi-final-2"):
        desk.open_heat(session, s, clock, actor="desk-1", table="t02", stage="semi_final")
    with pytest.raises(DeskError, match="table id"):
        desk.open_heat(session, s, clock, actor="desk-1", table="T 1", stage="qualifying")
    closed = desk.close_heat(session, clock, actor="desk-1", table="t01")
    assert closed.command == "close_heat" and closed.args == {}
    with pytest.raises(Conflict, match="no heat open"):
        desk.close_heat(session, clock, actor="desk-1", table="t01")
    again = desk.resend_command(session, clock, actor="desk-1", seq=closed.seq)
    assert again == closed
    with pytest.raises(NotFound):
        desk.resend_command(session, clock, actor="desk-1", seq=closed.seq + 1)  # the resend row


# ---- the qualifying field, semi-finals and Final ---------------------------------------------


@dataclass
class Field:
    """Patron A holds 3 of the 12 semi-final places; others[i] holds one (i < 9)."""

    a: str
    a_entries: list[str]
    others: list[str]
    other_entries: list[str]
    spare: list[str] = field(default_factory=list)  # registered patrons without a place


OTHER_SCORES = [700_000, 650_000, 600_000, 550_000, 400_000, 350_000, 300_000, 250_000,
                200_000, 150_000, 100_000]
A_SCORES = [900_000, 800_000, 360_000]


def qualifying_field(session: Session, clock: FakeClock) -> Field:
    """15 entries: A's three, eleven others, and an unacknowledged R9,900 that cannot count."""
    clock.now = HEAT_TIME
    a = register(session, clock, "5001015009087", name="Patron A")
    others = [register(session, clock, f"60010150{i:05d}", name=f"Other {i}") for i in range(11)]
    spare = [register(session, clock, f"70010150{i:05d}", name=f"Spare {i}") for i in range(3)]
    a_entries = [buy(session, clock, a) for _ in A_SCORES]
    other_entries = [buy(session, clock, o) for o in others]
    unacked = buy(session, clock, others[9])
    recorded = local(2026, 7, 3, 15, 0)
    for n, (entry, score) in enumerate(zip(a_entries + other_entries, A_SCORES + OTHER_SCORES,
                                           strict=True)):
        add_score(session, entry, score, stage="qualifying", recorded=recorded,
                  acknowledged=recorded + timedelta(minutes=n), seq=n + 1)
    add_score(session, unacked, 990_000, stage="qualifying", recorded=recorded,
              acknowledged=None, seq=99)
    return Field(a=a, a_entries=a_entries, others=others, other_entries=other_entries,
                 spare=spare)


def semis(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    f = qualifying_field(session, clock)
    clock.now = AFTER_QUALIFYING
    return f, list(desk.allocate_semis(session, settings(), clock, actor="desk-1"))


def test_semi_final_places_go_to_the_top_12_entries(session: Session, clock: FakeClock) -> None:
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 30, 23, 59)
    with pytest.raises(Conflict, match="qualifying ends at 2026-07-31 00:00"):
        desk.allocate_semis(session, settings(), clock, actor="desk-1")
    assert desk.places(session, settings(), Stage.SEMI_FINAL) == ()
    clock.now = AFTER_QUALIFYING
    places = desk.allocate_semis(session, settings(), clock, actor="desk-1")
    # By hand: A 9000, A 8000, O0..O3, O4 4000, A 3600, O5..O8; O9 and O10 are out, and O9's
    # unacknowledged R9,900 does not count.
    expected = [f.a_entries[0], f.a_entries[1], *f.other_entries[:5], f.a_entries[2],
                *f.other_entries[5:9]]
    assert [p.won_by for p in places] == expected
    assert [p.position for p in places] == list(range(1, 13))
    assert all(p.entry_id == "S-" + p.won_by[2:] for p in places)
    assert [p.holder for p in places].count(f.a) == 3
    assert [p.score_cents for p in places][:3] == [900_000, 800_000, 700_000]
    assert desk.allocate_semis(session, settings(), clock, actor="desk-1") == places
    assert audit_actions(session).count("semi_final.allocated") == 1


def test_proxies_for_a_patron_holding_three_places(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    x, y, z = f.spare
    with pytest.raises(DeskError, match="holds one semi_final place"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=places[2].entry_id,
                            proxy_patron_id=x)
    with pytest.raises(DeskError, match="their own proxy"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=f.a)
    with pytest.raises(Conflict, match="already holds or plays"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=f.others[0])
    exclude(session, "refusal_of_entry", "7001015000002", at=AFTER_QUALIFYING)
    with pytest.raises(Refused, match="refusal-of-entry"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=z)
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.patron_id) == ("proxy", z)
    desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                        proxy_patron_id=x)
    with pytest.raises(Conflict, match="already has proxy"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=y)
    with pytest.raises(Conflict, match="already holds or plays"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[2],
                            proxy_patron_id=x)
    desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[2],
                        proxy_patron_id=y)
    with pytest.raises(Conflict, match="holder plays the remaining place"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[0],
                            proxy_patron_id=f.others[10])
    proxies = session.scalars(select(Proxy).order_by(Proxy.id)).all()
    assert [(p.entry_id, p.holder_patron_id, p.proxy_patron_id) for p in proxies] == [
        (a_places[1], f.a, x), (a_places[2], f.a, y)]
    now = {p.entry_id: p for p in desk.places(session, s, Stage.SEMI_FINAL)}
    assert [now[e].player for e in a_places] == [f.a, x, y]
    assert all(now[e].holder == f.a for e in a_places)
    assert audit_actions(session).count("proxy.nominated") == 2


def test_heat_and_seat_choice_and_semi_final_seating(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, places = semis(session, clock)
    first, second = places[0].entry_id, places[2].entry_id
    chosen = desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=4)
    assert (chosen.heat, chosen.seat) == (1, 4)
    with pytest.raises(Conflict, match=f"heat 1 seat 4 is taken by place {first}"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=1, seat=4)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=2, seat=4)
    for bad, match in (((3, 1), "heat must be 1 to 2"), ((1, 7), "seat must be 1 to 6"),
                       ((1, 0), "seat must be 1 to 6")):
        with pytest.raises(DeskError, match=match):
            desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=bad[0],
                             seat=bad[1])
    with pytest.raises(DeskError, match="qualifying entry"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=f.a_entries[0], heat=1,
                         seat=1)
    # A changes their mind before playing: the old seat is free again.
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=5)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=places[3].entry_id, heat=1,
                     seat=4)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t05")
    assert (seating.seat, seating.heat_id, seating.player) == (5, "semi-final-1", f.a)
    with pytest.raises(Conflict, match="plays heat semi-final-2"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=second, table="t05")
    with pytest.raises(Conflict, match="has seat 4, not 2"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=places[3].entry_id,
                        table="t05", seat=2)
    with pytest.raises(Conflict, match="no seat yet: choose its heat and seat"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=places[4].entry_id,
                        table="t05")
    with pytest.raises(Conflict, match="already been seated"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=6)


def test_a_semi_final_table_out_of_service_frees_its_places_to_be_played_again(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f, places = semis(session, clock)
    first = places[0].entry_id
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=5)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t05")
    fault = desk.table_fault(session, clock, actor="td", table="t05", why="power")
    assert (dict(fault.refunded), fault.released) == ({}, (first,))
    assert [c.command for c in fault.commands] == ["unseat", "close_heat"]
    place = session.get(Entry, first)
    assert place is not None
    assert (place.status, place.table_id, place.seat, place.heat_id) == (
        "registered", None, 5, "semi-final-1")
    # The heat is played again from the start at another table, in the chosen seat.
    desk.open_heat(session, s, clock, actor="desk-1", table="t06", stage="semi_final",
                   heat_id="semi-final-1")
    # The failed table's seating report, delayed until now, does not take the place back
    # (D62): the freed seat stays free for the replay.
    late = table_reports_seated(session, first, table="t05", seat=5, seq=2)
    assert (late.changes, late.notes) == ((), (
        f"entry {first}: t05 reports seat 5, but the desk released it from table t05 (out of"
        " service); the report is stored, the entry stays as the desk has it",))
    session.expire_all()
    assert (place.status, place.table_id) == ("registered", None)
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t06")
    assert (seating.table, seating.seat, seating.player) == ("t06", 5, f.a)
    # Nor does it, arriving later still, move the place off the table that replays it; the
    # replaying table's own report applies.
    assert table_reports_seated(session, first, table="t05", seat=5, seq=3).changes == ()
    assert table_reports_seated(session, first, table="t06", seat=5, seq=1).changes == (
        "entry.seated",)
    session.expire_all()
    assert (place.status, place.table_id, place.seat) == ("seated", "t06", 5)
    assert audit_actions(session)[-3:] == ["entry.seat_stale", "entry.seated", "entry.seat_stale"]
    # A score the failed table publishes for the place is not counted (D64); the replay's is.
    def score(table: str, cents: int, seq: int) -> Projected:
        return table_reports(session, "score.recorded", {
            "entry_id": first, "stage": "semi_final", "heat_id": "semi-final-1", "seat": 5,
            "score": cents, "hands": 12, "status": "finished"}, table=table, seq=seq)

    stale = score("t05", 900_000, 4)
    assert stale.changes == ()
    assert [(r.reason, r.detail) for r in stale.refused] == [(
        "score_stale", f"entry {first}: this score of 900000 cents from t05 seq 4 is not"
        " counted: the desk has it seated at table t06")]
    assert score("t06", 250_000, 2).changes == ("score.recorded",)
    assert session.get(Score, first).score_cents == 250_000  # type: ignore[union-attr]


def test_a_holder_without_a_proxy_plays_only_one_place(session: Session, clock: FakeClock
                                                       ) -> None:
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[0], heat=1, seat=1)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[1], heat=2, seat=1)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    desk.open_heat(session, s, clock, actor="desk-1", table="t06", stage="semi_final",
                   heat_id="semi-final-2")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[0], table="t05")
    with pytest.raises(Conflict, match="already playing"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[1], table="t06")
    add_score(session, a_places[0], 300_000, stage="semi_final", acknowledged=clock.now,
              recorded=clock.now)
    with pytest.raises(Conflict, match="each extra place needs a proxy"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[1], table="t06")


SEMI_SCORES = [410_000, 120_000, 330_000, 90_000, 500_000, 275_000, 305_000, 60_000, 220_000,
               180_000, 260_000, 30_000]


def final_field(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    """Semis played (proxies x and y play A's extra places); the Final's six places allocated."""
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    for extra, proxy in zip(a_places[1:], f.spare[:2], strict=True):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=extra,
                            proxy_patron_id=proxy)
    for n, p in enumerate(places):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=p.entry_id,
                         heat=1 + n // 6, seat=1 + n % 6)
    clock.now = local(2026, 8, 1, 15, 55)
    for heat, table in ((1, "t05"), (2, "t06")):
        desk.open_heat(session, s, clock, actor="desk-1", table=table, stage="semi_final",
                       heat_id=f"semi-final-{heat}")
    for n, p in enumerate(places):
        seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=p.entry_id,
                                  table="t05" if n < 6 else "t06")
        assert seating.seat == 1 + n % 6
    clock.now = local(2026, 8, 1, 16, 40)
    for n, (p, score) in enumerate(zip(places, SEMI_SCORES, strict=True)):
        add_score(session, p.entry_id, score, stage="semi_final", recorded=clock.now,
                  acknowledged=clock.now + timedelta(seconds=n), seq=100 + n)
    clock.now = AFTER_SEMIS
    return f, list(desk.allocate_final(session, s, clock, actor="desk-1"))


def test_the_final_goes_to_the_top_6_of_the_semis(session: Session, clock: FakeClock) -> None:
    f, semi_places = semis(session, clock)
    clock.now = local(2026, 8, 1, 15, 0)
    with pytest.raises(Conflict, match="semi-finals start at 2026-08-01 16:00"):
        desk.allocate_final(session, settings(), clock, actor="desk-1")
    del f, semi_places


def test_final_places_and_the_seat_draw(session: Session, engine: Engine, clock: FakeClock,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings()
    f, finals = final_field(session, clock)
    semi = {p.entry_id: p for p in desk.places(session, s, Stage.SEMI_FINAL)}
    # By hand from SEMI_SCORES: places 5, 1, 3, 7, 6, 11 (by index 4, 0, 2, 6, 5, 10).
    order = list(semi)  # places() is best-first on the qualifying board
    ranked = sorted(range(12), key=lambda i: -SEMI_SCORES[i])[:6]
    assert ranked == [4, 0, 2, 6, 5, 10]
    expected = [order[i] for i in ranked]
    assert [p.won_by for p in finals] == expected
    assert [p.entry_id for p in finals] == ["F-" + e[2:] for e in expected]
    assert all(p.seat is None for p in finals)
    desk.open_heat(session, s, clock, actor="desk-1", table="t07", stage="final")
    with pytest.raises(Conflict, match="draw the Final's seats first"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=finals[0].entry_id,
                        table="t07")
    with pytest.raises(DeskError, match="drawn"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=finals[0].entry_id,
                         heat=1, seat=1)

    # The desk "crashes" right after the draw is stored: the seats were never given out.
    calls: list[int] = []
    data = bytes(range(7, 7 + RECOMMENDED_BYTES))

    def source(n: int) -> bytes:
        calls.append(n)
        return data

    def crash(*_: object) -> None:
        raise RuntimeError("power cut")

    with monkeypatch.context() as m:
        m.setattr(seat_draw, "_apply_draw", crash)
        with pytest.raises(RuntimeError, match="power cut"):
            desk.draw_final(session, s, clock, actor="desk-1", random_bytes=source)
    assert calls == [RECOMMENDED_BYTES]
    with Session(engine) as fresh:  # what survived the crash
        row = fresh.scalars(select(Draw)).one()
        assert (row.stage, row.random_hex, row.drawn_by) == ("final", data.hex(), "desk-1")
        assert sorted(row.finalists) == sorted(p.entry_id for p in finals)
        assert all(e.seat is None for e in fresh.scalars(
            select(Entry).where(Entry.stage == "final")))

    def no_new_draw(n: int) -> bytes:
        raise AssertionError(f"drew {n} bytes again")

    session.expire_all()
    outcome = desk.draw_final(session, s, clock, actor="desk-2", random_bytes=no_new_draw)
    assert outcome.reused and outcome.random_hex == data.hex()
    expected_draw = draw_seats([p.entry_id for p in finals], [1, 2, 3, 4, 5, 6], data)
    assert dict(outcome.seats) == {a.finalist: a.seat for a in expected_draw.assignments}
    assert sorted(outcome.seats.values()) == [1, 2, 3, 4, 5, 6]
    assert session.scalar(select(func.count()).select_from(Draw)) == 1
    placed = {p.entry_id: p.seat for p in desk.places(session, s, Stage.FINAL)}
    assert placed == dict(outcome.seats)
    again = desk.draw_final(session, s, clock, actor="desk-2", random_bytes=no_new_draw)
    assert again.seats == outcome.seats and again.draw_id == outcome.draw_id

    replay = desk.replay_draw(session, outcome.draw_id)
    assert replay.matches and replay.stored == tuple(sorted(outcome.seats.items()))
    actions = audit_actions(session)
    assert actions.count("final.drawn") == 1 and actions.count("final.seats_applied") == 1

    # A tampered record no longer replays to the stored result.
    stored = session.get(Draw, outcome.draw_id)
    assert stored is not None
    result = dict(stored.result)
    swapped = [dict(a) for a in result["assignments"]]
    swapped[0]["seat"], swapped[1]["seat"] = swapped[1]["seat"], swapped[0]["seat"]
    stored.result = {**result, "assignments": swapped}
    session.commit()
    assert not desk.replay_draw(session, outcome.draw_id).matches
    with pytest.raises(NotFound):
        desk.replay_draw(session, outcome.draw_id + 1)
    del f


def test_the_draw_uses_the_os_csprng_by_default(session: Session, clock: FakeClock) -> None:
    _, finals = final_field(session, clock)
    outcome = desk.draw_final(session, settings(), clock, actor="desk-1")
    assert len(outcome.random_hex) == 2 * RECOMMENDED_BYTES and not outcome.reused
    assert sorted(outcome.seats) == sorted(p.entry_id for p in finals)
    assert desk.replay_draw(session, outcome.draw_id).matches


# ---- prizes ------------------------------------------------------------------------------------


FINAL_SCORES = [180_000, 450_000, 320_000, 90_000, 260_000, 410_000]


def played_final(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    s = settings()
    f, finals = final_field(session, clock)
    desk.draw_final(session, s, clock, actor="desk-1")
    clock.now = local(2026, 8, 1, 16, 58)
    desk.open_heat(session, s, clock, actor="desk-1", table="t07", stage="final")
    for p in finals:
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=p.entry_id, table="t07")
    clock.now = local(2026, 8, 1, 18, 0)
    for n, (p, score) in enumerate(zip(finals, FINAL_SCORES, strict=True)):
        add_score(session, p.entry_id, score, stage="final", recorded=clock.now,
                  acknowledged=clock.now + timedelta(seconds=n), seq=200 + n)
    return f, finals


def test_final_prizes_are_awarded_claimed_and_expire(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, finals = played_final(session, clock)
    clock.now = local(2026, 8, 1, 18, 30)
    awards = desk.award_prizes(session, s, clock, actor="desk-1", kind="final")
    # 15 qualifying buy-ins of R100 = R1,500; 80% = R1,200 split 60/10/9/8/7/6.
    by_score = sorted(range(6), key=lambda i: -FINAL_SCORES[i])
    assert [(a.place, a.entry_id, a.amount_cents) for a in awards] == [
        (n + 1, finals[i].entry_id, cents) for n, (i, cents) in
        enumerate(zip(by_score, [72_000, 12_000, 10_800, 9_600, 8_400, 7_200], strict=True))]
    assert all(a.patron_id == finals[i].holder for a, i in zip(awards, by_score, strict=True))
    deadline = local(2026, 8, 17, 0, 0)  # 15 days after 1 August, rule 55
    assert {a.deadline for a in awards} == {deadline}
    assert {a.status for a in awards} == {"unclaimed"}
    with pytest.raises(Conflict, match="already awarded"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="final")

    winner = session.get(Patron, awards[0].patron_id)
    assert winner is not None
    with pytest.raises(Conflict, match="not that of the prize winner"):
        desk.claim_prize(session, s, clock, actor="desk-1", award_id=awards[0].award_id,
                         id_number="9999999999999")
    clock.now = deadline - timedelta(seconds=1)  # 16 August 23:59:59: the last moment
    claimed = desk.claim_prize(session, s, clock, actor="desk-1", award_id=awards[0].award_id,
                               id_number=winner.id_number, receipt="R-0001")
    assert claimed.status == "claimed" and claimed.claimed_at == clock.now
    assert claimed.claimed_by == f"{winner.name} ({winner.patron_id})"
    with pytest.raises(Conflict, match="was claimed"):
        desk.claim_prize(session, s, clock, actor="desk-1", award_id=awards[0].award_id,
                         id_number=winner.id_number)
    second = session.get(Patron, awards[1].patron_id)
    assert second is not None
    clock.now = deadline  # 17 August 00:00: expired
    statuses = {p.award_id: p.status for p in desk.prizes(session, clock)}
    assert statuses[awards[0].award_id] == "claimed"
    assert statuses[awards[1].award_id] == "expired"
    with pytest.raises(Conflict, match="expired at 2026-08-17 00:00"):
        desk.claim_prize(session, s, clock, actor="desk-1", award_id=awards[1].award_id,
                         id_number=second.id_number)
    clock.now = deadline - timedelta(microseconds=1)
    assert {p.award_id: p.status for p in desk.prizes(session, clock)}[
        awards[1].award_id] == "unclaimed"
    assert session.scalar(select(PrizeAward.claimed_by).where(
        PrizeAward.id == awards[1].award_id)) is None
    audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.claimed")).one()
    assert audit.detail["receipt"] == "R-0001" and audit.detail["award_id"] == awards[0].award_id
    del f


def test_top_score_and_weekly_prizes(session: Session, clock: FakeClock) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 9, 23, 0)
    with pytest.raises(Conflict, match="week 1 runs until 2026-07-10 00:00"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                          prize_cents=500_000)
    with pytest.raises(Conflict, match="qualifying ends"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score")
    clock.now = local(2026, 7, 10, 9, 0)
    weekly = desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                               prize_cents=500_000)
    assert [(w.place, w.entry_id, w.patron_id, w.amount_cents) for w in weekly] == [
        (1, f.a_entries[0], f.a, 500_000)]
    assert weekly[0].deadline == local(2026, 7, 26, 0, 0)  # paid Friday 10 July + 15 days
    with pytest.raises(Conflict, match="week 1's prize is already awarded"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                          prize_cents=500_000)
    clock.now = AFTER_QUALIFYING
    with pytest.raises(DeskError, match="no weekly prize"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=5,
                          prize_cents=500_000)
    with pytest.raises(DeskError, match="takes no week"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score", week=1)
    top = desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score")
    # 20% of R1,500 = R300, split 60/25/15 among the top three qualifying scores.
    assert [(t.place, t.entry_id, t.amount_cents) for t in top] == [
        (1, f.a_entries[0], 18_000), (2, f.a_entries[1], 7_500), (3, f.other_entries[0], 4_500)]
    assert {t.deadline for t in top} == {local(2026, 8, 17, 0, 0)}
    awarded = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.awarded")
                              .order_by(AuditEntry.id)).all()
    assert [a.detail["total_cents"] for a in awarded] == [500_000, 30_000]
    assert awarded[1].detail["remainders"] == []


# ---- a supervisor's rulings on a score (rules 22, 23; D65) ----------------------------------


def counted(session: Session) -> list[tuple[str, int]]:
    """The qualifying board as it stands: (entry, counted cents), best first."""
    board = qualifying_leaderboard(desk.score_records(session, settings(), Stage.QUALIFYING),
                                   settings())
    return [(p.record.entry_id, p.record.score_cents) for p in board.places]


def test_a_supervisor_voids_or_corrects_a_score_and_the_standings_follow(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    unacked = session.scalars(select(Score.entry_id).where(Score.acknowledged_at.is_(None))).one()
    before = counted(session)
    assert before[0] == (f.a_entries[0], 900_000) and unacked not in dict(before)
    clock.now = local(2026, 7, 3, 18, 0)
    # A void: the record stays, marked; the entry leaves the board.
    void = desk.void_score(session, s, clock, actor="pit-boss", entry_id=f.a_entries[0],
                           why="chips passed between seats (rule 19)")
    assert (void.ruling, void.recorded_cents, void.counted_cents, void.table) == (
        "voided", 900_000, None, "t01")
    assert counted(session) == before[1:]
    row = session.get(Score, f.a_entries[0])
    assert row is not None and row.score_cents == 900_000
    assert row.void_reason == "chips passed between seats (rule 19) (by pit-boss)"
    # A correction of an unacknowledged score (the patron disputed it): management's figure
    # counts, as decided now (rule 23), and ranks by it.
    fixed = desk.correct_score(session, s, clock, actor="pit-boss", entry_id=unacked,
                               score_cents=500_000, why="hand 7 re-settled after a misread")
    assert (fixed.ruling, fixed.recorded_cents, fixed.counted_cents) == (
        "corrected", 990_000, 500_000)
    board = dict(counted(session))
    assert board[unacked] == 500_000
    assert [e for e, _ in counted(session)].index(unacked) == 5  # after 550_000, before 400_000
    records = {r.entry_id: r for r in desk.score_records(session, s, Stage.QUALIFYING)}
    assert records[unacked].acknowledged_at == clock.now
    # Correcting an acknowledged score keeps the patron's acknowledgement time (ties).
    first_ack = records[f.other_entries[0]].acknowledged_at
    desk.correct_score(session, s, clock, actor="pit-boss", entry_id=f.other_entries[0],
                       score_cents=710_000, why="a Pocket Bonus paid short")
    again = desk.correct_score(session, s, clock, actor="td", entry_id=f.other_entries[0],
                               score_cents=705_000, why="re-checked: R50 short, not R100")
    assert (again.recorded_cents, again.counted_cents) == (700_000, 705_000)
    records = {r.entry_id: r for r in desk.score_records(session, s, Stage.QUALIFYING)}
    assert (records[f.other_entries[0]].score_cents,
            records[f.other_entries[0]].acknowledged_at) == (705_000, first_ack)
    rows = session.scalars(select(AuditEntry).where(AuditEntry.action.in_(
        ("score.voided", "score.corrected"))).order_by(AuditEntry.id)).all()
    assert [(r.actor, r.action, r.detail["entry_id"], r.detail["recorded_cents"],
             r.detail.get("previous_cents"), r.detail.get("corrected_cents")) for r in rows] == [
        ("pit-boss", "score.voided", f.a_entries[0], 900_000, None, None),
        ("pit-boss", "score.corrected", unacked, 990_000, 990_000, 500_000),
        ("pit-boss", "score.corrected", f.other_entries[0], 700_000, 700_000, 710_000),
        ("td", "score.corrected", f.other_entries[0], 700_000, 710_000, 705_000)]
    assert rows[0].detail["why"] == "chips passed between seats (rule 19)"


def test_a_ruling_that_cannot_apply_is_refused_and_changes_nothing(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    top = f.a_entries[0]
    desk.void_score(session, s, clock, actor="pit-boss", entry_id=f.a_entries[1], why="x")
    unscored = buy(session, clock, f.spare[0])
    cases: list[tuple[type[Exception], str, Callable[[], object]]] = [
        (NotFound, "no entry 'E-nope'", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id="E-nope", why="x")),
        (NotFound, f"entry {unscored} has no recorded score", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id=unscored, why="x")),
        (DeskError, "say why the score is voided", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id=top, why=" ")),
        (DeskError, "say why the score is corrected", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=1, why="")),
        (Conflict, f"entry {f.a_entries[1]}'s score is voided \\(x \\(by pit-boss\\)\\)",
         lambda: desk.correct_score(session, s, clock, actor="pb", entry_id=f.a_entries[1],
                                    score_cents=1, why="x")),
        (Conflict, "already counts R9,000.00", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=900_000, why="x")),
        (DeskError, "0 or more cents, not -1", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=-1, why="x")),
        (DeskError, "whole cents, not True", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=True, why="x")),
    ]
    for error, message, action in cases:
        with pytest.raises(error, match=message):
            action()
    assert counted(session)[0] == (top, 900_000)
    # Once the semi-final places are allocated from these standings, they stand (rule 22).
    clock.now = AFTER_QUALIFYING
    desk.allocate_semis(session, s, clock, actor="desk-1")
    with pytest.raises(Conflict, match=f"entry {top}'s qualifying score can no longer be"
                                       " voided: the semi-final places were allocated"):
        desk.void_score(session, s, clock, actor="pb", entry_id=top, why="late dispute")
    assert audit_actions(session).count("score.voided") == 1


def test_a_ruling_is_refused_once_a_prize_is_awarded_from_those_standings(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 10, 9, 0)
    desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                      prize_cents=500_000)
    with pytest.raises(Conflict, match="it won the weekly prize"):
        desk.correct_score(session, s, clock, actor="pb", entry_id=f.a_entries[0],
                           score_cents=1, why="x")
    with pytest.raises(Conflict, match="week 1's prize was awarded"):
        desk.void_score(session, s, clock, actor="pb", entry_id=f.other_entries[3], why="x")


def test_every_desk_action_is_audited(session: Session, clock: FakeClock) -> None:
    played_final(session, clock)
    actions = audit_actions(session)
    for action in ("patron.registered", "entry.bought", "semi_final.allocated",
                   "proxy.nominated", "semi_final.seat_chosen", "heat.opened", "entry.seated",
                   "final.allocated", "final.drawn", "final.seats_applied"):
        assert action in actions, action
    rows = session.scalars(select(AuditEntry)).all()
    assert all(r.actor == "desk-1" and r.at is not None for r in rows
               if r.action != "list.imported")
    # Nothing identifying a patron is in a table command.
    seated = [r for r in rows if r.action == "entry.seated"]
    assert all(set(r.detail["args"]) == {"entry_id", "seat"} for r in seated)
    why = desk.register_patron(session, settings(), clock, actor="desk-9", name="W",
                               id_kind="rewards_card", id_number="RC-000123",
                               birth_date=date(1970, 1, 1), why="walk-in at the final")
    last = session.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(1)).one()
    assert last.detail == {"patron_id": why.patron_id, "id_kind": "rewards_card",
                           "why": "walk-in at the final"}
    assert desk.audit_log(session, limit=1)[0].id == last.id
