"""game.tournament.prizes: the 80/20 pools, place prizes with ties, weekly prizes and the 15-day
expiry.

Every expected amount is worked by hand from tournament.md "Prize money" and the promotion
rules [4, 17, 18, 52, 55]; the settings are the shipped config/tournament.toml.
"""

from __future__ import annotations

import dataclasses
import tomllib
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from game.tournament.entries import Stage
from game.tournament.prizes import (
    ClaimStatus,
    PrizeAward,
    PrizeBook,
    PrizeError,
    PrizeKind,
    RemainderReason,
    check_claim,
    claim_deadline,
    claim_status,
    final_book,
    final_draw_date,
    prize_pools,
    top_score_book,
    weekly_book,
    weekly_books,
    weekly_paid_on,
)
from game.tournament.schema import TournamentSettings, parse_tournament
from game.tournament.standings import (
    ScoreRecord,
    ScoreStatus,
    final_standings,
    qualifying_leaderboard,
    weekly_leaderboard,
)

CONFIG = Path(__file__).resolve().parents[3] / "config" / "tournament.toml"
SAST = ZoneInfo("Africa/Johannesburg")
R = 100


def load() -> TournamentSettings:
    return parse_tournament(tomllib.loads(CONFIG.read_text(encoding="utf-8")), "t.toml", tz=SAST)


SHIPPED = load()
SPLIT = dataclasses.replace(SHIPPED, tie_rule="split")
ODD = dataclasses.replace(SHIPPED, buy_in_cents=3_333)  # R33.33: every split leaves cents


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, *, s: int = 0, us: int = 0
       ) -> datetime:
    return datetime(y, mo, d, h, mi, s, us, tzinfo=SAST)


def rec(entry: str, score_rand: int, *, patron: str | None = None,
        stage: Stage = Stage.QUALIFYING, heat_day: date = date(2026, 7, 3),
        ack_minute: int = 0) -> ScoreRecord:
    """A finished, acknowledged score; a larger ack_minute acknowledges later."""
    recorded = datetime.combine(heat_day, datetime.min.time(), tzinfo=SAST) + timedelta(hours=20)
    return ScoreRecord(
        entry_id=entry, patron_id=patron or f"P-{entry}", stage=stage, heat_id="H", table="T1",
        score_cents=score_rand * R, hands=10 if stage is Stage.QUALIFYING else 12,
        status=ScoreStatus.FINISHED, recorded_at=recorded,
        acknowledged_at=recorded + timedelta(minutes=1 + ack_minute), voided=False,
        heat_day=heat_day,
    )


def final(entry: str, score_rand: int, ack_minute: int = 0, patron: str | None = None
          ) -> ScoreRecord:
    return rec(entry, score_rand, stage=Stage.FINAL, heat_day=date(2026, 8, 1),
               ack_minute=ack_minute, patron=patron)


def paid(book: PrizeBook) -> list[tuple[str, int | None, int]]:
    return [(a.entry_id, a.position if a.week is None else a.week, a.amount_cents)
            for a in book.awards]


def remainders(book: PrizeBook) -> list[tuple[RemainderReason, int]]:
    return [(r.reason, r.amount_cents) for r in book.remainders]


# ---- the pools [18] -------------------------------------------------------------------------

def test_seven_buy_ins_of_r100() -> None:
    pools = prize_pools(7, SHIPPED)
    # R700: 80% = R560.00 to the Final Prize Pool, 20% = R140.00 to the Top Score Progressive.
    assert (pools.total_cents, pools.final_pool_cents, pools.top_score_cents,
            pools.remainder_cents) == (70_000, 56_000, 14_000, 0)


def test_a_buy_in_that_does_not_split_evenly_reports_the_remainder() -> None:
    pools = prize_pools(7, ODD)
    # 7 x R33.33 = R233.31: 80% = 18,664.8c -> 18,664c; 20% = 4,666.2c -> 4,666c; 1c left.
    assert (pools.total_cents, pools.final_pool_cents, pools.top_score_cents,
            pools.remainder_cents) == (23_331, 18_664, 4_666, 1)


