"""Revision 0018_audit_chain on a database with rows, on SQLite and PostgreSQL: the existing
audit rows are chained as found (and verify), a staff member whose enrolment the old log shows
gets a carried enrolment and signs in, one without is refused; the models match the
migrations; down and up again keeps the rows. And `showdown leaderboard audit --verify`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.orm import Session

from cli.errors import EXIT_USAGE
from cli.leaderboard import AUDIT_FAILED
from cli.main import main
from leaderboard.db import upgrade
from leaderboard.desk import passphrases
from leaderboard.desk.auth import SignInRefused, sign_in
from leaderboard.desk.passphrases import hash_passphrase
from leaderboard.models import AuditEntry, Base, StaffRecord
from tests.fixtures.services import Database
from tests.leaderboard.audit_chain_support import (
    CENTRAL,
    desk_work,
    kinds,
    outside,
    signed,
    verified,
)
from tests.leaderboard.desk_helpers import FakeClock
from tests.leaderboard.test_schema_constraints import at_revision, downgrade_to, insert

OLD = datetime(2026, 6, 1, 10, tzinfo=UTC)
M1_PHRASE, X9_PHRASE = "manager's long phrase", "mallory's long phrase"


@pytest.fixture(autouse=True)
def _quick_passphrases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Passphrase hashes with scrypt's cost lowered (hashing and checking alike)."""
    monkeypatch.setattr(passphrases, "_N", 2**10)


def staff(staff_id: str, role: str, phrase: str) -> dict[str, object]:
    return {"staff_id": staff_id, "name": f"N {staff_id}", "role": role, "active": True,
            "enrolled_at": OLD, "changed_at": OLD, "desk_hash": hash_passphrase(phrase),
            "desk_failures": 0}


def test_a_0011_database_is_chained_and_keeps_the_enrolments_its_log_shows(
        database_url: Database, clock: FakeClock) -> None:
    engine = at_revision(database_url, "0011")
    insert(engine, StaffRecord, staff("M1", "manager", M1_PHRASE),
           staff("X9", "manager", X9_PHRASE))
    insert(engine, AuditEntry,
           {"id": 1, "at": OLD, "actor": "M1", "action": "staff.enrolled",
            "detail": {"staff_id": "M1", "role": "manager"}},
           {"id": 2, "at": OLD, "actor": "M1", "action": "desk.signed_in",
            "detail": {"staff_id": "M1"}},
           {"id": 5, "at": OLD, "actor": "X9", "action": "desk.signed_in",
            "detail": {"staff_id": "X9"}})
    upgrade(engine)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    with Session(engine) as s:
        carried = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "staff.enrolment_carried")).all()
        assert [(c.id, c.detail["staff_id"], c.detail["enrolled_row"]) for c in carried] == [
            (6, "M1", 1)]
    report = verified(engine)
    # The gap 2..5 is older than the chain: a warning; nothing was touched since.
    assert [(f.kind, f.severity, f.row_id) for f in report.findings] == [
        ("gap", "warning", 5), ("unsigned_tail", "warning", 1),
        ("staff_not_enrolled", "tampering", None)]
    assert report.legacy_until == 5
    with Session(engine) as s:
        assert sign_in(s, clock, staff_id="M1", passphrase_text=M1_PHRASE,
                       client="cli").identity.staff_id == "M1"
        with pytest.raises(SignInRefused, match="no enrolment record for X9"):
            sign_in(s, clock, staff_id="X9", passphrase_text=X9_PHRASE,
                    client="cli")
    with engine.connect() as connection:
        last = connection.scalar(sa.select(sa.func.max(AuditEntry.id)))
        rows = connection.scalar(sa.select(sa.func.count()).select_from(AuditEntry)) or 0
    downgrade_to(engine, "0011")
    assert "audit_tip" not in sa.inspect(engine).get_table_names()
    upgrade(engine)  # chained again from the first row: all of them are older than the chain
    again = verified(engine)
    assert again.legacy_until == last and again.rows == rows + 1  # M1's enrolment carried
    engine.dispose()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["leaderboard", "audit", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_says_intact_or_names_the_tampered_row(
        engine: sa.Engine, database_url: Database, clock: FakeClock,
        capsys: pytest.CaptureFixture[str]) -> None:
    desk_work(engine, clock)
    signed(engine, clock)
    key = CENTRAL.public_key.enrolment_line()
    code, out, _ = run(capsys, "--db", database_url.url, "--verify", "--public-key", key)
    assert code == 0 and "\nINTACT" in out
    with outside(database_url) as db:
        db.execute("UPDATE audit SET actor = 'nobody' WHERE id = 2")
    code, out, _ = run(capsys, "--db", database_url.url, "--verify", "--public-key", key,
                       "--json")
    doc = json.loads(out)
    assert code == AUDIT_FAILED and doc["intact"] is False
    assert [(f["kind"], f["row"]) for f in doc["findings"]] == [("changed_row", 2),
                                                               ("outside_write", 2)]
    assert kinds(verified(engine)) == [("changed_row", 2), ("outside_write", 2)]


def test_the_command_needs_the_central_key(engine: sa.Engine, database_url: Database,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--db", database_url.url, "--verify")
    assert code == EXIT_USAGE and "--verify needs the central public key" in err
    code, _, err = run(capsys, "--db", database_url.url, "--verify", "--public-key", "nonsense")
    assert code == EXIT_USAGE and "--public-key 'nonsense': give the key id" in err
    code, _, err = run(capsys, "--db", database_url.url, "--verify", "--public-key",
                       "leaderboard AAAA")
    assert code == EXIT_USAGE and "--public-key:" in err and "Traceback" not in err
