"""The leaderboard schema migrates cleanly on SQLite and PostgreSQL and keeps cents exact."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboard.db import make_engine, upgrade
from leaderboard.models import Entry, Message, Patron
from tests.fixtures.services import Database

NOW = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)


def test_upgrade_creates_every_table_and_is_idempotent(database_url: Database) -> None:
    engine = make_engine(database_url.url)
    upgrade(engine)
    upgrade(engine)  # a second run changes nothing
    names = set(inspect(engine).get_table_names())
    assert {"tables", "messages", "table_progress", "rejections", "patrons", "exclusions",
            "refusals", "entries", "scores", "hands", "prize_awards", "draws", "proxies",
            "audit", "alembic_version"} <= names
    with Session(engine) as s:
        s.add(Patron(patron_id="P1", name="A. Patron", id_kind="id_document",
                     id_number="8001015009087", birth_date=date(1980, 1, 1), created_at=NOW))
        s.add(Entry(entry_id="E1", patron_id="P1", stage="qualifying",
                    buy_in_cents=9_007_199_254_740_993, bought_at=NOW))
        s.add(Message(table_id="t01", seq=1, type="x", ts="t", body={"a": 1}, received_at=NOW))
        s.commit()
        assert s.scalar(select(Entry.buy_in_cents)) == 9_007_199_254_740_993
        s.add(Message(table_id="t01", seq=1, type="x", ts="t", body={}, received_at=NOW))
        with pytest.raises(IntegrityError):
            s.commit()
    engine.dispose()
