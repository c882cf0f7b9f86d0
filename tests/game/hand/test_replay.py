"""Replay: a record rebuilds the identical hand; a record that is not its own is refused."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from game.hand import Hand, Phase
from game.hand.deal import UTH_DEAL
from game.hand.events import (
    INPUT_EVENTS,
    AlertRaised,
    CardDealt,
    CardRead,
    Event,
    HandSettled,
    PlayMade,
    SettleRequested,
    WagersSeen,
)
from game.hand.replay import ReplayMismatch, replay
from game.paytables.lines import CategoryTable, Pay
from game.poker.cards import parse_card, parse_cards
from game.poker.evaluate import Category
from tests.game.hand_helpers import PAYTABLES, U, all_sides, bet, new_hand, set_play

T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)


def messy_hand() -> Hand:
    """A settled hand with every kind of alert, corrections, manual keying and timestamps."""
    hand = new_hand([1, 2, 3, 5])
    tick = iter(T0 + timedelta(seconds=i) for i in range(1000))
    hand.see_wagers(1, all_sides(), at=next(tick))
    hand.see_wagers(2, bet(odds=2 * U), at=next(tick))  # illegal: Odds != Ante
    hand.see_wagers(3, bet(), at=next(tick))
    hand.read_card(parse_card("Ac"), at=next(tick))  # before no more bets
    hand.resolve_alert(1, "exposed card burned", by="dealer 4", at=next(tick))
    hand.no_more_bets(at=next(tick))
    hand.see_wagers(2, bet(), source="manual", at=next(tick))
    hand.resolve_alert(2, "odds corrected", at=next(tick))
    hand.see_wagers(5, bet(), at=next(tick))  # late wager
    hand.see_wagers(5, bet(0, odds=0), at=next(tick))
    hand.resolve_alert(3, "late chips returned", at=next(tick))
    for card in parse_cards("Th 8d 2c Kc 2h"):
        hand.read_card(card, at=next(tick))
    hand.read_card(parse_card("8d"), at=next(tick))  # duplicate
    hand.read_card(parse_card("8s"), at=next(tick))  # held
    for alert in hand.open_alerts:
        hand.resolve_alert(alert.alert_id, "double read; 8s keyed by hand", at=next(tick))
    hand.read_card(parse_card("8s"), source="manual", at=next(tick))
    hand.read_card(parse_card("7c"), at=next(tick))  # misread 7d
    hand.correct_card(6, parse_card("7d"), "shoe misread", by="supervisor 1", at=next(tick))
    hand.read_card(parse_card("4c"), at=next(tick))
    set_play(hand, 2, 2 * U)  # wrong preflop size
    for card in parse_cards("Qd 3h 8c 4h"):
        hand.read_card(card, at=next(tick))
    set_play(hand, 2, 3 * U)
    hand.resolve_alert(hand.open_alerts[0].alert_id, "made up to 3x", at=next(tick))
    set_play(hand, 3, 2 * U)
    hand.see_wagers(1, bet(), at=next(tick))  # side bets pulled: a wager change
    hand.see_wagers(1, all_sides(), at=next(tick))
    hand.resolve_alert(hand.open_alerts[0].alert_id, "side bets restored", at=next(tick))
    for card in parse_cards("Jc 8h 4s"):
        hand.read_card(card, at=next(tick))
    set_play(hand, 1, U)
    hand.settle(at=next(tick))
    return hand


def test_messy_hand_replays_to_the_identical_state() -> None:
    hand = messy_hand()
    assert hand.phase is Phase.SETTLED
    kinds = [e.kind for e in hand.events if isinstance(e, AlertRaised)]
    assert kinds == ["card_before_bets", "wager_invalid", "late_wager", "duplicate_card",
                     "card_held", "play_size", "wager_changed"]
    again = replay(hand.events, paytables=PAYTABLES)
    assert again.state() == hand.state()
    assert again.events == hand.events
    # Same board as §10 examples 1 and 2: seat 1 is example 1 (+8 units), seat 2 example 2 with
    # no side bets (+1 +3 +10 = +14), seat 3 (2c 7d, two pair) plays 2x and loses: -1 -2 -1.
    assert again.nets_cents() == {1: 8 * U, 2: 14 * U, 3: -4 * U}


def test_replay_of_a_paused_and_of_a_void_hand() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    for card in parse_cards("2c 3c 4c 5c 6c"):
        hand.read_card(card)
    hand.read_card(parse_card("2c"))
    assert replay(hand.events, paytables=PAYTABLES).state() == hand.state()
    hand.void("foreign card found", by="supervisor 1", at=T0)
    again = replay(hand.events, paytables=PAYTABLES)
    assert again.state() == hand.state()
    assert again.phase is Phase.VOID and again.nets_cents() == {1: 0}


def test_replay_of_a_face_down_board_hand() -> None:
    hand = new_hand([2], deal=UTH_DEAL)
    hand.see_wagers(2, bet())
    hand.no_more_bets()
    for card in parse_cards("8d Kc 8s 4c 3h 8c 4h 8h 4s"):
        hand.read_card(card)
    hand.reveal(at=T0)
    set_play(hand, 2, 2 * U)
    hand.reveal()
    hand.settle()
    again = replay(hand.events, paytables=PAYTABLES)
    assert again.state() == hand.state()
    assert again.nets_cents() == {2: (1 + 2 + 10) * U}  # quads win: Ante, 2x Play, Odds 10 to 1


def _swap(events: tuple[Event, ...], index: int, new: Event) -> list[Event]:
    out = list(events)
    out[index] = new
    return out


def test_other_paytables_do_not_replay_the_settlement() -> None:
    hand = messy_hand()
    odds = dict(PAYTABLES.odds_win.pays)
    odds[Category.FOUR_OF_A_KIND] = Pay(9)
    other = dataclasses.replace(PAYTABLES, odds_win=CategoryTable("odds_win", odds))
    with pytest.raises(ReplayMismatch) as err:
        replay(hand.events, paytables=other)
    assert err.value.index == len(hand.events) - 1
    assert isinstance(hand.events[err.value.index], HandSettled)


def test_a_tampered_consequence_is_named() -> None:
    hand = messy_hand()
    index = next(i for i, e in enumerate(hand.events) if isinstance(e, PlayMade))
    made = hand.events[index]
    assert isinstance(made, PlayMade)
    doubled = dataclasses.replace(made, amount_cents=made.amount_cents * 2)
    forged = _swap(hand.events, index, doubled)
    with pytest.raises(ReplayMismatch) as err:
        replay(forged, paytables=PAYTABLES)
    assert err.value.index == index


def test_a_tampered_input_is_refused() -> None:
    hand = messy_hand()
    index = next(i for i, e in enumerate(hand.events) if isinstance(e, CardRead))
    read = hand.events[index]
    assert isinstance(read, CardRead)
    forged = _swap(hand.events, index, dataclasses.replace(read, card=parse_card("As")))
    with pytest.raises(ReplayMismatch):
        replay(forged, paytables=PAYTABLES)


def test_a_dropped_consequence_or_a_stray_one_is_refused() -> None:
    hand = messy_hand()
    index = next(i for i, e in enumerate(hand.events) if isinstance(e, CardDealt))
    dropped = [e for i, e in enumerate(hand.events) if i != index]
    with pytest.raises(ReplayMismatch) as err:
        replay(dropped, paytables=PAYTABLES)
    assert err.value.index == index
    stray = [*hand.events[:3], hand.events[index], *hand.events[3:]]
    with pytest.raises(ReplayMismatch, match="expected an input event"):
        replay(stray, paytables=PAYTABLES)


def test_a_truncated_record_is_refused() -> None:
    hand = messy_hand()
    with pytest.raises(ReplayMismatch, match="end of the record"):
        replay(hand.events[:-1], paytables=PAYTABLES)


def test_an_input_the_hand_refuses_is_a_mismatch() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    early_settle = [*hand.events, SettleRequested()]
    with pytest.raises(ReplayMismatch, match="SettleRequested refused"):
        replay(early_settle, paytables=PAYTABLES)


def test_a_record_starts_with_hand_opened() -> None:
    with pytest.raises(ReplayMismatch):
        replay([], paytables=PAYTABLES)
    with pytest.raises(ReplayMismatch) as err:
        replay([WagersSeen(seat=1, wagers=bet())], paytables=PAYTABLES)
    assert err.value.index == 0


def test_events_are_frozen_slotted_plain_data() -> None:
    hand = messy_hand()
    for event in hand.events:
        assert dataclasses.is_dataclass(event)
        assert not hasattr(event, "__dict__")  # slots
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(event, dataclasses.fields(event)[0].name, None)
    inputs = [e for e in hand.events if isinstance(e, INPUT_EVENTS)]
    assert len(inputs) == sum(1 for e in hand.events if type(e) in INPUT_EVENTS)
