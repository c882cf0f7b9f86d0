"""Helpers for the desk tests: a settable clock, sessions, scores stored as ingest stores them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from functools import cache
from zoneinfo import ZoneInfo

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.db import make_engine
from leaderboard.models import AuditEntry, DeskCommandRecord, Score
from runtime.settings_files import read_tournament
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import Database

__all__ = ["ADULT", "SAST", "FakeClock", "add_score", "local", "migrated", "register", "settings"]

SAST = ZoneInfo("Africa/Johannesburg")
ADULT = date(1980, 5, 17)


def local(year: int, month: int, day: int, hour: int = 0, minute: int = 0,  # noqa: PLR0917
          second: int = 0) -> datetime:
    """A venue-local (Africa/Johannesburg) instant."""
    return datetime(year, month, day, hour, minute, second, tzinfo=SAST)


@cache
def settings() -> TournamentSettings:
    """The shipped tournament settings (config/tournament.toml)."""
    return read_tournament()


@contextmanager
def migrated(db: Database) -> Iterator[Engine]:
    """A migrated engine on the test's database, disposed after (``Database.migrate``: the
    migrations' result, run once per worker, when the database is still empty)."""
    engine = make_engine(db.url)
    db.migrate(engine)
    try:
        yield engine
    finally:
        engine.dispose()


def add_score(session: Session, entry_id: str, score_cents: int, *, stage: str,
              acknowledged: datetime | None, recorded: datetime, hands: int | None = None,
              table: str = "t01", seq: int = 1) -> None:
    """Store a score the way ingest would (a finished entry, acknowledged or not)."""
    session.add(Score(entry_id=entry_id, table_id=table, seq=seq, stage=stage,
                      heat_id="h", score_cents=score_cents,
                      hands=hands if hands is not None else (10 if stage == "qualifying" else 12),
                      status="finished", recorded_at=recorded.astimezone(UTC),
                      acknowledged_at=acknowledged.astimezone(UTC) if acknowledged else None,
                      ack_method="card" if acknowledged else None))
    session.commit()


def register(session: Session, clock: FakeClock, number: str, *, name: str = "A Patron",
             born: date = ADULT) -> str:
    """Register an adult patron; returns the patron id."""
    return desk.register_patron(session, settings(), clock, actor="desk-1", name=name,
                                id_kind="id_document", id_number=number,
                                birth_date=born).patron_id


def command_audit(session: Session, seq: int) -> AuditEntry | None:
    """The audit row of the desk action that recorded command ``seq``."""
    recorded = session.get(DeskCommandRecord, seq)
    return None if recorded is None else session.get(AuditEntry, recorded.audit_id)
