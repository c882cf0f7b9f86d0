"""game.tournament.standings: leaderboards, ties in both tie modes, prize weeks in local time, the
cut line.

Expected values are worked by hand from tournament.md and the promotion rules (numbers in
brackets); the shipped config/tournament.toml provides the settings (3 July 2026 is a Friday).
"""

from __future__ import annotations

import dataclasses
import tomllib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings, parse_tournament
from game.tournament.standings import (
    Leaderboard,
    ScoreRecord,
    ScoreStatus,
    StandingsError,
    final_standings,
    leaderboard,
    qualifiers,
    qualifying_leaderboard,
    semi_final_standings,
    semi_finalists,
    weekly_leaderboard,
)

CONFIG = Path(__file__).resolve().parents[3] / "config" / "tournament.toml"
SAST = ZoneInfo("Africa/Johannesburg")
R = 100
HANDS = {Stage.QUALIFYING: 10, Stage.SEMI_FINAL: 12, Stage.FINAL: 12}


def load() -> TournamentSettings:
    return parse_tournament(tomllib.loads(CONFIG.read_text(encoding="utf-8")), "t.toml", tz=SAST)


SHIPPED = load()
SPLIT = dataclasses.replace(SHIPPED, tie_rule="split")


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, *, s: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, s, tzinfo=SAST)


def rec(entry: str, score_rand: float | int, *, patron: str | None = None,
        stage: Stage = Stage.QUALIFYING, heat_day: date = date(2026, 7, 3),
        ack: datetime | bool | None = True, recorded: datetime | None = None,
        voided: bool = False, heat: str = "H1", hands: int | None = None,
        status: ScoreStatus = ScoreStatus.FINISHED) -> ScoreRecord:
    """A score record; `ack=True` acknowledges one minute after recording."""
    recorded = recorded or datetime.combine(heat_day, datetime.min.time(), tzinfo=SAST) + \
        timedelta(hours=20)
    acknowledged = recorded + timedelta(minutes=1) if ack is True else (ack or None)
    return ScoreRecord(
        entry_id=entry, patron_id=patron or f"P-{entry}", stage=stage, heat_id=heat,
        table="T1", score_cents=round(score_rand * R), status=status,
        hands=HANDS[stage] if hands is None else hands, recorded_at=recorded,
        acknowledged_at=acknowledged, voided=voided, heat_day=heat_day,
    )


def ids(board: Leaderboard) -> list[str]:
    return [p.entry_id for p in board.places]


def positions(board: Leaderboard) -> list[int]:
    return [p.position for p in board.places]


# ---- the qualifying leaderboard [16] -------------------------------------------------------

def test_every_counted_score_highest_first() -> None:
    board = qualifying_leaderboard(
        [rec("E1", 2_000), rec("E2", 3_150), rec("E3", 0), rec("E4", 1_987.5)], SHIPPED)
    assert ids(board) == ["E2", "E1", "E4", "E3"]
    assert positions(board) == [1, 2, 3, 4]
    assert [p.score_cents for p in board.places] == [315_000, 200_000, 198_750, 0]
    assert board.ties == ()


def test_voided_and_unacknowledged_scores_do_not_count() -> None:
    records = [rec("E1", 2_500), rec("E2", 9_000, voided=True), rec("E3", 8_000, ack=None)]
    board = qualifying_leaderboard(records, SHIPPED)
    assert ids(board) == ["E1"]
    assert [(n.entry_id, n.reason) for n in board.not_counted] == [
        ("E2", "voided"), ("E3", "unacknowledged")]


def test_unacknowledged_scores_count_when_the_setting_allows() -> None:
    lenient = dataclasses.replace(SHIPPED, acknowledged_only=False)
    records = [rec("E1", 2_500, ack=None), rec("E2", 2_500), rec("E3", 2_600, ack=None)]
    board = qualifying_leaderboard(records, lenient)
    # Equal scores: an acknowledged score ranks before an unacknowledged one.
    assert ids(board) == ["E3", "E2", "E1"]
    assert board.ties[0].broken_by == ("acknowledged_at",)


def test_a_correction_voids_the_original_and_two_counted_scores_are_refused() -> None:
    original = rec("E1", 2_000, voided=True)
    corrected = rec("E1", 2_100)
    assert ids(qualifying_leaderboard([original, corrected], SHIPPED)) == ["E1"]
    with pytest.raises(StandingsError, match="E1 has two counted qualifying scores"):
        qualifying_leaderboard([rec("E1", 2_000), corrected], SHIPPED)


