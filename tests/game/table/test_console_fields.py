"""Console fields checked at the door (game.table.console_fields): each field family refused
with the field named first and the reason, against a real core's state; good fields pass."""

from __future__ import annotations

from typing import Any

import pytest

from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.messages.table import HandSettled
from game.poker.cards import parse_card
from game.staff import ACTIONS, LockoutPolicy
from game.table.console_fields import (
    CHECKED_ACTIONS,
    FieldRefused,
    check_console_fields,
    smallest_chip_cents,
)
from game.table.core import TableCore
from game.table.inputs import CardSeen, NoMoreBets
from tests.game.table.test_table_console import (
    CARDS,
    PAYTABLES,
    R25,
    SETTINGS,
    Feed,
    play_winning_hand,
    seated,
    uid,
)


def refusal(action: str, fields: dict[str, Any], core: TableCore) -> str:
    with pytest.raises(FieldRefused) as caught:
        check_console_fields(action, fields, core)
    return str(caught.value)


@pytest.fixture
def between_hands() -> tuple[Feed, str]:
    """Seat 1 seated; one settled hand (its id)."""
    feed = seated(Feed(verify_payouts=False))
    settled = play_winning_hand(feed)
    [record] = [m for m in settled.messages if isinstance(m, HandSettled)]
    return feed, record.hand_id


WAGER = {"seat": 1, "spot": "ante", "amount": 2_500}


@pytest.mark.parametrize(("fields", "error"), [
    ({**WAGER, "amount": 12.5}, "amount: R0.125 is not a whole number of cents"),
    ({**WAGER, "amount": 2500.0}, "amount: 2500.0 is not whole cents: send cents as an"
                                  " integer (2500 for R25.00)"),
    ({**WAGER, "amount": "2500"}, "amount: '2500' is text: send an amount in whole cents as"
                                  " a JSON number"),
    ({**WAGER, "amount": True}, "amount: true is not an amount in whole cents"),
    ({**WAGER, "amount": None}, "amount: missing: give an amount in cents"),
    ({**WAGER, "amount": -2_500}, "amount: -R25.00 is below nothing"),
    ({**WAGER, "amount": 2_510}, "amount: R25.10 is not a multiple of the smallest chip,"
                                 " R25.00"),
    ({**WAGER, "amount": 25_000_000}, "amount: R250,000.00 is above the table's limit of"),
    ({**WAGER, "seat": 9}, "seat: 9 is not a seat at this table (seats 1..6)"),
    ({**WAGER, "seat": 0}, "seat: 0 is not a seat at this table (seats 1..6)"),
    ({**WAGER, "seat": "1"}, "seat: '1' is text: send a seat number as a JSON number"),
    ({**WAGER, "seat": 4}, "seat: no entry is seated at seat 4"),
    ({**WAGER, "spot": "corner"}, "spot: 'corner' is not a spot; spots are ante, odds"),
    ({**WAGER, "amout": 1}, "amout: manual_wager has no such field (it takes: amount, seat,"
                            " spot)"),
])
def test_a_manual_wager_is_checked_field_by_field(
        between_hands: tuple[Feed, str], fields: dict[str, Any], error: str) -> None:
    feed, _ = between_hands
    assert refusal("manual_wager", fields, feed.core).startswith(error)


def test_good_fields_pass(between_hands: tuple[Feed, str]) -> None:
    feed, hand_id = between_hands
    core = feed.core
    for action, fields in [
        ("manual_wager", WAGER), ("manual_wager", {**WAGER, "amount": 0}),
        ("manual_card", {"card": "Td"}), ("settle", {}), ("void", {"reason": "misdeal"}),
        ("issue_chips", {"seat": 1}), ("return_chips", {"seat": 3}),
        ("dispute_hand", {"hand_id": hand_id, "seat": 1, "reason": "paid short"}),
        ("rule_hand", {"hand_id": hand_id, "seat": 1, "ruling": "void", "reason": "r"}),
        ("rule_hand", {"hand_id": hand_id, "seat": 1, "ruling": "correct", "net": -2_500,
                       "reason": "r"}),
        ("lift_lock", {"anything": 1}),  # an action this door does not know: the core's
    ]:
        check_console_fields(action, fields, core)


def test_the_smallest_chip_is_the_least_valuable_chip_of_the_set_in_play() -> None:
    chips = [Chip(uid=uid(1), value_cents=500, chip_set="house"),
             Chip(uid=uid(2), value_cents=2_500, chip_set="house"),
             Chip(uid=uid(3), value_cents=100, chip_set="old")]
    core = TableCore(table_id="t", settings=SETTINGS, paytables=PAYTABLES, deal=DEFAULT_DEAL,
                     registry=ChipRegistry(chips, chip_set="house"),
                     lockout=LockoutPolicy(free=3))
    assert smallest_chip_cents(core) == 500


