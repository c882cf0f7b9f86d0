"""Projections of what people did at a table's console (issue 12): disputes, payout checks,
staff sign-ins (only stored), an acknowledgement's signature evidence and the manual mark of a
hand (rule 58); through the batch path (Ingestor.handle_batch) and the one-by-one path
(projections.project), on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.ingest import Ingestor
from leaderboard.ingest import storing as ingest_storing
from leaderboard.models import Dispute, Hand, Message, PayoutCheck, Score
from leaderboard.projections import MALFORMED_BODY, PROJECTION_REASONS, project
from leaderboard.projections import decoding as projection_decoding
from leaderboard.standings.view import ViewOptions, format_text, standings
from tests.leaderboard.desk_helpers import FakeClock as DeskClock
from tests.leaderboard.desk_helpers import local, settings
from tests.leaderboard.ingest_support import (
    ROOT,
    T0,
    VENUE,
    FakeClock,
    FakeTable,
    enroll,
    key_of,
    register_entry,
    stored,
)
from wire.envelope import Envelope, seal

MISMATCH = {"seat": 2, "spot": "ante", "expected": 20_000, "held": 25_000}
DISPUTE = {"entry_id": "E1", "score": 23_450, "note": "hand 12 was paid short",
           "stage": "qualifying", "heat_id": "heat-1", "at": "2026-07-03T13:02:00Z"}
OVERRIDE = {"hand_id": "t01-000002", "heat_id": "heat-1", "outcome": "overridden",
            "mismatches": [MISMATCH], "unverifiable": [], "by": "S1",
            "reason": "player walked away with the overpay", "at": "2026-07-03T13:03:00Z"}
VERIFIED = {"hand_id": "t01-000001", "heat_id": "heat-1", "outcome": "verified",
            "mismatches": [], "unverifiable": [], "at": "2026-07-03T13:01:00Z"}
SIGN_IN = {"event": "signed_in", "method": "pin", "staff_id": "D12", "role": "dealer",
           "detail": "", "at": "2026-07-03T12:00:00Z"}


@pytest.fixture
def ingest(engine: sa.Engine) -> Ingestor:
    return Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)


def sealed(kind: str, body: dict[str, Any], seq: int) -> Envelope:
    return seal(venue=VENUE, table="t01", seq=seq, wall=T0 + timedelta(seconds=seq),
                type=kind, body=body, boot="b", mono=seq, signer=key_of("t01"))


def dispute_rows(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as c:
        return [(r.entry_id, r.table_id, r.seq, r.stage, r.heat_id, r.score_cents, r.note,
                 r.resolved_at) for r in c.execute(sa.select(Dispute).order_by(Dispute.seq))]


def payout_rows(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as c:
        return [(r.hand_id, r.table_id, r.seq, r.outcome, r.mismatches, r.by, r.reason)
                for r in c.execute(sa.select(PayoutCheck).order_by(PayoutCheck.seq))]


EXPECTED_DISPUTE = ("E1", "t01", 2, "qualifying", "heat-1", 23_450, "hand 12 was paid short",
                    None)
EXPECTED_PAYOUTS = [("t01-000001", "t01", 3, "verified", [], None, None),
                    ("t01-000002", "t01", 4, "overridden", [MISMATCH], "S1",
                     "player walked away with the overpay")]


async def test_a_batch_projects_disputes_and_payout_checks_and_stores_staff_sessions(
    engine: sa.Engine, ingest: Ingestor, monkeypatch: pytest.MonkeyPatch
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    one_by_one: list[str] = []
    real_project = ingest_storing.project

    def spy(connection: Any, envelope: Any, **kw: Any) -> Any:
        one_by_one.append(envelope.type)
        return real_project(connection, envelope, **kw)

    monkeypatch.setattr(ingest_storing, "project", spy)
    batch = [t01.message("staff.session", SIGN_IN), t01.message("score.disputed", DISPUTE),
             t01.message("payout.checked", VERIFIED), t01.message("payout.checked", OVERRIDE)]
    results = await ingest.handle_batch(batch)
    assert [(r.outcome, r.reason, r.changes) for r in results] == [
        ("stored", None, ()), ("stored", None, ("score.disputed",)),
        ("stored", None, ("payout.checked",)), ("stored", None, ("payout.checked",))]
    assert stored(engine) == [("t01", 1, "staff.session"), ("t01", 2, "score.disputed"),
                              ("t01", 3, "payout.checked"), ("t01", 4, "payout.checked")]
    assert dispute_rows(engine) == [EXPECTED_DISPUTE]
    assert payout_rows(engine) == EXPECTED_PAYOUTS
    assert one_by_one == ["staff.session"]  # the batch path applied the others
    # The same messages again (QoS 1): stored once, projected once.
    again = await ingest.handle_batch(batch)
    assert {r.outcome for r in again} == {"duplicate"}
    assert (len(dispute_rows(engine)), len(payout_rows(engine))) == (1, 2)


async def test_one_by_one_gives_the_same_rows_and_a_repeat_changes_nothing(
    engine: sa.Engine
) -> None:
    messages = [sealed("staff.session", SIGN_IN, 1), sealed("score.disputed", DISPUTE, 2),
                sealed("payout.checked", VERIFIED, 3), sealed("payout.checked", OVERRIDE, 4)]
    with engine.begin() as connection:
        changes = [project(connection, m).changes for m in messages]
        again = project(connection, messages[1])
    assert changes == [(), ("score.disputed",), ("payout.checked",), ("payout.checked",)]
    assert again.changes == () and again.refused == ()
    assert dispute_rows(engine) == [EXPECTED_DISPUTE]
    assert payout_rows(engine) == EXPECTED_PAYOUTS


@pytest.mark.parametrize(("kind", "body", "field"), [
    ("score.disputed", {**DISPUTE, "note": None}, "note"),
    ("score.disputed", {**DISPUTE, "score": -5}, "score"),
    ("payout.checked", {**OVERRIDE, "outcome": "maybe"}, "outcome"),
    ("payout.checked", {**OVERRIDE, "mismatches": [{"seat": 1}]}, "spot"),
])
async def test_a_bad_console_body_is_stored_and_refused_by_name(
    engine: sa.Engine, ingest: Ingestor, kind: str, body: dict[str, Any], field: str
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    result = await ingest.handle(*t01.message(kind, body))
    assert (result.outcome, result.reason) == ("stored", MALFORMED_BODY)
    assert f"'{field}'" in result.detail
    assert (dispute_rows(engine), payout_rows(engine)) == ([], [])
    assert MALFORMED_BODY in PROJECTION_REASONS


async def test_every_console_body_of_a_batch_is_read_once(
    engine: sa.Engine, ingest: Ingestor, monkeypatch: pytest.MonkeyPatch
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    read: list[int] = []
    real_decode = projection_decoding.decode

    def counting(envelope: Any) -> Any:
        read.append(envelope.seq)
        return real_decode(envelope)

    monkeypatch.setattr(projection_decoding, "decode", counting)
    batch = [t01.message("score.disputed", DISPUTE), t01.message("payout.checked", VERIFIED),
             t01.message("staff.session", SIGN_IN), t01.score("E1", 23_450),
             t01.message("score.disputed", {**DISPUTE, "note": "and hand 13"})]
    results = await ingest.handle_batch(batch)
    assert [r.outcome for r in results] == ["stored"] * 5
    assert sorted(read) == [1, 2, 3, 4, 5]
    assert [row[6] for row in dispute_rows(engine)] == ["hand 12 was paid short",
                                                        "and hand 13"]


async def test_an_acknowledgement_keeps_its_signature_evidence(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    evidence = "ab" * 32
    await ingest.handle_batch([
        t01.score("E1", 1_000), t01.score("E2", 2_000),
        t01.message("score.acknowledged", {"entry_id": "E1", "score": 1_000,
                                           "stage": "qualifying", "method": "card+signature",
                                           "evidence": evidence})])
    await ingest.handle(*t01.ack("E2", 2_000, method="pin"))  # without a signature
    with engine.connect() as c:
        rows = dict(c.execute(sa.select(Score.entry_id, Score.ack_evidence)).all())
        methods = dict(c.execute(sa.select(Score.entry_id, Score.ack_method)).all())
    assert rows == {"E1": evidence, "E2": None}
    assert methods == {"E1": "card+signature", "E2": "pin"}


def manual_of(engine: sa.Engine) -> dict[str, bool]:
    with engine.connect() as c:
        return {h: bool(m) for h, m in c.execute(sa.select(Hand.hand_id, Hand.manual))}


async def test_a_hand_keyed_by_hand_is_marked_manual_on_every_path(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    # The batch path (on PostgreSQL the record is copied from its stored message).
    await ingest.handle_batch([t01.hand("h1", manual=True), t01.hand("h2", manual=False),
                               t01.hand("h3")])  # h3: a record from before the mark
    assert manual_of(engine) == {"h1": True, "h2": False, "h3": False}
    # A later record of a hand replaces the earlier one, its mark too (one by one).
    await ingest.handle(*t01.hand("h2", "hand.voided", manual=True))
    assert manual_of(engine)["h2"] is True
    with engine.begin() as connection:
        project(connection, sealed("hand.settled", {"v": 1, "table": "t01", "hand_id": "h9",
                                                    "status": "settled", "manual": True}, 90))
    assert manual_of(engine)["h9"] is True


async def test_a_disputed_score_shows_as_disputed_until_resolved(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    register_entry(engine, "E1", heat_day=local(2026, 7, 3).date())
    register_entry(engine, "E2", patron_id="P2", heat_day=local(2026, 7, 3).date())
    await ingest.handle_batch([t01.score("E1", 23_450, hands=10),
                               t01.score("E2", 1_000, hands=10), t01.ack("E2", 1_000)])
    await ingest.handle(*t01.message("score.disputed", DISPUTE))
    options = ViewOptions(venue=VENUE, title="Showdown")
    now = local(2026, 7, 3, 16, 0)
    # Only acknowledged scores count (the shipped settings): the disputed one waits, marked.
    doc = standings(engine, settings(), options, now=now)
    assert [r["entry_id"] for r in doc["board"]["rows"]] == ["E2"]
    assert doc["board"]["rows"][0]["disputed"] is False
    assert [(r["entry_id"], r["disputed"]) for r in doc["pending"]] == [("E1", True)]
    # Where every score counts, its row on the board says so.
    every = replace(settings(), acknowledged_only=False)
    doc = standings(engine, every, options, now=now)
    rows = {r["entry_id"]: r for r in doc["board"]["rows"]}
    assert (rows["E1"]["disputed"], rows["E1"]["acknowledged"]) == (True, False)
    assert (rows["E2"]["disputed"], rows["E2"]["acknowledged"]) == (False, True)
    line = next(x for x in format_text(doc).splitlines() if f" {rows['E1']['code']} " in x)
    assert line.split()[-3:] == ["disputed", "prize", "R24.00"]

    with Session(engine, expire_on_commit=False) as s:
        resolved = desk.resolve_dispute(s, DeskClock(now), actor="supervisor-1",
                                        entry_id="E1", resolution="hand 12 replayed: correct")
    assert [(d.entry_id, d.resolved_by, d.open) for d in resolved] == [
        ("E1", "supervisor-1", False)]
    doc = standings(engine, every, options, now=now)
    assert {r["entry_id"]: r["disputed"] for r in doc["board"]["rows"]} == {
        "E1": False, "E2": False}
    assert "disputed" not in format_text(doc)


async def test_staff_sessions_are_stored_with_their_envelope(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    result = await ingest.handle(*t01.message("staff.session", {
        "event": "sign_in_failed", "method": "card", "detail": "unknown card ****0123"}))
    assert (result.outcome, result.reason) == ("stored", None)
    with engine.connect() as c:
        row = c.execute(sa.select(Message.type, Message.body, Message.payload_sha256)).one()
    assert row.type == "staff.session"
    assert row.body["detail"] == "unknown card ****0123"
    assert row.payload_sha256 is not None