def test_a_patron_holds_one_place_per_entry() -> None:
    records = [rec("E1", 3_000, patron="P1"), rec("E2", 2_900), rec("E3", 2_800, patron="P1"),
               rec("E4", 2_700, patron="P1")]
    board = qualifying_leaderboard(records, SHIPPED)
    assert [p.rank for p in board.places_of("P1")] == [1, 3, 4]


def test_other_stages_are_not_on_the_qualifying_board() -> None:
    records = [rec("E1", 2_000),
               rec("S1", 5_000, stage=Stage.SEMI_FINAL, heat_day=date(2026, 8, 1))]
    assert ids(qualifying_leaderboard(records, SHIPPED)) == ["E1"]


# ---- ties: "earlier_acknowledged" -----------------------------------------------------------

def test_equal_scores_rank_by_the_earlier_acknowledgement() -> None:
    late = rec("E1", 2_500, ack=at(2026, 7, 3, 20, 30))
    early = rec("E2", 2_500, ack=at(2026, 7, 3, 19, 45))
    board = qualifying_leaderboard([late, early], SHIPPED)
    assert ids(board) == ["E2", "E1"]
    assert positions(board) == [1, 2]
    (tie,) = board.ties
    assert (tie.score_cents, tie.entry_ids, tie.positions, tie.broken_by) == (
        250_000, ("E2", "E1"), (1, 2), ("acknowledged_at",))


def test_acknowledgements_compare_as_instants_not_wall_clocks() -> None:
    # 18:00 UTC is 20:00 in Johannesburg: later than 19:00 SAST although "18:00" < "19:00".
    a = rec("E1", 2_500, ack=datetime(2026, 7, 3, 18, 0, tzinfo=UTC))
    b = rec("E2", 2_500, ack=at(2026, 7, 3, 19, 0))
    assert ids(qualifying_leaderboard([a, b], SHIPPED)) == ["E2", "E1"]


def test_equal_acknowledgements_fall_to_the_record_time_then_the_entry_id() -> None:
    same_ack = at(2026, 7, 3, 21)
    a = rec("E1", 2_500, ack=same_ack, recorded=at(2026, 7, 3, 20, 50))
    b = rec("E2", 2_500, ack=same_ack, recorded=at(2026, 7, 3, 20, 40))
    c = rec("E0", 2_500, ack=same_ack, recorded=at(2026, 7, 3, 20, 50))
    board = qualifying_leaderboard([a, b, c], SHIPPED)
    assert ids(board) == ["E2", "E0", "E1"]
    assert board.ties[0].broken_by == ("recorded_at", "entry_id")


# ---- ties: "split" --------------------------------------------------------------------------

def test_split_ties_share_a_position_1_2_2_4() -> None:
    records = [rec("E1", 500), rec("E2", 400, ack=at(2026, 7, 3, 22)),
               rec("E3", 400, ack=at(2026, 7, 3, 21)), rec("E4", 300)]
    board = qualifying_leaderboard(records, SPLIT)
    assert positions(board) == [1, 2, 2, 4]
    assert [p.rank for p in board.places] == [1, 2, 3, 4]
    assert ids(board) == ["E1", "E3", "E2", "E4"]  # display order still fixed
    (tie,) = board.ties
    assert (tie.entry_ids, tie.positions, tie.broken_by) == (("E3", "E2"), (2, 2), ())
    assert [p.entry_id for p in board.at_position(2)] == ["E3", "E2"]
    assert board.at_position(3) == ()


def test_split_with_a_three_way_tie_at_the_top() -> None:
    board = qualifying_leaderboard([rec(f"E{i}", 700) for i in range(3)] + [rec("E9", 1)], SPLIT)
    assert positions(board) == [1, 1, 1, 4]


# ---- records that contradict the settings ---------------------------------------------------

@pytest.mark.parametrize(
    ("record", "message"),
    [
        (rec("E1", 100, hands=9), "finished after 9 hands but a qualifying entry plays 10"),
        (rec("E1", 100, hands=10, status=ScoreStatus.ENDED_EARLY), "ended early after 10"),
        (rec("E1", 100, heat_day=date(2026, 7, 31)), "2026-07-31 is not a qualifying day"),
        (rec("S1", 100, stage=Stage.SEMI_FINAL, hands=10, heat_day=date(2026, 8, 1)),
         "a semi_final entry plays 12"),
    ],
)
def test_inconsistent_records_are_refused(record: ScoreRecord, message: str) -> None:
    with pytest.raises(StandingsError, match=message):
        qualifying_leaderboard([record], SHIPPED)


