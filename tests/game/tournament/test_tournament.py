"""game.tournament.entries: entries, their chip ledger, hand counting, early end and markers.

Spec: tournament.md "Stages" (hands counted per entry, score = chips after the last hand, an
entry below the minimum ends early with its balance), "Final Bonus Bet markers"; rules.md §0
item 9. Settlements are built by hand here, so these tests do not depend on game.wagers.settle's
logic.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.errors import ConfigError, IllegalAction, InvalidWager
from game.poker.evaluate import evaluate
from game.tournament.entries import Entry, EntryStatus, Stage, StageRules
from game.wagers.house_limits import HouseRules
from game.wagers.settle import Result, SeatSettlement, WagerResult

R = 100
HAND = evaluate("Ah Kd 9c 7s 4h 3d 2c")
QUALIFYING = StageRules(stage=Stage.QUALIFYING, hands=10, starting_chips_cents=2_000 * R,
                        markers=0, house=HouseRules())
FINAL = StageRules(stage=Stage.FINAL, hands=12, starting_chips_cents=2_000 * R, markers=3,
                   house=HouseRules(markers_per_entry=3))


def result(wager: str, stake: int, net: int, *, marker: bool = False) -> WagerResult:
    outcome: Result = "win" if net > 0 else "lose" if net < 0 or (marker and net == 0) else "push"
    return WagerResult(wager=wager, result=outcome, stake_cents=stake, net_cents=net,
                       reason="test", marker=marker)


def hand(*results: WagerResult, seat: int = 1) -> SeatSettlement:
    return SeatSettlement(seat=seat, hand=HAND, outcome="lose", results=results)


def lose(ante: int, *, play: int = 1) -> SeatSettlement:
    """A hand lost to an opening dealer: Ante, Odds and a Play of `play` x Ante all lost."""
    return hand(result("ante", ante, -ante), result("odds", ante, -ante),
                result("play", play * ante, -play * ante))


def push() -> SeatSettlement:
    return hand(result("ante", 25 * R, 0), result("odds", 25 * R, 0), result("play", 25 * R, 0))


def test_new_entry() -> None:
    e = Entry.start(entry_id="Q-0001", rules=QUALIFYING)
    assert (e.stage, e.balance_cents, e.hands_played, e.hands_required, e.markers_left) == (
        Stage.QUALIFYING, 2_000 * R, 0, 10, 0)
    assert e.status is EntryStatus.ACTIVE
    assert e.score_cents is None
    assert e.hands_left == 10
    assert Entry.start(entry_id="F-1", rules=FINAL).markers_left == 3


def test_apply_moves_balance_and_counts_the_hand() -> None:
    e = Entry.start(entry_id="Q-1", rules=QUALIFYING)
    # Wins Ante R50 + Play 3x R150 + Odds flush 3:2 R75 = +R275; loses Sweet 16 R25: net +R250.
    s = hand(result("ante", 50 * R, 50 * R), result("odds", 50 * R, 75 * R),
             result("play", 150 * R, 150 * R), result("sweet16", 25 * R, -25 * R))
    after = e.apply(s)
    assert after.balance_cents == 2_250 * R
    assert after.hands_played == 1
    assert after.nets_cents == (250 * R,)
    assert e.balance_cents == 2_000 * R  # the original entry is unchanged
    assert e.hands_played == 0


def test_score_is_the_balance_after_the_last_hand() -> None:
    # 10 hands [14, 15]: 9 pushes and one loss of R25 + R25 + R25 -> R1,925.
    e = Entry.start(entry_id="Q-2", rules=QUALIFYING)
    for _ in range(9):
        e = e.apply(push())
        assert e.is_active
    e = e.apply(lose(25 * R))
    assert e.status is EntryStatus.FINISHED
    assert e.score_cents == e.balance_cents == 1_925 * R
    assert e.hands_left == 0
    with pytest.raises(IllegalAction, match="Q-2 has finished"):
        e.apply(push())


def test_entry_below_the_minimum_ends_early_with_its_balance() -> None:
    # R2,000 - 3 x R650 (Ante + Odds + 1x Play) = R50, below the R75 needed to play a hand.
    e = Entry.start(entry_id="Q-3", rules=QUALIFYING).apply(lose(650 * R))
    assert e.status is EntryStatus.ENDED_EARLY
    assert e.score_cents == e.balance_cents == 50 * R
    assert e.hands_played == 1
    with pytest.raises(IllegalAction, match="ended early"):
        e.apply(push())


def test_entry_that_can_still_cover_the_minimum_plays_on() -> None:
    # R2,000 - 3 x R625 = R125 >= R75: the entry plays on.
    e = Entry.start(entry_id="Q-4", rules=QUALIFYING).apply(lose(625 * R))
    assert e.is_active
    e = e.apply(lose(25 * R, play=2))  # R125 - R100 = R25 < R75
    assert e.status is EntryStatus.ENDED_EARLY
    assert e.score_cents == 25 * R


def test_exactly_the_minimum_left_plays_on() -> None:
    e = Entry.start(entry_id="Q-5", rules=QUALIFYING).apply(
        hand(result("ante", 25 * R, -25 * R), result("odds", 25 * R, -25 * R),
             result("trips_plus", 250 * R, -250 * R), result("pocket_bonus", 250 * R, -250 * R),
             result("sweet16", 250 * R, -250 * R), result("play", 75 * R, -75 * R)))
    e = e.apply(lose(300 * R, play=1))  # R1,125 - R900 = R225
    e = e.apply(lose(50 * R, play=1))   # R225 - R150 = R75, exactly one minimum hand
    assert e.balance_cents == 75 * R
    assert e.is_active


def test_last_hand_and_out_of_chips_together_is_a_finish() -> None:
    e = Entry.start(entry_id="Q-6", rules=replace(QUALIFYING, hands=1)).apply(lose(650 * R))
    assert e.status is EntryStatus.FINISHED
    assert e.score_cents == 50 * R


def test_final_markers_are_spent_and_unused_ones_forfeited() -> None:
    e = Entry.start(entry_id="F-1", rules=FINAL)
    # A marker with R250 chips on Trips Plus wins a flush 7:1 on R750: +R5,250; the marker goes.
    won = hand(result("ante", 25 * R, -25 * R), result("odds", 25 * R, -25 * R),
               result("play", 25 * R, -25 * R),
               result("trips_plus", 250 * R, 5_250 * R, marker=True))
    e = e.apply(won)
    assert e.markers_left == 2
    assert e.balance_cents == (2_000 - 75 + 5_250) * R
    # A lone marker on Sweet 16 loses: it costs no chips, the marker is used up.
    lost = hand(result("ante", 25 * R, 0), result("odds", 25 * R, 0), result("play", 25 * R, 0),
                result("sweet16", 0, 0, marker=True))
    e = e.apply(lost)
    assert e.markers_left == 1
    assert e.balance_cents == (2_000 - 75 + 5_250) * R
    for _ in range(10):
        e = e.apply(push())
    assert e.status is EntryStatus.FINISHED
    assert e.markers_forfeited == 1
    assert e.score_cents == (2_000 - 75 + 5_250) * R  # the unused marker adds nothing


def test_unused_markers_can_count_at_value_by_setting() -> None:
    rules = replace(FINAL, hands=1, unused_markers="count_at_value")
    e = Entry.start(entry_id="F-2", rules=rules).apply(push())
    assert e.balance_cents == 2_000 * R
    assert e.score_cents == (2_000 + 3 * 500) * R


def test_more_markers_than_left_is_refused() -> None:
    e = Entry.start(entry_id="F-3", rules=FINAL)
    three = hand(*(result(w, 0, 0, marker=True) for w in ("trips_plus", "pocket_bonus", "sweet16")),
                 result("ante", 25 * R, 0), result("odds", 25 * R, 0), result("play", 25 * R, 0))
    e = e.apply(three)
    assert e.markers_left == 0
    with pytest.raises(InvalidWager) as info:
        e.apply(hand(result("ante", 25 * R, 0), result("odds", 25 * R, 0),
                     result("sweet16", 0, 0, marker=True), seat=4))
    assert (info.value.seat, info.value.field) == (4, "markers")


def test_markers_outside_the_final_are_refused() -> None:
    with pytest.raises(InvalidWager, match="0 left"):
        Entry.start(entry_id="Q-7", rules=QUALIFYING).apply(
            hand(result("ante", 25 * R, 0), result("odds", 25 * R, 0),
                 result("sweet16", 0, 0, marker=True)))


def test_staking_more_than_the_balance_is_refused() -> None:
    # The wager check was bypassed: R700 x 3 = R2,100 staked from R2,000.
    e = Entry.start(entry_id="Q-8", rules=QUALIFYING)
    with pytest.raises(InvalidWager) as info:
        e.apply(lose(700 * R))
    assert info.value.field == "total"
    assert "R2,100.00" in str(info.value)


def test_losing_more_than_the_stake_is_refused() -> None:
    e = Entry.start(entry_id="Q-9", rules=QUALIFYING)
    with pytest.raises(InvalidWager) as info:
        e.apply(hand(result("ante", 25 * R, -50 * R), result("odds", 25 * R, -25 * R)))
    assert info.value.field == "ante"


def test_ledger_invariants_guard_construction() -> None:
    with pytest.raises(ValueError, match="starting chips plus"):
        Entry(entry_id="X", rules=QUALIFYING, balance_cents=1, markers_left=0)
    with pytest.raises(ValueError, match="score exactly when"):
        Entry(entry_id="X", rules=QUALIFYING, balance_cents=2_000 * R, markers_left=0,
              score_cents=2_000 * R)
    with pytest.raises(ValueError, match="markers left"):
        Entry(entry_id="X", rules=QUALIFYING, balance_cents=2_000 * R, markers_left=1)
    with pytest.raises(ValueError, match="entry_id"):
        Entry.start(entry_id="", rules=QUALIFYING)


@pytest.mark.parametrize(
    ("changes", "key"),
    [({"hands": 0}, "hands"), ({"markers": 3}, "markers"),
     ({"starting_chips_cents": 74 * R}, "starting_chips_cents"),
     ({"unused_markers": "refund"}, "unused_markers"), ({"hands": 1.5}, "hands")],
)
def test_stage_rules_refuse_nonsense(changes: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        replace(QUALIFYING, **changes)  # type: ignore[arg-type]
    assert info.value.key == key


# --- property: chips are conserved and never negative over any legal run of hands ---

UNIT = 25 * R
PAYS = [(1, 1), (3, 2), (3, 1), (10, 1), (500, 1), (4, 1), (7, 1), (30, 1), (160, 1), (12, 1)]


@st.composite
def legal_hand(draw: st.DrawFn, balance: int, markers_left: int) -> SeatSettlement:
    """Wagers the house checks would accept from `balance`, settled with arbitrary outcomes."""
    max_ante = min(40 * UNIT, balance // 3 // UNIT * UNIT)
    ante = draw(st.integers(1, max_ante // UNIT)) * UNIT
    spare = balance - 3 * ante
    results = []
    sides = {}
    for name in ("trips_plus", "pocket_bonus", "sweet16"):
        amount = draw(st.integers(0, min(10, spare // UNIT))) * UNIT
        spare -= amount
        sides[name] = amount
    multiple = draw(st.sampled_from([m for m in (3, 2, 1, 0) if m * ante <= spare + ante]))
    stakes = {"ante": ante, "odds": ante, "play": multiple * ante, **sides}
    markers = draw(st.sets(st.sampled_from(sorted(sides)), max_size=markers_left))
    for name, stake in stakes.items():
        marker = name in markers
        if stake == 0 and not marker:
            continue
        kind = draw(st.sampled_from(["win", "lose", "push"]))
        to_win, per = draw(st.sampled_from(PAYS))
        played = stake + (500 * R if marker else 0)
        net = {"win": played * to_win // per, "lose": -stake, "push": 0}[kind]
        results.append(result(name, stake, net, marker=marker))
    return hand(*results)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_chips_conserved_and_never_negative(data: st.DataObject) -> None:
    rules = data.draw(st.sampled_from([QUALIFYING, FINAL]))
    e = Entry.start(entry_id="P-1", rules=rules)
    nets = []
    markers_used = 0
    while e.is_active:
        s = data.draw(legal_hand(e.balance_cents, e.markers_left))
        before = e
        e = e.apply(s)
        nets.append(s.net_cents)
        markers_used += len(s.markers_used)
        assert e.balance_cents == before.balance_cents + s.net_cents
        assert e.balance_cents >= 0
    assert e.balance_cents == rules.starting_chips_cents + sum(nets)
    assert e.nets_cents == tuple(nets)
    assert e.hands_played == len(nets) <= rules.hands
    assert e.markers_left == rules.markers - markers_used
    assert e.score_cents == e.balance_cents
    if e.status is EntryStatus.ENDED_EARLY:
        assert e.balance_cents < 3 * rules.house.min_ante_cents
        assert e.hands_played < rules.hands
    else:
        assert e.hands_played == rules.hands