@pytest.mark.parametrize(("action", "fields", "error"), [
    ("manual_card", {"card": "Zz"}, "card: 'Zz' is not a card"),
    ("manual_card", {"card": 14}, "card: 14 is not a card: give one such as As or Td"),
    ("manual_card", {}, "card: missing"),
    ("void", {"reason": "  "}, "reason: empty: give the reason, in words"),
    ("void", {"reason": 7}, "reason: 7 is not text"),
    ("void", {"reason": "x" * 1001}, "reason: 1001 characters; at most 1000"),
    ("settle", {"reason": "x"}, "reason: settle has no such field (it takes: no fields)"),
    ("issue_chips", {"seat": 7}, "seat: 7 is not a seat at this table"),
    ("issue_chips", {"seat": 3}, "seat: no entry is seated at seat 3"),
    ("return_chips", {"seat": 2.0}, "seat: 2.0 is not a seat number"),
    ("correct_card", {"position": 0, "card": "As", "reason": "r"},
     "position: no hand is in play"),
    ("resolve_alert", {"alert_id": 1, "reason": "r"}, "alert_id: no hand is in play"),
    ("resolve_alerts", {"alert_ids": [1], "reason": "r"}, "alert_ids: no hand is in play"),
    ("resolve_alerts", {"alert_ids": [], "reason": "r"}, "alert_ids: give the alerts"),
    ("resolve_alerts", {"alert_ids": [1, 1], "reason": "r"}, "alert_ids: alert 1 is named"
                                                             " twice"),
    ("resolve_alerts", {"alert_ids": ["1"], "reason": "r"}, "alert_ids: '1' is not an alert"),
    ("dispute_hand", {"hand_id": "t07-000099", "seat": 1, "reason": "r"},
     "hand_id: t07-000099 is not a settled hand of this table's heat"),
    ("rule_hand", {"hand_id": "t07-000099", "seat": 1, "ruling": "void", "reason": "r"},
     "hand_id: t07-000099 is not a settled hand of this table's heat"),
    ("rule_hand", {"hand_id": "HAND", "seat": 5, "ruling": "void", "reason": "r"},
     "seat: seat 5 did not play hand HAND (seats 1 did)"),
    ("rule_hand", {"hand_id": "HAND", "seat": 1, "ruling": "upheld", "reason": "r"},
     "ruling: 'upheld' is not a ruling; void or correct"),
    ("rule_hand", {"hand_id": "HAND", "seat": 1, "ruling": "correct", "net": 10.5,
                   "reason": "r"}, "net: R0.105 is not a whole number of cents"),
    ("rule_hand", {"hand_id": "HAND", "seat": 1, "ruling": "correct", "reason": "r"},
     "net: missing"),
    ("rule_hand", {"hand_id": "HAND", "seat": 1, "ruling": "void", "net": 5, "reason": "r"},
     "net: a voided hand counts nothing"),
    ("rule_hand", {"hand_id": "HAND", "seat": 1, "ruling": "void"}, "reason: missing"),
])
def test_each_field_family_is_refused_by_name(between_hands: tuple[Feed, str], action: str,
                                              fields: dict[str, Any], error: str) -> None:
    feed, hand_id = between_hands
    if fields.get("hand_id") == "HAND":
        fields = {**fields, "hand_id": hand_id}
        error = error.replace("HAND", hand_id)
    assert refusal(action, fields, feed.core).startswith(error)


def test_positions_and_alerts_of_the_hand_in_play() -> None:
    feed = seated(Feed(verify_payouts=False))
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    hand = feed.core.hand
    assert hand is not None
    for card in (CARDS["burn"][0], CARDS["seat"][0], "2c"):
        feed(CardSeen(card=parse_card(card)))
    core = feed.core
    placed = len(hand.cards())
    assert refusal("correct_card", {"position": placed, "card": "Kd", "reason": "r"},
                   core).startswith(f"position: {placed} holds no card in hand"
                                    f" {hand.hand_id} (positions 0..{placed - 1} hold cards)")
    check_console_fields("correct_card", {"position": 0, "card": "Kd", "reason": "r"}, core)
    open_ids = sorted(a.alert_id for a in hand.open_alerts)
    assert refusal("resolve_alert", {"alert_id": 77, "reason": "r"}, core) == (
        f"alert_id: alert 77 is not open in hand {hand.hand_id} (open:"
        f" {', '.join(map(str, open_ids)) or 'none'})")
    assert refusal("resolve_alerts", {"alert_ids": [*open_ids, 77, 78], "reason": "r"},
                   core) == (f"alert_ids: 77, 78 are not open in hand {hand.hand_id}; none"
                             " was resolved")


def test_every_staff_action_of_the_console_is_checked_at_the_door() -> None:
    assert CHECKED_ACTIONS <= ACTIONS
    assert {"manual_wager", "manual_card", "resolve_alerts", "rule_hand"} <= CHECKED_ACTIONS
    # checked where they are handled, refusing by field and journaling nothing: the manager's
    # lift by the console gate, a slip's entry by the slip printing
    assert {"unlock_staff", "print_slip"} == ACTIONS - CHECKED_ACTIONS