def test_an_entry_that_ended_early_ranks_by_its_balance() -> None:
    early = rec("E1", 60, hands=7, status=ScoreStatus.ENDED_EARLY)
    board = qualifying_leaderboard([early, rec("E2", 40)], SHIPPED)
    assert ids(board) == ["E1", "E2"]


def test_a_voided_record_is_kept_as_it_was() -> None:
    bad = rec("E1", 100, hands=3, voided=True)  # inconsistent, but voided: never counts
    assert qualifying_leaderboard([bad], SHIPPED).not_counted[0].reason == "voided"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entry_id": ""}, "entry_id must be a non-empty string"),
        ({"score_cents": -1}, "score_cents must be a whole number >= 0"),
        ({"score_cents": 12.5}, "score_cents must be a whole number"),
        ({"hands": True}, "hands must be a whole number"),
        ({"recorded_at": datetime(2026, 7, 3, 20)}, "recorded_at must be a datetime with a time"),
        ({"acknowledged_at": datetime(2026, 7, 3, 20)}, "acknowledged_at must be a datetime"),
        ({"heat_day": datetime(2026, 7, 3, 20, tzinfo=SAST)}, "heat_day must be a date"),
        ({"stage": "qualifying"}, "stage must be a Stage"),
        ({"status": "finished"}, "status must be a ScoreStatus"),
        ({"voided": 0}, "voided must be true or false"),
    ],
)
def test_a_malformed_record_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(StandingsError, match=message):
        dataclasses.replace(rec("E1", 100), **change)


# ---- prize weeks in local time [17] ---------------------------------------------------------

def test_weeks_run_friday_to_thursday_by_heat_day() -> None:
    records = [rec("W1-thu", 2_100, heat_day=date(2026, 7, 9)),
               rec("W2-fri", 2_200, heat_day=date(2026, 7, 10)),
               rec("W1-fri", 2_050, heat_day=date(2026, 7, 3))]
    assert ids(weekly_leaderboard(records, SHIPPED, 1)) == ["W1-thu", "W1-fri"]
    assert ids(weekly_leaderboard(records, SHIPPED, 2)) == ["W2-fri"]
    assert ids(weekly_leaderboard(records, SHIPPED, 3)) == []


def test_thursday_23_59_59_and_friday_00_00_both_belong_to_thursdays_heat() -> None:
    # The heat day comes from the buy-in time (schedule.heat_day). The last buy-in of
    # Thursday's heat is at 00:00 Friday (inclusive), so that entry still plays in week 1;
    # Friday's own heat opens at 13:00 and is week 2.
    sched = SHIPPED.schedule
    bought = {"thu-23:59:59": at(2026, 7, 9, 23, 59, s=59), "fri-00:00": at(2026, 7, 10, 0, 0),
              "fri-13:00": at(2026, 7, 10, 13, 0)}
    days = {name: sched.heat_day(t) for name, t in bought.items()}
    assert days == {"thu-23:59:59": date(2026, 7, 9), "fri-00:00": date(2026, 7, 9),
                    "fri-13:00": date(2026, 7, 10)}
    assert sched.heat_day(at(2026, 7, 10, 0, 0, s=1)) is None  # between heats: no buy-in
    records = [rec(name, 2_000 + i, heat_day=day)  # type: ignore[arg-type]
               for i, (name, day) in enumerate(days.items())]
    assert ids(weekly_leaderboard(records, SHIPPED, 1)) == ["fri-00:00", "thu-23:59:59"]
    assert ids(weekly_leaderboard(records, SHIPPED, 2)) == ["fri-13:00"]


def test_a_heat_running_past_midnight_counts_for_the_day_it_opened() -> None:
    # Bought Thursday 23:50, last hand and acknowledgement after midnight on Friday.
    late = rec("E1", 2_400, heat_day=date(2026, 7, 9), recorded=at(2026, 7, 10, 0, 40),
               ack=at(2026, 7, 10, 0, 41))
    assert ids(weekly_leaderboard([late], SHIPPED, 1)) == ["E1"]
    assert ids(weekly_leaderboard([late], SHIPPED, 2)) == []


