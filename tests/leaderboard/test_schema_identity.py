"""Revision 0006_identity on a database with rows: every patron's registration document is
copied into ``patron_documents``, list rows get their name keys, old entries show payment not
recorded; the models match the migrations; down and up again keeps the rows."""

from __future__ import annotations

from datetime import date

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.db import head_revisions, upgrade
from leaderboard.models import Base, Entry, Exclusion, Patron, PatronDocument
from tests.fixtures.services import Database
from tests.leaderboard.test_schema_constraints import (
    NOW,
    at_revision,
    downgrade_to,
    entry,
    insert,
    patron,
    revision_of,
)

IDENTITY_TABLES = ("patron_documents", "identity_holds")


def test_a_0004_database_gains_documents_name_keys_and_standing(database_url: Database
                                                                 ) -> None:
    engine = at_revision(database_url, "0004")
    insert(engine, Patron, patron("P1"), patron("P2"))
    insert(engine, Entry, entry("E-1", "qualifying", "q-1", 3))
    insert(engine, Exclusion, {"list_kind": "self_exclusion", "id_number": "8001015009087",
                               "name": "MOKOENA, Thandí", "source": "NRGP",
                               "source_date": date(2026, 7, 1), "imported_at": NOW})
    upgrade(engine)
    assert revision_of(engine) == max(head_revisions())
    with Session(engine) as s:
        docs = s.execute(select(PatronDocument.patron_id, PatronDocument.kind,
                                PatronDocument.number).order_by(PatronDocument.id)).all()
        assert [tuple(d) for d in docs] == [("P1", "id_document", "id-P1"),
                                            ("P2", "id_document", "id-P2")]
        listed = s.scalars(select(Exclusion)).one()
        assert (listed.name_key, listed.letters_key, listed.birth_date) == (
            "mokoena thandi", "m t", None)
        person = s.get(Patron, "P1")
        assert person is not None and (person.standing, person.standing_reason) == (
            "clear", None)
        old = s.get(Entry, "E-1")
        assert old is not None and (old.payment, old.disqualified_at) == (None, None)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    downgrade_to(engine, "0004")
    inspector = sa.inspect(engine)
    assert not set(IDENTITY_TABLES) & set(inspector.get_table_names())
    assert "standing" not in {c["name"] for c in inspector.get_columns("patrons")}
    assert "payment" not in {c["name"] for c in inspector.get_columns("entries")}
    upgrade(engine)
    with Session(engine) as s:
        assert s.scalar(select(sa.func.count()).select_from(PatronDocument)) == 2
        assert s.scalar(select(sa.func.count()).select_from(Entry)) == 1
    engine.dispose()
