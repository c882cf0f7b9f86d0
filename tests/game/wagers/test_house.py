"""game.wagers.house_limits: house limits on the opening wagers and on the Play bet.

Spec: tournament.md "Money" and "Final Bonus Bet markers"; rules.md §0 items 7-9.
Amounts in cents: R25 = 2_500.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.errors import ConfigError, InvalidWager
from game.wagers.house_limits import HouseRules, check_play, check_wagers, least_stake_cents
from game.wagers.settle import SIDE_BETS, SeatWagers

R = 100  # cents per rand
TOURNAMENT = HouseRules()                       # R25 chips, Ante R25..R1,000, side bets R250
FINAL = HouseRules(markers_per_entry=3)         # the Final: 3 x R500 markers
START = 2_000 * R


def ok(wagers: SeatWagers, *, balance: int = START, markers_left: int = 0,
       rules: HouseRules = TOURNAMENT) -> None:
    check_wagers(seat=3, wagers=wagers, balance_cents=balance, markers_left=markers_left,
                 rules=rules)


def refused(wagers: SeatWagers, field: str, *, balance: int = START, markers_left: int = 0,
            rules: HouseRules = TOURNAMENT) -> InvalidWager:
    with pytest.raises(InvalidWager) as info:
        ok(wagers, balance=balance, markers_left=markers_left, rules=rules)
    assert info.value.seat == 3
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(f"seat 3: {field}: ")
    return info.value


def test_defaults_are_the_tournament_limits() -> None:
    # tournament.md: R25 denomination, Ante + Odds >= R50, side bets <= R250, markers R500.
    assert TOURNAMENT.denomination_cents == 25 * R
    assert 2 * TOURNAMENT.min_ante_cents == 50 * R
    assert TOURNAMENT.side_bet_max_cents == 250 * R
    assert TOURNAMENT.marker_value_cents == 500 * R
    assert TOURNAMENT.max_ante_cents == 1_000 * R
    assert TOURNAMENT.markers_per_entry == 0
    assert TOURNAMENT.side_bets_need_main


@pytest.mark.parametrize(
    "wagers",
    [
        SeatWagers(ante=25 * R, odds=25 * R),                                  # the minimum R50
        SeatWagers(ante=50 * R, odds=50 * R, trips_plus=250 * R, pocket_bonus=25 * R,
                   sweet16=100 * R),
        SeatWagers(ante=25 * R, odds=25 * R, sweet16=250 * R),
    ],
)
def test_legal_opening_wagers_accepted(wagers: SeatWagers) -> None:
    ok(wagers)


@pytest.mark.parametrize(
    ("wagers", "field", "words"),
    [
        (SeatWagers(), "ante", "no wager"),
        (SeatWagers(ante=25 * R), "odds", "must equal the Ante"),
        (SeatWagers(ante=25 * R, odds=50 * R), "odds", "must equal the Ante"),
        (SeatWagers(odds=25 * R), "ante", "needs an equal Ante"),
        (SeatWagers(trips_plus=25 * R), "trips_plus", "needs an Ante and Odds"),
        (SeatWagers(sweet16=25 * R), "sweet16", "needs an Ante and Odds"),
        (SeatWagers(ante=30 * R, odds=30 * R), "ante", "not a multiple of the denomination R25.00"),
        (SeatWagers(ante=25 * R, odds=25 * R, pocket_bonus=10 * R), "pocket_bonus",
         "not a multiple"),
        (SeatWagers(ante=25 * R, odds=25 * R, trips_plus=2_501), "trips_plus", "not a multiple"),
        (SeatWagers(ante=1_025 * R, odds=1_025 * R), "ante", "above the table maximum R1,000.00"),
        (SeatWagers(ante=25 * R, odds=25 * R, trips_plus=275 * R), "trips_plus",
         "above the side-bet maximum R250.00"),
        (SeatWagers(ante=25 * R, odds=25 * R, play=75 * R), "play", "no Play bet"),
        (SeatWagers(ante=-25 * R, odds=-25 * R), "ante", "negative"),
        (SeatWagers(ante=25 * R, odds=25 * R, sweet16=-25 * R), "sweet16", "negative"),
        (SeatWagers(ante=2500.0, odds=2500.0), "ante", "whole cents"),  # type: ignore[arg-type]
        (SeatWagers(ante=True, odds=True), "ante", "whole cents"),
    ],
)
def test_illegal_opening_wagers_refused(wagers: SeatWagers, field: str, words: str) -> None:
    assert words in str(refused(wagers, field))


def test_table_maximum_accepted_when_affordable() -> None:
    # R1,000 Ante + R1,000 Odds + a 1x Play R1,000 = R3,000: more than the R2,000 start holds.
    ok(SeatWagers(ante=1_000 * R, odds=1_000 * R), balance=3_000 * R)
    refused(SeatWagers(ante=1_000 * R, odds=1_000 * R), "total", balance=START)
    # From R2,000 the largest Ante is R650 (3 x 650 = 1,950; 3 x 675 = 2,025).
    ok(SeatWagers(ante=650 * R, odds=650 * R), balance=START)
    refused(SeatWagers(ante=675 * R, odds=675 * R), "total", balance=START)


def test_minimum_ante_with_a_higher_minimum() -> None:
    rules = HouseRules(min_ante_cents=50 * R)
    refused(SeatWagers(ante=25 * R, odds=25 * R), "ante", rules=rules)
    ok(SeatWagers(ante=50 * R, odds=50 * R), rules=rules)


def test_side_bets_without_main_cannot_be_configured() -> None:
    # settlement refuses a side bet without Ante and Odds (rules.md §0 item 8), so the house
    # rules must not accept one at no more bets and then fail at settle
    with pytest.raises(ConfigError, match=r"rules\.md §0 item 8"):
        HouseRules(side_bets_need_main=False)


# --- affordability, rules.md §0 item 9: Ante + Odds + side bets + a 1x Play <= balance ---

def test_affordability_exactly_covered() -> None:
    # Ante 100 + Odds 100 + sides 250 + 1x Play 100 = R550
    wagers = SeatWagers(ante=100 * R, odds=100 * R, trips_plus=250 * R)
    ok(wagers, balance=550 * R)
    error = refused(wagers, "total", balance=549_99)
    assert "R550.00" in str(error)
    assert "R549.99" in str(error)


def test_the_least_stake_is_three_minimum_antes() -> None:
    # R25 Ante + R25 Odds + R25 Play = R75: with R74.99 no hand can be played.
    assert least_stake_cents(TOURNAMENT) == 75 * R
    ok(SeatWagers(ante=25 * R, odds=25 * R), balance=75 * R)
    refused(SeatWagers(ante=25 * R, odds=25 * R), "total", balance=74_99)


def test_odd_balances_from_three_to_two_pays_still_play() -> None:
    # A 3:2 Odds pay leaves R37.50 steps: R87.50 covers R25 + R25 + R25 with R12.50 spare.
    ok(SeatWagers(ante=25 * R, odds=25 * R), balance=87_50)


# --- Final bonus markers (tournament.md): R500, on side bets only, up to R250 chips beside ---

def test_marker_alone_on_a_side_bet() -> None:
    ok(SeatWagers(ante=25 * R, odds=25 * R, markers=frozenset({"sweet16"})), markers_left=3,
       rules=FINAL)


def test_marker_with_full_chips_plays_750() -> None:
    wagers = SeatWagers(ante=25 * R, odds=25 * R, trips_plus=250 * R,
                        markers=frozenset({"trips_plus"}))
    ok(wagers, markers_left=1, rules=FINAL)
    # markers are not chips: affordability counts R25 + R25 + R250 + R25 = R325 only
    ok(wagers, balance=325 * R, markers_left=1, rules=FINAL)
    refused(wagers, "total", balance=324_99, markers_left=1, rules=FINAL)


def test_one_marker_on_each_side_bet_in_one_hand() -> None:
    ok(SeatWagers(ante=25 * R, odds=25 * R, markers=frozenset(SIDE_BETS)), markers_left=3,
       rules=FINAL)


@pytest.mark.parametrize(
    ("markers", "left", "rules", "words"),
    [
        (frozenset({"ante"}), 3, FINAL, "only on a side bet"),
        (frozenset({"odds"}), 3, FINAL, "only on a side bet"),
        (frozenset({"play"}), 3, FINAL, "only on a side bet"),
        (frozenset({"jackpot"}), 3, FINAL, "only on a side bet"),
        (frozenset({"sweet16"}), 0, FINAL, "has 0 left"),
        (frozenset(SIDE_BETS), 2, FINAL, "3 bonus marker(s) placed but the entry has 2 left"),
        (frozenset({"sweet16"}), 3, TOURNAMENT, "not in play in this stage"),
        ({"sweet16"}, 3, FINAL, "set of side-bet names"),
    ],
)
def test_markers_refused(markers: frozenset[str], left: int, rules: HouseRules, words: str) -> None:
    wagers = SeatWagers(ante=25 * R, odds=25 * R, markers=markers)
    assert words in str(refused(wagers, "markers", markers_left=left, rules=rules))


def test_marker_needs_the_main_bets() -> None:
    refused(SeatWagers(markers=frozenset({"pocket_bonus"})), "pocket_bonus", markers_left=3,
            rules=FINAL)


# --- the Play bet: 3x / 2x / 1x the Ante, only if affordable ---

@pytest.mark.parametrize(("multiple", "available", "fine"), [
    (3, 300 * R, True), (3, 299_99, False), (2, 200 * R, True), (2, 199_99, False),
    (1, 100 * R, True), (1, 99_99, False),
])
def test_play_affordability(multiple: int, available: int, fine: bool) -> None:
    def call() -> None:
        check_play(seat=5, ante_cents=100 * R, multiple=multiple, available_cents=available)
    if fine:
        call()
        return
    with pytest.raises(InvalidWager) as info:
        call()
    assert (info.value.seat, info.value.field) == (5, "play")
    assert f"R{multiple * 100}.00" in str(info.value)


@pytest.mark.parametrize("multiple", [0, 4, -1, True])
def test_play_multiple_must_be_3_2_or_1(multiple: int) -> None:
    with pytest.raises(InvalidWager, match="3x, 2x or 1x"):
        check_play(seat=1, ante_cents=25 * R, multiple=multiple, available_cents=START)


def test_play_needs_an_ante() -> None:
    with pytest.raises(InvalidWager, match="needs an Ante"):
        check_play(seat=1, ante_cents=0, multiple=1, available_cents=START)


@pytest.mark.parametrize(
    ("field", "value"),
    [("denomination_cents", 0), ("min_ante_cents", 0), ("min_ante_cents", 3_000),
     ("max_ante_cents", 2_000), ("side_bet_max_cents", 1_000), ("markers_per_entry", -1),
     ("side_bets_need_main", 1), ("side_bets_need_main", False)],
)
def test_house_rules_refuse_nonsense(field: str, value: int) -> None:
    with pytest.raises(ConfigError) as info:
        replace(TOURNAMENT, **{field: value})  # type: ignore[arg-type]
    assert info.value.key == field


# --- properties ---

UNIT = 25 * R


@st.composite
def legal(draw: st.DrawFn) -> tuple[SeatWagers, int, int]:
    """Legal Final wagers with a balance that covers them and the markers left."""
    ante = draw(st.integers(1, 40)) * UNIT
    sides = {name: draw(st.integers(0, 10)) * UNIT for name in SIDE_BETS}
    markers = frozenset(draw(st.sets(st.sampled_from(SIDE_BETS))))
    need = 3 * ante + sum(sides.values())
    balance = need + draw(st.integers(0, 5_000 * R))
    left = len(markers) + draw(st.integers(0, 3 - len(markers)))
    return SeatWagers(ante=ante, odds=ante, markers=markers, **sides), balance, left


@given(legal())
def test_every_legal_wager_is_accepted(case: tuple[SeatWagers, int, int]) -> None:
    wagers, balance, left = case
    check_wagers(seat=1, wagers=wagers, balance_cents=balance, markers_left=left, rules=FINAL)


# Each corruption breaks one rule and names the fields the refusal may point at.
Corruption = Callable[[SeatWagers, int, int], tuple[SeatWagers, int, int, set[str]]]
CORRUPTIONS: dict[str, Corruption] = {
    "odds_differs": lambda w, b, m: (replace(w, odds=w.odds + UNIT), b, m, {"odds"}),
    "ante_off_denomination": lambda w, b, m: (replace(w, ante=w.ante + 5 * R, odds=w.odds + 5 * R),
                                              b + 3 * 5 * R, m, {"ante", "odds"}),
    "side_off_denomination": lambda w, b, m: (replace(w, trips_plus=w.trips_plus + 1), b + 1, m,
                                              {"trips_plus"}),
    "side_over_cap": lambda w, b, m: (replace(w, sweet16=275 * R), b + 275 * R, m, {"sweet16"}),
    "ante_over_max": lambda w, b, m: (replace(w, ante=1_025 * R, odds=1_025 * R),
                                      b + 3 * 1_025 * R, m, {"ante"}),
    "unaffordable": lambda w, _b, m: (w, 3 * w.ante + sum(w.amount(s) for s in SIDE_BETS) - 1, m,
                                     {"total"}),
    "play_placed": lambda w, b, m: (replace(w, play=3 * w.ante), b, m, {"play"}),
    "too_many_markers": lambda w, b, _m: (replace(w, markers=frozenset(SIDE_BETS)), b, 2,
                                         {"markers"}),
    "negative_side": lambda w, b, m: (replace(w, pocket_bonus=-UNIT), b, m, {"pocket_bonus"}),
}


@given(legal(), st.lists(st.sampled_from(sorted(CORRUPTIONS)), min_size=1, max_size=4,
                         unique=True))
def test_any_invalid_wager_is_refused_whichever_field_is_wrong(
    case: tuple[SeatWagers, int, int], names: list[str]
) -> None:
    wagers, balance, left = case
    blamed: set[str] = set()
    for name in names:
        wagers, balance, left, fields = CORRUPTIONS[name](wagers, balance, left)
        blamed |= fields
    with pytest.raises(InvalidWager) as info:
        check_wagers(seat=2, wagers=wagers, balance_cents=balance, markers_left=left, rules=FINAL)
    assert info.value.seat == 2
    assert info.value.field in blamed, (names, str(info.value))
