"""The audit trail shows tampering, on SQLite and PostgreSQL: the rows the service writes are
hash-chained and verify; an insider's edit, removal or insertion made with a connection of
their own (plain sqlite3 / psycopg, as at a sqlite3 or psql prompt) is named by the check; a
forged head signature is caught; a staff row inserted by hand cannot sign in (refused, and an
alert in the trail)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.audit_trail.chain import AuditValues, append_audit
from leaderboard.audit_trail.heads import HeadState, head_due, sign_head
from leaderboard.db import upgrade
from leaderboard.desk import passphrases
from leaderboard.desk.auth import SignInRefused, sign_in
from leaderboard.desk.passphrases import hash_passphrase
from leaderboard.models import AuditEntry, AuditHead, OutsideWrite, TableRecord
from tests.fixtures.services import Database
from tests.leaderboard.audit_chain_support import (
    CENTRAL,
    MANAGER,
    PHRASES,
    desk_work,
    kinds,
    outside,
    placeholder,
    signed,
    verified,
)
from tests.leaderboard.desk_helpers import FakeClock, register, settings
from tests.leaderboard.roundtrip_support import TableLoop
from wire.signing import Signer


@pytest.fixture(autouse=True)
def _quick_passphrases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Passphrase hashes with scrypt's cost lowered (N 2^10): these tests are about the
    trail, and hashing and checking use the same setting."""
    monkeypatch.setattr(passphrases, "_N", 2**10)


MALLORY = "mallory's long phrase"


def audit_ids(engine: sa.Engine) -> list[int]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(AuditEntry.id).order_by(AuditEntry.id)))


def test_the_rows_the_service_writes_are_chained_and_verify(engine: sa.Engine,
                                                            clock: FakeClock) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    ids = audit_ids(engine)
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 7
    report = verified(engine)
    assert report.intact and report.findings == []
    assert (report.rows, report.heads_verified, report.last_signed_row) == (len(ids), 1, ids[-1])
    # The first row's hash, computed here from the stored values as docs/audit-trail.md says.
    with Session(engine) as s:
        first = s.get(AuditEntry, 1)
        assert first is not None and first.prev_hash == "0" * 64
        at = first.at.replace(tzinfo=UTC) if first.at.tzinfo is None else first.at
        material = ["showdown.audit.v1", 1, at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    first.actor, first.action,
                    json.dumps(first.detail, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False), "0" * 64]
        expected = hashlib.sha256(json.dumps(material, separators=(",", ":"),
                                             ensure_ascii=False).encode()).hexdigest()
        assert first.row_hash == expected
        second = s.get(AuditEntry, 2)
        assert second is not None and second.prev_hash == expected


def test_an_audit_row_edited_by_hand_is_named(engine: sa.Engine, database_url: Database,
                                              clock: FakeClock) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    with outside(database_url) as db:
        db.execute("UPDATE audit SET detail = '{\"staff_id\": \"S1\", \"role\": \"manager\"}'"
                   " WHERE id = 3")
    report = verified(engine)
    assert not report.intact
    found = kinds(report)
    assert ("changed_row", 3) in found
    assert ("head_mismatch", None) not in found
    assert ("outside_write", 3) in found
    outside_write = next(f for f in report.findings if f.kind == "outside_write")
    assert outside_write.message.startswith("UPDATE on audit 3 at ")


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link(engine: sa.Engine,
                                                             database_url: Database,
                                                             clock: FakeClock) -> None:
    desk_work(engine, clock)
    with Session(engine) as s:  # the insider recomputes row 3's hash as the code would
        row = s.get(AuditEntry, 3)
        assert row is not None and row.prev_hash is not None
        from leaderboard.audit_trail.chain import stored_row_hash

        row.actor = "someone else"
        forged = stored_row_hash(row, row.prev_hash)
        s.rollback()
    mark = placeholder(database_url)
    with outside(database_url) as db:
        db.execute(f"UPDATE audit SET actor = 'someone else', row_hash = {mark} WHERE id = 3",  # noqa: S608
                   (forged,))
    found = kinds(verified(engine))
    assert ("broken_link", 4) in found and ("changed_row", 3) not in found
    assert ("outside_write", 3) in found


def test_a_removed_audit_row_is_named(engine: sa.Engine, database_url: Database,
                                      clock: FakeClock) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    with outside(database_url) as db:
        db.execute("DELETE FROM audit WHERE id = 4")
    report = verified(engine)
    found = kinds(report)
    assert ("gap", 5) in found and ("broken_link", 5) in found
    assert ("outside_write", 4) in found
    gap = next(f for f in report.findings if f.kind == "gap")
    assert gap.message == "ids jump from 3 to 5: row 4 missing (removed)"


def test_the_last_rows_removed_are_caught_by_the_tip_and_the_head(
        engine: sa.Engine, database_url: Database, clock: FakeClock) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    last = audit_ids(engine)[-1]
    with outside(database_url) as db:
        db.execute(f"DELETE FROM audit WHERE id = {last}")  # noqa: S608
    found = kinds(verified(engine))
    assert ("tip_mismatch", last - 1) in found and ("head_mismatch", last) in found


