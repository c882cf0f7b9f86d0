"""The desk round trip closed: a table's answer to each desk command reaches the desk.

Each command goes from the desk (its signed envelope) to a real table core, and what the
table publishes comes back through a real Ingestor (tests.leaderboard.roundtrip_support). On
SQLite and PostgreSQL (the ``engine`` fixture).
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import pytest
from pytest_mock import MockerFixture
from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import DeskCommand, command_log
from leaderboard.desk.command_log import command_views, mark_sent, next_seq
from leaderboard.desk.table_check import check_tables
from leaderboard.models import AuditEntry, CommandResultRecord, DeskCommandRecord, Entry
from leaderboard.projections.command_results import command_seq_of, is_duplicate
from tests.leaderboard.desk_helpers import FakeClock, register, settings
from tests.leaderboard.ingest_support import T0, FakeTable, enroll, make_ingestor
from tests.leaderboard.roundtrip_support import DESK, TableLoop
from tests.leaderboard.test_desk_races import HEAT_TIME, held_after, race


def buy(session: Session, clock: FakeClock, number: str) -> str:
    patron = register(session, clock, number)
    return desk.buy_entry(session, settings(), clock, actor="desk-1",
                          patron_id=patron, payment="cash").entry_id


def state(session: Session, seq: int) -> tuple[str, str | None]:
    session.expire_all()
    [view] = command_views(session, seqs=[seq])
    return view.state, view.reason


def entry(session: Session, entry_id: str) -> Entry:
    session.expire_all()
    row = session.get(Entry, entry_id)
    assert row is not None
    return row


def test_a_seat_refused_for_no_open_heat_leaves_the_entry_not_seated_and_says_why(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    s = settings()
    e1 = buy(session, clock, "8001015009087")
    # The desk opens a heat, but the table never gets the command (the broker was down).
    opened = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01",
                              seat=3)
    assert entry(session, e1).status == "seated"
    # The desk and the table disagree, and the desk says so (the open_heat has no answer).
    [view] = check_tables(session)
    assert (view.desk_heat, view.table_heat) == (opened.args["heat_id"], None)
    assert view.awaiting == sorted([opened.seq, seating.command.seq])
    assert {f.kind for f in view.findings} == {"open_heat", "seating"}
    asyncio.run(loop.send(seating.command))
    assert state(session, seating.command.seq) == ("refused", "no heat is open at this table")
    row = entry(session, e1)
    assert (row.status, row.table_id, row.seat) == ("registered", None, None)
    audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "command.refused")
                            ).one()
    assert audit.actor == "ingest" and audit.detail["entry_id"] == e1
    assert audit.detail["reason"] == "no heat is open at this table" and audit.detail["restored"]
    # The clerk sends the heat again, and seats the entry again: both confirmed.
    again = desk.resend_command(session, clock, actor="desk-1", seq=opened.seq)
    asyncio.run(loop.send(again))
    assert state(session, opened.seq) == ("accepted", None)
    reseated = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01",
                               seat=3)
    asyncio.run(loop.send(reseated.command))
    assert state(session, reseated.command.seq) == ("accepted", None)
    assert entry(session, e1).status == "seated"
    [view] = check_tables(session)
    assert view.findings == [] and view.table_seated == {e1: 3} == view.desk_seated


def test_a_seat_the_table_has_taken_is_refused_and_the_entry_can_be_seated_elsewhere(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    s = settings()
    e1, e2 = buy(session, clock, "8001015009087"), buy(session, clock, "7001015009087")
    opened = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    asyncio.run(loop.send(opened))
    # Seat 3 is taken at the table by a seating the desk no longer has (as after a restore
    # from backup): a seat command of the desk's key the database holds no record of.
    lost = DeskCommand(seq=next_seq(session, clock()) + 10, table="t01", command="seat",
                       args={"entry_id": "E-LOST", "seat": 3})
    asyncio.run(loop.send(lost))
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01",
                              seat=3)
    asyncio.run(loop.send(seating.command))
    verdict, reason = state(session, seating.command.seq)
    assert verdict == "refused" and reason is not None and "seat 3" in reason
    assert entry(session, e1).status == "registered"
    refused = command_views(session, state="refused")
    assert [v.seq for v in refused] == [seating.command.seq]
    # The table's seat 3 holds an entry the desk does not know: a finding, not silence.
    [view] = check_tables(session)
    assert [f.message for f in view.findings] == [
        "table t01: entry E-LOST is not seated at the desk and seat 3 at the table"]
    other = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1, table="t01", seat=4)
    asyncio.run(loop.send(other.command))
    assert state(session, other.command.seq) == ("accepted", None)
    second = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e2, table="t01", seat=5)
    asyncio.run(loop.send(second.command))
    assert entry(session, e2).status == "seated"


def test_a_refused_open_heat_is_not_the_desks_open_heat_and_the_difference_is_reported(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    s = settings()
    first = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    asyncio.run(loop.send(first))
    # The table is cut off; the desk takes it out of service (closes the heat at the desk)...
    fault = desk.table_fault(session, clock, actor="pit", table="t01", why="reader dead")
    assert [state(session, c.seq)[0] for c in fault.commands] == ["recorded"]
    # ... and the close never reaches it. The desk opens a new heat there: refused.
    second = desk.open_heat(session, s, clock, actor="desk-1", table="t01", stage="qualifying")
    asyncio.run(loop.send(second))
    verdict, reason = state(session, second.seq)
    assert verdict == "refused" and reason == f"heat {first.args['heat_id']} is still open"
    # The refused heat does not count as open at the desk; the table's open heat is reported.
    with pytest.raises(desk.Conflict, match="no heat open at table t01"):
        desk.close_heat(session, clock, actor="desk-1", table="t01")
    [view] = check_tables(session)
    assert (view.desk_heat, view.table_heat) == (None, first.args["heat_id"])
    assert view.awaiting == [fault.commands[0].seq]
    assert "the table reports " + first.args["heat_id"] in view.findings[0].message
    # The fault's close_heat, sent again, closes it at the table too: they agree.
    asyncio.run(loop.send(desk.resend_command(session, clock, actor="pit",
                                              seq=fault.commands[0].seq)))
    assert state(session, fault.commands[0].seq) == ("accepted", None)
    [view] = check_tables(session)
    assert view.findings == [] and view.table_heat is None


def test_no_answer_is_pending_and_an_answer_confirms_it(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    loop.answer = False
    opened = desk.open_heat(session, settings(), clock, actor="desk-1", table="t01",
                            stage="qualifying")
    asyncio.run(loop.send(opened))
    mark_sent(engine, [opened], clock())
    assert state(session, opened.seq) == ("sent", None)  # no answer yet
    [pending] = command_views(session, pending=True)
    assert pending.seq == opened.seq and not pending.answered
    # The table's answer comes in later (it republishes its journal): confirmed.
    loop.answer = True
    asyncio.run(loop.publish([("command.result", {
        "command_id": f"{DESK.key_id}-{opened.seq}", "command": "open_heat",
        "accepted": True, "reason": None})]))
    assert state(session, opened.seq) == ("accepted", None)
    assert command_views(session, pending=True) == []
    stored = session.scalars(select(CommandResultRecord)).all()
    assert [(r.command_seq, r.accepted) for r in stored] == [(opened.seq, True)]


def test_a_second_delivery_is_refused_as_a_duplicate_and_never_replaces_the_verdict(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    opened = desk.open_heat(session, settings(), clock, actor="desk-1", table="t01",
                            stage="qualifying")
    asyncio.run(loop.send(opened))
    asyncio.run(loop.send(opened))  # QoS 1 delivered it twice
    answers = [b for t, b in loop.published if t == "command.result"]
    assert [a["accepted"] for a in answers] == [True, False]
    assert is_duplicate(answers[1]["reason"])  # the table core's wording, as the desk reads it
    assert not is_duplicate("no heat is open at this table")
    assert state(session, opened.seq) == ("accepted", None)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_verdict_is_the_same_whatever_order_the_answers_arrive_in(
    engine: Engine, session: Session, clock: FakeClock, order: tuple[int, ...]
) -> None:
    table = FakeTable("t01")
    enroll(engine, table)
    ingest = make_ingestor(engine, clock)
    command = desk.open_heat(session, settings(), clock, actor="desk-1", table="t01",
                             stage="qualifying")
    cid = f"{DESK.key_id}-{command.seq}"
    answers = [  # held until the hand ends; a duplicate delivery; then the final answer
        table.message("command.result", {"command_id": cid, "command": "close_heat",
                                         "accepted": True, "reason": None,
                                         "held_until_hand_ends": "t01-000001"}),
        table.message("command.result", {"command_id": cid, "command": "close_heat",
                                         "accepted": False, "reason":
                                         f"duplicate command {command.seq} from desk-a:"
                                         " already applied"}),
        table.message("command.result", {"command_id": cid, "command": "close_heat",
                                         "accepted": False, "reason": "entries still seated"}),
    ]
    seen = []
    for index in order:
        asyncio.run(ingest.handle(*answers[index]))
        seen.append(state(session, command.seq))
    assert seen[-1] == ("refused", "entries still seated")
    if order[0] == 0:
        assert seen[0] == ("held", "held until hand t01-000001 ends")


def test_a_command_id_names_its_seq() -> None:
    assert command_seq_of("desk-a-1764590000000") == 1_764_590_000_000
    assert command_seq_of("desk-a") is None
    assert command_seq_of(None) is None
    assert command_seq_of("x-" + "9" * 19) is None  # beyond any int64 seq


def test_an_answer_from_before_the_command_is_not_its_answer_and_a_lone_duplicate_refuses(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    table = FakeTable("t01")
    enroll(engine, table)
    ingest = make_ingestor(engine, clock)
    clock.now = T0 + timedelta(hours=1)
    command = desk.open_heat(session, settings(), clock, actor="desk-1", table="t01",
                             stage="qualifying")
    cid = f"{DESK.key_id}-{command.seq}"
    # An hour old: the answer to an older command that had this seq (a database that reused
    # seqs after a restore); the table refused this one as a duplicate of it.
    asyncio.run(ingest.handle(*table.message("command.result", {
        "command_id": cid, "command": "open_heat", "accepted": True, "reason": None})))
    assert state(session, command.seq) == ("recorded", None)
    duplicate = f"duplicate command {command.seq} from desk-a: already applied"
    asyncio.run(ingest.handle(*table.message("command.result", {
        "command_id": cid, "command": "open_heat", "accepted": False, "reason": duplicate},
        seq=4_000)))
    assert state(session, command.seq) == ("refused", duplicate)
    with pytest.raises(desk.Conflict, match="no heat open"):  # not open at the desk either
        desk.close_heat(session, clock, actor="desk-1", table="t01")


def test_seqs_stay_above_every_seq_a_table_answered_after_a_restore_and_a_clock_step_back(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    s = settings()
    sent = []
    for heat in ("h-1", "h-2"):
        sent.append(desk.open_heat(session, s, clock, actor="desk-1", table="t01",
                                   stage="qualifying", heat_id=heat))
        sent.append(desk.close_heat(session, clock, actor="desk-1", table="t01"))
    for command in sent:
        asyncio.run(loop.send(command))
    assert [state(session, c.seq)[0] for c in sent] == ["accepted"] * 4
    # The restore: the desk's record of these commands is gone (the answers come back from
    # the table's journal, as the ingest fetches them again); and the clock stepped back.
    session.execute(delete(DeskCommandRecord))
    session.execute(delete(AuditEntry))
    session.commit()
    clock.advance(-3600)
    again = desk.open_heat(session, s, clock, actor="desk-1", table="t01",
                           stage="qualifying", heat_id="h-3")
    assert again.seq == max(c.seq for c in sent) + 1
    asyncio.run(loop.send(again))
    assert state(session, again.seq) == ("accepted", None)
    assert all(ok for _, ok, _ in loop.applied)  # the table refused none as a duplicate


def test_a_refused_unseat_changes_nothing_at_the_desk_and_shows_why(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    loop = TableLoop(engine, clock)
    s = settings()
    e1 = buy(session, clock, "8001015009087")
    asyncio.run(loop.send(desk.open_heat(session, s, clock, actor="desk-1", table="t01",
                                         stage="qualifying")))
    loop.deliver = False  # the seat never reaches the table
    asyncio.run(loop.send(desk.seat_entry(session, s, clock, actor="desk-1", entry_id=e1,
                                          table="t01", seat=2).command))
    loop.deliver = True
    unseat = desk.unseat_entry(session, clock, actor="desk-1", entry_id=e1, why="left")
    asyncio.run(loop.send(unseat))
    assert state(session, unseat.seq) == ("refused", "seat 2 is empty")
    assert entry(session, e1).status == "seated"  # withdrawn only on the table's report
    [view] = check_tables(session)
    assert [(f.kind, f.desk, f.reported) for f in view.findings] == [("seating", 2, None)]


def test_two_desks_recording_commands_at_one_moment_take_different_seqs(
    engine: Engine, mocker: MockerFixture
) -> None:
    clock = FakeClock(HEAT_TIME)  # one millisecond for both
    held_after(mocker, command_log, "next_seq")
    results = race(engine, *[
        lambda s, table=table: desk.open_heat(s, settings(), clock, actor="desk-1",
                                              table=table, stage="qualifying")
        for table in ("t01", "t02")])
    assert all(isinstance(r, DeskCommand) for r in results), results
    seqs = sorted(r.seq for r in results if isinstance(r, DeskCommand))
    assert seqs == [int(HEAT_TIME.timestamp() * 1000), int(HEAT_TIME.timestamp() * 1000) + 1]


def test_an_odd_answer_is_stored_as_text_and_breaks_nothing(
    engine: Engine, session: Session, clock: FakeClock
) -> None:
    table = FakeTable("t01")
    enroll(engine, table)
    ingest = make_ingestor(engine, clock)
    asyncio.run(ingest.handle(*table.message("command.result", {
        "command_id": 17, "command": {"name": "x" * 100}, "accepted": False,
        "reason": ["not", "text"]})))
    asyncio.run(ingest.handle(*table.message("command.result", {
        "command_id": "desk-a-" + "9" * 40, "command": "c" * 100, "accepted": True,
        "reason": None})))
    rows = session.scalars(select(CommandResultRecord).order_by(CommandResultRecord.seq)).all()
    assert [(r.command_id, r.command_seq, len(r.command or ""), r.reason) for r in rows] == [
        ("17", None, 32, "['not', 'text']"), ("desk-a-" + "9" * 40, None, 32, None)]
    assert ingest.counters().rejected == 0
