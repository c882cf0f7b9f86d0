"""The economics report, from a tournament run through the desk: 15 qualifying entries paid
in cash on 3 July and 2 in value chips on 5 July (tests.leaderboard.desk_fields), week 1's
R5,000 prize (the house's) awarded and claimed, the Top Score Progressive (20% of R1,700 =
R340, split 60/25/15) awarded and one of its three claimed. Figures worked out by hand."""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest
from sqlalchemy.orm import Session

from cli.main import main
from leaderboard import desk
from leaderboard.reports.economics import Economics, economics, read_economics
from leaderboard.reports.render import economics_csv, economics_text
from leaderboard.reports.window import ReportWindow
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import AFTER_QUALIFYING, qualifying_field
from tests.leaderboard.desk_helpers import SAST, FakeClock, local, register, settings

PATRON_A = "5001015009087"  # the document of qualifying_field's patron A


def run_tournament(session: Session, clock: FakeClock) -> None:
    s = settings()
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 5, 14, 0)
    for patron in f.spare[:2]:
        desk.buy_entry(session, s, clock, actor="desk-1", patron_id=patron,
                       payment="value_chips")
    clock.now = local(2026, 7, 10, 9, 0)
    [weekly] = desk.award_prizes(session, s, clock, actor="desk-1", kind="weekly", week=1,
                                 prize_cents=500_000)
    clock.now = local(2026, 7, 11, 12, 0)
    desk.claim_prize(session, s, clock, actor="desk-2", award_id=weekly.award_id,
                     id_number=PATRON_A)
    clock.now = AFTER_QUALIFYING
    top = desk.award_prizes(session, s, clock, actor="desk-1", kind="top_score")
    assert [t.amount_cents for t in top] == [20_400, 8_500, 5_100]
    clock.now = local(2026, 8, 2, 11, 0)
    desk.claim_prize(session, s, clock, actor="desk-2", award_id=top[0].award_id,
                     id_number=PATRON_A)


def report(session: Session, now: datetime, *, first: date | None = None,
           last: date | None = None) -> Economics:
    entries, awards = read_economics(session, now)
    return economics(entries, awards, settings(), ReportWindow(tz=SAST, first=first, last=last),
                     now)


def test_fees_pools_prizes_and_claims(session: Session, clock: FakeClock) -> None:
    run_tournament(session, clock)
    eco = report(session, local(2026, 8, 20))
    assert [(m, line.count, line.cents) for m, line in eco.fees] == [
        ("cash", 15, 150_000), ("value_chips", 2, 20_000)]
    assert (eco.fees_total.count, eco.fees_total.cents, eco.refunds.count) == (17, 170_000, 0)
    assert (eco.paid_entries, eco.buy_ins_cents, eco.split_remainder_cents) == (17, 170_000, 0)
    pools = {p.pool: p for p in eco.pools}
    assert (pools["final_pool"].cents, pools["final_pool"].awarded,
            pools["final_pool"].remainder_cents) == (136_000, False, 136_000)
    assert (pools["top_score"].cents, pools["top_score"].awarded_cents,
            pools["top_score"].remainder_cents, pools["top_score"].percent) == (
        34_000, 34_000, 0, "20%")
    prizes = {p.kind: p for p in eco.prizes}
    assert (prizes["weekly"].awarded.cents, prizes["weekly"].states["claimed"].count) == (
        500_000, 1)
    top = prizes["top_score"]
    assert (top.awarded.count, top.awarded.cents) == (3, 34_000)
    assert {s: (line.count, line.cents) for s, line in top.states.items()} == {
        "claimed": (1, 20_400), "unclaimed": (0, 0), "expired": (2, 13_600),
        "withheld": (0, 0)}  # the claim window closed at 00:00 on 17 August
    assert prizes["final"].awarded.count == 0
    assert eco.house_weekly_cents == 500_000 and eco.notes == ()
    before = report(session, local(2026, 8, 16, 23, 59))
    assert {p.kind: p for p in before.prizes}["top_score"].states["unclaimed"].count == 2
    text = economics_text(eco, ReportWindow(tz=SAST), "Africa/Johannesburg")
    assert "  cash               15 entries       R1,500.00" in text
    assert "Final Prize Pool (80%): R1,360.00; not awarded yet; remainder R1,360.00" in text
    assert ("Top Score Progressive: 3 awarded R340.00 (claimed 1 R204.00, unclaimed 0 R0.00,"
            " expired 2 R136.00, withheld 0 R0.00)") in text
    rows = economics_csv(eco, ReportWindow(tz=SAST)).splitlines()
    assert rows[0] == "section,item,count,cents,rand,as_of"
    assert rows[1] == "fees,cash,15,150000,1500.00,2026-08-20T00:00:00+02:00"
    assert "top_score,awarded,,34000,340.00,2026-08-20T00:00:00+02:00" in rows


def test_the_period_selects_fees_and_awards(session: Session, clock: FakeClock) -> None:
    run_tournament(session, clock)
    now = local(2026, 8, 20)
    later = report(session, now, first=local(2026, 7, 5).date())
    assert [(m, line.count) for m, line in later.fees] == [("cash", 0), ("value_chips", 2)]
    assert sum(p.awarded.count for p in later.prizes) == 4
    early = report(session, now, last=local(2026, 7, 9).date())
    assert early.fees_total.count == 17 and sum(p.awarded.count for p in early.prizes) == 0
    assert early.buy_ins_cents == 170_000  # the pools are always to date


def test_refunds_leave_the_fees_and_the_pools(session: Session, clock: FakeClock) -> None:
    s = settings()
    clock.now = local(2026, 7, 3, 14, 0)
    patron = register(session, clock, "8001015009081")
    kept, refunded = (desk.buy_entry(session, s, clock, actor="desk-1", patron_id=patron,
                                     payment="cash").entry_id for _ in range(2))
    desk.refund_entry(session, clock, actor="sup-1", entry_id=refunded, why="changed mind")
    eco = report(session, clock.now)
    assert (eco.fees_total.count, eco.fees_total.cents) == (1, 10_000)
    assert (eco.refunds.count, eco.refunds.cents) == (1, 10_000)
    assert eco.paid_entries == 1 and {p.pool: p.cents for p in eco.pools} == {
        "final_pool": 8_000, "top_score": 2_000}
    del kept


def test_the_command(session: Session, clock: FakeClock, database_url: Database,
                     capsys: pytest.CaptureFixture[str]) -> None:
    run_tournament(session, clock)
    assert main(["report", "economics", "--db", database_url.url, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fees"]["value_chips"] == {"entries": 2, "fees_cents": 20_000,
                                          "fees_rand": "200.00"}
    assert doc["to_date"]["pools"]["final_pool"]["pool_rand"] == "1360.00"
    assert doc["prizes"]["top_score"]["claimed"] == {"prizes": 1, "claimed_cents": 20_400,
                                                     "claimed_rand": "204.00"}
    assert main(["report", "economics", "--db", database_url.url, "--venue", "x"]) == 2
    assert "economics are the tournament's" in capsys.readouterr().err
