"""Revision 0002: the database enforces what the desk checks, on SQLite and PostgreSQL
(and the later revisions' upgrades with data: 0003 the rulings, 0004 the console).

- the migration from 0001 with data (old messages keep NULL evidence), its refusal of rows
  that already break a new index, and its downgrade;
- the indexes themselves (one draw per stage, one place per semi-final or Final heat and
  seat until seated, one award of a kind per entry), with qualifying seats deliberately left
  free, and what a table reports once a place is seated always stored;
- two desks racing: the second one's write reaches the database after the first one's
  commit, as when both checked at the same moment. A hook runs the rival desk action
  (its own session) just before the action under test first writes. The loser gets a
  `Conflict`, never a traceback, and nothing of its action is kept. The desk lock (D57)
  prevents such interleavings (tests/leaderboard/test_desk_races.py); here it is lifted,
  so that the database's own guarantees, which hold for any writer, are what is tested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import ORMExecuteState, Session

from game.tournament.draw import RECOMMENDED_BYTES, draw_seats
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.db import MigrationError, alembic_config, head_revisions, make_engine, upgrade
from leaderboard.desk import Conflict, seat_draw
from leaderboard.desk import action as desk_action
from leaderboard.models import (
    AuditEntry,
    Base,
    Dispute,
    Draw,
    Entry,
    Hand,
    Message,
    Patron,
    PrizeAward,
    Score,
)
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import (
    FINAL_SCORES,
    final_field,
    played_final,
    semis,
)
from tests.leaderboard.desk_helpers import FakeClock, local, settings
from tests.leaderboard.ingest_support import FakeClock as IngestClock
from tests.leaderboard.ingest_support import FakeTable, enroll, make_ingestor

NOW = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)
HEAD = max(head_revisions())  # the newest revision (one head)
NEW_INDEXES = {"uq_draws_stage": "draws", "uq_entries_place_seat": "entries",
               "uq_prize_awards_kind_entry": "prize_awards"}
RULING_COLUMNS = ("corrected_cents", "corrected_at", "correction_reason")  # revision 0003


# ---- helpers ----------------------------------------------------------------------------------


HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def at_revision(db: Database, revision: str) -> Engine:
    """An engine on the test's database, migrated to `revision` only."""
    engine = make_engine(db.url)
    with engine.begin() as connection:
        cfg = alembic_config(db.url)
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)
    return engine


def downgrade_to(engine: Engine, revision: str) -> None:
    with engine.begin() as connection:
        cfg = alembic_config(engine.url.render_as_string(hide_password=False))
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, revision)


def revision_of(engine: Engine) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(sa.text("SELECT version_num FROM alembic_version")))


def insert(engine: Engine, table: type[Base], *rows: dict[str, object]) -> None:
    """Rows inserted with exactly the given columns (so this works at revision 0001 too)."""
    with engine.begin() as connection:
        for row in rows:
            connection.execute(sa.insert(table).values(**row))


def patron(pid: str) -> dict[str, object]:
    return {"patron_id": pid, "name": "A. Patron", "id_kind": "id_document",
            "id_number": f"id-{pid}", "birth_date": date(1980, 1, 1), "created_at": NOW}


def entry(eid: str, stage: str, heat: str | None, seat: int | None,
          **more: object) -> dict[str, object]:
    return {"entry_id": eid, "patron_id": "P1", "stage": stage, "heat_id": heat, "seat": seat,
            "buy_in_cents": 10_000 if stage == "qualifying" else 0, "bought_at": NOW,
            "status": "registered", **more}


def draw(stage: str = "final") -> dict[str, object]:
    return {"stage": stage, "random_hex": "00" * 16, "finalists": ["F-1"],
            "result": {"assignments": [{"finalist": "F-1", "seat": 1}], "seats": [1]},
            "drawn_at": NOW, "drawn_by": "desk-1"}


def award(kind: str, eid: str, place: int = 1) -> dict[str, object]:
    return {"kind": kind, "place": place, "entry_id": eid, "patron_id": "P1",
            "amount_cents": 100, "awarded_at": NOW, "deadline": NOW}


