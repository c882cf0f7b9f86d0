"""Dispute bundles countersigned by the central key (issue 33 point 8, D383): handed in at the
desk API (SQLite and PostgreSQL), checked against the enrolled tables' keys, countersigned and
stored; `showdown dispute verify --central-key` checks both signatures and says which is
missing or bad."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.routing import Mount

from cli.main import main
from leaderboard.desk.sender import NullSender
from leaderboard.desk_api.routes import desk_routes
from leaderboard.models import AuditEntry, Dispute
from tests.fixtures.clock import EPOCH
from tests.leaderboard.desk_api_support import Api, enrol_desk_staff
from tests.leaderboard.desk_helpers import FakeClock, settings
from tests.leaderboard.ingest_support import FakeTable, enroll, key_of, register_entry
from wire.dispute_bundle import Selection, build, check, countersign
from wire.signing import KeyRing

CENTRAL = key_of("leaderboard")
T01 = key_of("t01")


def table_bundle(entry: str = "E-2", *, by: str = "S01") -> dict[str, Any]:
    """A bundle t01 signed for an entry (its journal's parts are not what is tested here)."""
    return build(Selection(hand_ids=("t01-0001",), entry_ids=(entry,), records=(),
                           messages=()), [], selector="entry", ident=entry, signer=T01,
                 chain={"records": 0}, exported_at=EPOCH.isoformat(), exported_by=by)


@pytest.fixture
async def api(engine: sa.Engine) -> tuple[Api, int]:
    enroll(engine, FakeTable("t01", key=T01))
    register_entry(engine, "E-2", "P2")
    register_entry(engine, "E-3", "P3")
    clock = FakeClock(EPOCH)
    with Session(engine) as s:
        dispute = Dispute(entry_id="E-2", note="short paid", at=EPOCH)
        s.add(dispute)
        s.commit()
        dispute_id = dispute.id
    api = Api(engine, clock, NullSender(), staff_id="S01", role="supervisor")
    api.app = Starlette(routes=[Mount("/api/desk", routes=desk_routes(
        engine, settings(), NullSender(), clock, signer=CENTRAL))])
    return api, dispute_id


async def test_a_bundle_handed_in_is_countersigned_stored_and_served(
        api: tuple[Api, int], engine: sa.Engine) -> None:
    desk, dispute_id = api
    path = f"/dispute-records/{dispute_id}/bundles"
    status, body = await desk.call("POST", path, {"bundle": json.dumps(table_bundle())})
    assert status == 201, body
    signed = body["bundle"]
    assert check(signed, KeyRing([T01.public_key]), CENTRAL.public_key) == []
    statement = signed["countersignature"]
    assert (statement["dispute_id"], statement["key_id"]) == (dispute_id, "leaderboard")
    assert body["countersigned_by"] == "S01"
    status, listed = await desk.call("GET", path)
    assert status == 200 and [b["bundle"] for b in listed["bundles"]] == [signed]
    with Session(engine) as s:
        row = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "dispute.bundle_countersigned")).one()
        assert (row.actor, row.detail["dispute_id"]) == ("S01", dispute_id)


async def test_a_bundle_that_does_not_verify_or_concerns_another_entry_is_refused(
        api: tuple[Api, int], engine: sa.Engine) -> None:
    desk, dispute_id = api
    path = f"/dispute-records/{dispute_id}/bundles"
    changed = table_bundle()
    changed["parts"]["settlements"] = [{"hand_id": "t01-0001", "nets": {"1": 9_900}}]
    status, body = await desk.call("POST", path, {"bundle": json.dumps(changed)})
    assert status == 400 and "part settlements: SHA-256" in body["error"]
    other_key = table_bundle()
    other_key["signature"] = table_bundle(by="someone else")["signature"]
    status, body = await desk.call("POST", path, {"bundle": json.dumps(other_key)})
    assert status == 400 and "manifest: the signature does not match" in body["error"]
    status, body = await desk.call("POST", path, {"bundle": json.dumps(table_bundle("E-3"))})
    assert status == 400 and "not dispute" in body["error"] and "E-2" in body["error"]
    status, body = await desk.call("POST", path, {"bundle": "{not json"})
    assert status == 400 and "not JSON" in body["error"]
    assert (await desk.call("POST", "/dispute-records/999/bundles",
                            {"bundle": json.dumps(table_bundle())}))[0] == 404
    enrol_desk_staff(engine, desk.clock, "C01", "clerk")
    clerk = desk.sign_in("C01", "clerk")
    status, body = await desk.call("POST", path, {"bundle": json.dumps(table_bundle())},
                                   token=clerk)
    assert (status, body["role_needed"]) == (403, "supervisor")
    assert (await desk.call("GET", path))[1] == {"bundles": []}


def _verify(capsys: pytest.CaptureFixture[str], tmp_path: Path, bundle: dict[str, Any],
            *extra: str) -> tuple[int, str]:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    keys = tmp_path / "tables.keys"
    keys.write_text(T01.public_key.enrolment_line() + "\n")
    code = main(["dispute", "verify", str(path), "--keys", str(keys), *extra])
    out, err = capsys.readouterr()
    return code, out + err


def test_verify_checks_both_signatures_and_says_which_is_missing_or_bad(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    central = tmp_path / "central.pub"
    central.write_text(CENTRAL.public_key.enrolment_line() + "\n")
    bundle = table_bundle()
    signed = countersign(bundle, CENTRAL, dispute_id=7, at=EPOCH.isoformat())
    code, said = _verify(capsys, tmp_path, signed, "--central-key", str(central))
    assert code == 0
    assert "table signature: verified; central countersignature: verified" in said
    code, said = _verify(capsys, tmp_path, signed)
    assert code == 0 and "central countersignature: not checked (give --central-key)" in said
    code, said = _verify(capsys, tmp_path, bundle, "--central-key", str(central))
    assert code == 1 and "countersignature: missing" in said
    # The table's bundle changed (and signed again by the table) after the countersignature.
    later = {**table_bundle(by="someone else"),
             "countersignature": signed["countersignature"]}
    code, said = _verify(capsys, tmp_path, later, "--central-key", str(central))
    assert code == 1 and "countersignature: made over bundle digest" in said
    assert "table signature: verified" in said
    # The statement changed: another dispute.
    moved = json.loads(json.dumps(signed))
    moved["countersignature"]["dispute_id"] = 8
    code, said = _verify(capsys, tmp_path, moved, "--central-key", str(central))
    assert code == 1 and "countersignature: the signature does not match" in said
    # Countersigned by some other key than the central one.
    stranger = countersign(bundle, key_of("leaderboard", "stranger"), dispute_id=7,
                           at=EPOCH.isoformat())
    code, said = _verify(capsys, tmp_path, stranger, "--central-key", str(central))
    assert code == 1 and "central countersignature: bad" in said
    bad = tmp_path / "bad.pub"
    bad.write_text("leaderboard not-base64\n")
    code, said = _verify(capsys, tmp_path, signed, "--central-key", str(bad))
    assert code == 2 and "--central-key" in said
