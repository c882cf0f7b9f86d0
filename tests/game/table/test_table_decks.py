"""The table core's deck checks (game.decks.check through game.table.core): a suspect deck is
an alert with its evidence that holds the next hand until a supervisor clears it, and a
replay of the same inputs raises the same alerts."""

from __future__ import annotations

import random
from collections.abc import Sequence

from game.messages.table import Alert, DeviceState, TableMessage
from game.poker.cards import DECK, Card
from game.table.core import Decision
from game.table.inputs import (
    CardSeen,
    ChipsSeen,
    ClearFault,
    NoMoreBets,
    ResolveAlert,
    SettleHand,
    TableInput,
)
from game.table.view import ALERT_HELP, screen_view
from simulators.decks import FACTORY_ORDER
from tests.game.table.test_table_console import R25, Feed, seated


class Recorded(Feed):
    """A console feed that keeps every message, to compare with a replay."""

    def __init__(self) -> None:
        super().__init__(verify_payouts=False)
        self.messages: list[TableMessage] = []

    def __call__(self, given: TableInput, *, seconds: int = 1) -> Decision:
        decision = super().__call__(given, seconds=seconds)
        self.messages.extend(decision.messages)
        return decision

    def replayed_messages(self) -> list[TableMessage]:
        fresh = self._new()
        out: list[TableMessage] = []
        for given, at in self.inputs:
            out.extend(fresh.apply(given, at).messages)
        return out


def seat(feed: Recorded) -> Recorded:
    """The roster, a heat and entry E1 on seat 1, dealer D12 signed in."""
    seated(feed)
    return feed


def open_hand(feed: Recorded) -> None:
    feed(ChipsSeen(seat=1, spot="play", uids=frozenset()))
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    opened = feed(NoMoreBets(by="D12"))
    assert opened.ok, opened.error


def deal(feed: Recorded, cards: Sequence[Card]) -> Decision:
    """Deal the hand's cards in this order (one seat: 11 cards) and settle it."""
    hand = feed.core.hand
    assert hand is not None
    queue = list(cards)
    while hand.next_target is not None:
        assert feed(CardSeen(card=queue.pop(0))).ok
    settled = feed(SettleHand(by="D12"))
    assert settled.ok, settled.error
    return settled


def deck_alerts(decision: Decision) -> list[Alert]:
    return [m for m in decision.messages if isinstance(m, Alert) and m.source == "deck"]


def shuffled(seed: int) -> list[Card]:
    deck = list(DECK)
    random.Random(seed).shuffle(deck)
    return deck


def test_a_deck_in_factory_order_holds_the_table_until_a_supervisor_clears_it() -> None:
    feed = seat(Recorded())
    open_hand(feed)
    settled = deal(feed, FACTORY_ORDER)
    [alert] = deck_alerts(settled)
    assert (alert.kind, alert.hand_id, alert.alert_id) == ("deck_suspect", "t07-000001", None)
    assert alert.evidence is not None and alert.evidence["test"] == "succession_suit"
    assert alert.evidence["hand_ids"] == ["t07-000001"]
    assert alert.evidence["pairs"][0] == {"positions": [0, 1], "cards": ["As", "2s"]}
    assert "new-deck suit order" in alert.message
    body = alert.encode()
    assert body["evidence"]["statistic"] == alert.evidence["statistic"]
    assert Alert.decode(body) == alert

    refused = feed(NoMoreBets(by="D12"))
    assert refused.error == ("the deck is suspect (succession_suit; hands t07-000001): count or"
                             " replace the deck, then a supervisor clears the 'deck' hold with"
                             " a reason")
    [shown] = [a for a in screen_view(feed.core, now=feed.now)["alerts"] if a.get("role")]
    assert (shown["kind"], shown["role"], shown["clearable"]) == ("deck_suspect", "deck", True)
    assert shown["what_to_do"] == ALERT_HELP["deck_suspect"]
    assert feed.core.status()["deck"]["held"] == ["succession_suit"]

    by_dealer = feed(ClearFault(role="deck", reason="looks fine", by="D12"))
    assert "supervisor's action" in str(by_dealer.error)
    feed.sign_in("S3")
    cleared = feed(ClearFault(role="deck", reason="deck counted, replaced and reshuffled",
                              by="S3"))
    assert cleared.ok, cleared.error
    [state] = [m for m in cleared.messages if isinstance(m, DeviceState)]
    assert (state.device, state.state) == ("deck", "fault_cleared")
    assert state.detail == "cleared by S3: deck counted, replaced and reshuffled"
    assert feed(ClearFault(role="deck", reason="again", by="S3")).error == (
        "no 'deck' hold is open")
    open_hand(feed)
    assert deck_alerts(deal(feed, shuffled(1))) == []
    assert feed.replayed_messages() == feed.messages
    assert feed.replayed().decks.status() == feed.core.decks.status()


def test_the_same_deck_order_twice_is_a_repeated_deck_naming_both_hands() -> None:
    feed = seat(Recorded())
    deck = shuffled(5)
    open_hand(feed)
    assert deck_alerts(deal(feed, deck)) == []
    open_hand(feed)
    [alert] = deck_alerts(deal(feed, deck))
    assert alert.evidence is not None and alert.evidence["test"] == "repeated_run"
    assert alert.evidence["hand_ids"] == ["t07-000002", "t07-000001"]
    assert alert.evidence["statistic"] == 11
    assert alert.evidence["cards"] == [str(c) for c in deck[:11]]
    assert feed.core.decks.held
    assert feed.replayed_messages() == feed.messages


def test_a_repeated_read_the_supervisor_set_aside_still_makes_the_deck_suspect() -> None:
    feed = seat(Recorded())
    open_hand(feed)
    deck = shuffled(9)
    first = feed(CardSeen(card=deck[0]))
    again = feed(CardSeen(card=deck[0]))  # a second copy of the card, a new read
    [duplicate] = [m for m in again.messages if isinstance(m, Alert)]
    assert duplicate.kind == "duplicate_card" and first.ok
    feed.sign_in("S3")
    assert duplicate.alert_id is not None
    assert feed(ResolveAlert(alert_id=duplicate.alert_id, reason="second card set aside",
                             by="S3")).ok
    [alert] = deck_alerts(deal(feed, deck[1:]))
    assert alert.evidence is not None and alert.evidence["test"] == "composition"
    assert alert.evidence["duplicates"] == [str(deck[0])]
    assert alert.evidence["cards_out"] == 12
    assert feed.replayed_messages() == feed.messages


def test_clearing_another_fault_never_lifts_a_deck_hold() -> None:
    feed = seat(Recorded())
    open_hand(feed)
    deal(feed, FACTORY_ORDER)
    feed.sign_in("S3")
    assert feed(ClearFault(role="shoe", reason="nothing", by="S3")).error == (
        "no 'shoe' fault is open")
    assert feed.core.decks.held
    assert "the deck is suspect" in str(feed(NoMoreBets(by="D12")).error)
