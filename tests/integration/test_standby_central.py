"""Issue 34 point 3: a standby central service. Two real `showdown leaderboard serve`
processes on one database (SQLite file, PostgreSQL schema), active and standby by the central
lease, the real Mosquitto broker and a real simulated table daemon playing two heats.

Mid-heat the active instance is SIGKILLed: the standby serves ingest, the page and the desk
API within the issue's 10 s (measured and printed). The killed one is started again (a
standby now); then the active one is frozen (SIGSTOP) past its lease, so the other takes
over, and a desk write (a sign-in, which the desk audits) is queued at the frozen one before
it is let go (SIGCONT): the write is refused, the old instance steps down (exit 75) and does
not take messages. At the end every message the table journaled is stored once, in order and
as signed; the lease's epoch is 3, the audit trail verifies, and the only desk write in the
trail is the one made to the active instance. A lone instance frozen past its lease (nobody
took it) pauses its ingest and resumes after its next renewal, without a restart.
"""

from __future__ import annotations

import json
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from controller.journal import Journal
from leaderboard.models import AuditEntry, CentralLease, Message, Rejection, TableProgress
from tests import services
from tests.fixtures.services import Database, require_service
from tests.integration.central_pair import CentralPair
from tests.integration.cluster_support import (
    Service,
    ServiceLog,
    table_config,
    tournament_now,
    wait_until,
)
from tests.integration.daemon_support import REPO
from wire.envelope import envelope_for
from wire.signing import Signer

pytestmark = [pytest.mark.slow, pytest.mark.soak, pytest.mark.mosquitto]

HAND_PAUSE_S = 1.5
HEATS = 2
ISSUE_LIMIT_S = 10.0  # "the standby takes over ... within 10 s of the active one's SIGKILL"
LEASE_LOST_EXIT = 75


def _stored(database: str, table: str) -> list[Message]:
    engine = sa.create_engine(database)
    try:
        with Session(engine) as session:
            rows = session.scalars(sa.select(Message).where(Message.table_id == table)
                                   .order_by(Message.id)).all()
            for row in rows:
                _ = row.envelope  # deferred: load it before the session closes
            return list(rows)
    finally:
        engine.dispose()


def _queue_sign_in(port: int, staff_id: str) -> socket.socket:
    """A desk sign-in sent to an instance (the kernel takes it while the process is
    frozen); the socket to read the answer from."""
    body = json.dumps({"staff_id": staff_id, "passphrase": "not the one"}).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /api/desk/session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


def _answer_status(sock: socket.socket) -> int:
    """The HTTP status of the answer on ``sock`` (0: closed without one)."""
    data = b""
    with sock:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _sign_ins(database: str) -> list[str]:
    engine = sa.create_engine(database)
    try:
        with Session(engine) as session:
            return [str(r.detail.get("staff_id")) for r in session.scalars(
                sa.select(AuditEntry).where(AuditEntry.action == "desk.sign_in_failed"))]
    finally:
        engine.dispose()


def _takeovers(database: str) -> list[tuple[int, str, str | None]]:
    """The audit chain's lease takeovers: (epoch, instance's name, the one it followed)."""
    engine = sa.create_engine(database)
    try:
        with Session(engine) as session:
            return [(int(r.detail["epoch"]), str(r.detail["instance"]).split("/")[0],
                     None if r.detail["previous"] is None
                     else str(r.detail["previous"]).split("/")[0])
                    for r in session.scalars(sa.select(AuditEntry).where(
                        AuditEntry.action == "central.lease_taken").order_by(AuditEntry.id))]
    finally:
        engine.dispose()


