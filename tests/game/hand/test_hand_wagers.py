"""The hand state machine at no more bets and after: opening checks, changed and late wagers.

Expected nets are worked by hand from rules.md §5-§7 and §10 (units of the R25 Ante), not by
running the code; shoe orders are written out for the default sequence (hand_helpers).
"""

from __future__ import annotations

import pytest

from game.errors import IllegalAction, InvalidWager
from game.hand import Phase
from game.hand.events import (
    SeatChecked,
    WagersLocked,
)
from game.poker.cards import parse_card
from game.wagers.house_limits import HouseRules
from game.wagers.settle import SeatWagers
from tests.game.hand_helpers import (
    START,
    U,
    alerts,
    all_sides,
    bet,
    new_hand,
    of,
    read,
    set_play,
)


@pytest.mark.parametrize(
    ("wagers", "balance", "field"),
    [
        (bet(odds=2 * U), START, "odds"),  # Odds must equal Ante (rules.md §3)
        (bet(trips=30_000), START, "trips_plus"),  # side bet above R250 (§0 item 8)
        (bet(1_000), START, "ante"),  # not a multiple of R25 / below the minimum
        (bet(ante=0, odds=0, trips=U), START, "trips_plus"),  # side bet without the main bets
        (bet(20_000, trips=U), 60_000, "total"),  # 3 x R200 + R25 > R600 (§0 item 9)
        (bet(markers=["sweet16"]), START, "markers"),  # no markers outside the Final
    ],
)
def test_illegal_opening_wagers_alert_naming_seat_and_field(
    wagers: SeatWagers, balance: int, field: str
) -> None:
    hand = new_hand([1, 2], balance=balance)
    hand.see_wagers(1, bet())
    hand.see_wagers(2, wagers)
    hand.no_more_bets()
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.field) == ("wager_invalid", 2, field)
    assert hand.paused and hand.phase is Phase.BETS_CLOSED
    assert hand.seats_in_hand == (1,)
    # A card now is held: the seats in the hand are not final.
    hand.read_card(parse_card("2c"))
    assert alerts(hand)[-1].kind == "card_held"
    assert hand.cards() == ()
    # Not fixed yet: resolving is refused with the reason.
    with pytest.raises(InvalidWager):
        hand.resolve_alert(alert.alert_id, "dealer asked the player")
    hand.see_wagers(2, bet())
    hand.resolve_alert(alert.alert_id, "player corrected the wager")
    assert hand.events[-1] == WagersLocked(seat=2, wagers=bet())
    hand.resolve_alert(alerts(hand)[-1].alert_id, "2c set aside; reshuffled into the next deck")
    assert not hand.paused
    assert hand.seats_in_hand == (1, 2)


def test_a_seat_whose_chips_are_removed_leaves_the_hand() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    hand.see_wagers(2, bet(odds=U + U))
    hand.no_more_bets()
    hand.see_wagers(2, SeatWagers())
    hand.resolve_alert(1, "player took the wager back")
    assert hand.seats_in_hand == (1,)
    read(hand, "2c 3c 4c 5c")
    assert hand.phase is Phase.PREFLOP_DECISIONS


def test_no_more_bets_refusals() -> None:
    hand = new_hand([1])
    with pytest.raises(IllegalAction, match="no seat has a wager"):
        hand.no_more_bets()
    assert not hand.can_no_more_bets()
    hand.see_wagers(1, bet())
    assert hand.can_no_more_bets()
    hand.no_more_bets()
    with pytest.raises(IllegalAction, match="not allowed in phase bets_closed"):
        hand.no_more_bets()


def test_final_markers_are_locked_and_used() -> None:
    # Final: a R500 marker on Trips Plus with R25 in chips; §10 example 1's seat (Th 2h flush)
    # wins Trips Plus 7 to 1 on the full R525; Ante -1, Play -1, Odds +5 (bad-beat flush).
    rules = HouseRules(markers_per_entry=3)
    hand = new_hand([1], markers_left=3, rules=rules)
    hand.see_wagers(1, bet(trips=U, markers=["trips_plus"]))
    hand.no_more_bets()
    read(hand, "Th Kc 2h 4c Qd 3h 8c 4h Jc 8h 4s")
    set_play(hand, 1, U)
    hand.settle()
    assert hand.nets_cents() == {1: 3 * U + 7 * (U + 50_000)}
    settlement = hand.settlement
    assert settlement is not None
    assert settlement.seats[0].markers_used == frozenset({"trips_plus"})


# ---- wager changes after no more bets -------------------------------------------------------


def test_wager_change_after_no_more_bets_pauses_until_restored() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, all_sides())
    hand.see_wagers(2, bet())
    hand.no_more_bets()
    read(hand, "2c 3c")
    hand.see_wagers(1, bet(2 * U, odds=U, trips=U, pocket=U, sweet=U))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.field) == ("wager_changed", 1, "ante")
    assert "Ante R25.00 -> R50.00" in alert.message
    # Further snapshots of the same seat do not pile up alerts.
    hand.see_wagers(1, bet(3 * U, odds=U, trips=U, pocket=U, sweet=U))
    assert len(alerts(hand)) == 1
    with pytest.raises(IllegalAction, match="still differ"):
        hand.resolve_alert(alert.alert_id, "chips put back")
    hand.see_wagers(1, all_sides())
    assert hand.paused  # a correct snapshot alone does not resume: the dealer confirms
    hand.resolve_alert(alert.alert_id, "chips put back")
    assert not hand.paused
    read(hand, "4c 5c 6c 7c")
    assert hand.phase is Phase.PREFLOP_DECISIONS


def test_side_bet_removed_and_marker_moved_are_changes() -> None:
    rules = HouseRules(markers_per_entry=3)
    hand = new_hand([1], markers_left=3, rules=rules)
    hand.see_wagers(1, bet(trips=U, markers=["trips_plus"]))
    hand.no_more_bets()
    hand.see_wagers(1, bet(trips=U, markers=["sweet16"]))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.field) == ("wager_changed", "markers")


def test_late_wager_on_a_seat_not_in_the_hand() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    hand.see_wagers(2, bet())
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat) == ("late_wager", 2)
    with pytest.raises(IllegalAction, match="still has chips"):
        hand.resolve_alert(alert.alert_id, "chips returned")
    hand.see_wagers(2, SeatWagers())
    hand.resolve_alert(alert.alert_id, "late bet returned to the player")
    assert hand.seats_in_hand == (1,)


def test_play_changed_after_it_was_made_is_an_alert() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    read(hand, "2c 3c 4c 5c")
    set_play(hand, 1, 3 * U)
    read(hand, "6c 7c")  # burn, first flop card: Play 3x locked
    set_play(hand, 1, 0)
    (alert,) = alerts(hand)
    assert (alert.kind, alert.field) == ("wager_changed", "play")
    assert "Play R75.00 -> R0.00" in alert.message


def test_play_spot_may_change_freely_before_its_decision_point() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    read(hand, "2c 3c 4c 5c")
    set_play(hand, 1, 3 * U)
    set_play(hand, 1, 0)  # changed mind before the flop: no alert
    read(hand, "6c 7c")
    assert not alerts(hand)
    assert of(hand, SeatChecked) == [SeatChecked(seat=1, street="preflop")]
