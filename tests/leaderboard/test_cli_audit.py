"""`showdown leaderboard audit` verifies every stored message again, on SQLite and PostgreSQL.

Messages are really sealed with Ed25519 keys and stored by the ingest itself, so the evidence
the audit reads is the evidence the ingest writes. Tampering is done in the database, as an
insider with write access would.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic import command

from cli.errors import EXIT_ERROR
from cli.leaderboard import AUDIT_FAILED
from cli.main import main
from leaderboard.audit import audit_messages
from leaderboard.db import alembic_config, make_engine
from leaderboard.models import AuditEntry, Message, TableRecord
from tests.fixtures.services import Database
from tests.leaderboard.ingest_support import (
    T0,
    FakeClock,
    FakeTable,
    enroll,
    key_of,
    make_ingestor,
)


async def ingest_some(engine: sa.Engine, clock: FakeClock) -> tuple[FakeTable, FakeTable]:
    """t01: a score, its acknowledgement and an alert; t02: two alerts; all stored."""
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    ingest = make_ingestor(engine, clock)
    results = await ingest.handle_batch([
        t01.score("E-1", 250_000), t01.ack("E-1", 250_000), t01.alert("shoe jam"),
        t02.alert("reader offline"), t02.alert("reader back")])
    assert [r.outcome for r in results] == ["stored"] * 5
    return t01, t02


def run_audit(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["leaderboard", "audit", "--db", url, *extra])
    return code, capsys.readouterr().out


def execute(engine: sa.Engine, statement: sa.Executable) -> None:
    with engine.begin() as connection:
        connection.execute(statement)


async def test_the_ingest_stores_the_evidence_and_every_message_verifies(
    engine: sa.Engine, database_url: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    t01, _ = await ingest_some(engine, FakeClock())
    with engine.connect() as connection:
        row = connection.execute(sa.select(Message.envelope, Message.payload_sha256).where(
            Message.table_id == "t01", Message.seq == 1)).one()
    _, payload = t01.sent[1]
    # The evidence is the payload byte for byte, and the SHA-256 of those bytes.
    assert row.envelope.encode("utf-8") == payload
    assert row.payload_sha256 == hashlib.sha256(payload).hexdigest()

    code, out = run_audit(database_url.url, capsys)
    assert code == 0
    assert out.splitlines() == [
        "messages: 5",
        "verified: 5 (against the enrolled key)",
        "legacy rows without evidence: 0 (stored before revision 0002; they cannot be"
        " verified again)",
        "FAILED: 0",
    ]


async def test_tampered_rows_fail_with_their_table_seq_and_reason(
    engine: sa.Engine, database_url: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    await ingest_some(engine, FakeClock())
    by_key = (Message.table_id == "t01")
    # t01 seq 1: the score figure changed in the stored body (the envelope left alone).
    with engine.connect() as connection:
        body = connection.scalar(sa.select(Message.body).where(by_key, Message.seq == 1))
    assert body is not None
    execute(engine, sa.update(Message).where(by_key, Message.seq == 1)
            .values(body={**body, "score": 950_000}))
    # t01 seq 2: the envelope rewritten and its hash recomputed: the signature no longer fits.
    with engine.connect() as connection:
        text = connection.scalar(sa.select(Message.envelope).where(by_key, Message.seq == 2))
    assert text is not None
    forged = text.replace('"score":250000', '"score":950000')
    assert forged != text
    execute(engine, sa.update(Message).where(by_key, Message.seq == 2).values(
        envelope=forged, payload_sha256=hashlib.sha256(forged.encode()).hexdigest()))
    # t01 seq 3: the hash no longer matches the envelope.
    execute(engine, sa.update(Message).where(by_key, Message.seq == 3)
            .values(payload_sha256="0" * 64))
    # t02 seq 1: half the evidence removed.
    execute(engine, sa.update(Message).where(Message.table_id == "t02", Message.seq == 1)
            .values(envelope=None))
    # A row as revision 0001 stored it: no evidence at all (legacy, not a failure).
    execute(engine, sa.insert(Message).values(table_id="t03", seq=1, type="alert",
                                              ts="2026-07-03T13:00:01.000Z", body={},
                                              received_at=T0))

    code, out = run_audit(database_url.url, capsys)
    assert code == AUDIT_FAILED
    lines = out.splitlines()
    assert lines[:4] == [
        "messages: 6",
        "verified: 1 (against the enrolled key)",
        "legacy rows without evidence: 1 (stored before revision 0002; they cannot be"
        " verified again)",
        "FAILED: 4",
    ]
    assert lines[4] == "FAILED t01 seq 1: the stored body differs from the signed envelope"
    assert lines[5].startswith("FAILED t01 seq 2: bad_signature: signature does not match")
    assert lines[6] == ("FAILED t01 seq 3: payload_sha256 is not the SHA-256 of the stored"
                        " envelope")
    assert lines[7] == "FAILED t02 seq 1: incomplete evidence: envelope is missing"
    assert len(lines) == 8

    code, out = run_audit(database_url.url, capsys, "--json")
    doc = json.loads(out)
    assert code == AUDIT_FAILED
    assert (doc["messages"], doc["verified"], doc["legacy_without_evidence"], doc["failed"]) \
        == (6, 1, 1, 4)
    assert [(f["table"], f["seq"]) for f in doc["failures"]] == [
        ("t01", 1), ("t01", 2), ("t01", 3), ("t02", 1)]


async def test_a_row_moved_to_another_seq_or_table_fails(engine: sa.Engine) -> None:
    await ingest_some(engine, FakeClock())
    # An insider renumbers t02's seq 2 as seq 7, and claims t02's seq 1 came from t01.
    execute(engine, sa.update(Message).where(Message.table_id == "t02", Message.seq == 2)
            .values(seq=7))
    execute(engine, sa.update(Message).where(Message.table_id == "t02", Message.seq == 1)
            .values(table_id="t01", seq=9))
    audit = audit_messages(engine)
    assert audit.verified == 3
    reasons = {(f.table, f.seq): f.reason for f in audit.failures}
    assert reasons[("t02", 7)] == "the stored seq differs from the signed envelope"
    # Verified against t01's key, the t02 envelope names another signer.
    assert reasons[("t01", 9)].startswith("unknown_signer")


async def test_a_replaced_key_verifies_what_arrived_while_it_was_enrolled(
    engine: sa.Engine, capsys: pytest.CaptureFixture[str], database_url: Database
) -> None:
    clock = FakeClock()
    t01, _ = await ingest_some(engine, clock)
    # The table gets a new key at T0 + 1 h, as the service's enrolment records it.
    new_key = key_of("t01", "replaced")
    replaced_at = T0 + timedelta(hours=1)
    with engine.begin() as connection:
        old = connection.scalar(sa.select(TableRecord.public_key)
                                .where(TableRecord.table_id == "t01"))
        connection.execute(sa.update(TableRecord).where(TableRecord.table_id == "t01")
                           .values(public_key=new_key.public_key.base64))
        connection.execute(sa.insert(AuditEntry).values(
            at=replaced_at, actor="config:leaderboard.toml", action="table.enrolment_changed",
            detail={"table": "t01", "old_key": old, "new_key": new_key.public_key.base64,
                    "old_venue": t01.venue, "new_venue": t01.venue, "was_active": True}))
    # After the change the ingest verifies t01 with the new key.
    t01.key = new_key
    clock.now = replaced_at + timedelta(minutes=5)
    ingest = make_ingestor(engine, clock)
    assert (await ingest.handle(*t01.alert("after the change"))).outcome == "stored"

    code, out = run_audit(database_url.url, capsys)
    assert code == 0
    assert "verified: 3 (against the enrolled key)" in out
    assert "verified with a replaced key: 3 (t01: 3;" in out

    # A message signed with the old key but stored after the key was replaced fails: the
    # ingest would have refused it then.
    execute(engine, sa.update(Message).where(Message.table_id == "t01", Message.seq == 3)
            .values(received_at=replaced_at + timedelta(seconds=1)))
    audit = audit_messages(engine)
    assert audit.former_key == {"t01": 2}
    assert [(f.table, f.seq, f.reason.split(":")[0]) for f in audit.failures] == [
        ("t01", 3, "bad_signature")]


async def test_a_table_no_longer_enrolled_fails(engine: sa.Engine) -> None:
    await ingest_some(engine, FakeClock())
    execute(engine, sa.delete(TableRecord).where(TableRecord.table_id == "t02"))
    audit = audit_messages(engine)
    assert audit.verified == 3
    assert {(f.table, f.seq) for f in audit.failures} == {("t02", 1), ("t02", 2)}
    assert audit.failures[0].reason == "table t02 is not enrolled (no key to verify against)"


def test_a_database_still_at_revision_0001_is_refused(
    database_url: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(database_url.url)
    with engine.begin() as connection:
        cfg = alembic_config(database_url.url)
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "0001")
    engine.dispose()
    assert main(["leaderboard", "audit", "--db", database_url.url]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "at schema revision 0001, which keeps no evidence" in err
    assert len(err.strip().splitlines()) == 1
