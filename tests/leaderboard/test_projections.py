"""Projections: scores, acknowledgements, voids, hands and seats from stored table messages.

Body checks are pure; the rest runs through Ingestor.handle on SQLite and PostgreSQL, so each
projection is seen in the transaction that stores its message.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from leaderboard.ingest import Ingestor
from leaderboard.models import AuditEntry, Entry, Hand, Rejection, Score
from leaderboard.projections import (
    ACK_CONFLICT,
    ACK_MISMATCH,
    HAND_CONFLICT,
    MALFORMED_BODY,
    PROJECTION_REASONS,
    VOID_CONFLICT,
    body_problem,
    body_text,
    project,
)
from tests.leaderboard.ingest_support import (
    ROOT,
    T0,
    VENUE,
    FakeClock,
    FakeTable,
    enroll,
    key_of,
    register_entry,
    scores,
)
from wire.envelope import Envelope, canonical_json, seal, verify_envelope
from wire.signing import KeyRing

T01 = key_of("t01")


def envelope(kind: str, body: dict[str, Any]) -> Envelope:
    return seal(venue=VENUE, table="t01", seq=1, wall=T0, type=kind, body=body, boot="b",
                mono=1, signer=T01)


SCORE = {"entry_id": "E1", "stage": "qualifying", "heat_id": "heat-1", "score": 1_000,
         "hands": 30, "status": "finished", "table": "t01", "seat": 2}


# --- body checks (pure) -------------------------------------------------------------------------


def test_a_complete_score_body_has_no_problem() -> None:
    assert body_problem(envelope("score.recorded", SCORE)) is None
    assert body_problem(envelope("alert", {})) is None  # only projected types are checked


@pytest.mark.parametrize(("change", "expected"), [
    ({"score": None}, "field 'score' must be a whole number"),
    ({"score": True}, "field 'score' must be a whole number"),
    ({"score": 12.5}, "field 'score' must be a whole number"),
    ({"score": -1}, "field 'score' must be within 0..9223372036854775807"),
    ({"score": 2**63}, "must be within 0.."),
    ({"hands": 2**31}, "field 'hands' must be within 0..2147483647"),
    ({"entry_id": ""}, "field 'entry_id' must not be empty"),
    ({"entry_id": "E" * 41}, "must be at most 40 characters"),
    ({"entry_id": "E\x001"}, "must not contain NUL"),
    ({"entry_id": 17}, "field 'entry_id' must be text"),
    ({"stage": "warmup"}, "field 'stage' must be one of"),
    ({"status": "active"}, "field 'status' must be one of ['ended_early', 'finished']"),
    ({"table": "t02"}, "field 'table' must be the sender 't01'"),
    ({"heat_id": None}, "field 'heat_id' must be text"),
    ({"seat": "2"}, "field 'seat' must be a whole number"),
])
def test_score_body_problems_are_named(change: dict[str, Any], expected: str) -> None:
    problem = body_problem(envelope("score.recorded", {**SCORE, **change}))
    assert problem is not None
    assert expected in problem


@pytest.mark.parametrize("missing", ["entry_id", "stage", "heat_id", "score", "hands", "status"])
def test_each_required_score_field_is_named_when_missing(missing: str) -> None:
    body = {k: v for k, v in SCORE.items() if k != missing}
    assert body_problem(envelope("score.recorded", body)) == \
        f"score.recorded body lacks {missing!r}"


@pytest.mark.parametrize(("kind", "body", "expected"), [
    ("score.acknowledged", {"entry_id": "E1", "score": 5}, "lacks 'method'"),
    ("score.acknowledged", {"entry_id": "E1", "score": 5, "method": "x" * 33}, "at most 32"),
    ("score.voided", {"entry_id": "E1"}, "lacks 'reason'"),
    ("hand.settled", {"status": "settled"}, "lacks 'hand_id'"),
    ("hand.settled", {"hand_id": "h", "status": "void"}, "must be 'settled' for hand.settled"),
    ("hand.voided", {"hand_id": "h", "status": "settled"}, "must be 'void' for hand.voided"),
    ("hand.voided", {"hand_id": "h" * 65}, "at most 64"),
    ("entry.seated", {"entry_id": "E1", "seat": -1}, "must be within 0.."),
    ("entry.seated", {"entry_id": "E1"}, "lacks 'seat'"),
])
def test_other_body_problems_are_named(kind: str, body: dict[str, Any], expected: str) -> None:
    problem = body_problem(envelope(kind, body))
    assert problem is not None
    assert expected in problem


def test_optional_fields_may_be_null_or_absent() -> None:
    assert body_problem(envelope("hand.voided", {"hand_id": "h", "heat_id": None})) is None
    assert body_problem(envelope("hand.settled", {"hand_id": "h"})) is None


# --- projections through the ingest ---------------------------------------------------------------


@pytest.fixture
def ingest(engine: sa.Engine) -> Ingestor:
    return Ingestor(engine, venue=VENUE, clock=FakeClock(), topic_root=ROOT, resend_after_s=0)


def reasons(engine: sa.Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(Rejection.reason).order_by(Rejection.id)))


async def test_score_rows_carry_the_record_and_the_acknowledgement_time(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    await ingest.handle(*t01.score("E1", 23_450, heat_id="heat-9", hands=28,
                                   status="ended_early"))
    await ingest.handle(*t01.ack("E1", 23_450, method="signature"))
    with engine.connect() as connection:
        row = connection.execute(sa.select(Score)).one()
    assert (row.entry_id, row.table_id, row.seq, row.stage, row.heat_id) == (
        "E1", "t01", 1, "qualifying", "heat-9")
    assert (row.score_cents, row.hands, row.status) == (23_450, 28, "ended_early")
    # Times are the envelopes' ts (seq n is sealed at T0 + n seconds).
    assert row.recorded_at.replace(tzinfo=None) == (T0 + timedelta(seconds=1)).replace(
        tzinfo=None)
    assert row.acknowledged_at.replace(tzinfo=None) == (T0 + timedelta(seconds=2)).replace(
        tzinfo=None)
    assert row.ack_method == "signature"
    assert (row.voided_at, row.void_reason) == (None, None)


async def test_an_acknowledgement_of_another_figure_is_refused(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    await ingest.handle(*t01.score("E1", 10_000))
    result = await ingest.handle(*t01.ack("E1", 10_001))
    assert (result.outcome, result.reason) == ("stored", ACK_MISMATCH)
    assert "acknowledged 10001 cents" in result.detail
    assert scores(engine)["E1"][3] is False
    assert reasons(engine) == [ACK_MISMATCH]


async def test_an_acknowledgement_from_another_table_or_a_second_one_is_refused(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    await ingest.handle(*t01.score("E1", 10_000))
    other = await ingest.handle(*t02.ack("E1", 10_000))
    assert other.reason == ACK_CONFLICT
    assert scores(engine)["E1"][3] is False
    assert (await ingest.handle(*t01.ack("E1", 10_000))).reason is None
    second = await ingest.handle(*t01.ack("E1", 10_000, method="desk"))
    assert second.reason == ACK_CONFLICT
    assert scores(engine)["E1"][4] == "card_tap"  # the first acknowledgement stands
    assert reasons(engine) == [ACK_CONFLICT, ACK_CONFLICT]


async def test_an_acknowledgement_that_arrived_first_waits_for_its_score(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    score, ack = t01.score("E1", 5_000), t01.ack("E1", 5_000)
    waiting = await ingest.handle(*ack)
    assert (waiting.outcome, waiting.reason, waiting.changes) == ("stored", None, ())
    arrived = await ingest.handle(*score)
    assert arrived.changes == ("score.recorded", "score.acknowledged")
    assert scores(engine)["E1"] == ("t01", 1, 5_000, True, "card_tap", False)


async def test_a_waiting_acknowledgement_of_another_figure_is_refused_when_the_score_comes(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    score, ack = t01.score("E1", 5_000), t01.ack("E1", 4_000)
    await ingest.handle(*ack)
    result = await ingest.handle(*score)
    assert (result.outcome, result.reason) == ("stored", None)  # the score itself is fine
    assert scores(engine)["E1"][3] is False
    assert reasons(engine) == [ACK_MISMATCH]
    assert ingest.counters().rejections == {ACK_MISMATCH: 1}


async def test_a_score_void_from_the_table_follows_the_record_in_any_order(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    score = t01.score("E1", 9_000)
    void = t01.message("score.voided", {"entry_id": "E1", "reason": "dealer error",
                                        "by": "pit-boss"})
    await ingest.handle(*void)  # before the score: waits
    await ingest.handle(*score)
    with engine.connect() as connection:
        row = connection.execute(sa.select(Score)).one()
    assert row.voided_at is not None
    assert row.void_reason == "dealer error"
    await ingest.handle(*t02.score("E2", 1_000))
    foreign = await ingest.handle(*t01.message("score.voided",
                                               {"entry_id": "E2", "reason": "x"}))
    assert foreign.reason == VOID_CONFLICT
    assert scores(engine)["E2"][5] is False


async def test_hands_are_stored_and_the_later_record_of_a_hand_wins(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    settled = t01.hand("t01-000001", settled_at="2026-07-03T13:00:05Z")
    voided = t01.hand("t01-000001", "hand.voided", void={"reason": "misdeal"})
    await ingest.handle(*voided)
    await ingest.handle(*settled)  # older: the void stays
    with engine.connect() as connection:
        row = connection.execute(sa.select(Hand)).one()
    assert (row.hand_id, row.table_id, row.seq, row.status, row.heat_id) == (
        "t01-000001", "t01", 2, "void", "heat-1")
    assert row.body["void"] == {"reason": "misdeal"}
    clash = await ingest.handle(*t02.hand("t01-000001"))
    assert clash.reason == HAND_CONFLICT
    assert reasons(engine) == [HAND_CONFLICT]


async def test_a_batch_of_hands_with_a_bad_one_and_a_repeated_one(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    batch = [t01.hand("t01-000001"), t01.message("hand.settled", {"status": "settled"}),
             t01.hand("t01-000002"), t01.hand("t01-000002", "hand.voided"),
             t01.hand("t01-000003")]
    results = await ingest.handle_batch(batch)
    assert [(r.outcome, r.reason) for r in results] == [
        ("stored", None), ("stored", MALFORMED_BODY), ("stored", None), ("stored", None),
        ("stored", None)]
    with engine.connect() as connection:
        hands = dict(connection.execute(sa.select(Hand.hand_id, Hand.status)).all())
    assert hands == {"t01-000001": "settled", "t01-000002": "void", "t01-000003": "settled"}
    assert reasons(engine) == [MALFORMED_BODY]


async def test_a_seating_sets_the_entry_table_and_seat_when_the_entry_exists(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    register_entry(engine, "E1")
    first = t01.seated("E1", 4)
    moved = t01.seated("E1", 6)
    await ingest.handle(*moved)
    await ingest.handle(*first)  # older: the later seat stays
    unknown = await ingest.handle(*t01.seated("E404", 1))
    assert (unknown.outcome, unknown.reason, unknown.changes) == ("stored", None, ())
    with engine.connect() as connection:
        row = connection.execute(sa.select(Entry.table_id, Entry.seat)).one()
    assert tuple(row) == ("t01", 6)
    assert reasons(engine) == []


def entry_place(engine: sa.Engine, entry_id: str) -> tuple[str | None, int | None, str]:
    with engine.connect() as connection:
        row = connection.execute(sa.select(Entry.table_id, Entry.seat, Entry.status)
                                 .where(Entry.entry_id == entry_id)).one()
    return row.table_id, row.seat, row.status


def two_tables_e1_e2_seated_at_t01(engine: sa.Engine) -> tuple[FakeTable, FakeTable]:
    """Tables t01 and t02 enrolled; the desk has seated E1 at t01 seat 3, E2 at seat 4."""
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    register_entry(engine, "E1", status="seated", table_id="t01", seat=3)
    register_entry(engine, "E2", status="seated", table_id="t01", seat=4)
    return t01, t02


def ingest_audit(engine: sa.Engine, action: str = "entry.seat_mismatch") -> list[dict[str, Any]]:
    """The audit rows' details, every row written by the ingest with `action`."""
    with engine.connect() as connection:
        rows = connection.execute(sa.select(AuditEntry.actor, AuditEntry.action,
                                            AuditEntry.detail).order_by(AuditEntry.id)).all()
    assert all((r.actor, r.action) == ("ingest", action) for r in rows)
    return [r.detail for r in rows]


