"""The desk opens heats and seats entries; unseating, refunds, tables out of service.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts are worked out by hand from the rules.
"""


import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound, Refused
from leaderboard.models import (
    AuditEntry,
    Entry,
    Refusal,
)
from tests.leaderboard.desk_fields import (
    HEAT_TIME,
    audit_actions,
    buy,
    exclude,
    snapshot,
    table_reports_seated,
    table_reports_unseated,
)
from tests.leaderboard.desk_helpers import (
    FakeClock,
    add_score,
    command_audit,
    local,
    register,
    settings,
)

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
                                                       {"entry_id": e1, "seat": 3,
                                                        "entry_code": seating.entry_code})
    assert seating.entry_code == session.get(Entry, e1).entry_code  # type: ignore[union-attr]
    assert cmd.seq > opened.seq
    assert cmd.body("desk-a") == {"table": "t01", "command": "seat",
                                  "command_id": f"desk-a-{cmd.seq}", "entry_id": e1, "seat": 3,
                                  "entry_code": seating.entry_code}
    row = command_audit(session, cmd.seq)
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
    row = command_audit(session, command.seq)
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


def test_an_entry_not_yet_seated_is_refunded_and_leaves_the_pools(session: Session,
                                                                  clock: FakeClock) -> None:
    s = settings()
    a = register(session, clock, "8001015009087")
    e1, e2 = buy(session, clock, a), buy(session, clock, a)
    assert snapshot(session).paid_entries == 2
    with pytest.raises(DeskError, match="say why the entry is refunded"):
        desk.refund_entry(session, clock, actor="desk-1", entry_id=e1, why=" ")
    refunded = desk.refund_entry(session, clock, actor="desk-1", entry_id=e1,
                                 why="bought by mistake")
    assert (refunded.entry_id, refunded.status, refunded.buy_in_cents) == (e1, "refunded",
                                                                          10_000)
    row = session.scalars(select(AuditEntry).where(AuditEntry.action == "entry.refunded")).one()
    assert (row.actor, row.detail["refund_cents"], row.detail["cause"], row.detail["why"]) == (
        "desk-1", 10_000, "desk", "bought by mistake")
    snap = snapshot(session)
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
    snap = snapshot(session)
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
    snap = snapshot(session)
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