def message(seq: int) -> dict[str, object]:
    return {"table_id": "t01", "seq": seq, "type": "alert", "ts": "2026-07-03T13:00:01.000Z",
            "body": {"n": seq}, "received_at": NOW}


def rival_first(session: Session, rival: Callable[[], object]) -> None:
    """Run `rival` once, just before `session` first writes (a flush, or an ORM UPDATE or
    INSERT statement): after every check of the desk action under test, as in a race."""
    fired = False

    def run() -> None:
        nonlocal fired
        if not fired:
            fired = True
            rival()

    def on_execute(state: ORMExecuteState) -> None:
        if state.is_update or state.is_insert:
            run()

    event.listen(session, "before_flush", lambda *_: run())
    event.listen(session, "do_orm_execute", on_execute)


@pytest.fixture(autouse=True)
def without_the_desk_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Desk actions here do not take the desk lock (the rival runs inside the first one)."""
    monkeypatch.setattr(desk_action, "hold_desk_lock", lambda _session: None)


@pytest.fixture
def other(engine: Engine) -> Iterator[Session]:
    """The rival desk's session."""
    with Session(engine, expire_on_commit=False) as s:
        yield s


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(local(2026, 7, 3, 14, 0))


# ---- the migration ----------------------------------------------------------------------------


def test_a_0001_database_with_data_upgrades_and_keeps_it(database_url: Database) -> None:
    engine = at_revision(database_url, "0001")
    assert revision_of(engine) == "0001"
    insert(engine, Patron, patron("P1"))
    insert(engine, Message, message(1), message(2))
    insert(engine, Draw, draw())
    insert(engine, Entry,
           # Qualifying entries take one seat one after the other during a heat.
           entry("E-1", "qualifying", "q-1", 3), entry("E-2", "qualifying", "q-1", 3),
           entry("S-1", "semi_final", "semi-final-1", 3),
           entry("S-2", "semi_final", "semi-final-2", 3),
           entry("S-3", "semi_final", None, None), entry("S-4", "semi_final", None, None))
    insert(engine, PrizeAward, award("weekly", "E-1"), award("top_score", "E-1"))

    upgrade(engine)
    assert revision_of(engine) == HEAD
    with Session(engine) as s:
        rows = s.scalars(select(Message).order_by(Message.seq)).all()
        assert [(m.seq, m.body, m.payload_sha256, m.envelope) for m in rows] == [
            (1, {"n": 1}, None, None), (2, {"n": 2}, None, None)]
        assert s.scalar(select(func.count()).select_from(Entry)) == 6
        assert s.scalar(select(Draw.stage)) == "final"
        assert s.scalar(select(func.count()).select_from(PrizeAward)) == 2
    inspector = sa.inspect(engine)
    for name, table in NEW_INDEXES.items():
        index = next(i for i in inspector.get_indexes(table) if i["name"] == name)
        assert index["unique"]
    assert {"payload_sha256", "envelope"} <= {c["name"] for c in inspector.get_columns("messages")}
    assert set(RULING_COLUMNS) <= {c["name"] for c in inspector.get_columns("scores")}
    # The models and the migrations describe the same schema.
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []

    # Down to 0001 and up again: the evidence columns and the indexes go, then come back.
    downgrade_to(engine, "0001")
    inspector = sa.inspect(engine)
    assert "envelope" not in {c["name"] for c in inspector.get_columns("messages")}
    assert not {i["name"] for i in inspector.get_indexes("draws")} & set(NEW_INDEXES)
    upgrade(engine)
    assert revision_of(engine) == HEAD
    engine.dispose()