def test_an_audit_row_inserted_by_hand_is_named(engine: sa.Engine, database_url: Database,
                                                clock: FakeClock) -> None:
    desk_work(engine, clock)
    last = audit_ids(engine)[-1]
    mark = placeholder(database_url)
    with outside(database_url) as db:  # with the previous row's hashes, to look chained
        db.execute(
            "INSERT INTO audit (id, at, actor, action, detail, prev_hash, row_hash)"  # noqa: S608
            f" SELECT id + 1, at, 'M1', 'staff.enrolled', {mark}, row_hash, row_hash"
            f" FROM audit WHERE id = {last}",
            ('{"staff_id": "X9", "role": "manager", "bootstrap": true}',))
    report = verified(engine)
    found = kinds(report)
    assert ("changed_row", last + 1) in found and ("outside_write", last + 1) in found
    assert ("tip_mismatch", last + 1) in found


def test_a_manager_inserted_by_hand_cannot_sign_in_and_is_alerted(
        engine: sa.Engine, database_url: Database, clock: FakeClock) -> None:
    desk_work(engine, clock)
    mark = placeholder(database_url)
    with outside(database_url) as db:
        db.execute("INSERT INTO staff (staff_id, name, role, active, enrolled_at, changed_at,"  # noqa: S608
                   f" desk_hash, desk_failures) VALUES ('X9', 'Mallory', 'manager', {mark},"
                   f" {mark}, {mark}, {mark}, 0)",
                   (True, datetime(2026, 7, 3, 9, tzinfo=UTC), datetime(2026, 7, 3, 9, tzinfo=UTC),
                    hash_passphrase(MALLORY)))
    with Session(engine) as s, pytest.raises(SignInRefused) as refused:
        sign_in(s, clock, staff_id="X9", passphrase_text=MALLORY, client="cli")
    assert refused.value.reason == "no_enrolment"
    assert str(refused.value).startswith("no enrolment record for X9: sign-in refused and the"
                                         " supervisor alerted")
    with Session(engine) as s:
        alert = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "alert.staff_not_enrolled")).one()
        assert (alert.detail["staff_id"], alert.detail["severity"]) == ("X9", "high")
        assert s.scalars(sa.select(OutsideWrite.row_key).where(
            OutsideWrite.table_name == "staff")).all() == ["X9"]
    report = verified(engine)
    found = kinds(report)
    assert ("alert", alert.id) in found and ("staff_not_enrolled", None) in found
    assert [f.message for f in report.findings if f.kind == "staff_not_enrolled"] == [
        "staff X9 (manager): no valid enrolment record: the audit trail holds no enrolment"
        " of it"]
    # The real manager still signs in.
    with Session(engine) as s:
        assert sign_in(s, clock, staff_id=MANAGER, passphrase_text=PHRASES[MANAGER],
                       client="cli").identity.role == "manager"


def test_a_role_raised_by_hand_is_refused(engine: sa.Engine, database_url: Database,
                                          clock: FakeClock) -> None:
    desk_work(engine, clock)
    with outside(database_url) as db:
        db.execute("UPDATE staff SET role = 'manager' WHERE staff_id = 'C1'")
    with Session(engine) as s, pytest.raises(SignInRefused) as refused:
        sign_in(s, clock, staff_id="C1", passphrase_text=PHRASES["C1"], client="cli")
    assert "name, role or enrolment time is not what its enrolment" in str(refused.value)


def test_a_forged_head_signature_is_caught(engine: sa.Engine, clock: FakeClock) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    mallory = Signer.from_seed("leaderboard", b"m" * 32)  # another key under the same id
    assert sign_head(engine, mallory, clock()) is None  # nothing new to sign
    with Session(engine) as s:
        append_audit(s.connection(), [AuditValues(at=clock(), actor="M1", action="note",
                                                  detail={})])
        s.commit()
    forged = sign_head(engine, mallory, clock())
    assert forged is not None
    report = verified(engine)
    assert kinds(report) == [("bad_head_signature", forged.row_id),
                             ("unsigned_tail", forged.row_id)]
    assert report.heads == 2 and report.heads_verified == 1


def test_rows_after_the_last_head_are_a_warning_not_tampering(engine: sa.Engine,
                                                              clock: FakeClock) -> None:
    desk_work(engine, clock)
    report = verified(engine)
    assert report.intact and kinds(report) == [("unsigned_tail", 1)]


def test_a_dropped_trigger_is_reported_and_outside_writes_are_append_only(
        engine: sa.Engine, database_url: Database, clock: FakeClock) -> None:
    desk_work(engine, clock)
    with outside(database_url) as db:
        db.execute("UPDATE staff SET name = 'Someone' WHERE staff_id = 'S1'")
        with pytest.raises(Exception, match="outside_writes is append-only"):
            db.execute("DELETE FROM outside_writes")
        on = "" if database_url.kind == "sqlite" else " ON staff"
        db.execute(f"DROP TRIGGER outside_write_staff_update{on}")
    found = kinds(verified(engine))
    assert ("outside_write", None) in found and ("trigger_missing", None) in found


