"""A settled hand disputed at the console and ruled on while its entry still plays: the
correcting record moves the entry's chips, the hand's own record stays as it settled."""

from __future__ import annotations

from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.desk import CloseHeat, CorrectHand, DeskOrder, OpenHeat, Unseat
from game.messages.table import Alert, HandSettled
from game.money import format_rand
from game.table.inputs import DisputeHand, NoMoreBets, Unreadable, decode_input
from tests.game.table.test_table_console import Feed, play_winning_hand, seated
from wire.messages import TABLE_MESSAGES, decode_table_message
from wire.messages import DeskOrder as WireOrder


def one_hand_played() -> tuple[Feed, HandSettled]:
    feed = seated(Feed(verify_payouts=False))
    settled = play_winning_hand(feed)
    [record] = [m for m in settled.messages if isinstance(m, HandSettled)]
    return feed, record


def test_a_dealer_and_a_supervisor_dispute_an_entrys_result_in_a_settled_hand() -> None:
    feed, record = one_hand_played()
    raised = feed(DisputeHand(hand_id=record.hand_id, seat=1, claim="paid the odds short",
                              by="D12"))
    assert raised.ok, raised.error
    [message] = raised.messages
    assert message == HandDisputed(hand_id=record.hand_id, entry_id="E1", seat=1,
                                   claim="paid the odds short", by="D12", role="dealer",
                                   heat_id="Q1", stage="qualifying", at=message.at)
    feed.sign_in("S3")
    by_supervisor = feed(DisputeHand(hand_id=record.hand_id, entry_id="E1",
                                     claim="trips misread", by="S3"))
    assert by_supervisor.messages[0].role == "supervisor"  # type: ignore[union-attr]
    assert decode_table_message(HandDisputed.TYPE, message.encode()) == message


def test_a_dispute_names_a_hand_of_the_heat_and_a_seat_that_played_it() -> None:
    feed, record = one_hand_played()
    unknown = feed(DisputeHand(hand_id="t07-000099", seat=1, claim="x", by="D12"))
    assert unknown.error == "hand t07-000099 is not a settled hand of this table's heat"
    wrong_seat = feed(DisputeHand(hand_id=record.hand_id, seat=4, claim="x", by="D12"))
    assert wrong_seat.error == (f"hand {record.hand_id} has no such seat or entry; it was"
                                " played by seat 1 (E1)")
    nobody = feed(DisputeHand(hand_id=record.hand_id, seat=1, claim="x"))
    assert nobody.error == "'dispute_hand' needs a signed-in dealer or supervisor"
    assert decode_input("dealer", {"action": "dispute_hand", "hand_id": "h", "seat": 1,
                                   "by": "D12"}).reason == "missing field 'reason'"  # type: ignore[union-attr]


def test_voiding_a_settled_hand_moves_the_chips_back_by_a_correcting_record() -> None:
    feed, record = one_hand_played()
    session = feed.core.session
    assert session is not None
    won = record.record["nets"]["1"]
    assert won > 0
    before = session.seats[1]
    assert before.balance_cents == before.rules.starting_chips_cents + won
    order = DeskOrder(command=CorrectHand(hand_id=record.hand_id, entry_id="E1", ruling="void",
                                          reason="dispute 4 upheld: misdealt", dispute_id=4),
                      signer="desk-key", command_seq=9, command_id="k-9")
    applied = feed(order)
    assert applied.ok, applied.error
    corrected = applied.messages[0]
    assert isinstance(corrected, HandCorrected)
    assert (corrected.recorded_net, corrected.counted_net, corrected.moved_cents) == (
        won, 0, -won)
    assert corrected.hands_played == 0 and corrected.dispute_id == 4
    assert corrected.by == "desk-key"
    notice = applied.messages[1]
    assert isinstance(notice, Alert) and notice.seat == 1 and notice.alert_id is None
    assert notice.message == (f"hand {record.hand_id} voided for entry E1 by a supervisor's"
                              f" ruling: take {format_rand(won)} from seat 1 to the float")
    after = session.seats[1]
    assert after.balance_cents == after.rules.starting_chips_cents
    assert after.hands_played == 0 and after.hands_left == after.rules.hands
    assert record.record["nets"]["1"] == won  # the hand's record is what it settled as
    again = feed(DeskOrder(command=order.command, signer="desk-key", command_seq=10))
    assert again.error == f"hand {record.hand_id} was already voided for entry E1"
    assert feed.replayed().status() == feed.core.status()
    assert decode_table_message(HandCorrected.TYPE, corrected.encode()) == corrected


