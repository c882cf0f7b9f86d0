"""The incremental standings (leaderboard/standings/live.py) equal the full recomputation.

Random sequences of what happens to a tournament's rows (buy-ins, scores of every kind,
acknowledgements, voids, supervisors' corrections, disqualifications, refunds, disputes,
semi-final and Final places, renamed patrons, rows deleted, the clock moving into new weeks
and stages) are written to a real database, each through its own commit as the ingest and
the desk do; after each one the document kept incrementally must be the document computed
from the whole database, and after the last one a restarted service (a new LiveStandings)
must build the same. Run on SQLite and on PostgreSQL (when it answers), under both tie rules,
with and without ``acknowledged_only``, with names shown and not, and with few rows shown.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete, func, select
from sqlalchemy import update as sa_update
from sqlalchemy.orm import Session

from game.tournament.schema import TournamentSettings, parse_tournament
from leaderboard.db import make_engine, upgrade
from leaderboard.models import Dispute, Entry, Patron, Score, StandingsChange
from leaderboard.standings.live import LiveStandings
from leaderboard.standings.view import ViewOptions, standings
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import migrated

SAST = ZoneInfo("Africa/Johannesburg")
REPO = Path(__file__).resolve().parents[3]
START = datetime(2026, 7, 5, 15, 0, tzinfo=SAST)
DAYS = [date(2026, 7, d) for d in (3, 4, 9, 10, 16, 17, 24, 30)] + [date(2026, 8, 2)]
CENTS = [0, 2_500, 50_000, 200_000, 412_500, 412_500]
ENTRIES = st.integers(0, 44).map(lambda n: f"E-{n:03d}")
PATRONS = st.integers(0, 4)
NAMES = ["Thandiwe Mokoena", "Pieter van der Merwe", "Sipho Dlamini", "Ayesha Patel",
         "Lerato Nkosi"]

EVENT = st.one_of(
    st.tuples(st.just("buy"), ENTRIES, PATRONS, st.sampled_from(DAYS),
              st.sampled_from([10_000, 10_000, 0, 7_500])),
    st.tuples(st.just("score"), ENTRIES, st.sampled_from(CENTS),
              st.sampled_from(["finished", "finished", "ended_early", "wrong_hands"]),
              st.integers(0, 600), st.booleans()),
    st.tuples(st.just("ack"), ENTRIES, st.integers(1, 300)),
    st.tuples(st.just("void"), ENTRIES),
    st.tuples(st.just("correct"), ENTRIES, st.sampled_from(CENTS)),
    st.tuples(st.just("disqualify"), ENTRIES),
    st.tuples(st.just("refund"), ENTRIES, st.sampled_from(["refunded", "refused", "voided",
                                                          "withdrawn"])),
    st.tuples(st.just("dispute"), ENTRIES, st.booleans()),
    st.tuples(st.just("place"), ENTRIES, PATRONS, st.sampled_from(["semi_final", "final"]),
              st.integers(1, 6)),
    st.tuples(st.just("later"), st.integers(1, 9)),
    st.tuples(st.just("rename"), PATRONS),
    st.tuples(st.just("forget"), ENTRIES),
)
# Up to 40 entries of a few scores: ties everywhere, across the cut line and for a week's lead.
FIELD = st.lists(st.tuples(st.sampled_from(CENTS), st.booleans(), st.sampled_from(DAYS[:4])),
                 max_size=40)


def _settings(*, tie_rule: str, acknowledged_only: bool) -> TournamentSettings:
    data = tomllib.loads((REPO / "config" / "tournament.toml").read_text(encoding="utf-8"))
    data["scores"].update({"tie_rule": tie_rule, "acknowledged_only": acknowledged_only})
    return parse_tournament(data, "test", tz=SAST)


SETTINGS = {(rule, ack): _settings(tie_rule=rule, acknowledged_only=ack)
            for rule in ("split", "earlier_acknowledged") for ack in (True, False)}


@pytest.fixture
def db(database_url: Database) -> Iterator[Engine]:
    with migrated(database_url) as engine:
        yield engine


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def _local(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=SAST)


class World:
    """Writes the events to the database, one commit each."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.now = START
        self.seq = 0
        with Session(engine) as s, s.begin():
            for table in (Dispute, Score, Entry, Patron):
                s.execute(delete(table))
            for n, name in enumerate(NAMES):
                s.add(Patron(patron_id=f"P-{n}", name=name, id_kind="id_document",
                             id_number=f"800101500{n:04d}", birth_date=date(1980, 1, 1),
                             created_at=_utc(START)))

    def field(self, rows: list[tuple[int, bool, date]]) -> None:
        with Session(self.engine) as s, s.begin():
            for n, (cents, acked, day) in enumerate(rows):
                entry_id = f"E-{n:03d}"
                self._buy(s, entry_id, n % len(NAMES), day, 10_000)
                s.flush()
                self._score(s, entry_id, (cents, "finished", n * 7, acked))

    def _buy(self, s: Session, entry_id: str, patron: int, day: date, cents: int) -> None:
        if s.get(Entry, entry_id) is None:
            s.add(Entry(entry_id=entry_id, patron_id=f"P-{patron}", stage="qualifying",
                        heat_id=f"h-{day:%m%d}", heat_day=day, buy_in_cents=cents,
                        bought_at=_utc(_local(day, 13)), status="registered"))

    def _score(self, s: Session, entry_id: str, what: tuple[int, str, int, bool]) -> None:
        """A score of `what`: cents, how it ended, minutes into the heat, acknowledged."""
        cents, how, minutes, acked = what
        if s.get(Score, entry_id) is not None:
            return
        entry = s.get(Entry, entry_id)
        stage = entry.stage if entry is not None else "qualifying"
        hands = 10 if stage == "qualifying" else 12
        day = entry.heat_day if entry is not None and entry.heat_day else DAYS[0]
        recorded = _local(day, 14) + timedelta(minutes=minutes)
        self.seq += 1
        s.add(Score(entry_id=entry_id, table_id="t01", seq=self.seq, stage=stage,
                    heat_id=None, score_cents=cents,
                    hands={"finished": hands, "ended_early": 4, "wrong_hands": hands - 1}[how],
                    status="ended_early" if how == "ended_early" else "finished",
                    recorded_at=_utc(recorded),
                    acknowledged_at=_utc(recorded + timedelta(seconds=30)) if acked else None,
                    ack_method="card_tap" if acked else None))

    def apply(self, event: tuple[Any, ...]) -> None:
        kind, *args = event
        if kind == "later":
            self.now += timedelta(days=args[0])
            return
        with Session(self.engine) as s, s.begin():
            getattr(self, f"_{kind}_event")(s, *args)

    def _buy_event(self, s: Session, entry_id: str, patron: int, day: date, cents: int) -> None:
        self._buy(s, entry_id, patron, day, cents)

    def _score_event(self, s: Session, entry_id: str, *what: Any) -> None:
        self._score(s, entry_id, (what[0], what[1], what[2], what[3]))

    def _ack_event(self, s: Session, entry_id: str, seconds: int) -> None:
        score = s.get(Score, entry_id)
        if score is not None and score.acknowledged_at is None:
            score.acknowledged_at = score.recorded_at + timedelta(seconds=seconds)
            score.ack_method = "card_tap"

    def _void_event(self, s: Session, entry_id: str) -> None:
        score = s.get(Score, entry_id)
        if score is not None and score.voided_at is None:
            score.voided_at, score.void_reason = _utc(self.now), "supervisor: misdeal"

    def _correct_event(self, s: Session, entry_id: str, cents: int) -> None:
        score = s.get(Score, entry_id)
        if score is not None:
            score.corrected_cents, score.corrected_at = cents, _utc(self.now)
            score.correction_reason = "supervisor: recount"

    def _disqualify_event(self, s: Session, entry_id: str) -> None:
        entry = s.get(Entry, entry_id)
        if entry is not None:
            entry.disqualified_at, entry.disqualified_reason = _utc(self.now), "rule 57"

    def _refund_event(self, s: Session, entry_id: str, status: str) -> None:
        entry = s.get(Entry, entry_id)
        if entry is not None:
            entry.status = status  # refunded, refused at a later screening, withdrawn

    def _dispute_event(self, s: Session, entry_id: str, resolve: bool) -> None:
        open_one = s.scalars(select(Dispute).where(Dispute.entry_id == entry_id,
                                                   Dispute.resolved_at.is_(None))).first()
        if resolve and open_one is not None:
            open_one.resolved_at, open_one.status = _utc(self.now), "closed"
        elif not resolve:
            s.add(Dispute(entry_id=entry_id, note="my score is wrong", at=_utc(self.now)))

    def _place_event(self, s: Session, entry_id: str, patron: int, stage: str,
                     seat: int) -> None:
        if s.get(Entry, entry_id) is None:
            s.add(Entry(entry_id=entry_id, patron_id=f"P-{patron}", stage=stage,
                        heat_id=f"{stage}-{seat % 2 + 1}", heat_day=None, table_id=f"t0{seat}",
                        seat=seat, buy_in_cents=0, bought_at=_utc(self.now),
                        status="seated", played_by="P-4" if seat == 6 else None))

    def _rename_event(self, s: Session, patron: int) -> None:
        row = s.get(Patron, f"P-{patron}")
        assert row is not None
        row.name = f"Renamed {row.name.split()[-1]} Person"

    def _forget_event(self, s: Session, entry_id: str) -> None:
        s.execute(delete(Score).where(Score.entry_id == entry_id))