def test_no_entries_no_money() -> None:
    pools = prize_pools(0, SHIPPED)
    assert (pools.total_cents, pools.final_pool_cents, pools.top_score_cents) == (0, 0, 0)
    with pytest.raises(PrizeError, match="entries must be a whole number >= 0"):
        prize_pools(-1, SHIPPED)


# ---- Top Score Progressive [4, 18] ----------------------------------------------------------

def test_top_score_progressive_60_25_15() -> None:
    board = qualifying_leaderboard(
        [rec(f"E{i}", s) for i, s in enumerate([3_000, 2_800, 2_600, 2_400, 2_200, 2_000, 10])],
        SHIPPED)
    book = top_score_book(board, prize_pools(7, SHIPPED), SHIPPED)
    # R140: 60% R84.00, 25% R35.00, 15% R21.00.
    assert paid(book) == [("E0", 1, 8_400), ("E1", 2, 3_500), ("E2", 3, 2_100)]
    assert book.remainders == ()
    assert {a.kind for a in book.awards} == {PrizeKind.TOP_SCORE}


def test_top_score_rounding_remainder() -> None:
    board = qualifying_leaderboard([rec(f"E{i}", 3_000 - i) for i in range(7)], ODD)
    book = top_score_book(board, prize_pools(7, ODD), ODD)
    # 4,666c x 60% = 2,799.6 -> 2,799; x 25% = 1,166.5 -> 1,166; x 15% = 699.9 -> 699; 2c left.
    assert paid(book) == [("E0", 1, 2_799), ("E1", 2, 1_166), ("E2", 3, 699)]
    assert remainders(book) == [(RemainderReason.ROUNDING, 2)]
    assert "R46.66 split 60/25/15" in book.remainders[0].detail


def test_top_score_tie_earlier_acknowledged() -> None:
    records = [rec("E0", 3_000, ack_minute=5), rec("E1", 3_000, ack_minute=2), rec("E2", 100)]
    book = top_score_book(qualifying_leaderboard(records, SHIPPED), prize_pools(7, SHIPPED),
                          SHIPPED)
    assert paid(book) == [("E1", 1, 8_400), ("E0", 2, 3_500), ("E2", 3, 2_100)]


def test_top_score_three_way_tie_at_the_top_split() -> None:
    records = [rec(f"E{i}", 3_000, ack_minute=i) for i in range(3)] + [rec("E3", 10)]
    book = top_score_book(qualifying_leaderboard(records, SPLIT), prize_pools(7, SPLIT), SPLIT)
    # Places 1-3 pooled: R84 + R35 + R21 = R140; / 3 = R46.66 each, 2c left
    # (14,000 = 3 x 4,666 + 2).
    assert paid(book) == [("E0", 1, 4_666), ("E1", 1, 4_666), ("E2", 1, 4_666)]
    assert remainders(book) == [(RemainderReason.TIE_SPLIT, 2)]
    assert book.awarded_cents + book.remainder_cents == 14_000


def test_a_split_tie_across_the_last_prize_place_shares_only_the_paid_place() -> None:
    records = [rec("E0", 3_000), rec("E1", 2_000)] + [rec(f"T{i}", 900) for i in range(3)]
    book = top_score_book(qualifying_leaderboard(records, SPLIT), prize_pools(7, SPLIT), SPLIT)
    # T0..T2 hold positions 3, 4, 5; only place 3 pays (R21.00), shared: R7.00 each.
    assert paid(book) == [("E0", 1, 8_400), ("E1", 2, 3_500), ("T0", 3, 700), ("T1", 3, 700),
                          ("T2", 3, 700)]
    assert book.remainders == ()


def test_the_same_tie_under_earlier_acknowledged_pays_the_first_acknowledged() -> None:
    records = [rec("E0", 3_000), rec("E1", 2_000)] + [rec(f"T{i}", 900, ack_minute=9 - i)
                                                      for i in range(3)]
    book = top_score_book(qualifying_leaderboard(records, SHIPPED), prize_pools(7, SHIPPED),
                          SHIPPED)
    assert paid(book)[2:] == [("T2", 3, 2_100)]