def test_a_0002_database_with_scores_gains_the_ruling_columns_and_keeps_its_scores(
    database_url: Database
) -> None:
    engine = at_revision(database_url, "0002")
    insert(engine, Patron, patron("P1"))
    insert(engine, Entry, entry("E-1", "qualifying", "q-1", 3))
    insert(engine, Score, {"entry_id": "E-1", "table_id": "t01", "seq": 7, "stage": "qualifying",
                           "heat_id": "q-1", "score_cents": 250_000, "hands": 10,
                           "status": "finished", "recorded_at": NOW, "acknowledged_at": NOW})
    upgrade(engine)
    assert revision_of(engine) == HEAD
    with Session(engine) as s:
        row = s.get(Score, "E-1")
        assert row is not None
        assert (row.score_cents, row.corrected_cents, row.counted_cents) == (250_000, None,
                                                                            250_000)
    # Down to 0002 (the corrections go with their columns) and up again; the score stays.
    downgrade_to(engine, "0002")
    assert not set(RULING_COLUMNS) & {c["name"] for c in sa.inspect(engine).get_columns("scores")}
    upgrade(engine)
    with Session(engine) as s:
        assert s.scalar(select(Score.score_cents)) == 250_000
    engine.dispose()


def test_rows_that_break_a_new_index_stop_the_upgrade_and_are_named(
    database_url: Database
) -> None:
    engine = at_revision(database_url, "0001")
    insert(engine, Patron, patron("P1"))
    # What two desks racing could leave behind before the database enforced it.
    insert(engine, Draw, draw(), draw())
    insert(engine, Entry, entry("S-1", "semi_final", "semi-final-1", 4),
           entry("S-2", "semi_final", "semi-final-1", 4), entry("S-3", "semi_final", None, None),
           entry("S-4", "semi_final", "semi-final-1", 4, table_id="t05"))  # seated: not named
    insert(engine, PrizeAward, award("final", "F-1"), award("final", "F-1"))
    with pytest.raises(MigrationError) as caught:
        upgrade(engine)
    text = str(caught.value)
    assert text.startswith("revision 0002 cannot be applied until a supervisor resolves")
    assert "more than one seat draw for a stage (draws: stage, ids): final 1; final 2" in text
    assert ("two unseated semi-final or Final places on one heat and seat (entries: heat,"
            " seat, entry): semi-final-1 4 S-1; semi-final-1 4 S-2 |") in text
    assert ("an entry awarded a prize of one kind twice (prize_awards: kind, entry, ids):"
            " final F-1 1; final F-1 2") in text
    assert text.endswith("(nothing was changed)")
    # Nothing was changed: still revision 0001, without the new columns.
    assert revision_of(engine) == "0001"
    assert "envelope" not in {c["name"] for c in sa.inspect(engine).get_columns("messages")}
    engine.dispose()


# ---- the indexes ------------------------------------------------------------------------------


def test_the_database_refuses_a_second_draw_place_seat_or_award(engine: Engine) -> None:
    insert(engine, Patron, patron("P1"))
    insert(engine, Draw, draw())
    with pytest.raises(IntegrityError):
        insert(engine, Draw, draw())
    insert(engine, Entry, entry("S-1", "semi_final", "semi-final-1", 4),
           entry("F-1", "final", "final-1", 4),
           entry("S-2", "semi_final", "semi-final-2", 4),  # another heat
           entry("S-3", "semi_final", None, None), entry("S-4", "semi_final", None, None),
           entry("E-1", "qualifying", "q-1", 4), entry("E-2", "qualifying", "q-1", 4),
           # Seated places: where the table says they sit is recorded, whatever it says.
           entry("S-6", "semi_final", "semi-final-1", 4, table_id="t05", status="seated"),
           entry("S-7", "semi_final", "semi-final-1", 4, table_id="t05", status="seated"))
    for taken in (entry("S-5", "semi_final", "semi-final-1", 4),
                  entry("F-2", "final", "final-1", 4)):
        with pytest.raises(IntegrityError):
            insert(engine, Entry, taken)
    # Moving a place onto a taken seat is refused as well (an UPDATE).
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(sa.update(Entry).where(Entry.entry_id == "S-3").values(
            heat_id="semi-final-2", seat=4))
    insert(engine, PrizeAward, award("final", "F-1"), award("top_score", "F-1"))
    with pytest.raises(IntegrityError):
        insert(engine, PrizeAward, award("final", "F-1", place=2))
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(Entry)) == 9
        assert s.scalar(select(func.count()).select_from(Draw)) == 1