@dataclass(frozen=True, slots=True)
class Case:
    """One example: the events, the field written before them, and the settings."""

    events: list[tuple[Any, ...]]
    field: list[tuple[int, bool, date]]
    rule: str
    acknowledged_only: bool
    rows: int
    names: bool


CASES = st.builds(Case, events=st.lists(EVENT, max_size=14), field=FIELD,
                  rule=st.sampled_from(["split", "earlier_acknowledged"]),
                  acknowledged_only=st.booleans(), rows=st.sampled_from([1, 3, 20]),
                  names=st.booleans())


def _check(engine: Engine, case: Case) -> None:
    tournament = SETTINGS[(case.rule, case.acknowledged_only)]
    options = ViewOptions(venue="goldreef", title="Test floor", rows=case.rows,
                          names="first_name_initial" if case.names else "entry_code")
    world = World(engine)
    live = LiveStandings(engine, tournament, options)
    assert live.document(world.now) == standings(engine, tournament, options, now=world.now)
    world.field(case.field)
    for event in [("later", 0), *case.events]:
        world.apply(event)
        kept = live.document(world.now)
        assert kept == standings(engine, tournament, options, now=world.now), event
        assert not live.stats.rebuilt  # the changes were followed, not read again whole
    restarted = LiveStandings(engine, tournament, options)
    assert restarted.document(world.now) == live.document(world.now)