def test_fewer_scores_than_prize_places_leave_the_share_unawarded() -> None:
    board = qualifying_leaderboard([rec("E0", 3_000), rec("E1", 2_000)], SHIPPED)
    book = top_score_book(board, prize_pools(2, SHIPPED), SHIPPED)
    # R40: R24.00, R10.00, and R6.00 for a 3rd place nobody holds.
    assert paid(book) == [("E0", 1, 2_400), ("E1", 2, 1_000)]
    assert remainders(book) == [(RemainderReason.UNAWARDED, 600)]
    assert book.remainders[0].detail == "place 3 has no counted score"


def test_a_patron_holding_several_places_wins_for_each() -> None:
    records = [rec("E0", 3_000, patron="P1"), rec("E1", 2_800), rec("E2", 2_600, patron="P1")]
    book = top_score_book(qualifying_leaderboard(records, SHIPPED), prize_pools(7, SHIPPED),
                          SHIPPED)
    assert [(a.entry_id, a.amount_cents) for a in book.awards_of("P1")] == [
        ("E0", 8_400), ("E2", 2_100)]


def test_prizes_come_from_the_board_of_their_stage() -> None:
    pools = prize_pools(7, SHIPPED)
    with pytest.raises(PrizeError, match="whole qualifying leaderboard"):
        top_score_book(final_standings([], SHIPPED), pools, SHIPPED)
    with pytest.raises(PrizeError, match="whole qualifying leaderboard"):
        top_score_book(weekly_leaderboard([], SHIPPED, 1), pools, SHIPPED)
    with pytest.raises(PrizeError, match="whole final leaderboard"):
        final_book(qualifying_leaderboard([], SHIPPED), pools, SHIPPED)


# ---- Final Prize Pool [52] ------------------------------------------------------------------

SIX = [9_000, 7_000, 5_000, 3_000, 2_000, 1_000]


def test_final_prize_pool_60_10_9_8_7_6() -> None:
    board = final_standings([final(f"F{i}", s) for i, s in enumerate(SIX)], SHIPPED)
    book = final_book(board, prize_pools(7, SHIPPED), SHIPPED)
    # R560: R336.00, R56.00, R50.40, R44.80, R39.20, R33.60.
    assert paid(book) == [("F0", 1, 33_600), ("F1", 2, 5_600), ("F2", 3, 5_040),
                          ("F3", 4, 4_480), ("F4", 5, 3_920), ("F5", 6, 3_360)]
    assert book.remainders == ()
    assert book.total_cents == 56_000


def test_final_tie_in_a_prize_place_both_modes() -> None:
    records = [final("F0", 9_000), final("F1", 5_000, ack_minute=3),
               final("F2", 5_000, ack_minute=1)] + [
        final(f"F{i}", s) for i, s in zip(range(3, 6), [3_000, 2_000, 1_000], strict=True)]
    pools = prize_pools(7, SHIPPED)
    ordered = final_book(final_standings(records, SHIPPED), pools, SHIPPED)
    assert paid(ordered)[1:3] == [("F2", 2, 5_600), ("F1", 3, 5_040)]
    shared = final_book(final_standings(records, SPLIT), pools, SPLIT)
    # Places 2 and 3 pooled: R56.00 + R50.40 = R106.40, R53.20 each.
    assert paid(shared)[1:3] == [("F2", 2, 5_320), ("F1", 2, 5_320)]
    assert paid(shared)[3] == ("F3", 4, 4_480)


