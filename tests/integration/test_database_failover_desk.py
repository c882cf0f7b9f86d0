"""Issue 34 point 1: the desk API writes again after a database failover or switchover,
without a restart (D388). The desk routes on an engine on a primary and a
synchronous standby (tests/integration/pg_pair.py), by the multi-host URL.

- The primary SIGKILLed and the standby promoted: the next registration is stored on the
  new primary (the pooled connection that died is replaced at checkout).
- A switchover whose demoted primary keeps running, read-only, with the engine's pooled
  connections on it (the issue's anchor: the ping at checkout passes there and every write
  fails with SQLSTATE 25006): at most the one request under way answers 503 naming the
  database; the next is stored on the new primary."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from leaderboard.db import make_engine, upgrade
from leaderboard.models import Patron
from tests.fixtures.clock import FakeClock
from tests.integration.pg_pair import PgPair, require_pair
from tests.leaderboard.desk_api_support import Api
from tests.leaderboard.desk_fields import HEAT_TIME

pytestmark = [
    pytest.mark.soak,
]


def _patron(n: int) -> dict[str, str]:
    return {"name": f"Drill Patron {n}", "id_kind": "passport", "id_number": f"DRILL{n:05d}",
            "birth_date": "1980-01-01"}


async def test_the_desk_registers_again_after_a_kill_and_after_a_switchover() -> None:
    require_pair()
    pair = PgPair(synchronous=True)
    pair.start()
    engine = make_engine(pair.url())
    try:
        upgrade(engine)
        api = Api(engine, FakeClock(HEAT_TIME), sender=None)
        status, _ = await api.call("POST", "/patrons", _patron(1))
        assert status == 201

        lost = pair.kill_primary()
        promoted = pair.promote()
        status, body = await api.call("POST", "/patrons", _patron(2))
        assert status == 201, body  # the dead pooled connection is replaced at checkout
        pair.rebuild()
        assert pair.standby is lost and pair.primary is promoted

        demoted = pair.demote_primary()
        with engine.connect() as connection:  # pooled, on the demoted primary: reads pass
            assert connection.execute(text("SHOW transaction_read_only")).scalar() == "on"
        pair.promote()
        answers = [await api.call("POST", "/patrons", _patron(3))]
        if answers[0][0] != 201:
            answers.append(await api.call("POST", "/patrons", _patron(3)))
        assert [status for status, _ in answers] in ([201], [503, 201]), answers
        if len(answers) == 2:
            assert "database" in answers[0][1]["error"]
        pair.rebuild()
        assert pair.standby is demoted
        with Session(engine) as session:
            names = sorted(session.scalars(select(Patron.name)))
        assert names == [f"Drill Patron {n}" for n in (1, 2, 3)]
    finally:
        engine.dispose()
        pair.stop()
