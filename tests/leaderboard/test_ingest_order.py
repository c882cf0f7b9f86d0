"""Ingest arrival order on SQLite and PostgreSQL: any order, with copies, stores each message once
and projects the same state; a batch gives its messages' results one by one; score conflicts and
malformed bodies are stored and refused."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.ingest import storing as ingest_storing
from leaderboard.models import (
    Entry,
    Hand,
    Rejection,
    Score,
)
from leaderboard.projections import MALFORMED_BODY, SCORE_CONFLICT
from tests.leaderboard.ingest_support import (
    FakeClock,
    FakeTable,
    Resends,
    enroll,
    make_ingestor,
    progress,
    register_entry,
    rejection_reasons,
    scores,
    stored,
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resends() -> Resends:
    return Resends()


# --- out of order ----------------------------------------------------------------------------


def _session_of(table: FakeTable) -> list[tuple[str, bytes]]:
    """A small heat: seat, two hands, score, acknowledgement."""
    return [
        table.seated("E1", 2),
        table.hand(f"{table.table}-000001"),
        table.hand(f"{table.table}-000002", "hand.voided", void={"reason": "misdeal"}),
        table.alert(),
        table.score("E1", 15_500),
        table.ack("E1", 15_500),
    ]


def _final_state(engine: sa.Engine) -> dict[str, Any]:
    with engine.connect() as connection:
        hands = {r.hand_id: (r.status, int(r.seq)) for r in connection.execute(sa.select(Hand))}
        entries = {r.entry_id: (r.table_id, r.seat) for r in connection.execute(sa.select(Entry))}
    return {"messages": stored(engine), "scores": scores(engine), "hands": hands,
            "entries": entries}


async def test_out_of_order_arrival_gives_the_same_state_as_in_order(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    register_entry(engine, "E1")
    in_order = _session_of(t01)
    ingest = make_ingestor(engine, clock)
    for message in in_order:
        assert (await ingest.handle(*message)).reason is None
    expected = _final_state(engine)
    assert expected["scores"] == {"E1": ("t01", 5, 15_500, True, "card_tap", False)}
    assert expected["entries"] == {"E1": ("t01", 2)}
    assert expected["hands"] == {"t01-000001": ("settled", 2), "t01-000002": ("void", 3)}
    # The same session at another table, arriving backwards, on a fresh entry row.
    with engine.begin() as connection:
        connection.execute(sa.delete(Score))
        connection.execute(sa.update(Entry).values(table_id=None, seat=None))
    backwards = list(reversed(_session_of(t02)))
    for message in backwards:
        result = await ingest.handle(*message)
        assert (result.outcome, result.reason) == ("stored", None)
    state = _final_state(engine)
    assert state["scores"] == {"E1": ("t02", 5, 15_500, True, "card_tap", False)}
    assert state["entries"] == {"E1": ("t02", 2)}
    assert {h: s for h, s in state["hands"].items() if h.startswith("t02")} == {
        "t02-000001": ("settled", 2), "t02-000002": ("void", 3)}
    assert progress(engine, "t02") == (6, 6, [])


_EXAMPLES = itertools.count(1)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(6)), copies=st.lists(st.integers(0, 5), max_size=4),
       batch=st.integers(1, 4))
async def test_any_arrival_order_with_copies_stores_each_once_and_projects_the_same(
    engine: sa.Engine, order: list[int], copies: list[int], batch: int
) -> None:
    # Each example uses tables and entries of its own in the shared database.
    name = f"p{next(_EXAMPLES)}"
    table = FakeTable(name)
    enroll(engine, table)
    register_entry(engine, f"{name}-e", patron_id=f"{name}-p")
    messages = [
        table.seated(f"{name}-e", 3),
        table.hand(f"{name}-h1"),
        table.hand(f"{name}-h1", "hand.voided"),  # the later record of the same hand wins
        table.score(f"{name}-e", 7_000),
        table.ack(f"{name}-e", 7_000),
        table.alert(),
    ]
    arrivals = [messages[i] for i in order] + [messages[i] for i in copies]
    ingest = make_ingestor(engine, FakeClock())
    outcomes = []
    for start in range(0, len(arrivals), batch):
        outcomes += await ingest.handle_batch(arrivals[start:start + batch])
    assert sorted(r.outcome for r in outcomes) == sorted(
        ["stored"] * 6 + ["duplicate"] * len(copies))
    assert all(r.reason is None for r in outcomes)
    assert [seq for _, seq, _ in stored(engine, name)] == [1, 2, 3, 4, 5, 6]
    assert progress(engine, name) == (6, 6, [])
    assert scores(engine)[f"{name}-e"] == (name, 4, 7_000, True, "card_tap", False)
    with engine.connect() as connection:
        hand = connection.execute(sa.select(Hand.status, Hand.seq)
                                  .where(Hand.hand_id == f"{name}-h1")).one()
        seat = connection.execute(sa.select(Entry.table_id, Entry.seat)
                                  .where(Entry.entry_id == f"{name}-e")).one()
    assert (hand.status, hand.seq) == ("void", 3)
    assert tuple(seat) == (name, 3)


def _tangle(prefix: str, engine: sa.Engine) -> list[tuple[str, bytes]]:
    """Two tables' messages that touch the same entries and hands: conflicts, repeats,
    acknowledgements of the wrong figure or from the wrong table, a void, a malformed body,
    an unregistered entry. The tables and entries are named after ``prefix``."""
    t1, t2 = FakeTable(f"{prefix}-t1"), FakeTable(f"{prefix}-t2")
    enroll(engine, t1, t2)
    e = [f"{prefix}-e{n}" for n in range(6)]
    for entry in e[1:3]:
        register_entry(engine, entry, patron_id=f"{prefix}-p")
    return [
        t1.seated(e[1], 3), t1.hand(f"{prefix}-h1"), t1.hand(f"{prefix}-h1", "hand.voided"),
        t1.score(e[1], 7_000), t1.ack(e[1], 7_000), t1.ack(e[1], 7_000),
        t1.score(e[2], 500), t1.ack(e[2], 999), t1.seated(e[3], 1),
        t1.message("score.voided", {"entry_id": e[1], "reason": "misdeal"}),
        t1.message("score.recorded", {"entry_id": e[5], "score": 1}),  # malformed
        t1.seated(e[1], 5), t1.hand(f"{prefix}-h2"),
        t2.score(e[1], 100), t2.hand(f"{prefix}-h1"), t2.ack(e[2], 500),
        t2.score(e[4], 800), t2.ack(e[4], 800), t2.seated(e[2], 2),
    ]


def _tangle_state(engine: sa.Engine, prefix: str) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        return value.replace(prefix, "") if isinstance(value, str) else value

    with engine.connect() as connection:
        hands = {plain(r.hand_id): (plain(r.table_id), int(r.seq), r.status)
                 for r in connection.execute(sa.select(Hand)
                                             .where(Hand.hand_id.startswith(prefix)))}
        entries = {plain(r.entry_id): (plain(r.table_id), r.seat)
                   for r in connection.execute(sa.select(Entry)
                                               .where(Entry.entry_id.startswith(prefix)))}
        refused = sorted((r.reason, plain(r.table_id)) for r in connection.execute(
            sa.select(Rejection.reason, Rejection.table_id)
            .where(Rejection.table_id.startswith(prefix))))
    return {"hands": hands, "entries": entries, "refused": refused,
            "scores": {plain(k): tuple(plain(v) for v in value)
                       for k, value in scores(engine).items() if k.startswith(prefix)}}


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(19)), copies=st.lists(st.integers(0, 18), max_size=5),
       batch=st.integers(2, 12))
async def test_a_batch_gives_the_results_of_its_messages_one_by_one(
    engine: sa.Engine, order: list[int], copies: list[int], batch: int
) -> None:
    # Batches apply what they can in a few statements (projections.project_bulk); whatever
    # the order, the outcome of every message and the final rows must be those of handling
    # the same arrivals one at a time with project() alone (the reference).
    number = next(_EXAMPLES)
    one, many = f"o{number}", f"m{number}"
    singly, batched = _tangle(one, engine), _tangle(many, engine)
    arrivals = [*order, *copies]
    ingest = make_ingestor(engine, FakeClock())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ingest_storing, "project_bulk", lambda _connection, _items, _decoded=None: {})
        expected = [await ingest.handle(*singly[i]) for i in arrivals]
    got = []
    for start in range(0, len(arrivals), batch):
        got += await ingest.handle_batch([batched[i] for i in arrivals[start:start + batch]])
    assert [(r.outcome, r.reason, r.seq, r.changes) for r in got] == [
        (r.outcome, r.reason, r.seq, r.changes) for r in expected]
    assert _tangle_state(engine, many) == _tangle_state(engine, one)


# --- conflicts and malformed bodies ------------------------------------------------------------


async def test_a_second_score_for_one_entry_is_refused_never_overwritten(
    engine: sa.Engine, clock: FakeClock
) -> None:
    t01, t02 = FakeTable("t01"), FakeTable("t02")
    enroll(engine, t01, t02)
    ingest = make_ingestor(engine, clock)
    assert (await ingest.handle(*t01.score("E1", 12_000))).reason is None
    second = await ingest.handle(*t02.score("E1", 50_000))
    # Stored (the table's record stays whole, no gap) but not counted as E1's score.
    assert (second.outcome, second.reason) == ("stored", SCORE_CONFLICT)
    assert scores(engine) == {"E1": ("t01", 1, 12_000, False, None, False)}
    assert rejection_reasons(engine) == [SCORE_CONFLICT]
    assert progress(engine, "t02") == (1, 1, [])
    # The same table recording the entry twice is a conflict too.
    third = await ingest.handle(*t01.score("E1", 13_000))
    assert third.reason == SCORE_CONFLICT
    assert ingest.counters().rejections == {SCORE_CONFLICT: 2}
    assert ingest.counters().stored == 3


async def test_a_malformed_body_is_stored_refused_and_counted(
    engine: sa.Engine, clock: FakeClock, resends: Resends
) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    ingest = make_ingestor(engine, clock, resends)
    body = {"entry_id": "E1", "stage": "qualifying", "heat_id": "h", "hands": 3,
            "status": "finished"}  # no score
    result = await ingest.handle(*t01.message("score.recorded", body))
    assert (result.outcome, result.reason) == ("stored", MALFORMED_BODY)
    assert "lacks 'score'" in result.detail
    bad_ack = await ingest.handle(*t01.message("score.acknowledged", {
        "entry_id": "E1", "score": "12000", "method": "card_tap"}))
    assert bad_ack.reason == MALFORMED_BODY
    assert scores(engine) == {}
    assert progress(engine, "t01") == (2, 2, [])  # no hole: nothing to ask again
    assert resends.calls == []
    assert rejection_reasons(engine) == [MALFORMED_BODY, MALFORMED_BODY]