def test_concurrent_writers_keep_one_chain(engine: sa.Engine, clock: FakeClock) -> None:
    def write(actor: str) -> None:
        for n in range(15):
            with Session(engine) as s:
                append_audit(s.connection(), [AuditValues(at=clock(), actor=actor,
                                                          action="note", detail={"n": n})])
                s.commit()

    threads = [threading.Thread(target=write, args=(f"w{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert audit_ids(engine) == list(range(1, 46))
    report = verified(engine)
    assert report.intact and kinds(report) == [("unsigned_tail", 1)]


def test_a_head_is_due_by_rows_or_by_time() -> None:
    now = datetime(2026, 7, 3, 12, tzinfo=UTC)
    at = datetime(2026, 7, 3, 11, 58, tzinfo=UTC)
    due = [head_due(HeadState(rows_since=rows, last_signed_at=last), now, every_rows=100,
                    every_s=300)
           for rows, last in ((0, None), (1, None), (99, at), (100, at), (1, at),
                              (1, datetime(2026, 7, 3, 11, 55, tzinfo=UTC)))]
    assert due == [False, True, False, True, False, True]


def test_the_head_names_the_tip_and_verifies(engine: sa.Engine, clock: FakeClock) -> None:
    desk_work(engine, clock)
    head = sign_head(engine, CENTRAL, clock())
    assert head is not None
    with Session(engine) as s:
        last = s.scalars(sa.select(AuditEntry).order_by(AuditEntry.id.desc()).limit(1)).one()
        stored = s.get(AuditHead, head.id)
        assert stored is not None and (stored.row_id, stored.row_hash) == (last.id,
                                                                           last.row_hash)


def test_the_rows_the_ingest_writes_join_the_same_chain(engine: sa.Engine, session: Session,
                                                        clock: FakeClock) -> None:
    loop = TableLoop(engine, clock)
    patron = register(session, clock, "8001015009087")
    e1 = desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=patron,
                        payment="cash").entry_id
    desk.open_heat(session, settings(), clock, actor="desk-1", table="t01", stage="qualifying")
    seating = desk.seat_entry(session, settings(), clock, actor="desk-1", entry_id=e1,
                              table="t01", seat=3)
    asyncio.run(loop.send(seating.command))  # the table never heard of the heat: refused
    session.expire_all()
    refused = session.scalars(sa.select(AuditEntry).where(
        AuditEntry.action == "command.refused")).one()
    assert refused.actor == "ingest" and refused.id == audit_ids(engine)[-1]
    signed(engine, clock)
    report = verified(engine)
    assert report.intact and report.findings == [] and report.last_signed_row == refused.id


def test_a_supervisor_inserted_by_hand_is_left_out_of_the_tables_roster(
        engine: sa.Engine, database_url: Database, clock: FakeClock) -> None:
    desk_work(engine, clock)
    with Session(engine) as s:
        s.add(TableRecord(table_id="t01", venue="casino-1", public_key="k", enrolled_at=clock(),
                          active=True))
        s.commit()
    mark = placeholder(database_url)
    with outside(database_url) as db:
        db.execute("INSERT INTO staff (staff_id, name, role, pin_hash, active, enrolled_at,"  # noqa: S608
                   f" changed_at, desk_failures) VALUES ('X8', 'Mallory', 'supervisor', {mark},"
                   f" {mark}, {mark}, {mark}, 0)",
                   ("pinhash", True, clock(), clock()))
    with Session(engine) as s:
        [command] = desk.send_roster(s, clock, actor=MANAGER)
        assert [m["staff_id"] for m in command.args["members"]] == [MANAGER, "S1"]
        sent = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "staff.roster_sent")).one()
        assert sent.detail["left_out"] == ["X8"]
        alert = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "alert.staff_not_enrolled")).one()
        assert (alert.detail["staff_id"], alert.detail["client"]) == ("X8", "roster")


def test_a_missing_trigger_is_put_back_at_the_next_upgrade_with_an_alert(
        engine: sa.Engine, database_url: Database, clock: FakeClock) -> None:
    desk_work(engine, clock)
    with outside(database_url) as db:
        on = "" if database_url.kind == "sqlite" else " ON audit"
        db.execute(f"DROP TRIGGER outside_write_audit_delete{on}")
    assert ("trigger_missing", None) in kinds(verified(engine))
    upgrade(engine)  # as the service's start does
    with outside(database_url) as db:
        db.execute("DELETE FROM audit WHERE id = 2")
    report = verified(engine)
    found = kinds(report)
    assert ("trigger_missing", None) not in found and ("outside_write", 2) in found
    [alert] = [f for f in report.findings if f.kind == "alert"]
    assert "alert.triggers_restored (high): 1 trigger(s) recording outside writes were missing" \
           " and are restored: outside_write_audit_delete" in alert.message
