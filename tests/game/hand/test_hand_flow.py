"""The hand state machine end to end: whole hands, settle, reveal, void and the phase table.

Expected nets are worked by hand from rules.md §5-§7 and §10 (units of the R25 Ante), not by
running the code; shoe orders are written out for the default sequence (hand_helpers).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from game.errors import IllegalAction
from game.hand import TRANSITIONS, Phase
from game.hand.deal import UTH_DEAL, Target
from game.hand.events import (
    AlertResolved,
    BetsClosed,
    CardDealt,
    CardRead,
    HandOpened,
    HandSettled,
    HandVoided,
    PlayMade,
    SeatChecked,
    SeatFolded,
    WagersLocked,
    WagersSeen,
)
from game.poker.cards import parse_card
from game.poker.evaluate import Category
from tests.game.hand_helpers import (
    U,
    alerts,
    all_sides,
    bet,
    new_hand,
    of,
    read,
    set_play,
    to_preflop,
)

# The §10 examples 1 and 2 board: 3h 8c 4h 8h 4s, dealer Kc 4c (4s full of 8s, opens).
# Seat A Th 2h (flush, bad beat), B 8d 8s (four 8s), C 2c 7d (two pair, folds),
# D As Ks (two pair, A kicker), E 9s 6s (two pair), F 5h 6h (8-high flush, bad beat).


def test_six_seats_end_to_end() -> None:
    hand = new_hand(range(1, 7))
    hand.see_wagers(1, all_sides())  # A: Play 1x at the river
    hand.see_wagers(2, all_sides())  # B: Play 3x preflop
    hand.see_wagers(3, all_sides())  # C: checks twice, folds
    hand.see_wagers(4, all_sides())  # D: Play 3x preflop
    hand.see_wagers(5, bet())  # E: Play 2x on the flop, no side bets
    hand.see_wagers(6, bet(trips=U))  # F: Play 1x at the river, Trips Plus only
    assert hand.phase is Phase.WAGERS_OPEN
    hand.no_more_bets()
    assert hand.phase is Phase.BETS_CLOSED
    assert hand.seats_in_hand == (1, 2, 3, 4, 5, 6)
    read(hand, "Th 8d 2c As 9s 5h")
    assert hand.phase is Phase.HOLE_CARDS
    read(hand, "Kc 2h 8s 7d Ks 6s 6h 4c")
    assert hand.phase is Phase.PREFLOP_DECISIONS
    set_play(hand, 2, 3 * U)
    set_play(hand, 4, 3 * U)
    read(hand, "Qd")  # burn: no decision yet
    assert hand.phase is Phase.PREFLOP_DECISIONS
    read(hand, "3h")
    assert hand.phase is Phase.FLOP
    read(hand, "8c 4h")
    assert hand.phase is Phase.FLOP_DECISIONS
    set_play(hand, 5, 2 * U)
    read(hand, "Jc 8h")
    assert hand.phase is Phase.TURN_RIVER
    read(hand, "4s")
    assert hand.phase is Phase.RIVER_DECISIONS
    set_play(hand, 1, U)
    set_play(hand, 6, U)
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert not alerts(hand)
    plays = {(e.seat, e.street, e.amount_cents) for e in of(hand, PlayMade)}
    assert plays == {(2, "preflop", 3 * U), (4, "preflop", 3 * U), (5, "flop", 2 * U),
                     (1, "river", U), (6, "river", U)}
    assert [(e.seat, e.street) for e in of(hand, SeatChecked)] == [
        (1, "preflop"), (3, "preflop"), (5, "preflop"), (6, "preflop"),
        (1, "flop"), (3, "flop"), (6, "flop"),
    ]
    assert [e.seat for e in of(hand, SeatFolded)] == [3]
    # §10 ex. 1: -1 -1 +5 +7 -1 -1 = +8; ex. 2: +1 +3 +10 +30 +5 +6 = +55; C folds: -1 -1 and
    # three losing side bets = -5; D: -1 -3 -1 (two pair) -1 (trips) +20 (AKs) -1 (21) = +13;
    # E: -1 -2 -1 = -4; F: -1 -1 +5 (bad-beat flush) +7 (Trips Plus flush) = +10.
    assert hand.nets_cents() == {1: 8 * U, 2: 55 * U, 3: -5 * U, 4: 13 * U, 5: -4 * U, 6: 10 * U}
    settled = hand.events[-1]
    assert isinstance(settled, HandSettled)
    assert settled.settlement.dealer_opens
    assert settled.settlement.dealer_hand.category is Category.FULL_HOUSE


def test_three_active_seats_are_dealt_in_seat_order() -> None:
    hand = new_hand([1, 2, 4, 5, 6])  # seats 1 and 5 place nothing: not in the hand
    hand.see_wagers(2, all_sides())
    hand.see_wagers(4, all_sides())
    hand.see_wagers(6, all_sides())
    hand.no_more_bets()
    assert hand.seats_in_hand == (2, 4, 6)
    read(hand, "8d 2c Th Kc 8s 7d 2h 4c")
    assert dict(hand.cards())[Target(kind="seat", index=1, seat=4)] == parse_card("7d")
    set_play(hand, 2, 3 * U)
    read(hand, "Qd 3h 8c 4h Jc 8h 4s")
    set_play(hand, 6, U)
    hand.settle()
    # Same board as above: 2 is §10 example 2 (+55), 4 folds (-5), 6 is example 1 (+8).
    assert hand.nets_cents() == {2: 55 * U, 4: -5 * U, 6: 8 * U}


def test_one_seat_dealer_does_not_open() -> None:
    # §10 example 3: board Ad Kd 9c 4h 2c, dealer Td 3c (no pair), seat Tc 7s Play 1x:
    # Ante push, Play +1, Odds push (below a straight), three losing side bets: -2 units.
    hand = new_hand([3])
    hand.see_wagers(3, all_sides())
    hand.no_more_bets()
    read(hand, "Tc Td 7s 3c 5c Ad Kd 9c 6c 4h 2c")
    set_play(hand, 3, U)
    hand.settle()
    assert hand.nets_cents() == {3: -2 * U}
    settled = hand.events[-1]
    assert isinstance(settled, HandSettled) and not settled.settlement.dealer_opens


def test_play_two_times_on_the_flop() -> None:
    # §10 example 5 board 5s 6d 7c 8h 9s, dealer Tc 2d; seat Kh Kd plays 2x on the flop:
    # Ante -1, Play -2, Odds +4 (bad-beat straight), Trips +4, Pocket +5 (KK), Sweet 16 -1 (20).
    hand = new_hand([1])
    hand.see_wagers(1, all_sides())
    hand.no_more_bets()
    read(hand, "Kh Tc Kd 2d 2s 5s 6d 7c")
    assert hand.phase is Phase.FLOP_DECISIONS
    assert [(e.seat, e.street) for e in of(hand, SeatChecked)] == [(1, "preflop")]
    set_play(hand, 1, 2 * U)
    read(hand, "3s 8h 9s")
    assert hand.wagers(1) == all_sides(play=2 * U)
    hand.settle()
    assert hand.nets_cents() == {1: 9 * U}
    assert of(hand, SeatFolded) == []


def test_events_in_order_and_inputs_recorded_with_their_time() -> None:
    at = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    hand = new_hand([1])
    hand.see_wagers(1, bet(), at=at)
    hand.no_more_bets(at=at)
    hand.read_card(parse_card("Ah"), source="manual", at=at)
    assert [type(e) for e in hand.events] == [
        HandOpened, WagersSeen, BetsClosed, WagersLocked, CardRead, CardDealt,
    ]
    assert hand.events[4] == CardRead(card=parse_card("Ah"), source="manual", at=at)
    assert hand.events[5] == CardDealt(
        position=0, target=Target(kind="seat", index=0, seat=1), card=parse_card("Ah")
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        hand.events[5].position = 3  # type: ignore[misc]

# ---- settle, reveal, void ---------------------------------------------------------------------


def test_settle_only_when_all_cards_are_in() -> None:
    hand = to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d")
    with pytest.raises(IllegalAction, match="not allowed in phase turn_river"):
        hand.settle()
    read(hand, "7d")
    assert hand.can_settle()


def test_face_down_board_with_console_reveals() -> None:
    # UTH style: the five board cards are read right after the holes, face down.
    hand = new_hand([1], deal=UTH_DEAL)
    hand.see_wagers(1, all_sides())
    hand.no_more_bets()
    read(hand, "8d Kc 8s 4c 3h 8c 4h 8h 4s")
    assert hand.phase is Phase.PREFLOP_DECISIONS
    assert not of(hand, SeatChecked)
    set_play(hand, 1, 3 * U)
    hand.reveal()
    assert hand.phase is Phase.FLOP_DECISIONS
    assert of(hand, PlayMade) == [
        PlayMade(seat=1, street="preflop", multiple=3, amount_cents=3 * U)
    ]
    hand.reveal()
    assert hand.phase is Phase.RIVER_DECISIONS
    hand.settle()
    assert hand.nets_cents() == {1: 55 * U}  # §10 example 2


def test_reveal_refusals() -> None:
    hand = to_preflop()
    with pytest.raises(IllegalAction, match="first card"):
        hand.reveal()
    uth = new_hand([1], deal=UTH_DEAL)
    uth.see_wagers(1, bet())
    uth.no_more_bets()
    read(uth, "2c 3c 4c 5c 6c")
    with pytest.raises(IllegalAction, match="not all read"):
        uth.reveal()


@pytest.mark.parametrize("cards", [0, 2, 4, 5, 7, 9, 11])
def test_void_from_any_phase_returns_every_wager(cards: int) -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    if cards:
        hand.see_wagers(2, bet())
        hand.no_more_bets()
        deck = ["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc"]
        read(hand, " ".join(deck[:cards]))
    phase = hand.phase
    event = hand.void("misdeal: wrong number of cards", by="supervisor 2")
    assert event == HandVoided(reason="misdeal: wrong number of cards", by="supervisor 2")
    assert hand.phase is Phase.VOID
    assert hand.nets_cents() == {1: 0, 2: 0}
    assert hand.state().void_reason == "misdeal: wrong number of cards"
    assert phase in TRANSITIONS and Phase.VOID in TRANSITIONS[phase].values()


def test_void_while_paused_and_needs_reason() -> None:
    hand = to_preflop()
    hand.read_card(parse_card("2c"))
    assert hand.paused
    with pytest.raises(IllegalAction, match="reason"):
        hand.void("")
    hand.void("foreign card in the deck")
    assert hand.phase is Phase.VOID


def test_resolve_alert_refusals() -> None:
    hand = to_preflop()
    with pytest.raises(IllegalAction, match="no alert 1"):
        hand.resolve_alert(1, "nothing")
    hand.read_card(parse_card("2c"))
    with pytest.raises(IllegalAction, match="reason"):
        hand.resolve_alert(1, "")
    event = hand.resolve_alert(1, "double read")
    assert event == AlertResolved(alert_id=1, reason="double read")
    with pytest.raises(IllegalAction, match="already resolved"):
        hand.resolve_alert(1, "again")


def test_phase_table_shape() -> None:
    # Every phase is in the table; only SETTLED and VOID are final; void is reachable from all.
    assert set(TRANSITIONS) == set(Phase)
    for phase, row in TRANSITIONS.items():
        if phase in (Phase.SETTLED, Phase.VOID):
            assert row == {}
        else:
            assert Phase.VOID in row.values()


def test_hand_creation_is_checked() -> None:
    with pytest.raises(IllegalAction):
        new_hand([])
    with pytest.raises(IllegalAction):
        new_hand([2, 1])
    with pytest.raises(IllegalAction):
        new_hand([1], balance=-1)
    with pytest.raises(IllegalAction):
        new_hand([1], hand_id=" ")
