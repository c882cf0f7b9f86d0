"""The hand state machine on cards: reads before bets, duplicates, misreads, extras, refusals.

Expected nets are worked by hand from rules.md §5-§7 and §10 (units of the R25 Ante), not by
running the code; shoe orders are written out for the default sequence (hand_helpers).
"""

from __future__ import annotations

import pytest

from game.errors import DuplicateCard, IllegalAction, InvalidCard, InvalidWager
from game.hand import Phase
from game.hand.deal import Target
from game.hand.events import (
    CardCorrected,
    CardRead,
)
from game.poker.cards import parse_card
from game.wagers.settle import SeatWagers
from tests.game.hand_helpers import (
    U,
    alerts,
    bet,
    new_hand,
    read,
    set_play,
    to_preflop,
)


def test_card_before_no_more_bets() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.read_card(parse_card("As"))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card) == ("card_before_bets", parse_card("As"))
    with pytest.raises(IllegalAction, match="paused"):
        hand.no_more_bets()
    hand.resolve_alert(alert.alert_id, "exposed card burned")
    hand.no_more_bets()
    hand.read_card(parse_card("As"))  # the read was discarded: As is not in the hand
    assert hand.cards() == ((Target(kind="seat", index=0, seat=1), parse_card("As")),)


def test_duplicate_card_is_alerted_and_not_placed() -> None:
    hand = to_preflop()
    read(hand, "Kd")
    hand.read_card(parse_card("2c"))  # already seat 1's first hole card
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card, alert.position) == ("duplicate_card", parse_card("2c"), 5)
    assert "seat 1 hole card 1" in alert.message
    assert len(hand.cards()) == 5
    read(hand, "Qd")  # held: the position is uncertain until the dealer resolves
    assert alerts(hand)[-1].kind == "card_held"
    for a in alerts(hand):
        hand.resolve_alert(a.alert_id, "double read; card re-keyed")
    read(hand, "Qd")
    assert hand.phase is Phase.FLOP


def test_misread_card_corrected_with_reason() -> None:
    hand = to_preflop()
    event = hand.correct_card(1, parse_card("As"), "shoe misread As as 3c", by="dealer 7")
    assert event == CardCorrected(
        position=1, target=Target(kind="dealer", index=0), card=parse_card("As"),
        replaced=parse_card("3c"), reason="shoe misread As as 3c", by="dealer 7",
    )
    assert dict(hand.cards())[Target(kind="dealer", index=0)] == parse_card("As")
    assert CardRead(card=parse_card("3c")) in hand.events  # the original read is kept
    hand.read_card(parse_card("3c"))  # the real 3c may now come out of the shoe
    assert not alerts(hand)
    with pytest.raises(DuplicateCard):
        hand.correct_card(0, parse_card("As"), "typo")
    with pytest.raises(IllegalAction, match="reason"):
        hand.correct_card(0, parse_card("Ks"), "  ")
    with pytest.raises(IllegalAction, match="holds no card"):
        hand.correct_card(9, parse_card("Ks"), "no such card")
    with pytest.raises(IllegalAction, match="already holds"):
        hand.correct_card(0, parse_card("2c"), "same")
    with pytest.raises(InvalidCard):
        hand.correct_card(0, "Ks", "text, not a Card")  # type: ignore[arg-type]


def test_too_many_cards() -> None:
    hand = to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    hand.read_card(parse_card("6d"))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card, alert.position) == ("extra_card", parse_card("6d"), 11)
    assert not hand.can_settle()
    hand.resolve_alert(alert.alert_id, "card returned to the discard")
    set_play(hand, 1, U)
    hand.settle()
    assert hand.phase is Phase.SETTLED


def test_settled_or_void_hand_takes_no_input() -> None:
    hand = to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    hand.settle()
    for act in (
        lambda: hand.read_card(parse_card("6d")),
        lambda: hand.see_wagers(1, bet()),
        lambda: hand.void("too late"),
        hand.settle,
        lambda: hand.correct_card(0, parse_card("6d"), "late"),
    ):
        with pytest.raises(IllegalAction, match="settled"):
            act()
    assert not hand.can_read_card(parse_card("6d"))


def test_read_card_refuses_what_is_not_a_card() -> None:
    hand = new_hand([1])
    with pytest.raises(InvalidCard):
        hand.read_card("Ah")  # type: ignore[arg-type]
    with pytest.raises(IllegalAction):
        hand.read_card(parse_card("Ah"), source="camera")  # type: ignore[arg-type]


def test_malformed_snapshots_are_refused() -> None:
    hand = new_hand([1])
    with pytest.raises(InvalidWager) as err:
        hand.see_wagers(1, SeatWagers(ante=-2500))
    assert (err.value.seat, err.value.field) == (1, "ante")
    with pytest.raises(InvalidWager):
        hand.see_wagers(1, SeatWagers(odds=True))
    with pytest.raises(InvalidWager):
        hand.see_wagers(1, SeatWagers(markers=frozenset({"ante"})))
    with pytest.raises(IllegalAction, match="not at this hand"):
        hand.see_wagers(4, bet())
    assert not hand.can_see_wagers(4, bet())
    assert hand.can_see_wagers(1, bet())