def test_correcting_a_settled_hand_counts_the_ruled_net() -> None:
    feed, record = one_hand_played()
    won = record.record["nets"]["1"]
    applied = feed(DeskOrder(command=CorrectHand(hand_id=record.hand_id, entry_id="E1",
                                                 ruling="correct", net=won - 2_500,
                                                 reason="odds overpaid by R25")))
    assert applied.ok, applied.error
    corrected = applied.messages[0]
    assert isinstance(corrected, HandCorrected) and corrected.moved_cents == -2_500
    session = feed.core.session
    assert session is not None and session.seats[1].nets_cents == (won - 2_500,)
    assert session.seats[1].hands_played == 1


def test_a_ruling_for_an_entry_no_longer_seated_is_refused_with_why() -> None:
    feed, record = one_hand_played()
    command = CorrectHand(hand_id=record.hand_id, entry_id="E9", ruling="void", reason="r")
    refused = feed(DeskOrder(command=command, command_id="k-1"))
    assert refused.error == (f"hand {record.hand_id} is not a settled hand of entry E9 in"
                             " this heat at this table")


def test_a_ruling_arriving_during_a_hand_is_held_until_it_ends() -> None:
    feed, record = one_hand_played()
    feed.chips(1, "ante", 2_500)
    feed.chips(1, "odds", 2_500)
    assert feed(NoMoreBets(by="D12")).ok
    held = feed(DeskOrder(command=CorrectHand(hand_id=record.hand_id, entry_id="E1",
                                              ruling="void", reason="r"), command_id="k-2"))
    assert held.ok and held.messages[0].held_until_hand_ends is not None  # type: ignore[union-attr]
    assert feed.core.status()["held_commands"] == [
        {"command": "correct_hand", "entry_id": "E1", "hand_id": record.hand_id, "reason": "r"}]


def test_the_command_and_messages_are_registered_in_the_contract() -> None:
    body = DeskOrder(command=CorrectHand(hand_id="h1", entry_id="E1", ruling="correct", net=-500,
                                         reason="r", dispute_id=3)).encode()
    assert WireOrder.decode(body).command == CorrectHand(
        hand_id="h1", entry_id="E1", ruling="correct", net=-500, reason="r", dispute_id=3)
    bad = decode_input("desk", {**body, "net": "lots"})
    assert isinstance(bad, Unreadable)
    assert bad.reason == ("correct_hand body field 'net' must be a whole number of cents"
                          " (got 'lots')")
    assert TABLE_MESSAGES[HandCorrected.TYPE] is HandCorrected
    assert TABLE_MESSAGES[HandDisputed.TYPE] is HandDisputed


def test_a_hand_of_the_last_heat_is_disputed_after_it_closed_until_the_next_opens() -> None:
    feed, record = one_hand_played()
    assert feed(DeskOrder(command=Unseat(seat=1, entry_id="E1", reason="left"))).ok
    assert feed(DeskOrder(command=CloseHeat())).ok
    late = feed(DisputeHand(hand_id=record.hand_id, seat=1, claim="paid short", by="D12"))
    assert late.ok, late.error
    assert (late.messages[0].heat_id, late.messages[0].stage) == ("Q1", "qualifying")  # type: ignore[union-attr]
    ruling = feed(DeskOrder(command=CorrectHand(hand_id=record.hand_id, entry_id="E1",
                                                ruling="void", reason="r")))
    assert ruling.error == "no heat is open at this table"
    assert feed(DeskOrder(command=OpenHeat(stage="qualifying", heat_id="Q2"))).ok
    gone = feed(DisputeHand(hand_id=record.hand_id, seat=1, claim="paid short", by="D12"))
    assert gone.error == f"hand {record.hand_id} is not a settled hand of this table's heat"
