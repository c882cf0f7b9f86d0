"""The recomputation on hand-made tournaments whose every figure is worked out by hand here, so
that a wrong recomputation cannot pass the end-to-end test silently."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from game.tournament.draw import draw_seats
from tests.e2e.draw import DrawReplayError, replay_seat_draw
from tests.e2e.handmade import HandMade, shipped_rules
from tests.e2e.recompute import heat_day_of, recompute, week_of
from tests.e2e.records import DeskRuling, HandCorrection, TableVoid
from tests.e2e.scoring import ENDED_EARLY, FINISHED, WITHDRAWN

SAST = ZoneInfo("Africa/Johannesburg")
THREE_HANDS = {"qualifying.hands": 3, "semi_final.hands": 3, "final.hands": 3}


def _floor(**changes: object) -> HandMade:
    return HandMade(shipped_rules({**THREE_HANDS, **changes}))


def _awards(expected_books: object, kind: str) -> list[tuple[str, int]]:
    return [(a.entry_id, a.amount_cents) for b in expected_books  # type: ignore[attr-defined]
            if b.kind == kind for a in b.awards]


def test_a_tie_is_broken_by_the_earlier_acknowledgement() -> None:
    f = _floor()
    for entry in ("E-a", "E-b", "E-c"):
        f.sell(entry, f"P-{entry[-1]}")
    # E-a and E-b both end on R2,100; E-a's score is recorded first but E-b acknowledges first
    a = f.play("t01", "E-a", [5000, 5000, 0])
    b = f.play("t02", "E-b", [10000, 0, 0])
    f.record("t01", "E-a", a)
    f.record("t02", "E-b", b)
    f.acknowledge("t02", "E-b", b)
    f.acknowledge("t01", "E-a", a)
    f.finish("t03", "E-c", [-2500, -2500, -2500])
    expected = recompute(f.evidence, f.rules)
    assert a == b == 210_000
    assert [(p.entry_id, p.position, p.score_cents) for p in expected.qualifying] == [
        ("E-b", 1, 210_000), ("E-a", 2, 210_000), ("E-c", 3, 192_500)]
    assert expected.qualifying[0].tied and not expected.qualifying[2].tied
    # 3 buy-ins of R100: Top Score Progressive R60.00 split 60/25/15
    assert _awards(expected.books, "top_score") == [("E-b", 3600), ("E-a", 1500), ("E-c", 900)]


def test_the_same_tie_split_shares_the_position_and_the_pooled_prize() -> None:
    f = _floor(**{"scores.tie_rule": "split"})
    for i in range(7):
        f.sell(f"E-{i}", f"P-{i}")
    for i in range(3):  # three entries tie at the top on R2,500
        f.finish("t01", f"E-{i}", [50_000, 0, 0])
    for i in range(3, 7):
        f.finish("t02", f"E-{i}", [-1000 * i, 0, 0])
    expected = recompute(f.evidence, f.rules)
    assert [p.position for p in expected.qualifying] == [1, 1, 1, 4, 5, 6, 7]
    # R700 in buy-ins: the Top Score Progressive is R140; the tied three pool R84 + R35 + R21
    # and take R46.66 each, 2 cents left over (docs/standings-and-prizes.md's worked example)
    top = expected.book("top_score")
    assert top is not None and top.total_cents == 14_000
    assert [(a.entry_id, a.place, a.amount_cents) for a in top.awards] == [
        ("E-0", 1, 4666), ("E-1", 1, 4666), ("E-2", 1, 4666)]
    assert [(r.reason, r.amount_cents) for r in top.remainders] == [("tie_split", 2)]
    # the week's R1,000 prize three ways: R333.33 each, 1 cent left over
    week = expected.book("weekly", 1)
    assert week is not None
    assert [a.amount_cents for a in week.awards] == [33_333] * 3
    assert [(r.reason, r.amount_cents) for r in week.remainders] == [("tie_split", 1)]


def test_an_odd_buy_in_leaves_rounding_remainders_that_are_reported() -> None:
    f = _floor(**{"money.buy_in": "R33.33"})
    for i in range(3):
        f.sell(f"E-{i}", f"P-{i}")
        f.finish("t01", f"E-{i}", [2500 * i, 0, 0])
    expected = recompute(f.evidence, f.rules)
    pools = expected.pools
    # 3 x R33.33 = R99.99: 80% is R79.992 -> R79.99, 20% R19.998 -> R19.99, 1 cent left
    assert (pools.total_cents, pools.final_pool_cents, pools.top_score_cents,
            pools.remainder_cents) == (9999, 7999, 1999, 1)
    top = expected.book("top_score")
    assert top is not None
    # 60/25/15 of R19.99: 1199.4 -> 1199, 499.75 -> 499, 299.85 -> 299: 2 cents rounding
    assert [a.amount_cents for a in top.awards] == [1199, 499, 299]
    assert [(r.reason, r.amount_cents) for r in top.remainders] == [("rounding", 2)]


def test_a_withdrawn_entry_has_no_score_but_its_buy_in_stays_in_the_pools() -> None:
    f = _floor()
    f.sell("E-stay", "P-1")
    f.sell("E-left", "P-2")
    f.finish("t01", "E-stay", [0, 0, 0])
    f.play("t01", "E-left", [20_000, 20_000])
    f.leave("t01", "E-left", 2)
    expected = recompute(f.evidence, f.rules)
    left = expected.scores["E-left"]
    assert (left.status, left.score_cents, left.counts, left.hands) == (WITHDRAWN, None,
                                                                        False, 2)
    assert [p.entry_id for p in expected.qualifying] == ["E-stay"]
    assert expected.pools.entries == 2 and expected.pools.total_cents == 20_000
    # only one counted score: the 2nd and 3rd Top Score shares are unawarded, not passed on
    top = expected.book("top_score")
    assert top is not None
    assert [(a.entry_id, a.amount_cents) for a in top.awards] == [("E-stay", 2400)]
    assert [(r.reason, r.amount_cents) for r in top.remainders] == [("unawarded", 1600)]


def test_a_voided_hand_counts_for_nobody_and_the_entry_plays_one_more() -> None:
    f = _floor()
    f.sell("E-1", "P-1")
    f.hand("t01", {"E-1": 5000})
    f.hand("t01", {"E-1": 99_999}, status="void")
    f.hand("t01", {"E-1": -2500})
    f.hand("t01", {"E-1": 7500})
    f.record("t01", "E-1", 210_000)
    f.acknowledge("t01", "E-1", 210_000)
    expected = recompute(f.evidence, f.rules)
    score = expected.scores["E-1"]
    assert (score.hands, score.score_cents, score.status) == (3, 210_000, FINISHED)
    assert not expected.problems


def test_a_ruling_at_the_table_replaces_a_hand_or_voids_it() -> None:
    f = _floor()
    f.sell("E-1", "P-1")
    corrected = f.hand("t01", {"E-1": -10_000})
    voided = f.hand("t01", {"E-1": -5000})
    for net in (2500, 2500):
        f.hand("t01", {"E-1": net})
    f.evidence.corrections += [
        HandCorrection(table="t01", seq=99, hand_id=corrected.hand_id, entry_id="E-1",
                       ruling="hand_corrected", recorded_net=-10_000, counted_net=5000),
        HandCorrection(table="t01", seq=100, hand_id=voided.hand_id, entry_id="E-1",
                       ruling="hand_voided", recorded_net=-5000, counted_net=0)]
    f.record("t01", "E-1", 210_000)
    expected = recompute(f.evidence, f.rules)
    # the voided hand leaves three: +R50 (ruled), +R25, +R25
    assert expected.scores["E-1"].hands == 3
    assert expected.scores["E-1"].score_cents == 210_000


def test_an_entry_below_the_least_stake_ends_early_with_that_balance() -> None:
    f = _floor()
    f.sell("E-1", "P-1")
    cents = f.play("t01", "E-1", [-195_000])  # R50 left: less than Ante + Odds + 1x Play, R75
    f.record("t01", "E-1", cents, hands=1, status=ENDED_EARLY)
    f.acknowledge("t01", "E-1", cents)
    expected = recompute(f.evidence, f.rules)
    score = expected.scores["E-1"]
    assert (score.status, score.score_cents, score.hands, score.counts) == (
        ENDED_EARLY, 5000, 1, True)
    assert f.rules.least_stake_cents == 7500


def test_wagering_more_than_the_entry_holds_is_a_problem() -> None:
    f = _floor()
    f.sell("E-1", "P-1")
    f.hand("t01", {"E-1": 0}, wagered={"E-1": 200_100})
    expected = recompute(f.evidence, f.rules)
    assert any("R2,001.00 wagered with R2,000.00 held" in p for p in expected.problems)


def test_what_does_not_count() -> None:
    f = _floor()
    names = ["E-unacked", "E-void", "E-refund", "E-dq", "E-desk-void", "E-ok"]
    for n in names:
        f.sell(n, f"P-{n}", status="refunded" if n == "E-refund" else "seated",
               disqualified=n == "E-dq")
    for n in names:
        f.finish("t01", n, [0, 0, 0], acknowledge=n != "E-unacked")
    f.evidence.table_voids.append(TableVoid(table="t01", seq=999, entry_id="E-void",
                                            at=f.tick()))
    f.evidence.rulings.append(DeskRuling(entry_id="E-desk-void", kind="voided", at=f.tick()))
    expected = recompute(f.evidence, f.rules)
    why = {n: expected.scores[n].why_not for n in names}
    assert why == {"E-unacked": "unacknowledged", "E-void": "voided", "E-refund": "refunded",
                   "E-dq": "disqualified", "E-desk-void": "voided", "E-ok": None}
    assert [p.entry_id for p in expected.qualifying] == ["E-ok"]
    # a refunded buy-in left the pools; a disqualified patron's stays
    assert expected.pools.entries == 5


def test_a_supervisors_correction_counts_and_acknowledges_at_the_ruling() -> None:
    f = _floor()
    f.sell("E-1", "P-1")
    f.sell("E-2", "P-2")
    f.finish("t01", "E-1", [0, 0, 0], acknowledge=False)  # disputed, never acknowledged
    f.finish("t01", "E-2", [10_000, 0, 0])
    ruled = f.tick()
    f.evidence.rulings.append(DeskRuling(entry_id="E-1", kind="corrected", at=ruled,
                                         cents=250_000))
    expected = recompute(f.evidence, f.rules)
    one = expected.scores["E-1"]
    assert (one.score_cents, one.counted_cents, one.acknowledged_at) == (200_000, 250_000, ruled)
    assert [p.entry_id for p in expected.qualifying] == ["E-1", "E-2"]


def test_weeks_run_friday_to_thursday_and_prizes_are_claimed_within_15_days() -> None:
    f = _floor()
    days = {"E-fri": (date(2026, 7, 3), 1000), "E-thu": (date(2026, 7, 9), 3000),
            "E-fri2": (date(2026, 7, 10), 2000), "E-late": (date(2026, 7, 30), 500)}
    for entry, (day, net) in days.items():
        f.sell(entry, f"P-{entry}", day=day)
        f.finish("t01", entry, [net, 0, 0])
    rules = f.rules
    assert [week_of(day, rules) for day, _ in days.values()] == [1, 1, 2, 4]
    expected = recompute(f.evidence, rules)
    assert {w: [p.entry_id for p in ps] for w, ps in expected.weekly.items()} == {
        1: ["E-thu", "E-fri"], 2: ["E-fri2"], 4: ["E-late"]}
    # week 1 is paid on Friday 10 July: claimable to the end of 25 July, expired at 26 July 00:00
    week1 = expected.book("weekly", 1)
    assert week1 is not None and [(a.entry_id, a.amount_cents) for a in week1.awards] == [
        ("E-thu", 100_000)]
    assert week1.awards[0].deadline == datetime(2026, 7, 26, tzinfo=SAST)
    # no heat in week 3: no book; week 4 has one
    assert expected.book("weekly", 3) is None and expected.book("weekly", 4) is not None
    # progressive and Final prizes count from the Final's date, 1 August: expired at 17 August
    top = expected.book("top_score")
    assert top is not None and top.awards[0].deadline == datetime(2026, 8, 17, tzinfo=SAST)


def test_the_top_twelve_advance_and_a_cut_line_tie_goes_to_the_earlier_acknowledgement() -> None:
    f = _floor()
    for i in range(14):
        f.sell(f"E-{i:02}", f"P-{i % 5}")
    for i in range(11):
        f.finish("t01", f"E-{i:02}", [100_000 - 2500 * i, 0, 0])
    # E-11, E-12 and E-13 tie on R2,000 for the last place; E-13 acknowledges first
    for i in (11, 12, 13):
        cents = f.play("t02", f"E-{i}", [0, 0, 0])
        f.record("t02", f"E-{i}", cents)
    for i in (13, 11, 12):
        f.acknowledge("t02", f"E-{i}", 200_000)
    expected = recompute(f.evidence, f.rules)
    assert expected.semi_places == [f"S-{i:02}" for i in range(11)] + ["S-13"]


def test_the_final_counts_markers_only_when_the_house_says_so() -> None:
    for setting, extra in (("forfeit", 0), ("count_at_value", 2 * 50_000)):
        f = _floor(**{"markers.unused_markers": setting})
        f.sell("F-1", "P-1", stage="final")
        f.hand("t01", {"F-1": 150_000}, markers={"F-1": 1})  # a marker on a winning bet
        f.hand("t01", {"F-1": 0})
        f.hand("t01", {"F-1": -2500})
        expected = recompute(f.evidence, f.rules)
        assert expected.scores["F-1"].score_cents == 200_000 + 147_500 + extra


def test_the_final_prize_pool_is_split_60_10_9_8_7_6() -> None:
    f = _floor()
    for i in range(10):
        f.sell(f"E-{i}", f"P-{i}")
    for i in range(6):
        f.sell(f"F-{i}", f"P-{i}", stage="final")
        f.finish("t09", f"F-{i}", [10_000 * (6 - i), 0, 0])
    expected = recompute(f.evidence, f.rules)
    # R1,000 in buy-ins: the Final Prize Pool is R800
    assert [(a.place, a.amount_cents) for a in expected.books[-1].awards] == [
        (1, 48_000), (2, 8000), (3, 7200), (4, 6400), (5, 5600), (6, 4800)]
    assert expected.books[-1].remainders == ()


def test_the_draw_replay_agrees_with_the_desks_draw_on_random_bytes() -> None:
    rng = random.Random(14)
    for _ in range(300):
        data = rng.randbytes(64)
        finalists = [f"F-{rng.getrandbits(32):08x}" for _ in range(rng.randint(1, 6))]
        drawn = draw_seats(finalists, list(range(1, 7)), data)
        assert replay_seat_draw(finalists, range(1, 7), data) == {
            a.finalist: a.seat for a in drawn.assignments}


def test_the_draw_replay_rejects_biased_bytes_and_runs_out_loudly() -> None:
    # three seats: a number below 3 rejects byte 255 (256 is not a multiple of 3)
    with pytest.raises(DrawReplayError):
        replay_seat_draw(["F-1", "F-2", "F-3"], [1, 2, 3], bytes([255] * 10))
    # 255 rejected, 4 % 3 = 1 swaps seats 3 and 2; then 0 swaps seats 2 and 1: [3, 1, 2]
    data = bytes([255, 4, 0])
    mine = replay_seat_draw(["F-c", "F-a", "F-b"], [3, 1, 2], data)
    assert mine == {"F-a": 3, "F-b": 1, "F-c": 2}
    assert {a.finalist: a.seat for a in draw_seats(["F-a", "F-b", "F-c"], [1, 2, 3],
                                                     data).assignments} == mine


def test_a_stage_start_is_venue_time() -> None:
    final = shipped_rules().stage("final").starts
    assert final is not None
    assert final.astimezone(SAST) == datetime(2026, 8, 1, 17, tzinfo=SAST)
    assert final.utcoffset() == timedelta(hours=2)


def test_a_buy_in_at_midnight_belongs_to_the_heat_that_opened_the_day_before() -> None:
    rules = shipped_rules()
    assert heat_day_of(datetime(2026, 7, 10, 0, 0, tzinfo=SAST), rules) == date(2026, 7, 9)
    assert heat_day_of(datetime(2026, 7, 10, 0, 1, tzinfo=SAST), rules) is None
    assert heat_day_of(datetime(2026, 7, 10, 12, 59, tzinfo=SAST), rules) is None
    assert heat_day_of(datetime(2026, 7, 10, 13, 0, tzinfo=SAST), rules) == date(2026, 7, 10)
    # the desk's heat day must be the buy-in's: an entry filed under another day is a problem
    f = _floor()
    f.sell("E-1", "P-1", day=date(2026, 7, 10), bought_at=datetime(2026, 7, 10, 0, 0,
                                                                      tzinfo=SAST))
    assert any("falls in the heat of 2026-07-09" in p
               for p in recompute(f.evidence, f.rules).problems)


def test_when_unacknowledged_scores_count_they_rank_after_acknowledged_equals() -> None:
    f = _floor(**{"scores.acknowledged_only": False})
    f.sell("E-early", "P-1")
    f.sell("E-late", "P-2")
    f.finish("t01", "E-early", [0, 0, 0], acknowledge=False)  # recorded first, never acked
    f.finish("t02", "E-late", [0, 0, 0])
    expected = recompute(f.evidence, f.rules)
    assert [(p.entry_id, p.position) for p in expected.qualifying] == [("E-late", 1),
                                                                       ("E-early", 2)]
    assert expected.scores["E-early"].counts