def test_final_split_tie_with_an_odd_cent() -> None:
    records = [final(f"F{i}", s) for i, s in enumerate([9_000, 7_000, 5_000, 3_000, 1_000, 1_000])]
    book = final_book(final_standings(records, SPLIT), prize_pools(3, SPLIT), SPLIT)
    # R240 pool: 5th 7% = R16.80, 6th 6% = R14.40; pooled R31.20 -> R15.60 each, no cent left.
    assert paid(book)[4:] == [("F4", 5, 1_560), ("F5", 5, 1_560)]
    records = [final(f"F{i}", s) for i, s in enumerate([9_000, 7_000, 7_000, 7_000, 2, 1])]
    book = final_book(final_standings(records, SPLIT), prize_pools(1, SPLIT), SPLIT)
    # R80 pool: 2nd R8.00 + 3rd R7.20 + 4th R6.40 = R21.60 / 3 = R7.20 each.
    assert paid(book)[1:4] == [("F1", 2, 720), ("F2", 2, 720), ("F3", 2, 720)]
    odd = final_book(final_standings(records, SPLIT), prize_pools(1, ODD), ODD)
    # R33.33 -> Final pool 2,666c (80% = 2,666.4): 1st 1,599.6 -> 1,599; 2nd 266.6 -> 266;
    # 3rd 239.94 -> 239; 4th 213.28 -> 213; 5th 186.62 -> 186; 6th 159.96 -> 159; 4c rounding.
    # Places 2-4: 266 + 239 + 213 = 718 / 3 = 239 each, 1c tie remainder.
    assert paid(odd) == [("F0", 1, 1_599), ("F1", 2, 239), ("F2", 2, 239), ("F3", 2, 239),
                         ("F4", 5, 186), ("F5", 6, 159)]
    assert remainders(odd) == [(RemainderReason.ROUNDING, 4), (RemainderReason.TIE_SPLIT, 1)]
    assert odd.awarded_cents + odd.remainder_cents == 2_666


def test_a_finalist_whose_score_does_not_count_leaves_the_6th_share() -> None:
    records = [final(f"F{i}", s) for i, s in enumerate(SIX[:5])]  # the 6th never acknowledged
    book = final_book(final_standings(records, SHIPPED), prize_pools(7, SHIPPED), SHIPPED)
    assert remainders(book) == [(RemainderReason.UNAWARDED, 3_360)]


# ---- weekly prizes [17] ---------------------------------------------------------------------

WEEKLY = 1_000 * R  # the promotion names no amount: a parameter (R1,000 here)


def test_the_top_weekly_score_wins_the_weeks_prize() -> None:
    records = [rec("W1a", 2_500, heat_day=date(2026, 7, 9)),
               rec("W1b", 3_100, heat_day=date(2026, 7, 3)),
               rec("W2a", 2_000, heat_day=date(2026, 7, 10))]
    books = weekly_books(records, SHIPPED, WEEKLY)
    assert [b.week for b in books] == [1, 2, 3, 4]
    assert paid(books[0]) == [("W1b", 1, WEEKLY)]
    assert paid(books[1]) == [("W2a", 2, WEEKLY)]
    # Weeks 3 and 4 had no score: their prize is reported as not awarded.
    assert remainders(books[2]) == [(RemainderReason.UNAWARDED, WEEKLY)]
    assert books[2].remainders[0].detail == "week 3 has no counted score"
    assert all(b.kind is PrizeKind.WEEKLY for b in books)


def test_a_weekly_tie_both_modes() -> None:
    records = [rec(f"W{i}", 2_500, heat_day=date(2026, 7, 4 + i), ack_minute=5 - i)
               for i in range(3)]
    first = weekly_book(weekly_leaderboard(records, SHIPPED, 1), SHIPPED, WEEKLY)
    # Equal scores on different days: the earliest acknowledgement, W0 on 4 July, wins.
    assert paid(first) == [("W0", 1, WEEKLY)]
    shared = weekly_book(weekly_leaderboard(records, SPLIT, 1), SPLIT, WEEKLY)
    # R1,000 / 3 = R333.33 each, 1c left.
    assert paid(shared) == [("W0", 1, 33_333), ("W1", 1, 33_333), ("W2", 1, 33_333)]
    assert remainders(shared) == [(RemainderReason.TIE_SPLIT, 1)]