# ---- two desks racing -------------------------------------------------------------------------


def test_two_desks_choosing_one_semi_final_seat(session: Session, other: Session,
                                                clock: FakeClock) -> None:
    s = settings()
    _, places = semis(session, clock)
    mine, theirs = places[0].entry_id, places[1].entry_id
    rival_first(session, lambda: desk.choose_seat(other, s, clock, actor="desk-2",
                                                  entry_id=theirs, heat=1, seat=4))
    with pytest.raises(Conflict, match=f"heat 1 seat 4 was taken at the same moment by place"
                                       f" {theirs} at another desk; place {mine} keeps no"
                                       " heat seat -"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=mine, heat=1, seat=4)
    held = session.execute(select(Entry.entry_id).where(
        Entry.heat_id == "semi-final-1", Entry.seat == 4)).scalars().all()
    assert held == [theirs]
    assert session.get(Entry, mine).seat is None  # type: ignore[union-attr]
    chosen = session.scalars(select(AuditEntry).where(
        AuditEntry.action == "semi_final.seat_chosen")).all()
    assert [a.actor for a in chosen] == ["desk-2"]
    # The loser simply chooses again.
    place = desk.choose_seat(session, s, clock, actor="desk-1", entry_id=mine, heat=1, seat=5)
    assert (place.heat, place.seat) == (1, 5)


def test_two_desks_drawing_the_final(session: Session, other: Session,
                                     clock: FakeClock) -> None:
    s = settings()
    _, finals = final_field(session, clock)
    finalists = [p.entry_id for p in finals]
    theirs, mine = bytes(range(RECOMMENDED_BYTES)), bytes(range(1, RECOMMENDED_BYTES + 1))
    rival = draw_seats(finalists, [1, 2, 3, 4, 5, 6], theirs)
    rival_first(session, lambda: desk.draw_final(other, s, clock, actor="desk-2",
                                                 random_bytes=lambda _: theirs))
    with pytest.raises(Conflict, match=r"the Final's seats were drawn at the same moment at"
                                       r" another desk \(draw \d+ by desk-2\); that draw is in"
                                       " force and this one was not stored"):
        desk.draw_final(session, s, clock, actor="desk-1", random_bytes=lambda _: mine)
    rows = session.scalars(select(Draw)).all()
    assert [(r.drawn_by, r.random_hex) for r in rows] == [("desk-2", theirs.hex())]
    assert [a.action for a in session.scalars(select(AuditEntry).where(
        AuditEntry.action == "final.drawn"))] == ["final.drawn"]
    # Running the draw again gives the rival's seats: one draw, replayable.
    again = desk.draw_final(session, s, clock, actor="desk-1",
                            random_bytes=lambda n: pytest.fail(f"drew {n} bytes again"))
    assert again.reused and again.random_hex == theirs.hex()
    assert dict(again.seats) == {a.finalist: a.seat for a in rival.assignments}
    assert desk.replay_draw(session, again.draw_id).matches