def test_a_week_beyond_the_prize_weeks_still_has_a_leaderboard() -> None:
    # Heats from Wednesday 1 July: week 1 is Fri 26 June..Thu 2 July, so 30 July is week 5.
    five = dataclasses.replace(
        SHIPPED, schedule=dataclasses.replace(SHIPPED.schedule, first_day=date(2026, 7, 1)))
    board = weekly_leaderboard([rec("E1", 2_000, heat_day=date(2026, 7, 30))], five, 5)
    assert (board.week, ids(board)) == (5, ["E1"])


def test_weeks_are_numbered_from_1_and_belong_to_qualifying() -> None:
    with pytest.raises(StandingsError, match="numbered from 1"):
        weekly_leaderboard([], SHIPPED, 0)
    with pytest.raises(StandingsError, match="belong to qualifying"):
        leaderboard([], SHIPPED, stage=Stage.FINAL, week=1)


# ---- qualifiers and the cut line [21, 24] --------------------------------------------------

def fourteen(scores_13_14: tuple[int, int]) -> list[ScoreRecord]:
    """Twelve clear scores R3,000..R1,900, then two more; E12 acknowledged at 21:00."""
    records = [rec(f"E{i:02d}", 3_000 - 100 * (i - 1)) for i in range(1, 12)]
    records.append(rec("E12", 1_900, ack=at(2026, 7, 3, 21)))
    records.append(rec("E13", scores_13_14[0], ack=at(2026, 7, 3, 20)))
    records.append(rec("E14", scores_13_14[1], ack=at(2026, 7, 3, 22)))
    return records


def test_the_top_12_entries_advance() -> None:
    result = semi_finalists(fourteen((1_800, 1_700)), SHIPPED)
    assert result.entry_ids == tuple(f"E{i:02d}" for i in range(1, 13))
    assert result.cut_line_tie is None


def test_a_tie_across_the_cut_is_broken_by_the_earlier_acknowledgement() -> None:
    # E12, E13 and E14 all hold R1,900: E13 (20:00) then E12 (21:00) then E14 (22:00).
    result = semi_finalists(fourteen((1_900, 1_900)), SHIPPED)
    assert result.entry_ids[-1] == "E13"
    tie = result.cut_line_tie
    assert tie is not None
    assert (tie.score_cents, tie.places, tie.advanced, tie.left_out, tie.decided_by) == (
        190_000, 12, ("E13",), ("E12", "E14"), "acknowledged_at")
    assert tie.note == ("cut-line tie at R1,900.00 for the last of 12 places: E13 advance,"
                        " E12, E14 do not (decided by acknowledged at)")


def test_under_split_a_cut_line_tie_still_seats_exactly_12() -> None:
    result = semi_finalists(fourteen((1_900, 1_900)), SPLIT)
    assert len(result.advancing) == 12
    assert [p.position for p in result.board.places[-3:]] == [12, 12, 12]
    tie = result.cut_line_tie
    assert tie is not None
    assert (tie.advanced, tie.left_out) == (("E13",), ("E12", "E14"))


def test_a_tie_above_the_cut_is_no_cut_line_tie() -> None:
    records = fourteen((1_800, 1_700))
    records[10] = rec("E11", 1_900)  # E11 and E12 tied at 11th/12th, both in
    result = semi_finalists(records, SHIPPED)
    assert result.cut_line_tie is None
    assert set(result.entry_ids) >= {"E11", "E12"}


def test_fewer_entries_than_places_all_advance() -> None:
    result = semi_finalists([rec("E1", 10), rec("E2", 10)], SHIPPED)
    assert result.entry_ids == ("E1", "E2")  # equal scores and times: entry id order
    assert result.cut_line_tie is None
    with pytest.raises(StandingsError, match="at least one place"):
        qualifiers(result.board, 0)


def test_a_patron_with_several_semi_final_places_is_listed_for_proxies() -> None:
    records = fourteen((1_800, 1_700))
    records[0] = rec("E01", 3_000, patron="P9")
    records[5] = rec("E06", 2_500, patron="P9")
    by_patron = semi_finalists(records, SHIPPED).entries_by_patron()
    assert by_patron["P9"] == ("E01", "E06")
    assert sum(len(v) for v in by_patron.values()) == 12


# ---- semi-final and final [36, 52] ----------------------------------------------------------