@settings(deadline=None, max_examples=25, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=CASES)
def test_incremental_standings_equal_the_full_recomputation_on_sqlite(tmp_path: Path,
                                                                      case: Case) -> None:
    engine = _sqlite(tmp_path / "live.sqlite3")
    try:
        _check(engine, case)
    finally:
        engine.dispose()


_TEMPLATE: dict[str, bytes] = {}


def _sqlite(path: Path) -> Engine:
    """A migrated SQLite database (migrated once, copied for each example)."""
    if "db" not in _TEMPLATE:
        first = make_engine(f"sqlite:///{path}")
        upgrade(first)
        first.dispose()
        _TEMPLATE["db"] = path.read_bytes()
    else:
        path.write_bytes(_TEMPLATE["db"])
    return make_engine(f"sqlite:///{path}")


@pytest.mark.postgres
@settings(deadline=None, max_examples=8, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=CASES)
def test_incremental_standings_equal_the_full_recomputation_on_postgres(postgres_db: Engine,
                                                                        case: Case) -> None:
    _check(postgres_db, case)


@pytest.fixture
def postgres_db(database_url: Database) -> Iterator[Engine]:
    if database_url.kind != "postgres":
        pytest.skip("the SQLite run is the test above")
    with migrated(database_url) as engine:
        yield engine


