"""Issue 33 point 2 at the desk: a manager row slipped into the database by hand (outside the
service) cannot sign in at a desk: `showdown desk login` exits 3 naming the missing
enrolment, the audit trail records the alert, and `leaderboard audit --verify` names the row
and the outside write (SQLite here; PostgreSQL in the soak tier, D387)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from cli.errors import EXIT_REFUSED
from cli.main import main
from leaderboard.models import AuditEntry, StaffRecord
from tests.cli.test_desk import Desk, central, run  # noqa: F401 (the fixtures)
from wire.signing import Signer


def test_a_manager_inserted_by_hand_is_refused_at_login_and_shows_in_verification(
        run: Desk, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    engine = run.served.engine
    with Session(engine) as s:  # what the hand-made row copies: a real manager's hashes
        model = s.get(StaffRecord, "desk-1")
        assert model is not None
        values = {c.name: getattr(model, c.key) for c in StaffRecord.__table__.columns}
    values |= {"staff_id": "X9", "name": "Not Enrolled"}
    # A connection of its own, as psql or sqlite3 would be: not the service's.
    outside = sa.create_engine(engine.url.render_as_string(hide_password=False))
    try:
        with outside.begin() as conn:
            conn.execute(sa.insert(StaffRecord.__table__).values(values))
    finally:
        outside.dispose()
    code, _, err = run.bare("login", "--staff-id", "X9", "--passphrase-file",
                            str(run.passphrase))
    assert code == EXIT_REFUSED, err
    assert "no enrolment record for X9" in err and "alerted" in err
    with Session(engine) as s:
        alerts = s.scalars(sa.select(AuditEntry.detail).where(
            AuditEntry.action == "alert.staff_not_enrolled")).all()
    assert any(a.get("staff_id") == "X9" for a in alerts), alerts
    code, _, err = run.bare("whoami")  # nobody signed in as X9
    assert code != 0
    capsys.readouterr()
    url = engine.url.render_as_string(hide_password=False)
    key = Signer.from_seed("leaderboard", bytes(range(32)))  # no head is signed here
    code = main(["leaderboard", "audit", "--verify", "--db", url, "--public-key",
                 key.public_key.enrolment_line(), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    named = {(f["kind"], f.get("table"), f.get("key")) for f in report["findings"]}
    assert ("staff_not_enrolled", "staff", "X9") in named or any(
        f["kind"] == "staff_not_enrolled" and "X9" in json.dumps(f) for f in report["findings"])
    assert any(f["kind"] == "outside_write" and "X9" in json.dumps(f)
               for f in report["findings"])
