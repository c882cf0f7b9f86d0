"""A supervisor's rulings at the table: several alerts resolved in one act (each resolution
its own record, all or none), and a settled hand voided or corrected at the console by the
desk's path (the same `hand.corrected`, naming the supervisor, made at the table)."""

from __future__ import annotations

from game.hand.events import AlertResolved
from game.messages.corrections import HandCorrected
from game.messages.desk import CorrectHand, DeskOrder, Unseat
from game.messages.table import Alert, HandSettled
from game.money import format_rand
from game.poker.cards import parse_card
from game.table.inputs import (
    CardSeen,
    NoMoreBets,
    ResolveAlerts,
    RuleHand,
    Unreadable,
    decode_input,
)
from tests.game.table.test_table_console import R25, Feed, play_winning_hand, seated
from wire.messages import decode_table_message

EXTRA = ("2c", "3c", "4d")  # not among the hand's cards: each read is an extra_card alert


def dealt_with_extra_cards() -> Feed:
    """A hand fully dealt, then three more cards read: three open alerts."""
    feed = seated(Feed(verify_payouts=False))
    feed.sign_in("S3")
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    feed.deal_all()
    for card in EXTRA:
        assert feed(CardSeen(card=parse_card(card))).ok
    hand = feed.core.hand
    assert hand is not None
    assert [a.kind for a in hand.open_alerts] == ["extra_card"] * 3
    return feed


def test_several_alerts_are_resolved_in_one_act_each_with_its_own_record() -> None:
    feed = dealt_with_extra_cards()
    hand = feed.core.hand
    assert hand is not None
    ids = tuple(a.alert_id for a in hand.open_alerts)
    applied = feed(ResolveAlerts(alert_ids=ids, reason="cards set aside", by="S3"))
    assert applied.ok, applied.error
    assert hand.open_alerts == ()
    resolved = [e for e in hand.events if isinstance(e, AlertResolved)]
    assert [(e.alert_id, e.reason, e.by) for e in resolved] == [
        (i, "cards set aside", "S3") for i in ids]
    assert feed.replayed().status() == feed.core.status()


def test_one_alert_not_open_refuses_them_all_naming_it() -> None:
    feed = dealt_with_extra_cards()
    hand = feed.core.hand
    assert hand is not None
    first, *rest = (a.alert_id for a in hand.open_alerts)
    refused = feed(ResolveAlerts(alert_ids=(first, 999, *rest), reason="r", by="S3"))
    assert not refused.ok
    assert refused.error is not None and refused.error.startswith("alert_ids: 999 cannot be")
    assert refused.error.endswith("none was resolved")
    assert len(hand.open_alerts) == 3
    assert not any(isinstance(e, AlertResolved) for e in hand.events)


def test_resolving_several_is_a_supervisors_act() -> None:
    feed = dealt_with_extra_cards()
    hand = feed.core.hand
    assert hand is not None
    ids = tuple(a.alert_id for a in hand.open_alerts)
    by_dealer = feed(ResolveAlerts(alert_ids=ids, reason="r", by="D12"))
    assert not by_dealer.ok and "supervisor" in (by_dealer.error or "")
    assert len(hand.open_alerts) == 3


def test_resolve_alerts_is_decoded_strictly() -> None:
    assert decode_input("dealer", {"action": "resolve_alerts", "alert_ids": [3, 4],
                                   "reason": " set aside ", "by": "S3"}) == ResolveAlerts(
        alert_ids=(3, 4), reason="set aside", by="S3")
    for ids, words in (([], "name the alerts"), ([3, 3], "alert 3 is named twice"),
                       ([True], "True is not an alert id"), ("3", "name the alerts"),
                       ([2.5], "2.5 is not an alert id")):
        got = decode_input("dealer", {"action": "resolve_alerts", "alert_ids": ids,
                                      "reason": "r"})
        assert isinstance(got, Unreadable) and words in got.reason, (ids, got)


def one_hand_played() -> tuple[Feed, HandSettled]:
    feed = seated(Feed(verify_payouts=False))
    settled = play_winning_hand(feed)
    [record] = [m for m in settled.messages if isinstance(m, HandSettled)]
    feed.sign_in("S3")
    return feed, record