async def test_a_seat_other_than_the_desks_is_recorded_and_audited(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = two_tables_e1_e2_seated_at_t01(engine)
    register_entry(engine, "S-1", stage="semi_final", heat_id="semi-final-1", seat=2)
    agreed = await ingest.handle(*t01.seated("E2", 4))
    assert agreed.changes == ("entry.seated",)
    assert ingest_audit(engine) == []
    # The bulk path (one message in its batch) ...
    moved = await ingest.handle(*t01.seated("E1", 5))
    assert (moved.outcome, moved.reason, moved.changes) == ("stored", None, ("entry.seated",))
    assert entry_place(engine, "E1") == ("t01", 5, "seated")  # the table's report (D49)
    # ... and the one-by-one path (project) flag it alike.
    with engine.begin() as connection:
        envelope = verify_envelope(t02.seated("S-1", 6)[1], KeyRing([key_of("t02").public_key]))
        projected = project(connection, envelope)
    assert projected.changes == ("entry.seated",)
    assert projected.notes == ("entry S-1: t02 reports seat 6, the desk gave seat 2; the "
                               "table's report is recorded",)
    assert entry_place(engine, "S-1") == ("t02", 6, "registered")
    assert [(m["entry_id"], m["desk_table"], m["desk_seat"], m["table"], m["seat"])
            for m in ingest_audit(engine)] == [("E1", "t01", 3, "t01", 5),
                                             ("S-1", None, 2, "t02", 6)]
    assert reasons(engine) == []


async def test_a_seating_at_a_table_the_desk_has_moved_the_entry_from_moves_nothing(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = two_tables_e1_e2_seated_at_t01(engine)
    register_entry(engine, "E3", status="refunded", table_id="t02", seat=1)
    # The bulk path: t02's late report of E1 (the desk has E1 at t01 now) and of E3 (refunded).
    late = await ingest.handle(*t02.seated("E1", 3))
    refunded = await ingest.handle(*t02.seated("E3", 1))
    assert (late.outcome, late.reason, late.changes) == ("stored", None, ())
    assert refunded.changes == ()
    assert entry_place(engine, "E1") == ("t01", 3, "seated")
    assert entry_place(engine, "E3") == ("t02", 1, "refunded")
    assert [(d["entry_id"], d["desk_table"], d["table"], d["note"])
            for d in ingest_audit(engine, "entry.seat_stale")] == [
        ("E1", "t01", "t02",
         "entry E1: t02 reports seat 3, but the desk has it seated at table t01; the report is"
         " stored, the entry stays as the desk has it"),
        ("E3", "t02", "t02",
         "entry E3: t02 reports seat 1, but the desk has refunded it; the report is stored,"
         " the entry stays as the desk has it")]
    # The table the desk seated it at is heard as ever.
    assert (await ingest.handle(*t01.seated("E1", 3))).changes == ("entry.seated",)
    assert reasons(engine) == []


async def test_a_score_from_a_table_the_desk_has_moved_the_entry_from_is_not_counted(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = two_tables_e1_e2_seated_at_t01(engine)
    # t02 publishes a score (and its acknowledgement, in the same batch) for E1, which the
    # desk has seated at t01: stored, counted as refused, no score row (D64).
    stale, ack = await ingest.handle_batch([t02.score("E1", 999_900), t02.ack("E1", 999_900)])
    assert (stale.outcome, stale.reason, stale.changes) == ("stored", "score_stale", ())
    assert stale.detail == ("entry E1: this score of 999900 cents from t02 seq 1 is not counted:"
                            " the desk has it seated at table t01")
    assert (ack.outcome, ack.changes) == ("stored", ())
    # The table the desk seated it at is counted, and its acknowledgement with it.
    counted = await ingest.handle(*t01.score("E1", 210_000))
    assert counted.changes == ("score.recorded",)
    assert (await ingest.handle(*t01.ack("E1", 210_000))).changes == ("score.acknowledged",)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(Score.entry_id, Score.table_id, Score.score_cents,
                                            Score.acknowledged_at.is_not(None))).all()
    assert [tuple(r) for r in rows] == [("E1", "t01", 210_000, True)]
    assert reasons(engine) == ["score_stale"]


async def test_an_entry_that_leaves_its_seat_is_withdrawn(
    engine: sa.Engine, ingest: Ingestor
) -> None:
    t01, t02 = two_tables_e1_e2_seated_at_t01(engine)
    left = await ingest.handle(*t01.unseated("E1", 3, hands_played=4))
    assert (left.outcome, left.reason, left.changes) == ("stored", None, ("entry.unseated",))
    assert entry_place(engine, "E1") == ("t01", 3, "withdrawn")
    # Another table cannot withdraw t01's entry; an unknown entry is stored only.
    other = await ingest.handle(*t02.unseated("E2", 4))
    unknown = await ingest.handle(*t01.unseated("E404", 1))
    assert other.changes == unknown.changes == ()
    assert entry_place(engine, "E2") == ("t01", 4, "seated")
    # An entry that has its score has played its hands: an unseating does not withdraw it.
    register_entry(engine, "E3", status="seated", table_id="t01", seat=5)
    await ingest.handle(*t01.score("E3", 12_000))
    finished = await ingest.handle(*t01.unseated("E3", 5, hands_played=10))
    assert finished.changes == ()
    assert entry_place(engine, "E3") == ("t01", 5, "seated")
    # A repeat (a second report) changes nothing; a malformed one is refused.
    again = await ingest.handle(*t01.unseated("E1", 3, hands_played=4))
    assert again.changes == ()
    bad = await ingest.handle(*t01.message("entry.unseated", {"entry_id": "E2"}))
    assert bad.reason == MALFORMED_BODY
    assert entry_place(engine, "E2") == ("t01", 4, "seated")
    assert reasons(engine) == [MALFORMED_BODY]


async def test_every_projection_reason_is_a_known_reason(ingest: Ingestor) -> None:
    from leaderboard.ingest import INGEST_REASONS

    assert set(PROJECTION_REASONS) <= set(INGEST_REASONS)
    assert MALFORMED_BODY in PROJECTION_REASONS
    assert ingest.counters().rejections == {}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
    | st.sampled_from([',"boot":"', '"boot"', "}", '\\",']),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["boot", "body", "a", "z", ',"boot":"', "mono"]), inner,
                      max_size=4),
    max_leaves=20,
)


@given(body=st.dictionaries(st.sampled_from(["boot", "body", "x", "sig", "é"]), _JSON,
                            max_size=5))
def test_the_body_text_cut_from_a_verified_payload_is_its_canonical_json(
    body: dict[str, Any]
) -> None:
    sealed = seal(venue=VENUE, table="t01", seq=3, wall=T0, type="alert", body=body,
                  boot="boot:1.a-b", mono=5, signer=T01)
    payload = sealed.encode()
    assert verify_envelope(payload, KeyRing([T01.public_key])) == sealed
    assert body_text(sealed, payload) == canonical_json(sealed.body).decode("utf-8")
    assert json.loads(body_text(sealed, payload)) == sealed.body