def test_every_write_of_a_score_or_an_entry_is_recorded_as_a_change(db: Engine) -> None:
    world = World(db)
    with Session(db) as s:
        before = s.scalar(select(func.count()).select_from(StandingsChange)) or 0
    world.apply(("buy", "E-900", 1, DAYS[1], 10_000))
    world.apply(("score", "E-900", 50_000, "finished", 5, False))
    world.apply(("ack", "E-900", 10))
    world.apply(("forget", "E-900"))
    with Session(db) as s:
        changed = s.scalars(select(StandingsChange.entry_id).order_by(StandingsChange.id)
                            .offset(before)).all()
    assert changed == ["E-900"] * 4  # the entry, its score, the acknowledgement, the delete


def test_a_change_committed_after_a_later_one_is_still_applied(db: Engine) -> None:
    """PostgreSQL hands out change ids at insert time: one transaction may commit its id
    after a later id was read. The skipped id is asked for again (a hole)."""
    if db.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer at a time: its ids commit in order")
    tournament = SETTINGS[("earlier_acknowledged", True)]
    options = ViewOptions(venue="goldreef", title="Test floor")
    world = World(db)
    world.field([(200_000, True, DAYS[0]), (50_000, True, DAYS[1])])
    live = LiveStandings(db, tournament, options)
    live.document(world.now)
    slow = Session(db)
    try:
        # The first transaction takes its change id now and commits last.
        slow.execute(sa_update(Score).where(Score.entry_id == "E-001")
                     .values(score_cents=900_000))
        slow.flush()
        world.apply(("void", "E-000"))  # a later id, committed first
        live.document(world.now)
        assert live.stats.watermark > 0
        slow.commit()
    finally:
        slow.close()
    kept = live.document(world.now)
    assert kept["board"]["rows"][0]["entry_id"] == "E-001"
    assert kept["board"]["rows"][0]["score_cents"] == 900_000
    assert kept == standings(db, tournament, options, now=world.now)


def test_a_database_restored_from_a_backup_is_read_again_whole(tmp_path: Path) -> None:
    """Change ids that go back (an older copy of the database put in place) make the
    standings read everything again instead of missing what differs."""
    path = tmp_path / "restored.sqlite3"
    engine = _sqlite(path)
    try:
        tournament = SETTINGS[("split", True)]
        options = ViewOptions(venue="goldreef", title="Test floor")
        world = World(engine)
        world.field([(200_000, True, DAYS[0]), (50_000, True, DAYS[1])])
        engine.dispose()
        backup = path.read_bytes()
        live = LiveStandings(engine, tournament, options)
        for event in [("score", f"E-{n:03d}", 412_500, "finished", n, True) for n in (5, 6)]:
            world.apply(("buy", event[1], 1, DAYS[2], 10_000))
            world.apply(event)
        before = [r["entry_id"] for r in live.document(world.now)["board"]["rows"]]
        assert sorted(before[:2]) == ["E-005", "E-006"]
        assert before[2:] == ["E-000", "E-001"]
        engine.dispose()
        path.write_bytes(backup)  # the backup is restored: E-005 and E-006 are gone
        restored = live.document(world.now)
        assert live.stats.rebuilt
        assert [r["entry_id"] for r in restored["board"]["rows"]] == ["E-000", "E-001"]
        assert restored == standings(engine, tournament, options, now=world.now)
    finally:
        engine.dispose()
