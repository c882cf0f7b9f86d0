"""The table core's console rules: staff on the roster, sign-ins and their back-off, who may do
what, the payout checked by the chip readers, acknowledgements with proof and disputes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.messages.console import PayoutChecked, PayoutLine, ScoreDisputed, StaffEvent
from game.messages.desk import DeskOrder, OpenHeat, Seat
from game.messages.table import Alert, ScoreAcknowledged
from game.poker.cards import parse_card
from game.staff import LockoutPolicy, StaffMember, StaffRoster, hash_secret
from game.table.core import Decision, TableCore
from game.table.inputs import (
    Acknowledge,
    CardSeen,
    ChipsSeen,
    ClearFault,
    DeviceTrouble,
    Dispute,
    NoMoreBets,
    PayoutCheckPressed,
    PayoutOverride,
    SettleHand,
    StaffChange,
    TableInput,
    Unreadable,
    VoidByDealer,
    WagerKeyed,
    decode_input,
)
from game.table.payout_check import SpotPay
from game.table.snapshot import restore_snapshot, take_snapshot
from game.table.snapshot_fields import SnapshotError
from game.table.view import alert_help
from runtime.settings_files import read_paytables, read_tournament

T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
R25 = 2_500
SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)
SALT = b"test-salt-0123456"
ROSTER = StaffRoster(version=1, card_salt=None, members=(
    StaffMember(staff_id="D12", name="Dineo Dlamini", role="dealer",
                pin_hash=hash_secret("4821", SALT)),
    StaffMember(staff_id="S3", name="Sipho Mokoena", role="supervisor",
                pin_hash=hash_secret("9034", SALT)),
))
# One seat; the dealer pairs nines and opens; the seat's aces win.
CARDS = {"seat": ["Ah", "As"], "dealer": ["9c", "2h"],
         "board": ["Kh", "Qs", "9d", "4c", "3s"], "burn": ["5d", "6d", "7d", "8d"]}


def uid(n: int) -> bytes:
    return bytes.fromhex(f"E0040000{n:08X}")


class Feed:
    """Feeds a core typed inputs a second apart, keeping them for replay."""

    def __init__(self, *, verify_payouts: bool = True, require_issued: bool = False) -> None:
        self.verify = verify_payouts
        self.require_issued = require_issued
        self.core = self._new()
        self.now = T0
        self.inputs: list[tuple[TableInput, datetime]] = []
        self.next_chip = 0

    def _new(self) -> TableCore:
        # Float chips count for any seat here (require_issued off, D30): these tests are about
        # the console; tests/game/chips/test_chip_float.py plays the default (D346).
        registry = ChipRegistry([Chip(uid=uid(i), value_cents=R25, chip_set="house")
                                 for i in range(400)], chip_set="house",
                                require_issued=self.require_issued)
        return TableCore(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                         deal=DEFAULT_DEAL, registry=registry, verify_payouts=self.verify,
                         lockout=LockoutPolicy(free=3))

    def __call__(self, given: TableInput, *, seconds: int = 1) -> Decision:
        self.now += timedelta(seconds=seconds)
        self.inputs.append((given, self.now))
        return self.core.apply(given, self.now)

    def chips(self, seat: int, spot: str, amount: int) -> Decision:
        n = amount // R25
        uids = frozenset(uid(self.next_chip + i) for i in range(n))
        self.next_chip += n
        return self(ChipsSeen(seat=seat, spot=spot, uids=uids))

    def deal_all(self) -> None:
        """Read every card the open hand still wants, from `CARDS` in order (burns for any
        target it has none of)."""
        hand = self.core.hand
        assert hand is not None
        queues = {k: list(v) for k, v in CARDS.items()}
        while (target := hand.next_target) is not None:
            kind = target.kind if target.kind in queues else "burn"
            assert self(CardSeen(card=parse_card(queues[kind].pop(0)))).ok

    def sign_in(self, staff_id: str) -> None:
        assert self(StaffChange(event="signed_in", method="pin", staff_id=staff_id)).ok

    def replayed(self) -> TableCore:
        fresh = self._new()
        for given, at in self.inputs:
            fresh.apply(given, at)
        return fresh


def seated(feed: Feed, **seat: Any) -> Feed:
    assert feed(DeskOrder(command=ROSTER, signer="desk", command_seq=1)).ok
    assert feed(DeskOrder(command=OpenHeat(stage="qualifying", heat_id="Q1"))).ok
    assert feed(DeskOrder(command=Seat(entry_id="E1", seat=1, **seat))).ok
    feed.sign_in("D12")
    return feed


def play_winning_hand(feed: Feed) -> Decision:
    """Ante R25 + Odds R25, Play 1x at the river; the seat's aces beat the dealer's nines."""
    feed(ChipsSeen(seat=1, spot="play", uids=frozenset()))  # last hand's chips picked up
    if feed.core.decks.held:  # the same cards every hand: a stacked deck, as the table says
        feed.sign_in("S3")
        assert feed(ClearFault(role="deck", reason="the test deals one hand again",
                               by="S3")).ok
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    feed.deal_all()
    feed.chips(1, "play", R25)
    settled = feed(SettleHand(by="D12"))
    assert settled.ok, settled.error
    return settled


def test_a_verified_payout_lets_the_next_hand_open() -> None:
    feed = seated(Feed())
    settled = play_winning_hand(feed)
    payout = feed.core.payout
    assert payout is not None
    spots = {s["spot"]: (s["expected"], s["held"], s["state"]) for s in payout.view()["spots"]}
    # Ante and Play win 1:1 (stake + win); the Odds pushes below a straight (stake stays).
    assert spots == {"ante": (5_000, 2_500, "waiting"), "odds": (2_500, 2_500, "paid"),
                     "play": (5_000, 2_500, "waiting")}
    assert not any(isinstance(m, PayoutChecked) for m in settled.messages)
    refused = feed(NoMoreBets(by="D12"))
    assert not refused.ok and "seat 1 ante holds R25.00, must hold R50.00" in str(refused.error)
    feed.chips(1, "ante", 2 * R25)
    done = feed.chips(1, "play", 2 * R25)
    assert [m for m in done.messages if isinstance(m, PayoutChecked)] == [
        PayoutChecked(hand_id="t07-000001", heat_id="Q1", outcome="verified",
                      at=done.messages[-1].at)]  # type: ignore[union-attr]
    assert feed.core.payout is None
    assert feed.core.status() == feed.replayed().status()


def test_an_overpay_is_an_alert_at_once_and_blocks_until_a_supervisor_overrides() -> None:
    feed = seated(Feed())
    play_winning_hand(feed)
    over = feed.chips(1, "ante", 3 * R25)  # one R25 chip too many
    [alert] = [m for m in over.messages if isinstance(m, Alert)]
    assert alert.kind == "payout_overpaid"
    assert alert.message == ("seat 1 ante holds R75.00, must hold R50.00: overpaid by R25.00;"
                             " take R25.00 back")
    assert feed.chips(1, "ante", 3 * R25).messages == ()  # alerted once, not again
    feed.chips(1, "play", 2 * R25)
    feed(ChipsSeen(seat=1, spot="ante", uids=frozenset()))  # the player took it all
    assert not feed(NoMoreBets(by="D12")).ok
    by_dealer = feed(PayoutOverride(reason="paid in error", by="D12"))
    assert not by_dealer.ok and "supervisor's action" in str(by_dealer.error)
    feed.sign_in("S3")
    overridden = feed(PayoutOverride(reason="player left with R25 overpaid; surveillance"
                                            " notified", by="S3"))
    assert overridden.ok
    [check] = [m for m in overridden.messages if isinstance(m, PayoutChecked)]
    assert (check.outcome, check.by, check.mismatches) == (
        "overridden", "S3", (PayoutLine(seat=1, spot="ante", expected=5_000, held=0),))
    assert feed.core.payout is None
    assert feed.core.status() == feed.replayed().status()


def test_payout_done_names_every_unpaid_spot_and_a_loser_not_taken() -> None:
    feed = seated(Feed())
    play_winning_hand(feed)
    pressed = feed(PayoutCheckPressed(by="D12"))
    kinds = sorted(m.kind for m in pressed.messages if isinstance(m, Alert))
    assert kinds == ["payout_underpaid", "payout_underpaid"]
    # The answer is the truth (D335): refused, naming each spot not paid; the alerts above
    # still go out with the refusal, and the next hand stays blocked.
    assert not pressed.ok
    assert feed.core.payout is not None
    assert pressed.error == (
        f"the payout of hand {feed.core.payout.hand_id} is not verified: seat 1 ante holds"
        " R25.00, must hold R50.00: underpaid by R25.00; pay R25.00; seat 1 play holds R25.00,"
        " must hold R50.00: underpaid by R25.00; pay R25.00. Correct the chips, or a"
        " supervisor overrides with a reason")
    assert feed.core.payout is not None and not feed(NoMoreBets(by="D12")).ok
    # the words for a losing spot still on the table
    loser = SpotPay(seat=2, spot="trips_plus", result="lose", stake=R25, net=-R25, expected=0,
                    held=R25)
    assert loser.problem() == ("loser_not_taken", "seat 2 trips_plus lost R25.00 and still"
                               " holds R25.00: take the losing chips")


def test_payout_done_with_no_payout_waiting_answers_so_without_a_refusal() -> None:
    feed = seated(Feed(verify_payouts=False))
    play_winning_hand(feed)
    pressed = feed(PayoutCheckPressed(by="D12"))
    assert pressed.ok and pressed.detail == {"payout": None,
                                             "message": "no payout is waiting to be checked"}
    feed.sign_in("S3")
    override = feed(PayoutOverride(reason="nothing to override", by="S3"))
    assert (override.ok, override.error) == (False, "no payout is waiting to be checked")


def test_keyed_amounts_count_but_are_listed_as_unverifiable() -> None:
    feed = seated(Feed())
    play_winning_hand(feed)
    feed.sign_in("S3")
    feed(WagerKeyed(seat=1, spot="ante", amount_cents=5_000, by="S3"))
    done = feed(WagerKeyed(seat=1, spot="play", amount_cents=5_000, by="S3"))
    [check] = [m for m in done.messages if isinstance(m, PayoutChecked)]
    assert check.outcome == "verified"
    assert [(x.spot, x.held) for x in check.unverifiable] == [("ante", 5_000), ("play", 5_000)]


def test_without_payout_checks_the_hand_ends_as_before() -> None:
    feed = seated(Feed(verify_payouts=False))
    play_winning_hand(feed)
    assert feed.core.payout is None


def test_supervisor_only_actions_are_refused_to_a_dealer_and_to_nobody() -> None:
    feed = seated(Feed())
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    refused = feed(VoidByDealer(reason="misdeal", by="D12"))
    assert refused.error == ("'void' is a supervisor's action; D12 is signed in as dealer:"
                             " call a supervisor to sign in")
    assert feed(VoidByDealer(reason="misdeal", by="S3")).error == (
        "S3 is not signed in at this table")
    assert feed(VoidByDealer(reason="misdeal", by=None)).error == (
        "'void' needs a signed-in dealer or supervisor")
    assert feed(SettleHand(by="someone")).error == "'settle' needs a signed-in dealer or supervisor"
    manual = feed(CardSeen(card=parse_card("Ah"), source="manual", by="D12"))
    assert not manual.ok and "supervisor's action" in str(manual.error)
    feed.sign_in("S3")
    assert feed(VoidByDealer(reason="misdeal", by="S3")).ok


def test_sign_ins_are_recorded_and_repeated_failures_back_off_that_terminal_only() -> None:
    feed = seated(Feed())

    def fail(terminal: str | None = "10.0.0.5", **more: Any) -> list[str]:
        failed = feed(StaffChange(event="sign_in_failed", method="pin", staff_id="S3",
                                  detail="wrong PIN", terminal=terminal, **more))
        return [m.event for m in failed.messages if isinstance(m, StaffEvent)]

    assert fail() == fail() == ["sign_in_failed"]
    third = feed(StaffChange(event="sign_in_failed", method="pin", staff_id="S3",
                             detail="wrong PIN", terminal="10.0.0.5"))
    events = [m for m in third.messages if isinstance(m, StaffEvent)]
    assert [m.event for m in events] == ["sign_in_failed", "locked"]
    assert "at 10.0.0.5" in events[0].detail
    assert "3 failed sign-ins at 10.0.0.5: the next attempt there waits 30 s" in (
        events[1].detail)
    assert feed.core.staff.wait_until("10.0.0.5", "S3", feed.now) == feed.now + timedelta(
        seconds=30)
    assert feed.core.staff.wait_until("10.0.0.9", "S3", feed.now) is None  # another screen
    assert feed.core.staff.wait_until("10.0.0.5", "D12", feed.now) is None  # another id
    # an attempt refused unchecked during the wait is recorded, not counted
    assert fail(waited=True) == ["sign_in_failed"]
    assert feed.core.staff.backed_off(feed.now)[0]["failures"] == 3
    assert feed.replayed().staff.wait_until("10.0.0.5", "S3", feed.now) is not None
    assert feed.core.staff.backed_off(feed.now) == [
        {"staff_id": "S3", "terminal": "10.0.0.5", "failures": 3,
         "wait_until": (feed.now - timedelta(seconds=1) + timedelta(seconds=30)).isoformat()}]
    # a good sign-in at another terminal leaves it; one at that terminal clears its count
    assert feed(StaffChange(event="signed_in", method="card", staff_id="S3",
                            terminal="10.0.0.9")).ok
    assert len(feed.core.staff.backed_off(feed.now)) == 1
    assert feed(StaffChange(event="signed_in", method="pin", staff_id="S3",
                            terminal="10.0.0.5")).ok
    assert feed.core.staff.backed_off(feed.now) == []
    out = feed(StaffChange(event="signed_out", method="pin", staff_id="D12"))
    assert [(m.event, m.role) for m in out.messages if isinstance(m, StaffEvent)] == [
        ("signed_out", "dealer")]
    assert feed(NoMoreBets(by="D12")).error == "D12 is not signed in at this table"


def test_a_checkpoint_keeps_each_terminals_count_and_refuses_a_bad_one() -> None:
    feed = seated(Feed())
    for terminal, staff_id in (("10.0.0.5", "S3"), ("10.0.0.5", None), ("::1", None)):
        for _ in range(3):
            feed(StaffChange(event="sign_in_failed", method="pin", staff_id=staff_id,
                             detail="wrong PIN", terminal=terminal))
    state = take_snapshot(feed.core)
    assert state["staff"]["failures"] == [
        ["10.0.0.5", None, 3, (feed.now - timedelta(seconds=3)).isoformat()],
        ["10.0.0.5", "S3", 3, (feed.now - timedelta(seconds=6)).isoformat()],
        ["::1", None, 3, feed.now.isoformat()]]
    fresh = feed._new()
    restore_snapshot(fresh, state)
    assert fresh.staff.backed_off(feed.now) == feed.core.staff.backed_off(feed.now)
    assert len(fresh.staff.backed_off(feed.now)) == 3
    state["staff"]["failures"][0][2] = 0
    with pytest.raises(SnapshotError, match=r"failures\[0\]\[2\]: 0 is out of range 1"):
        restore_snapshot(feed._new(), state)


def test_a_record_from_before_terminals_replays_as_one_terminal() -> None:
    feed = seated(Feed())
    old = decode_input("staff", {"event": "sign_in_failed", "method": "pin", "staff_id": "S3",
                                 "detail": "wrong PIN"})
    assert isinstance(old, StaffChange) and old.terminal is None and not old.waited
    for _ in range(3):
        feed(old)
    assert feed.core.staff.wait_until("", "S3", feed.now) is not None


def test_only_a_signed_in_manager_lifts_a_back_off_and_only_one_in_force() -> None:
    roster = StaffRoster(version=2, card_salt=None, members=(*ROSTER.members, StaffMember(
        staff_id="M1", name="Mpho Manager", role="manager", pin_hash=hash_secret("1111", SALT))))
    feed = seated(Feed())
    assert feed(DeskOrder(command=roster, signer="desk", command_seq=9)).ok
    for terminal in ("10.0.0.5", "10.0.0.6", "10.0.0.6", "10.0.0.6", "10.0.0.5", "10.0.0.5"):
        feed(StaffChange(event="sign_in_failed", method="pin", staff_id="S3",
                         detail="wrong PIN", terminal=terminal))
    lift = StaffChange(event="unlocked", method="console", staff_id="S3",
                       terminal="10.0.0.5", by="M1", detail="S3 is who they say")
    assert feed(lift).error == "M1 is not signed in at this table"
    feed.sign_in("S3")  # at no terminal ("" : the records before terminals)
    refused = feed(StaffChange(event="unlocked", method="console", staff_id="S3",
                               terminal="10.0.0.5", by="S3", detail="mine"))
    assert refused.error == ("'unlock_staff' is a manager's action; S3 is signed in as"
                             " supervisor: call a manager to sign in")
    feed.sign_in("M1")
    lifted = feed(lift)
    assert lifted.ok, lifted.error
    [event] = [m for m in lifted.messages if isinstance(m, StaffEvent)]
    assert (event.event, event.staff_id) == ("unlocked", "S3")
    assert event.detail == "back-off lifted by M1 at 10.0.0.5: S3 is who they say"
    assert [b["terminal"] for b in feed.core.staff.backed_off(feed.now)] == ["10.0.0.6"]
    again = feed(lift)
    assert again.error == ("nothing is locked for S3 at 10.0.0.5: no sign-in back-off is on"
                           " record there")
    # no terminal: every terminal's back-off for the id
    assert feed(StaffChange(event="unlocked", method="console", staff_id="S3", by="M1",
                            detail="cleared everywhere")).ok
    assert feed.core.staff.backed_off(feed.now) == []
    assert feed.replayed().staff.backed_off(feed.now) == []
    # a lift without a reason is not a record the table reads
    assert isinstance(decode_input("staff", {"event": "unlocked", "method": "console",
                                             "staff_id": "S3", "by": "M1", "detail": " "}),
                      Unreadable)


def test_a_roster_must_be_newer_and_drops_people_no_longer_on_it() -> None:
    feed = seated(Feed())
    stale = feed(DeskOrder(command=ROSTER, signer="desk", command_seq=2))
    assert stale.error == "staff roster version 1 is not newer than the table's version 1"
    newer = StaffRoster(version=2, members=ROSTER.members[1:])
    assert feed(DeskOrder(command=newer, signer="desk", command_seq=3)).ok
    assert "D12" not in feed.core.staff.signed_in


def test_acknowledgement_carries_its_method_and_evidence_and_a_dispute_its_note() -> None:
    feed = seated(Feed(verify_payouts=False))
    core = feed.core
    session = core.session
    assert session is not None
    # Play the entry to its end quickly: the qualifying stage ends after its hands.
    while core.session is not None and core.session.seats:
        play_winning_hand(feed)
    assert sorted(core.unacknowledged) == ["E1"]
    disputed = feed(Dispute(entry_id="E1", note="hand 3 was paid short"))
    [dispute] = [m for m in disputed.messages if isinstance(m, ScoreDisputed)]
    assert (dispute.note, dispute.heat_id) == ("hand 3 was paid short", "Q1")
    assert core.disputed == {"E1": "hand 3 was paid short"}
    acked = feed(Acknowledge(entry_id="E1", method="card+signature", evidence="ab" * 32))
    [ack] = [m for m in acked.messages if isinstance(m, ScoreAcknowledged)]
    assert (ack.method, ack.evidence, ack.by) == ("card+signature", "ab" * 32, None)
    assert core.disputed == {} and core.unacknowledged == {}
    assert len(core.recent) == 10  # game recall keeps the last ten hands
    assert all(r["manual"] is False for r in core.recent)


@pytest.mark.parametrize(("kind", "payload", "error"), [
    ("participant", {"action": "dispute", "entry_id": "E1", "note": "  "},
     "a dispute needs a note saying what is wrong"),
    ("participant", {"action": "wave", "entry_id": "E1"}, "unknown participant action 'wave'"),
    ("staff", {"event": "teleported", "method": "pin"}, "unknown staff event 'teleported'"),
    ("dealer", {"action": "payout_override", "reason": ""}, "a reason is required"),
])
def test_unreadable_console_inputs_are_refused_with_the_reason(kind: str, payload: Any,
                                                               error: str) -> None:
    decision = Feed().core.apply(decode_input(kind, payload), T0)
    assert (decision.ok, decision.error) == (False, error)


def test_a_manual_card_names_its_operator_and_marks_the_hand_manual() -> None:
    assert decode_input("card", {"card": "Ah", "source": "manual", "device": "manual:S3"}) == (
        CardSeen(card=parse_card("Ah"), source="manual", by="S3", device="manual:S3"))
    feed = seated(Feed(verify_payouts=False))
    feed.sign_in("S3")
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    hand = feed.core.hand
    assert hand is not None
    queues = {k: list(v) for k, v in CARDS.items()}
    first = True
    while (target := hand.next_target) is not None:
        kind = target.kind if target.kind in queues else "burn"
        card = parse_card(queues[kind].pop(0))
        given = CardSeen(card=card, source="manual", by="S3") if first else CardSeen(card=card)
        first = False
        assert feed(given).ok
    feed.chips(1, "play", R25)
    settled = feed(SettleHand(by="D12"))
    record = feed.core.recent[0]
    assert settled.ok and record["manual"] is True
    assert record["reads"][0]["source"] == "manual"


def test_a_lost_reader_blocks_play_until_it_is_back_or_a_supervisor_clears_it() -> None:
    feed = seated(Feed(verify_payouts=False))
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    feed(DeviceTrouble(device="RF-77", kind="disconnected", detail="USB gone", role="rfid"))
    refused = feed(NoMoreBets(by="D12"))
    assert refused.error == ("a device is down (rfid: RF-77 disconnected: USB gone): reconnect"
                             " it, or a supervisor clears the fault with a reason to go on by"
                             " manual entry")
    feed(DeviceTrouble(device="RF-78", kind="reconnected", detail="back", role="rfid"))
    assert feed(NoMoreBets(by="D12")).ok
    feed(DeviceTrouble(device="S1", kind="stalled", detail="silent 3 s", role="shoe"))
    feed(DeviceTrouble(device="ids", kind="lost", detail="unplugged", role="id_reader"))
    assert feed.core.device_faults.keys() == {"shoe"}  # the ID reader never blocks play
    assert "supervisor's action" in str(feed(ClearFault(role="shoe", reason="keying cards",
                                                        by="D12")).error)
    feed.sign_in("S3")
    assert feed(ClearFault(role="shoe", reason="shoe replaced by manual entry", by="S3")).ok
    assert feed.core.device_faults == {}
    assert feed(ClearFault(role="shoe", reason="again", by="S3")).error == (
        "no 'shoe' fault is open")
    assert feed.core.status() == feed.replayed().status()


def test_reads_lost_holds_the_hand_until_a_supervisor_has_checked_the_cards() -> None:
    """A shoe that keeps nothing for later (a text-line shoe, D303) is back after a gap: it
    says so (reads_lost), and the hand does not settle until a supervisor clears that."""
    feed = seated(Feed(verify_payouts=False))
    feed.chips(1, "ante", R25)
    feed.chips(1, "odds", R25)
    assert feed(NoMoreBets(by="D12")).ok
    feed.deal_all()
    feed.chips(1, "play", R25)
    for kind in ("disconnected", "reconnected", "reads_lost"):
        feed(DeviceTrouble(device="/dev/ttyUSB0", kind=kind, detail="the link was down 4.0 s",
                           role="shoe"))
    assert feed.core.device_faults == {"shoe": "/dev/ttyUSB0 reads_lost: the link was down"
                                               " 4.0 s"}
    assert "a device is down (shoe: /dev/ttyUSB0 reads_lost" in str(
        feed(SettleHand(by="D12")).error)
    assert alert_help("device_reads_lost").startswith("The shoe was away or silent")
    feed.sign_in("S3")
    assert feed(ClearFault(role="shoe", reason="layout checked against the screen",
                           by="S3")).ok
    assert feed(SettleHand(by="D12")).ok
    assert feed.core.status() == feed.replayed().status()


def test_wagers_keyed_before_no_more_bets_mark_the_hand_manual() -> None:
    feed = seated(Feed(verify_payouts=False))
    feed.sign_in("S3")
    feed(WagerKeyed(seat=1, spot="ante", amount_cents=R25, by="S3"))
    feed(WagerKeyed(seat=1, spot="odds", amount_cents=R25, by="S3"))
    assert feed(NoMoreBets(by="D12")).ok
    feed.deal_all()
    assert feed(SettleHand(by="D12")).ok
    record = feed.core.recent[0]
    assert record["manual"] is True and record["seats"][0]["wager_source"] == "manual"
