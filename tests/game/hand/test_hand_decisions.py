"""The hand state machine reads the Play spot at each decision point; never a guess.

Expected nets are worked by hand from rules.md §5-§7 and §10 (units of the R25 Ante), not by
running the code; shoe orders are written out for the default sequence (hand_helpers).
"""

from __future__ import annotations

import pytest

from game.errors import IllegalAction
from game.hand import Phase
from game.hand.deal import Target
from game.hand.events import (
    HandSettled,
    PlayMade,
    SeatChecked,
    SeatFolded,
    SettleRequested,
)
from game.poker.cards import parse_card
from tests.game.hand_helpers import (
    U,
    alerts,
    bet,
    of,
    read,
    set_play,
    to_preflop,
)


@pytest.mark.parametrize(
    ("street", "wrong"),
    [("preflop", 2 * U), ("preflop", U), ("preflop", 4 * U), ("flop", 3 * U), ("flop", U),
     ("river", 2 * U), ("river", 3 * U), ("river", 1_000)],
)
def test_wrong_play_size_at_each_decision_is_an_alert_never_a_guess(
    street: str, wrong: int
) -> None:
    hand = to_preflop()
    good = {"preflop": 3 * U, "flop": 2 * U, "river": U}[street]
    if street == "preflop":
        set_play(hand, 1, wrong)
    read(hand, "Kd Qd Jd Td")
    if street == "flop":
        set_play(hand, 1, wrong)
    read(hand, "9d 8d 7d")
    if street == "river":
        set_play(hand, 1, wrong)
        hand.settle()
    alert = alerts(hand)[0]
    assert (alert.kind, alert.seat, alert.field, alert.street) == ("play_size", 1, "play", street)
    assert not [e for e in of(hand, PlayMade) if e.amount_cents == wrong]
    assert hand.paused
    assert hand.phase is not Phase.SETTLED
    with pytest.raises(IllegalAction, match="not fixed yet"):
        hand.resolve_alert(alert.alert_id, "asked the player")
    set_play(hand, 1, good)
    hand.resolve_alert(alert.alert_id, "player corrected the Play")
    assert hand.events[-1] == PlayMade(seat=1, street=street, multiple=good // U, amount_cents=good)  # type: ignore[arg-type]


def test_play_the_seat_cannot_afford_is_an_alert() -> None:
    # Balance R100: Ante + Odds R50 leave R50; a 3x Play (R75) is impossible, 2x (R50) is fine.
    hand = to_preflop(balance=10_000)
    set_play(hand, 1, 3 * U)
    read(hand, "Kd Qd")
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.street) == ("play_unaffordable", 1, "preflop")
    set_play(hand, 1, 0)
    hand.resolve_alert(alert.alert_id, "player took the Play back: checks")
    assert hand.events[-1] == SeatChecked(seat=1, street="preflop")
    read(hand, "Jd Td 9d")
    set_play(hand, 1, 2 * U)
    read(hand, "8d")
    assert hand.events[-1] == PlayMade(seat=1, street="flop", multiple=2, amount_cents=2 * U)


def test_fold_at_settle_when_play_spot_is_empty() -> None:
    hand = to_preflop(seats=(1, 2))
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    set_play(hand, 2, U)
    hand.settle()
    assert of(hand, SeatFolded) == [SeatFolded(seat=1)]
    settlement = hand.settlement
    assert settlement is not None
    assert settlement.seats[0].outcome == "fold"
    # A fold forfeits Ante and Odds at once (rules.md §4.2).
    assert hand.nets_cents()[1] == -2 * U


def test_river_alert_pauses_in_showdown_then_settle_again() -> None:
    hand = to_preflop(seats=(1, 2))
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    set_play(hand, 1, 2 * U)  # wrong at the river
    set_play(hand, 2, U)
    hand.settle()
    assert hand.phase is Phase.SHOWDOWN and hand.paused
    assert hand.settlement is None
    assert [a.kind for a in alerts(hand)] == ["play_size"]
    assert hand.events[-1] == PlayMade(seat=2, street="river", multiple=1, amount_cents=U)
    assert not hand.can_settle()
    set_play(hand, 1, 0)
    hand.resolve_alert(alerts(hand)[0].alert_id, "player withdrew the Play: fold")
    assert hand.events[-1] == SeatFolded(seat=1)
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert [type(e) for e in hand.events[-2:]] == [SettleRequested, HandSettled]


def test_no_decision_while_paused_and_non_gate_cards_still_placed() -> None:
    hand = to_preflop(seats=(1, 2))
    set_play(hand, 1, 2 * U)  # wrong preflop
    read(hand, "Kd Qd")  # burn, flop 1: the decision point
    assert hand.phase is Phase.FLOP and hand.paused
    read(hand, "Jd Td")  # flop 2 and 3: placed (positions are certain, no decision crossed)
    assert hand.phase is Phase.FLOP_DECISIONS
    read(hand, "9d 8d")  # burn placed; the turn would open the flop decisions: held
    held = alerts(hand)[-1]
    assert (held.kind, held.card, held.position) == ("card_held", parse_card("8d"), 11)
    assert hand.next_target == Target(kind="board", index=3)
    read(hand, "7d")  # any card after a held card is held too
    assert alerts(hand)[-1].kind == "card_held"
    set_play(hand, 1, 3 * U)
    hand.resolve_alert(alerts(hand)[0].alert_id, "short Play made up to 3x")
    for a in alerts(hand)[1:]:
        hand.resolve_alert(a.alert_id, "held card re-keyed by hand")
    hand.read_card(parse_card("8d"), source="manual")
    hand.read_card(parse_card("7d"), source="manual")
    assert hand.phase is Phase.RIVER_DECISIONS
    assert hand.wagers(1) == bet(play=3 * U)