def test_a_seat_held_outside_the_draw_is_a_conflict_for_a_supervisor(
    session: Session, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = settings()
    _, finals = final_field(session, clock)
    data = bytes(range(RECOMMENDED_BYTES))
    with monkeypatch.context() as m:  # the draw is stored, its seats not yet given
        m.setattr(seat_draw, "_apply_draw", lambda *_: None)
        desk.draw_final(session, s, clock, actor="desk-1", random_bytes=lambda _: data)
    seats = {a.finalist: a.seat for a in draw_seats(
        [p.entry_id for p in finals], [1, 2, 3, 4, 5, 6], data).assignments}
    first, second = sorted(seats)[:2]
    # Meanwhile a finalist was put on another finalist's drawn seat (not by the desk): the
    # draw's seats are still given, freeing that seat on the way.
    session.execute(sa.update(Entry).where(Entry.entry_id == first).values(
        heat_id=desk.FINAL_HEAT, seat=seats[second]))
    session.commit()
    outcome = desk.draw_final(session, s, clock, actor="desk-1")
    assert dict(outcome.seats) == seats
    assert {p.entry_id: p.seat for p in desk.places(session, s, Stage.FINAL)} == seats

    # A row the draw does not know holds a Final seat: refused, named, nothing changed.
    session.execute(sa.update(Entry).where(Entry.entry_id == first).values(seat=None))
    session.add(Entry(entry_id="F-stray", patron_id=finals[0].holder, stage="final",
                      heat_id=desk.FINAL_HEAT, seat=seats[first], buy_in_cents=0,
                      bought_at=NOW, status="registered"))
    session.commit()
    with pytest.raises(Conflict, match=f"the seats of draw {outcome.draw_id} cannot be given:"
                                       f" F-stray holds seat {seats[first]}, which the draw"
                                       " did not give: a supervisor must resolve it"):
        desk.draw_final(session, s, clock, actor="desk-1")
    assert session.get(Entry, first).seat is None  # type: ignore[union-attr]


def test_two_desks_awarding_and_claiming_the_final_prizes(
    session: Session, other: Session, clock: FakeClock
) -> None:
    s = settings()
    played_final(session, clock)
    clock.now = local(2026, 8, 1, 18, 30)
    rival_first(session, lambda: desk.award_prizes(other, s, clock, actor="desk-2",
                                                   kind="final"))
    with pytest.raises(Conflict, match="the final prizes were awarded at the same moment at"
                                       " another desk: nothing was recorded twice"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="final")
    awards = session.scalars(select(PrizeAward).order_by(PrizeAward.place)).all()
    assert len(awards) == len(FINAL_SCORES)
    assert {a.kind for a in awards} == {"final"}

    # Two cashiers pay the same prize at the same moment: it is claimed once.
    first = awards[0]
    winner = session.get(Patron, first.patron_id)
    assert winner is not None
    rival_first(session, lambda: desk.claim_prize(other, s, clock, actor="cashier-2",
                                                  award_id=first.id,
                                                  id_number=winner.id_number))
    with pytest.raises(Conflict, match=f"prize {first.id} was claimed at the same moment at"
                                       " another desk: pay it once"):
        desk.claim_prize(session, s, clock, actor="cashier-1", award_id=first.id,
                         id_number=winner.id_number)
    claims = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.claimed"))
    assert [c.actor for c in claims] == ["cashier-2"]
    session.expire_all()
    assert session.get(PrizeAward, first.id).claimed_at is not None  # type: ignore[union-attr]


def test_two_desks_registering_one_document(session: Session, other: Session,
                                            clock: FakeClock) -> None:
    s = settings()
    registered: list[str] = []

    def rival() -> None:
        registered.append(desk.register_patron(
            other, s, clock, actor="desk-2", name="Thandi M", id_kind="id_document",
            id_number="8001015009087", birth_date=date(1980, 1, 1)).patron_id)

    rival_first(session, rival)
    with pytest.raises(Conflict, match="id_document 8001015009087 was registered at the same"
                                       " moment at another desk, as patron P-"):
        desk.register_patron(session, s, clock, actor="desk-1", name="Thandi M",
                             id_kind="id_document", id_number="8001015009087",
                             birth_date=date(1980, 1, 1))
    assert session.scalars(select(Patron.patron_id)).all() == registered


# ---- what the new index means for ingest ------------------------------------------------------


async def test_a_table_reporting_a_taken_semi_final_seat_is_stored_not_refused(
    session: Session, engine: Engine, clock: FakeClock
) -> None:
    """The ingest records every seating a table reports (it sets the entry's table): the
    index never refuses it, which would leave a hole the table is asked to fill for ever."""
    s = settings()
    _, places = semis(session, clock)
    for n, p in enumerate(places[:2]):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=p.entry_id, heat=1,
                         seat=n + 1)
    t05 = FakeTable("t05")
    enroll(engine, t05)
    ingest = make_ingestor(engine, IngestClock())
    # Seated by the table at the seat the desk gave another place, which is still waiting.
    result = await ingest.handle(*t05.seated(places[0].entry_id, 2))
    assert (result.outcome, result.reason) == ("stored", None)
    session.expire_all()
    waiting = session.get(Entry, places[1].entry_id)
    assert waiting is not None
    assert (waiting.heat_id, waiting.seat, waiting.table_id) == ("semi-final-1", 2, None)