def test_a_supervisor_voids_a_settled_hand_at_the_table_with_the_desks_record() -> None:
    feed, record = one_hand_played()
    won = record.record["nets"]["1"]
    applied = feed(RuleHand(hand_id=record.hand_id, seat=1, ruling="void",
                            reason="misdealt: burn card exposed", by="S3"))
    assert applied.ok, applied.error
    corrected, notice = applied.messages
    assert isinstance(corrected, HandCorrected) and isinstance(notice, Alert)
    assert corrected == HandCorrected(
        hand_id=record.hand_id, entry_id="E1", seat=1, ruling="hand_voided",
        recorded_net=won, counted_net=0, balance_before=corrected.balance_before,
        balance_after=corrected.balance_before - won, hands_played=0, by="S3",
        reason="misdealt: burn card exposed", heat_id="Q1", at=corrected.at, made_at="table")
    assert corrected.encode()["made_at"] == "table"
    assert decode_table_message(HandCorrected.TYPE, corrected.encode()) == corrected
    assert notice.source == "console" and notice.message.endswith(
        f"take {format_rand(won)} from seat 1 to the float")
    assert applied.detail == {"hand_id": record.hand_id, "entry_id": "E1",
                              "ruling": "hand_voided", "moved": -won}
    again = feed(RuleHand(hand_id=record.hand_id, seat=1, ruling="void", reason="r", by="S3"))
    assert again.error == f"hand {record.hand_id} was already voided for entry E1"
    assert feed.replayed().status() == feed.core.status()


def test_the_same_ruling_from_the_desk_and_at_the_table_gives_the_same_record() -> None:
    at_table, record = one_hand_played()
    at_desk, _ = one_hand_played()
    won = record.record["nets"]["1"]
    table = at_table(RuleHand(hand_id=record.hand_id, seat=1, ruling="correct",
                              net=won - R25, reason="odds overpaid", by="S3"))
    desk = at_desk(DeskOrder(command=CorrectHand(hand_id=record.hand_id, entry_id="E1",
                                                 ruling="correct", net=won - R25,
                                                 reason="odds overpaid"), signer="S3"))
    assert table.ok and desk.ok, (table.error, desk.error)
    made_here, made_there = table.messages[0], desk.messages[0]
    assert isinstance(made_here, HandCorrected) and isinstance(made_there, HandCorrected)
    body, desk_body = made_here.encode(), made_there.encode()
    assert body.pop("made_at") == "table" and "made_at" not in desk_body
    assert body == desk_body


def test_a_ruling_at_the_table_is_refused_with_the_desks_reasons() -> None:
    feed, record = one_hand_played()
    hand_id = record.hand_id
    cases = [
        (RuleHand(hand_id="t07-000099", seat=1, ruling="void", reason="r", by="S3"),
         "hand t07-000099 is not a settled hand of this table's heat"),
        (RuleHand(hand_id=hand_id, seat=4, ruling="void", reason="r", by="S3"),
         f"seat 4 did not play hand {hand_id}; it was played by seat 1 (E1)"),
        (RuleHand(hand_id=hand_id, seat=1, ruling="correct", net=record.record["nets"]["1"],
                  reason="r", by="S3"),
         f"hand {hand_id} already counts {format_rand(record.record['nets']['1'])} for"
         " entry E1"),
        (RuleHand(hand_id=hand_id, seat=1, ruling="correct", net=-10_000_000, reason="r",
                  by="S3"), "leaving it below nothing"),
        (RuleHand(hand_id=hand_id, seat=1, ruling="void", reason="r", by="D12"),
         "supervisor"),
    ]
    for given, words in cases:
        refused = feed(given)
        assert not refused.ok and words in (refused.error or ""), (given, refused.error)
        assert refused.messages == ()


def test_a_ruling_is_refused_during_a_hand_and_once_the_entry_has_left() -> None:
    feed, record = one_hand_played()
    feed.chips(1, "play", 0)
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    during = feed(RuleHand(hand_id=record.hand_id, seat=1, ruling="void", reason="r",
                           by="S3"))
    assert during.error is not None and during.error.startswith(
        f"hand {feed.core.hand.hand_id} is in progress")  # type: ignore[union-attr]

    left, record = one_hand_played()
    assert left(DeskOrder(command=Unseat(seat=1, entry_id="E1", reason="left"))).ok
    gone = left(RuleHand(hand_id=record.hand_id, seat=1, ruling="void", reason="r", by="S3"))
    assert gone.error == ("entry E1 is no longer playing at this table (its score is"
                          " recorded): the desk rules on the recorded score")


def test_rule_hand_is_decoded_strictly() -> None:
    base = {"action": "rule_hand", "hand_id": "t07-000001", "seat": 1, "reason": "r",
            "by": "S3"}
    assert decode_input("dealer", {**base, "ruling": "correct", "net": -2_500}) == RuleHand(
        hand_id="t07-000001", seat=1, ruling="correct", net=-2_500, reason="r", by="S3")
    for extra, words in (({"ruling": "uphold"}, "ruling: 'uphold' is not a ruling"),
                         ({"ruling": "correct", "net": 12.5}, "net: 12.5 is not a whole"),
                         ({"ruling": "correct"}, "net: None is not a whole"),
                         ({"ruling": "void", "net": 100}, "net: a voided hand"),
                         ({"ruling": "void", "seat": "1"}, "seat: '1' is not a seat")):
        got = decode_input("dealer", {**base, **extra})
        assert isinstance(got, Unreadable) and words in got.reason, (extra, got)
