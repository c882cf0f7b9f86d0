"""The desk's prize awards against the page and the rules, in the two cases the end-to-end
recomputation (tests/e2e) found wrong: a refunded buy-in left in the pools, and a Final place
whose score can never count holding back every Final prize."""

from __future__ import annotations

from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.standings.view import ViewOptions, standings
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import (
    AFTER_QUALIFYING,
    HEAT_TIME,
    buy,
    played_final,
    qualifying_field,
)
from tests.leaderboard.desk_helpers import FakeClock, local, migrated, settings


def test_a_refunded_buy_in_is_not_awarded(database_url: Database) -> None:
    with migrated(database_url) as engine, Session(engine, expire_on_commit=False) as session:
        clock = FakeClock(HEAT_TIME)
        field = qualifying_field(session, clock)  # 15 buy-ins of R100
        refunded = buy(session, clock, field.spare[0])
        desk.refund_entry(session, clock, actor="desk-1", entry_id=refunded,
                          why="bought by mistake, refunded before seating")
        clock.now = AFTER_QUALIFYING
        page = standings(engine, settings(), ViewOptions(venue="v", title="t",
                                                         stage=Stage.QUALIFYING),
                         now=AFTER_QUALIFYING)["pools"]
        assert page["entries"] == 15 and page["top_score"]["cents"] == 30_000
        awarded = desk.award_prizes(session, settings(), clock, actor="desk-1",
                                    kind="top_score")
        # R1,500 kept: 20% = R300, 60/25/15 = R180, R75, R45 (not R192, R80, R48 of R1,600)
        assert [a.amount_cents for a in awarded] == [18_000, 7_500, 4_500]


def test_the_final_prizes_are_awarded_after_a_finalists_score_is_voided(
        database_url: Database) -> None:
    with migrated(database_url) as engine, Session(engine, expire_on_commit=False) as session:
        clock = FakeClock(HEAT_TIME)
        _, finals = played_final(session, clock)  # 15 buy-ins: a Final Prize Pool of R1,200
        winner = finals[1].entry_id  # R4,500, the best Final score
        desk.void_score(session, settings(), clock, actor="desk-1", entry_id=winner,
                        why="the dealer dealt this seat from a second deck")
        clock.now = local(2026, 8, 1, 18, 30)
        awarded = desk.award_prizes(session, settings(), clock, actor="desk-1", kind="final")
        # the five counted scores R4,100, R3,200, R2,600, R1,800, R900 take places 1-5 of
        # 60/10/9/8/7/6 % of R1,200; the 6th place's R72 is unawarded
        assert [a.amount_cents for a in awarded] == [72_000, 12_000, 10_800, 9_600, 8_400]
        assert winner not in {a.entry_id for a in awarded}
