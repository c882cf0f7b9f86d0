"""Two central instances started together on an empty database (the standby central service,
docs/operations/standby-central.md) both migrate it at start: one migrates, the other waits
and finds the schema at its head; neither fails."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from leaderboard.db import head_revisions, make_engine, upgrade
from tests.fixtures.services import Database


def test_two_instances_migrating_an_empty_database_at_once_both_succeed(
    database_url: Database,
) -> None:
    engines = [make_engine(database_url.url) for _ in range(2)]
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def migrate(engine: sa.Engine) -> None:
        start.wait()
        try:
            upgrade(engine)
        except BaseException as exc:  # the test reports it below
            failures.append(exc)

    try:
        threads = [threading.Thread(target=migrate, args=(e,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert failures == []
        with engines[0].connect() as conn:
            revisions = set(conn.execute(sa.text("SELECT version_num FROM alembic_version"))
                            .scalars())
        assert revisions == set(head_revisions())
    finally:
        for engine in engines:
            engine.dispose()