def test_the_standby_takes_over_and_two_writers_never_run(tmp_path: Path,
                                                          database_url: Database) -> None:
    require_service("Mosquitto", services.mosquitto_up(), "{}:{}".format(*services.MOSQUITTO))
    token = secrets.token_hex(3)
    venue, table = f"standby-{token}", f"t-{token}"
    broker = "{}:{}".format(*services.MOSQUITTO)
    database = database_url.url
    tournament = tournament_now(tmp_path)
    table_path, signer = table_config(tmp_path / "table", venue=venue, table=table,
                                      brokers=[broker], hand_pause=HAND_PAUSE_S,
                                      tournament=tournament, heats=HEATS)
    pair = CentralPair.configure(tmp_path / "central", venue=venue, database=database,
                                 broker=broker, tables={table: signer}, tournament=tournament)
    daemon = Service(["table", "run", "--config", str(table_path)],
                     ServiceLog(tmp_path / "table.log"))
    journal_path = tmp_path / "table" / "journal.sqlite"
    a, b = pair.services["a"], pair.services["b"]
    try:
        pair.start()
        assert pair.active() == "a" and pair.role("b") == "standby"
        daemon.start()
        wait_until("hands ingested", lambda: sum(
            m.type == "hand.settled" for m in _stored(database, table)) >= 2, daemon, a, b)

        # 1. The active instance SIGKILLed mid-heat: the standby serves within 10 s.
        killed = pair.kill_active()
        print(f"\nstandby central ({database_url.kind}): {killed.text()}")
        assert killed.lost == "a" and killed.survivor == "b"
        assert killed.serving_s <= ISSUE_LIMIT_S, killed.text()

        # 2. The killed one back, as a standby.
        pair.restart("a")
        wait_until("a standby", lambda: pair.role("a") == "standby", a, b)

        # 3. Two writers tried: "b" frozen past its lease, "a" takes over; a desk write
        # waits at the frozen "b" and meets it when it is let go.
        b_process = b.process
        assert b_process is not None
        b_process.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            takeover = pair.time_takeover("b", "a", frozen)
            late_write = _queue_sign_in(pair.ports["b"], "written-to-b")
        finally:
            b_process.send_signal(signal.SIGCONT)
        print(f"standby central ({database_url.kind}): frozen past its lease: {takeover.text()}")
        late_status = _answer_status(late_write)
        b_code = b_process.wait(timeout=60)
        assert late_status == 503  # refused (by the gate or the fence), never a desk answer
        assert b_code == LEASE_LOST_EXIT
        lost = b.log.last("central_lease_lost")
        assert lost is not None
        print(f"standby central ({database_url.kind}): the frozen instance, let go, answered"
              f" the desk write {late_status} and stepped down: {lost['reason']}")
        assert pair.get("a", "/api/desk/session", method="POST",
                        body={"staff_id": "written-to-a", "passphrase": "x"})[0] == 401

        # The heats end; everything the table journaled reaches the active instance.
        def complete() -> bool:
            with Journal.open(journal_path, read_only=True) as journal:
                last, pending = journal.last_seq(), journal.pending_count()
            stored = _stored(database, table)
            return (pending == 0 and len(stored) == last
                    and [m.type for m in stored].count("heat.closed") == HEATS)

        wait_until("every message of the heats stored", complete, daemon, a)
    finally:
        table_code = daemon.stop()
        codes = pair.stop()
    assert table_code == 0 and codes["a"] == 0

    with Journal.open(journal_path, read_only=True) as journal:
        journaled = journal.messages(1)
    stored = _stored(database, table)
    assert sorted(m.seq for m in stored) == [m.seq for m in journaled] == list(
        range(1, len(journaled) + 1))  # none lost, none twice
    by_seq = {m.seq: m for m in stored}
    for message in journaled:
        signed = envelope_for(message, venue=venue, table=table, signer=signer).encode()
        row = by_seq[message.seq]
        assert row.envelope is not None and row.envelope.encode("utf-8") == signed, row.seq
    engine = sa.create_engine(database)
    try:
        with Session(engine) as session:
            assert session.scalars(sa.select(Rejection)).all() == []
            progress = session.get(TableProgress, table)
            assert progress is not None and progress.contiguous_seq == len(journaled)
            lease = session.get(CentralLease, 1)
            assert lease is not None and lease.epoch == 3 and lease.holder.startswith("a/")
    finally:
        engine.dispose()
    assert _sign_ins(database) == ["written-to-a"]  # the frozen one's write never landed
    # Who was active from when is in the chain (D420): a, then b, then a again.
    assert _takeovers(database) == [(1, "a", None), (2, "b", "a"), (3, "a", "b")]
    verify = subprocess.run(
        [sys.executable, "-m", "cli", "leaderboard", "audit", "--db", database, "--verify",
         "--config", str(pair.configs["a"])], capture_output=True, text=True, cwd=REPO,
        check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    print(f"standby central ({database_url.kind}): {len(journaled)} messages stored once"
          f" each, 0 lost, 0 doubled; lease epoch {lease.epoch}; audit trail intact")


def test_a_lone_instance_frozen_past_its_lease_pauses_and_resumes(tmp_path: Path) -> None:
    """Renewals late but nobody took the lease (no standby running; or the database slow):
    the instance stops its broker link while it cannot prove it holds the lease and takes
    it up again after the next renewal, without a restart."""
    require_service("Mosquitto", services.mosquitto_up(), "{}:{}".format(*services.MOSQUITTO))
    pair = CentralPair.configure(
        tmp_path / "central", venue=f"lone-{secrets.token_hex(3)}",
        database=f"sqlite:///{tmp_path / 'leaderboard.sqlite3'}",
        broker="{}:{}".format(*services.MOSQUITTO), tables={"t1": Signer.generate("t1")},
        tournament=tournament_now(tmp_path), lease_s=2.0)
    a = pair.services["a"]
    try:
        a.start()
        wait_until("central a ready", lambda: a.log.last("ready") is not None, a)
        process = a.process
        assert process is not None
        process.send_signal(signal.SIGSTOP)
        time.sleep(3.0)  # past the 2 s lease
        process.send_signal(signal.SIGCONT)

        def serving() -> bool:  # paused at once, then subscribed again after a renewal
            paused = a.log.last("central_ingest_paused") is not None
            subscribed = len(list(a.log.events("ingest_subscribed")))
            status, body = pair.get("a", "/healthz", timeout=1.0)
            return (status == 200 and body.get("subscribed") is True
                    and subscribed == (2 if paused else 1))

        wait_until("the instance serving again", serving, a)
        assert pair.get("a", "/healthz")[1]["epoch"] == 1  # its own lease, never lost
        assert a.log.last("central_lease_lost") is None
        print(f"\nlone instance frozen past its lease: ingest paused"
              f" {a.log.last('central_ingest_paused') is not None}, resumed, epoch 1")
    finally:
        codes = pair.stop()
    assert codes["a"] == 0