def semi(entry: str, score: int, heat: str, minute: int = 0) -> ScoreRecord:
    return rec(entry, score, stage=Stage.SEMI_FINAL, heat=heat, heat_day=date(2026, 8, 1),
               recorded=at(2026, 8, 1, 16, 40 + minute))


def test_both_semi_final_heats_rank_together_and_the_top_6_advance() -> None:
    heat_a = [semi(f"A{i}", s, "SF-A") for i, s in enumerate([4_000, 3_000, 1_000, 900, 800, 0])]
    heat_b = [semi(f"B{i}", s, "SF-B") for i, s in enumerate([3_500, 2_500, 2_000, 1_500, 50, 25])]
    result = semi_final_standings(heat_a + heat_b, SHIPPED)
    assert result.entry_ids == ("A0", "B0", "A1", "B1", "B2", "B3")
    heat_only = leaderboard(heat_a + heat_b, SHIPPED, stage=Stage.SEMI_FINAL, heat_id="SF-B")
    assert ids(heat_only) == ["B0", "B1", "B2", "B3", "B4", "B5"]


def test_final_standings_with_a_tie_in_a_prize_place() -> None:
    finals = [rec(f"F{i}", s, stage=Stage.FINAL, heat_day=date(2026, 8, 1),
                  ack=at(2026, 8, 1, 18, 10 - i))
              for i, s in enumerate([9_000, 5_000, 5_000, 2_000, 1_000, 0])]
    assert positions(final_standings(finals, SHIPPED)) == [1, 2, 3, 4, 5, 6]
    assert ids(final_standings(finals, SHIPPED))[1:3] == ["F2", "F1"]  # F2 acknowledged first
    assert positions(final_standings(finals, SPLIT)) == [1, 2, 2, 4, 5, 6]


# ---- properties -------------------------------------------------------------------------------

BASE = at(2026, 7, 3, 20)


@st.composite
def record_sets(draw: st.DrawFn) -> list[ScoreRecord]:
    n = draw(st.integers(0, 25))
    records = []
    for i in range(n):
        score = draw(st.sampled_from([0, 25, 50, 2_000, 2_025, 3_000]))  # few values: many ties
        ack_minute = draw(st.one_of(st.none(), st.integers(0, 3)))
        ack = None if ack_minute is None else BASE + timedelta(minutes=ack_minute)
        records.append(rec(f"E{i}", score, patron=f"P{draw(st.integers(0, 4))}",
                           ack=ack, recorded=BASE - timedelta(minutes=draw(st.integers(0, 2))),
                           voided=draw(st.booleans()) and draw(st.booleans()),
                           heat_day=date(2026, 7, draw(st.integers(3, 30)))))
    return records


SETTINGS = st.sampled_from([
    SHIPPED, SPLIT, dataclasses.replace(SHIPPED, acknowledged_only=False),
    dataclasses.replace(SPLIT, acknowledged_only=False)])


@hyp_settings(max_examples=200)
@given(records=record_sets(), settings=SETTINGS)
def test_ranking_is_a_total_order_consistent_with_scores(records: list[ScoreRecord],
                                                         settings: TournamentSettings) -> None:
    board = qualifying_leaderboard(records, settings)
    scores = [p.score_cents for p in board.places]
    assert scores == sorted(scores, reverse=True)
    assert [p.rank for p in board.places] == list(range(1, len(scores) + 1))
    counted = [r for r in records if not r.voided
               and (r.acknowledged or not settings.acknowledged_only)]
    assert sorted(ids(board)) == sorted(r.entry_id for r in counted)
    for p in board.places:
        higher = sum(1 for s in scores if s > p.score_cents)
        if settings.tie_rule == "split":
            assert p.position == higher + 1
        else:
            assert p.position == p.rank
        assert p.tied == (scores.count(p.score_cents) > 1)


@hyp_settings(max_examples=200)
@given(records=record_sets(), settings=SETTINGS, data=st.data())
def test_a_permutation_of_the_records_never_changes_the_standings(
        records: list[ScoreRecord], settings: TournamentSettings, data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(records))
    assert qualifying_leaderboard(shuffled, settings) == qualifying_leaderboard(records, settings)
    assert semi_finalists(shuffled, settings) == semi_finalists(records, settings)
    for week in (1, 4):
        assert weekly_leaderboard(shuffled, settings, week) == weekly_leaderboard(
            records, settings, week)
