"""The desk awards the Final, top-score and weekly prizes; claims and expiry.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts are worked out by hand from the rules.
"""

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import Conflict, DeskError
from leaderboard.models import (
    AuditEntry,
    Patron,
    PrizeAward,
)
from tests.leaderboard.desk_fields import (
    AFTER_QUALIFYING,
    FINAL_SCORES,
    played_final,
    qualifying_field,
)
from tests.leaderboard.desk_helpers import (
    FakeClock,
    local,
    settings,
)

# ---- prizes ------------------------------------------------------------------------------------


def test_final_prizes_are_awarded_claimed_and_expire(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, finals = played_final(session, clock)
    clock.now = local(2026, 8, 1, 18, 30)
    awards = desk.award_prizes(session, s, clock, actor="desk-1", kind="final")
    # 15 qualifying buy-ins of R100 = R1,500; 80% = R1,200 split 60/10/9/8/7/6.
    by_score = sorted(range(6), key=lambda i: -FINAL_SCORES[i])
    assert [(a.place, a.entry_id, a.amount_cents) for a in awards] == [
        (n + 1, finals[i].entry_id, cents) for n, (i, cents) in
        enumerate(zip(by_score, [72_000, 12_000, 10_800, 9_600, 8_400, 7_200], strict=True))]
    assert all(a.patron_id == finals[i].holder for a, i in zip(awards, by_score, strict=True))
    deadline = local(2026, 8, 17, 0, 0)  # 15 days after 1 August, rule 55
    assert {a.deadline for a in awards} == {deadline}
    assert {a.status for a in awards} == {"unclaimed"}
    with pytest.raises(Conflict, match="already awarded"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="final")

    winner = session.get(Patron, awards[0].patron_id)
    assert winner is not None
    with pytest.raises(Conflict, match="not that of the prize winner"):
        desk.claim_prize(session, s, clock, actor="desk-2", award_id=awards[0].award_id,
                         id_number="9999999999999")
    clock.now = deadline - timedelta(seconds=1)  # 16 August 23:59:59: the last moment
    claimed = desk.claim_prize(session, s, clock, actor="desk-2", award_id=awards[0].award_id,
                               id_number=winner.id_number, receipt="R-0001")
    assert claimed.status == "claimed" and claimed.claimed_at == clock.now
    assert claimed.claimed_by == f"{winner.name} ({winner.patron_id})"
    with pytest.raises(Conflict, match="was claimed"):
        desk.claim_prize(session, s, clock, actor="desk-2", award_id=awards[0].award_id,
                         id_number=winner.id_number)
    second = session.get(Patron, awards[1].patron_id)
    assert second is not None
    clock.now = deadline  # 17 August 00:00: expired
    statuses = {p.award_id: p.status for p in desk.prizes(session, clock)}
    assert statuses[awards[0].award_id] == "claimed"
    assert statuses[awards[1].award_id] == "expired"
    with pytest.raises(Conflict, match="expired at 2026-08-17 00:00"):
        desk.claim_prize(session, s, clock, actor="desk-2", award_id=awards[1].award_id,
                         id_number=second.id_number)
    clock.now = deadline - timedelta(microseconds=1)
    assert {p.award_id: p.status for p in desk.prizes(session, clock)}[
        awards[1].award_id] == "unclaimed"
    assert session.scalar(select(PrizeAward.claimed_by).where(
        PrizeAward.id == awards[1].award_id)) is None
    audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.claimed")).one()
    assert audit.detail["receipt"] == "R-0001" and audit.detail["award_id"] == awards[0].award_id
    del f


def test_top_score_and_weekly_prizes(session: Session, clock: FakeClock) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 9, 23, 0)
    with pytest.raises(Conflict, match="week 1 runs until 2026-07-10 00:00"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                          prize_cents=500_000)
    with pytest.raises(Conflict, match="qualifying ends"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score")
    clock.now = local(2026, 7, 10, 9, 0)
    weekly = desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                               prize_cents=500_000)
    assert [(w.place, w.entry_id, w.patron_id, w.amount_cents) for w in weekly] == [
        (1, f.a_entries[0], f.a, 500_000)]
    assert weekly[0].deadline == local(2026, 7, 26, 0, 0)  # paid Friday 10 July + 15 days
    with pytest.raises(Conflict, match="week 1's prize is already awarded"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                          prize_cents=500_000)
    clock.now = AFTER_QUALIFYING
    with pytest.raises(DeskError, match="no weekly prize"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=5,
                          prize_cents=500_000)
    with pytest.raises(DeskError, match="takes no week"):
        desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score", week=1)
    top = desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score")
    # 20% of R1,500 = R300, split 60/25/15 among the top three qualifying scores.
    assert [(t.place, t.entry_id, t.amount_cents) for t in top] == [
        (1, f.a_entries[0], 18_000), (2, f.a_entries[1], 7_500), (3, f.other_entries[0], 4_500)]
    assert {t.deadline for t in top} == {local(2026, 8, 17, 0, 0)}
    awarded = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.awarded")
                              .order_by(AuditEntry.id)).all()
    assert [a.detail["total_cents"] for a in awarded] == [500_000, 30_000]
    assert awarded[1].detail["remainders"] == []
