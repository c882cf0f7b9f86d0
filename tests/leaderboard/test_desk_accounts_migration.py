"""Revision 0005_desk_accounts on a database that already has staff (revision 0004): every
member is kept, with no desk passphrase and no failures, and can then be given one; down and
up again; the models and the migrations describe the same schema. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.db import upgrade
from leaderboard.models import Base, StaffRecord
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import FakeClock, local
from tests.leaderboard.test_schema_constraints import (
    HEAD,
    at_revision,
    downgrade_to,
    revision_of,
)

AT = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def test_0004_staff_are_kept_and_can_be_given_a_desk_passphrase(database_url: Database
                                                                ) -> None:
    engine = at_revision(database_url, "0004")
    with engine.begin() as connection:  # the columns of revision 0004 only
        connection.execute(sa.text(
            "INSERT INTO staff (staff_id, name, role, active, enrolled_at, changed_at)"
            " VALUES ('S1', 'Sipho', 'supervisor', :yes, :at, :at)"), {"yes": True, "at": AT})
    upgrade(engine)
    assert revision_of(engine) == HEAD
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    clock = FakeClock(local(2026, 7, 3, 14, 0))
    with Session(engine, expire_on_commit=False) as s:
        row = s.get(StaffRecord, "S1")
        assert row is not None
        assert (row.desk_hash, row.desk_failures, row.desk_locked_until) == (None, 0, None)
        view = desk.set_desk_passphrase(s, clock, actor="M1", staff_id="S1",
                                        new_passphrase="a passphrase for Sipho")  # noqa: S106
        assert view.has_passphrase
    downgrade_to(engine, "0004")
    inspector = sa.inspect(engine)
    assert "desk_sessions" not in inspector.get_table_names()
    assert "desk_hash" not in {c["name"] for c in inspector.get_columns("staff")}
    upgrade(engine)
    with Session(engine) as s:
        assert [r.staff_id for r in s.scalars(sa.select(StaffRecord))] == ["S1"]
    engine.dispose()