def test_weeks_beyond_the_4th_get_no_prize() -> None:
    five = dataclasses.replace(
        SHIPPED, schedule=dataclasses.replace(SHIPPED.schedule, first_day=date(2026, 7, 1)))
    records = [rec("E1", 2_000, heat_day=date(2026, 7, 30))]
    board = weekly_leaderboard(records, five, 5)
    assert [p.entry_id for p in board.places] == ["E1"]
    with pytest.raises(PrizeError, match="week 5 has no weekly prize: only the first 4"):
        weekly_book(board, five, WEEKLY)
    assert [b.week for b in weekly_books(records, five, WEEKLY)] == [1, 2, 3, 4]
    assert all(b.awards == () for b in weekly_books(records, five, WEEKLY))


def test_a_weekly_prize_needs_a_weekly_board_and_an_amount() -> None:
    with pytest.raises(PrizeError, match="weekly leaderboard"):
        weekly_book(qualifying_leaderboard([], SHIPPED), SHIPPED, WEEKLY)
    with pytest.raises(PrizeError, match="must be a whole number >= 1"):
        weekly_book(weekly_leaderboard([], SHIPPED, 1), SHIPPED, 0)


def test_weekly_prizes_are_paid_on_the_following_friday() -> None:
    assert [weekly_paid_on(SHIPPED, w) for w in (1, 2, 3, 4)] == [
        date(2026, 7, 10), date(2026, 7, 17), date(2026, 7, 24), date(2026, 7, 31)]
    book = weekly_book(weekly_leaderboard([rec("E1", 1)], SHIPPED, 1), SHIPPED, WEEKLY)
    assert book.awards[0].draw_date == date(2026, 7, 10)
    # Claimable to the end of 25 July (15 days after 10 July).
    assert book.awards[0].claim_deadline == at(2026, 7, 26)


# ---- claims [55] ----------------------------------------------------------------------------

def award(draw: date) -> PrizeAward:
    return PrizeAward(kind=PrizeKind.FINAL, week=None, position=1, entry_id="F1",
                      patron_id="P1", amount_cents=100, draw_date=draw,
                      claim_deadline=claim_deadline(draw, tz=SAST))


def test_final_and_progressive_prizes_count_from_the_final_date() -> None:
    assert final_draw_date(SHIPPED) == date(2026, 8, 1)
    board = final_standings([final("F0", 100)], SHIPPED)
    (won,) = final_book(board, prize_pools(1, SHIPPED), SHIPPED).awards
    assert (won.draw_date, won.claim_deadline) == (date(2026, 8, 1), at(2026, 8, 17))
    top = top_score_book(qualifying_leaderboard([rec("E0", 1)], SHIPPED),
                         prize_pools(1, SHIPPED), SHIPPED)
    assert top.awards[0].claim_deadline == at(2026, 8, 17)


def test_the_15th_day_after_the_draw_is_the_last_day_to_claim() -> None:
    # Day 1 is 2 August; day 15 is 16 August; it expires at 17 August 00:00 venue time.
    assert claim_deadline(date(2026, 8, 1), tz=SAST) == at(2026, 8, 17)
    assert claim_deadline(date(2026, 8, 1), tz=SAST, claim_days=1) == at(2026, 8, 3)
    with pytest.raises(PrizeError, match="claim_days must be a whole number >= 1"):
        claim_deadline(date(2026, 8, 1), tz=SAST, claim_days=0)
    with pytest.raises(PrizeError, match="draw date must be a date"):
        claim_deadline(at(2026, 8, 1), tz=SAST)


def test_expiry_exactly_at_the_deadline() -> None:
    won = award(date(2026, 8, 1))
    last_moment = at(2026, 8, 16, 23, 59, s=59, us=999_999)
    assert claim_status(won, at(2026, 8, 1, 18)) is ClaimStatus.UNCLAIMED
    assert claim_status(won, last_moment) is ClaimStatus.UNCLAIMED
    assert claim_status(won, at(2026, 8, 17)) is ClaimStatus.EXPIRED
    # The same instant written in UTC: 22:00 UTC on 16 August is midnight in Johannesburg.
    assert claim_status(won, datetime(2026, 8, 16, 22, 0, tzinfo=UTC)) is ClaimStatus.EXPIRED
    assert claim_status(won, datetime(2026, 8, 16, 21, 59, tzinfo=UTC)) is ClaimStatus.UNCLAIMED