CONSOLE_TABLES = ("staff", "roster_state", "disputes", "payout_checks")  # revision 0004


def test_a_0003_database_gains_the_console_tables_and_keeps_its_rows(
    database_url: Database
) -> None:
    engine = at_revision(database_url, "0003")
    insert(engine, Patron, patron("P1"))
    insert(engine, Entry, entry("E-1", "qualifying", "q-1", 3))
    insert(engine, Score, {"entry_id": "E-1", "table_id": "t01", "seq": 7, "stage": "qualifying",
                           "heat_id": "q-1", "score_cents": 250_000, "hands": 10,
                           "status": "finished", "recorded_at": NOW, "acknowledged_at": NOW,
                           "ack_method": "card"})
    with engine.begin() as connection:  # a hand stored before hands were marked manual
        connection.execute(sa.text(
            "INSERT INTO hands (hand_id, table_id, seq, status, heat_id, body, at)"
            " VALUES ('h1', 't01', 3, 'settled', 'q-1', '{\"v\": 1}', :at)"), {"at": NOW})
    upgrade(engine)
    assert revision_of(engine) == HEAD
    with Session(engine) as s:
        hand = s.get(Hand, "h1")
        assert hand is not None and hand.manual is False and hand.body == {"v": 1}
        score = s.get(Score, "E-1")
        assert score is not None and (score.ack_method, score.ack_evidence) == ("card", None)
        person = s.get(Patron, "P1")
        assert person is not None and (person.card_hash, person.pin_hash) == (None, None)
    inspector = sa.inspect(engine)
    assert set(CONSOLE_TABLES) <= set(inspector.get_table_names())
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    # Down to 0003 (the console's tables and columns go) and up again; the rows stay.
    downgrade_to(engine, "0003")
    inspector = sa.inspect(engine)
    assert not set(CONSOLE_TABLES) & set(inspector.get_table_names())
    assert "manual" not in {c["name"] for c in inspector.get_columns("hands")}
    assert "card_hash" not in {c["name"] for c in inspector.get_columns("patrons")}
    upgrade(engine)
    with Session(engine) as s:
        assert s.scalar(select(Score.score_cents)) == 250_000
        assert s.scalar(select(func.count()).select_from(Entry)) == 1
        assert s.scalar(select(Hand.manual)) is False
    engine.dispose()


def test_a_0004_database_keeps_its_disputes_as_records_of_participants(
    database_url: Database
) -> None:
    engine = at_revision(database_url, "0004")
    with engine.begin() as connection:
        for seq, resolved in ((5, None), (6, NOW)):
            connection.execute(sa.text(
                "INSERT INTO disputes (entry_id, table_id, seq, stage, heat_id, score_cents,"
                " note, at, resolved_at, resolved_by, resolution) VALUES ('E-1', 't01', :seq,"
                " 'qualifying', 'q-1', 250000, 'miscounted', :at, :resolved, :by, :text)"),
                {"seq": seq, "at": NOW, "resolved": resolved, "by": resolved and "S3",
                 "text": resolved and "recounted: stands"})
    upgrade(engine)
    assert revision_of(engine) == HEAD
    with Session(engine) as s:
        rows = s.scalars(select(Dispute).order_by(Dispute.seq)).all()
        assert [(d.seq, d.status, d.raised_by_role, d.raised_by, d.note) for d in rows] == [
            (5, "open", "participant", "E-1", "miscounted"),
            (6, "closed", "participant", "E-1", "miscounted")]
    assert "hand_corrections" in sa.inspect(engine).get_table_names()
