"""A supervisor voids or corrects a score (rules 22, 23); every desk action is audited.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts are worked out by hand from the rules.
"""

from collections.abc import Callable
from datetime import date

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound
from leaderboard.models import (
    AuditEntry,
    Score,
)
from tests.leaderboard.desk_fields import (
    AFTER_QUALIFYING,
    audit_actions,
    buy,
    counted,
    played_final,
    qualifying_field,
)
from tests.leaderboard.desk_helpers import (
    FakeClock,
    local,
    settings,
)

# ---- a supervisor's rulings on a score (rules 22, 23; D65) ----------------------------------


def test_a_supervisor_voids_or_corrects_a_score_and_the_standings_follow(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    unacked = session.scalars(select(Score.entry_id).where(Score.acknowledged_at.is_(None))).one()
    before = counted(session)
    assert before[0] == (f.a_entries[0], 900_000) and unacked not in dict(before)
    clock.now = local(2026, 7, 3, 18, 0)
    # A void: the record stays, marked; the entry leaves the board.
    void = desk.void_score(session, s, clock, actor="pit-boss", entry_id=f.a_entries[0],
                           why="chips passed between seats (rule 19)")
    assert (void.ruling, void.recorded_cents, void.counted_cents, void.table) == (
        "voided", 900_000, None, "t01")
    assert counted(session) == before[1:]
    row = session.get(Score, f.a_entries[0])
    assert row is not None and row.score_cents == 900_000
    assert row.void_reason == "chips passed between seats (rule 19) (by pit-boss)"
    # A correction of an unacknowledged score (the patron disputed it): management's figure
    # counts, as decided now (rule 23), and ranks by it.
    fixed = desk.correct_score(session, s, clock, actor="pit-boss", entry_id=unacked,
                               score_cents=500_000, why="hand 7 re-settled after a misread")
    assert (fixed.ruling, fixed.recorded_cents, fixed.counted_cents) == (
        "corrected", 990_000, 500_000)
    board = dict(counted(session))
    assert board[unacked] == 500_000
    assert [e for e, _ in counted(session)].index(unacked) == 5  # after 550_000, before 400_000
    records = {r.entry_id: r for r in desk.score_records(session, s, Stage.QUALIFYING)}
    assert records[unacked].acknowledged_at == clock.now
    # Correcting an acknowledged score keeps the patron's acknowledgement time (ties).
    first_ack = records[f.other_entries[0]].acknowledged_at
    desk.correct_score(session, s, clock, actor="pit-boss", entry_id=f.other_entries[0],
                       score_cents=710_000, why="a Pocket Bonus paid short")
    again = desk.correct_score(session, s, clock, actor="td", entry_id=f.other_entries[0],
                               score_cents=705_000, why="re-checked: R50 short, not R100")
    assert (again.recorded_cents, again.counted_cents) == (700_000, 705_000)
    records = {r.entry_id: r for r in desk.score_records(session, s, Stage.QUALIFYING)}
    assert (records[f.other_entries[0]].score_cents,
            records[f.other_entries[0]].acknowledged_at) == (705_000, first_ack)
    rows = session.scalars(select(AuditEntry).where(AuditEntry.action.in_(
        ("score.voided", "score.corrected"))).order_by(AuditEntry.id)).all()
    assert [(r.actor, r.action, r.detail["entry_id"], r.detail["recorded_cents"],
             r.detail.get("previous_cents"), r.detail.get("corrected_cents")) for r in rows] == [
        ("pit-boss", "score.voided", f.a_entries[0], 900_000, None, None),
        ("pit-boss", "score.corrected", unacked, 990_000, 990_000, 500_000),
        ("pit-boss", "score.corrected", f.other_entries[0], 700_000, 700_000, 710_000),
        ("td", "score.corrected", f.other_entries[0], 700_000, 710_000, 705_000)]
    assert rows[0].detail["why"] == "chips passed between seats (rule 19)"


def test_a_ruling_that_cannot_apply_is_refused_and_changes_nothing(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    top = f.a_entries[0]
    desk.void_score(session, s, clock, actor="pit-boss", entry_id=f.a_entries[1], why="x")
    unscored = buy(session, clock, f.spare[0])
    cases: list[tuple[type[Exception], str, Callable[[], object]]] = [
        (NotFound, "no entry 'E-nope'", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id="E-nope", why="x")),
        (NotFound, f"entry {unscored} has no recorded score", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id=unscored, why="x")),
        (DeskError, "say why the score is voided", lambda: desk.void_score(
            session, s, clock, actor="pb", entry_id=top, why=" ")),
        (DeskError, "say why the score is corrected", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=1, why="")),
        (Conflict, f"entry {f.a_entries[1]}'s score is voided \\(x \\(by pit-boss\\)\\)",
         lambda: desk.correct_score(session, s, clock, actor="pb", entry_id=f.a_entries[1],
                                    score_cents=1, why="x")),
        (Conflict, "already counts R9,000.00", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=900_000, why="x")),
        (DeskError, "0 or more cents, not -1", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=-1, why="x")),
        (DeskError, "whole cents, not True", lambda: desk.correct_score(
            session, s, clock, actor="pb", entry_id=top, score_cents=True, why="x")),
    ]
    for error, message, action in cases:
        with pytest.raises(error, match=message):
            action()
    assert counted(session)[0] == (top, 900_000)
    # Once the semi-final places are allocated from these standings, they stand (rule 22).
    clock.now = AFTER_QUALIFYING
    desk.allocate_semis(session, s, clock, actor="desk-1")
    with pytest.raises(Conflict, match=f"entry {top}'s qualifying score can no longer be"
                                       " voided: the semi-final places were allocated"):
        desk.void_score(session, s, clock, actor="pb", entry_id=top, why="late dispute")
    assert audit_actions(session).count("score.voided") == 1