def test_a_claim_counts_only_before_the_deadline() -> None:
    won = award(date(2026, 8, 1))
    later = at(2026, 9, 1)
    assert claim_status(won, later, claimed_at=at(2026, 8, 16, 23, 59, s=59)) is ClaimStatus.CLAIMED
    check_claim(won, at(2026, 8, 16, 23, 59, s=59))
    with pytest.raises(PrizeError, match="expired at 2026-08-17 00:00"):
        check_claim(won, at(2026, 8, 17))
    with pytest.raises(PrizeError, match="expired"):
        claim_status(won, later, claimed_at=at(2026, 8, 17))
    with pytest.raises(PrizeError, match="after now"):
        claim_status(won, at(2026, 8, 2), claimed_at=at(2026, 8, 3))
    with pytest.raises(PrizeError, match="time zone"):
        claim_status(won, datetime(2026, 8, 2))  # naive on purpose


def test_a_book_that_does_not_balance_is_refused() -> None:
    with pytest.raises(PrizeError, match="does not balance"):
        PrizeBook(kind=PrizeKind.FINAL, week=None, total_cents=101,
                  awards=(award(date(2026, 8, 1)),), remainders=())


# ---- properties: money conservation ---------------------------------------------------------

@st.composite
def percents(draw: st.DrawFn) -> tuple[Fraction, ...]:
    """1..6 percentages adding to exactly 100 (some fractional, some zero)."""
    n = draw(st.integers(1, 6))
    cuts = sorted(draw(st.lists(st.integers(0, 1_000), min_size=n - 1, max_size=n - 1)))
    bounds = [0, *cuts, 1_000]
    return tuple(Fraction(b - a, 10) for a, b in pairwise(bounds))


@hyp_settings(max_examples=300)
@given(entries=st.integers(0, 5_000), buy_in=st.integers(1, 100_000), places=percents(),
       scores=st.lists(st.integers(0, 5), max_size=14), split=st.booleans())
def test_money_is_conserved_in_every_split(entries: int, buy_in: int,
                                           places: tuple[Fraction, ...], scores: list[int],
                                           split: bool) -> None:
    settings = dataclasses.replace(
        SPLIT if split else SHIPPED, buy_in_cents=buy_in,
        prizes=dataclasses.replace(SHIPPED.prizes, top_score_places=places, final_places=places))
    pools = prize_pools(entries, settings)
    assert pools.total_cents == entries * buy_in
    assert pools.final_pool_cents + pools.top_score_cents + pools.remainder_cents == \
        pools.total_cents
    board = qualifying_leaderboard([rec(f"E{i}", s) for i, s in enumerate(scores)], settings)
    book = top_score_book(board, pools, settings)
    assert sum(a.amount_cents for a in book.awards) + sum(
        r.amount_cents for r in book.remainders) == pools.top_score_cents
    assert all(a.amount_cents > 0 for a in book.awards)
    # Tied entries always receive the same amount.
    by_position: dict[int | None, set[int]] = {}
    for a in book.awards:
        by_position.setdefault(a.position, set()).add(a.amount_cents)
    assert all(len(v) == 1 for v in by_position.values())
    finals = final_standings([final(f"F{i}", s) for i, s in enumerate(scores[:6])], settings)
    fbook = final_book(finals, pools, settings)
    assert fbook.awarded_cents + fbook.remainder_cents == pools.final_pool_cents


@hyp_settings(max_examples=200)
@given(prize=st.integers(1, 10_000_000), scores=st.lists(st.integers(0, 3), max_size=10),
       split=st.booleans())
def test_weekly_money_is_conserved(prize: int, scores: list[int], split: bool) -> None:
    settings = SPLIT if split else SHIPPED
    records = [rec(f"E{i}", s, heat_day=date(2026, 7, 3 + i)) for i, s in enumerate(scores)]
    for book in weekly_books(records, settings, prize):
        assert sum(a.amount_cents for a in book.awards) + sum(
            r.amount_cents for r in book.remainders) == prize
