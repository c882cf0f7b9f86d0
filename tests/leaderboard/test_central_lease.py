"""The central lease (issue 34 point 3), on SQLite and PostgreSQL: two instances' engines on
one database, each fenced by its own lease. Only the holder commits, audited writes and plain
ones alike; an instance frozen past its lease, taken over, has its next write refused and is
told it lost the lease; a takeover waits for a write the old holder is committing (the fence's
lock), never slipping in between its check and its commit; a standby's HTTP answers are 503
naming the active instance."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from leaderboard.audit import verify_trail
from leaderboard.audit_trail.chain import audit_row
from leaderboard.central_lease import CentralLease, LeaseLost, install_fence
from leaderboard.db import make_engine
from leaderboard.models import AuditEntry, TableRecord
from leaderboard.standby_web import RoleGate
from tests.fixtures.clock import FakeClock
from tests.fixtures.services import Database
from tests.leaderboard.ingest_support import (
    FakeTable,
    enroll,
    make_ingestor,
    rejection_reasons,
    stored,
)
from wire.signing import Signer

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


class Instance:
    """One central instance's engine and lease on the test's database."""

    def __init__(self, url: str, name: str) -> None:
        self.engine = make_engine(url)
        self.lost: list[str] = []
        self.lease = CentralLease(self.engine, name, lease_s=30.0, on_lost=self.lost.append)
        install_fence(self.engine, self.lease)

    def audited_write(self, what: str) -> None:
        """A desk-like write: an audit row (the chain's tip locked)."""
        with Session(self.engine) as session, session.begin():
            audit_row(session, NOW, self.lease.holder, "test.write", {"what": what})

    def plain_write(self, table_id: str) -> None:
        """A write that takes no audit lock (as ingest's rejections)."""
        with Session(self.engine) as session, session.begin():
            session.add(TableRecord(table_id=table_id, venue="v", public_key="k",
                                    enrolled_at=NOW, active=True))


@pytest.fixture
def two(engine: sa.Engine, database_url: Database) -> Iterator[tuple[Instance, Instance]]:
    """Instances "a" and "b" on the migrated database."""
    a, b = Instance(database_url.url, "a"), Instance(database_url.url, "b")
    try:
        yield a, b
    finally:
        a.engine.dispose()
        b.engine.dispose()


def expire(engine: sa.Engine) -> None:
    """The holder frozen past its lease: its expiry in the past (as time would make it)."""
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE central_lease SET expires_at = expires_at - 3600"))


def written(engine: sa.Engine) -> tuple[list[str], list[str]]:
    """The test's audit rows (what) and table rows."""
    with Session(engine) as session:
        audit = [r.detail["what"] for r in session.scalars(
            sa.select(AuditEntry).where(AuditEntry.action == "test.write")
            .order_by(AuditEntry.id))]
        tables = list(session.scalars(sa.select(TableRecord.table_id)
                                      .order_by(TableRecord.table_id)))
    return audit, tables


def test_only_the_lease_holder_writes(engine: sa.Engine,
                                      two: tuple[Instance, Instance]) -> None:
    a, b = two
    with pytest.raises(LeaseLost, match="standby"):  # nobody holds it yet
        a.audited_write("before")
    assert a.lease.take() == 1
    assert b.lease.take() is None  # held, not expired
    assert b.lease.view().holder == "a"
    a.audited_write("a1")
    a.plain_write("t-a")
    with pytest.raises(LeaseLost, match="standby"):
        b.audited_write("b-standby")
    with pytest.raises(LeaseLost):
        b.plain_write("t-b-standby")
    assert a.lease.renew() is True

    # "a" frozen past its lease; "b" takes over (the epoch goes up) and writes.
    expire(engine)
    assert b.lease.take() == 2
    b.audited_write("b1")
    # "a" resumes and tries both kinds of write: refused, and it learns it lost the lease.
    with pytest.raises(LeaseLost, match="held by b"):
        a.audited_write("a-after")
    assert a.lease.epoch is None and len(a.lost) == 1
    with pytest.raises(LeaseLost, match="standby"):
        a.plain_write("t-a-after")
    assert a.lease.renew() is False
    assert written(engine) == (["a1", "b1"], ["t-a"])
    assert b.lease.view().epoch == 2 and b.lost == []


def test_every_takeover_is_in_the_audit_chain_naming_the_instance_it_followed(
        engine: sa.Engine, two: tuple[Instance, Instance]) -> None:
    """D420: the chain says which instance was active from when; a refused take writes
    nothing; the chain verifies across the takeovers."""
    a, b = two
    assert a.lease.take() == 1
    a.audited_write("a1")
    assert b.lease.take() is None  # held: nothing written
    expire(engine)
    assert b.lease.take() == 2
    b.audited_write("b1")
    with Session(engine) as session:
        rows = [(r.actor, r.action, r.detail) for r in session.scalars(
            sa.select(AuditEntry).where(AuditEntry.action.in_(
                ["central.lease_taken", "test.write"])).order_by(AuditEntry.id))]
    assert rows == [
        ("(central instance a)", "central.lease_taken",
         {"instance": "a", "epoch": 1, "previous": None, "previous_epoch": 0, "lease_s": 30.0}),
        ("a", "test.write", {"what": "a1"}),
        ("(central instance b)", "central.lease_taken",
         {"instance": "b", "epoch": 2, "previous": "a", "previous_epoch": 1, "lease_s": 30.0}),
        ("b", "test.write", {"what": "b1"}),
    ]
    report = verify_trail(engine, Signer.from_seed("leaderboard", bytes(32)).public_key)
    assert report.intact, report.findings


def test_a_resumed_holder_learns_it_lost_at_its_next_renewal(
        engine: sa.Engine, two: tuple[Instance, Instance]) -> None:
    a, b = two
    assert a.lease.take() == 1
    expire(engine)
    assert b.lease.take() == 2
    assert a.lease.renew() is False
    assert a.lease.epoch is None and a.lost and "another instance took" in a.lost[0]
    assert not a.lease.active


def test_a_takeover_waits_for_the_holders_commit(engine: sa.Engine,
                                                 two: tuple[Instance, Instance]) -> None:
    """The old holder's fence check and its commit are one step for the taker: its UPDATE
    waits (PostgreSQL: the FOR SHARE lock; SQLite: the write lock) and comes after."""
    a, b = two
    assert a.lease.take() == 1
    expire(engine)
    order: list[str] = []
    session = Session(a.engine)
    session.begin()
    session.add(TableRecord(table_id="t-late", venue="v", public_key="k", enrolled_at=NOW,
                            active=True))
    session.flush()
    a.lease.check(session.connection())  # the fence's read, as at commit (lock taken)

    def take() -> None:
        epoch = b.lease.take()
        order.append(f"b took {epoch}")

    taker = threading.Thread(target=take)
    taker.start()
    time.sleep(0.5)  # the taker has had time to slip in, were it able to
    order.append("a committed")
    session.commit()
    session.close()
    taker.join(timeout=30)
    assert order == ["a committed", "b took 2"]
    assert written(engine)[1] == ["t-late"]
    with pytest.raises(LeaseLost):
        a.plain_write("t-after")


def test_the_ingest_of_an_instance_that_lost_the_lease_stores_nothing(
        engine: sa.Engine, two: tuple[Instance, Instance]) -> None:
    """Message ingest takes no audit row of its own: the fence still refuses its batch, at
    once (no retry message by message, no rejection stored)."""
    a, b = two
    assert a.lease.take() == 1
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(a.engine, FakeClock())
    first = asyncio.run(ingest.handle(*t01.hand("h1")))
    assert first.outcome == "stored"
    expire(engine)
    assert b.lease.take() == 2
    with pytest.raises(LeaseLost, match="held by b"):
        asyncio.run(ingest.handle(*t01.hand("h2")))
    assert a.lease.epoch is None and len(a.lost) == 1
    assert [seq for _table, seq, _type in stored(engine)] == [1]
    assert rejection_reasons(engine) == []


async def _call(app: Any, path: str) -> tuple[int, dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "GET", "path": path, "headers": [],
               "query_string": b"", "root_path": ""}, receive, send)
    status = int(sent[0]["status"])
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, json.loads(body)


def test_a_standby_answers_503_naming_the_active_instance(
        two: tuple[Instance, Instance]) -> None:
    a, b = two
    assert a.lease.take() == 1
    gate = RoleGate(b.lease)
    b.lease.view()
    for path in ("/healthz", "/", "/api/desk/whoami"):
        status, body = asyncio.run(_call(gate, path))
        assert status == 503
        assert body["status"] == "standby" and body["active"] == "a"
        assert body["instance"] == "b" and "standby" in body["error"]

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"served": true}'})

    active = RoleGate(a.lease)
    active.inner = inner
    assert asyncio.run(_call(active, "/healthz")) == (200, {"served": True})
    a.lease.lost("test")  # the moment it loses the lease, it answers as a standby
    assert asyncio.run(_call(active, "/healthz"))[0] == 503