def test_a_ruling_is_refused_once_a_prize_is_awarded_from_those_standings(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 10, 9, 0)
    desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                      prize_cents=500_000)
    with pytest.raises(Conflict, match="it won the weekly prize"):
        desk.correct_score(session, s, clock, actor="pb", entry_id=f.a_entries[0],
                           score_cents=1, why="x")
    with pytest.raises(Conflict, match="week 1's prize was awarded"):
        desk.void_score(session, s, clock, actor="pb", entry_id=f.other_entries[3], why="x")


def test_every_desk_action_is_audited(session: Session, clock: FakeClock) -> None:
    played_final(session, clock)
    actions = audit_actions(session)
    for action in ("patron.registered", "entry.bought", "semi_final.allocated",
                   "proxy.nominated", "semi_final.seat_chosen", "heat.opened", "entry.seated",
                   "final.allocated", "final.drawn", "final.seats_applied"):
        assert action in actions, action
    rows = session.scalars(select(AuditEntry)).all()
    assert all(r.actor == "desk-1" and r.at is not None for r in rows
               if r.action != "list.imported")
    # Nothing identifying a patron is in a table command (the entry's code, D331, names the
    # entry; a name only where the page shows names, D332).
    seated = [r for r in rows if r.action == "entry.seated"]
    assert all(set(r.detail["args"]) == {"entry_id", "seat", "entry_code"} for r in seated)
    why = desk.register_patron(session, settings(), clock, actor="desk-9", name="W",
                               id_kind="rewards_card", id_number="6099-0000-0000-0123",
                               birth_date=date(1970, 1, 1), why="walk-in at the final")
    last = session.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(1)).one()
    # Registered by rewards card: that card is what the participant taps at the table
    # (only its hash is kept; the audit says a card was recorded, never which).
    assert last.detail == {"patron_id": why.patron_id, "id_kind": "rewards_card",
                           "documents": ["rewards_card"], "card": True,
                           "why": "walk-in at the final"}
    assert why.card_hash is not None and why.card_hash.startswith("scrypt$")
    assert "6099000000000123" not in why.card_hash
    assert desk.audit_log(session, limit=1)[0].id == last.id
