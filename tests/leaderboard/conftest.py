"""Fixtures of the leaderboard tests: the test's database, migrated, and a session on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import HEAT_TIME
from tests.leaderboard.desk_helpers import FakeClock, migrated


@pytest.fixture
def engine(database_url: Database) -> Iterator[Engine]:
    """An engine on the test's own database (SQLite file or PostgreSQL schema), migrated."""
    with migrated(database_url) as e:
        yield e


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """A session on ``engine`` whose objects stay readable after a commit."""
    with Session(engine, expire_on_commit=False) as s:
        yield s


@pytest.fixture
def clock() -> FakeClock:
    """The desk's clock, set at the qualifying heat's time (2026-07-03 14:00 at the venue)."""
    return FakeClock(HEAT_TIME)
