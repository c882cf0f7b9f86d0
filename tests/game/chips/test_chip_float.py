"""The table's chips at run time (issue 13 point 1, rule 19): one UID on two spots counts on
neither, the starting stack is issued as specific UIDs, payouts move chips between the float
and the entries, a chip of one entry on another's spot is pooling, and every entry's chips are
reconciled at the end of its heat."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from game.chips.float import ChipFloat, FloatError
from game.chips.registry import Chip, ChipRegistry
from game.chips.spot_book import SpotBook
from game.messages.chips import ChipsReconciled
from game.messages.desk import CloseHeat, DeskOrder, OpenHeat, Seat, Unseat
from game.messages.table import Alert
from game.table.core import Decision
from game.table.inputs import (
    ChipsSeen,
    IssueChips,
    NoMoreBets,
    ReturnChips,
    SettleHand,
    WagerKeyed,
    decode_input,
)
from game.table.snapshot import restore_snapshot, take_snapshot
from game.table.snapshot_fields import uid_text
from game.tournament.entries import Stage
from game.wagers.settle import WAGERS
from tests.game.table.test_table_console import ROSTER, SETTINGS, play_winning_hand
from tests.game.table.test_table_console import Feed as ConsoleFeed

R25 = 2_500
STACK = SETTINGS.stage(Stage.QUALIFYING).rules.starting_chips_cents


def uid(n: int) -> bytes:
    return bytes.fromhex(f"E0040000{n:08X}")


def registry(count: int = 400, **issued: str) -> ChipRegistry:
    return ChipRegistry([Chip(uid=uid(i), value_cents=R25, chip_set="house",
                              issued_to=issued.get(f"c{i}")) for i in range(count)],
                        chip_set="house")


class Feed(ConsoleFeed):
    """The console tests' feed, with chips placed by UID."""

    def place(self, seat: int, spot: str, uids: list[int]) -> Decision:
        return self(ChipsSeen(seat=seat, spot=spot, uids=frozenset(uid(n) for n in uids)))


def start(feed: Feed, *entries: tuple[str, int]) -> Feed:
    assert feed(DeskOrder(command=ROSTER, signer="desk", command_seq=1)).ok
    assert feed(DeskOrder(command=OpenHeat(stage="qualifying", heat_id="Q1"))).ok
    for entry, seat in entries:
        assert feed(DeskOrder(command=Seat(entry_id=entry, seat=seat))).ok
    feed.sign_in("D12")
    return feed


def assert_issued(feed: Feed, seat: int) -> None:
    """The reader issued the seat's stack by itself (no button) once it read it exactly."""
    assert seat not in feed.core.chips.unissued(feed.core.session)
    assert feed.core.chips.chip_float.held_by(feed.core.chips.seats[seat])


def alerts(decision: Decision, kind: str) -> list[Alert]:
    return [m for m in decision.messages if isinstance(m, Alert) and m.kind == kind]


def reconciled(decision: Decision) -> list[ChipsReconciled]:
    return [m for m in decision.messages if isinstance(m, ChipsReconciled)]


def test_the_starting_stack_is_two_thousand_rand() -> None:
    assert STACK == 200_000


# ---- one UID on two spots -----------------------------------------------------------------


def test_the_issues_case_one_r25_uid_on_four_spots_of_two_seats_counts_nowhere() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    clone = 7
    first = feed.place(1, "ante", [clone, 100])
    assert alerts(first, "chip_clone") == []
    second = feed.place(1, "odds", [clone, 102])
    [alert] = alerts(second, "chip_clone")
    assert "E004000000000007" in alert.message
    assert "seat 1 ante" in alert.message and "seat 1 odds" in alert.message
    third = feed.place(2, "ante", [clone, 101])
    fourth = feed.place(2, "odds", [clone, 103])
    assert alerts(third, "chip_clone") == alerts(fourth, "chip_clone") == []  # once
    spots = feed.core.status()["spots"]
    assert spots == {"1": {"ante": R25, "odds": R25}, "2": {"ante": R25, "odds": R25}}
    opened = feed(NoMoreBets(by="D12"))
    assert opened.ok, opened.error
    hand = feed.core.hand
    assert hand is not None
    staked = [w.staked_cents if (w := hand.wagers(s)) else None for s in (1, 2)]
    assert staked == [2 * R25, 2 * R25]  # the clone counted on none of its four spots
    assert feed.core.status() == feed.replayed().status()


def test_a_clone_clears_when_one_spot_no_longer_holds_it_and_is_reported_again_later() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    feed.place(1, "ante", [5])
    assert alerts(feed.place(2, "ante", [5]), "chip_clone")
    assert feed.core.status()["spots"] == {"1": {}, "2": {}}
    feed.place(2, "ante", [])  # seat 2's copy taken off: seat 1's chip counts again
    assert feed.core.status()["spots"] == {"1": {"ante": R25}, "2": {}}
    assert alerts(feed.place(2, "odds", [5]), "chip_clone")  # a new duplication: a new alert


def test_a_keyed_amount_on_one_copys_spot_lets_the_other_count_again() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    feed.place(1, "ante", [5])
    feed.place(2, "ante", [5])
    feed.sign_in("S3")
    assert feed(WagerKeyed(seat=2, spot="ante", amount_cents=R25, by="S3")).ok
    assert feed.core.status()["spots"] == {"1": {"ante": R25}, "2": {"ante": R25}}
    assert not feed.core.spots.cloned(uid(5))


@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from(WAGERS[:3]),
                          st.frozensets(st.integers(0, 5), max_size=4)), max_size=30))
def test_any_sequence_of_reads_never_counts_a_uid_twice(reads: list[tuple[int, str,
                                                                          frozenset[int]]]
                                                        ) -> None:
    reg = ChipRegistry([Chip(uid=uid(i), value_cents=10 ** i, chip_set="house")
                        for i in range(6)], chip_set="house")
    book = SpotBook(reg, chip_float=ChipFloat(reg))
    lying: dict[tuple[int, str], frozenset[int]] = {}
    for seat, spot, chips in reads:
        book.see_chips(seat, spot, frozenset(uid(n) for n in chips))
        lying[(seat, spot)] = chips
    where: dict[int, int] = {}
    for chips in lying.values():
        for n in chips:
            where[n] = where.get(n, 0) + 1
    counted = sum(book.wagers(seat, None, report=False)[0].staked_cents for seat in (1, 2, 3))
    assert counted == sum(10 ** n for n, times in where.items() if times == 1)


# ---- issuing, pooling, payouts ------------------------------------------------------------


def test_the_reader_issues_the_stack_it_reads_and_a_wrong_stack_says_what_is_missing() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    [line] = [x for x in feed.core.status()["chips"]["to_issue"] if x["seat"] == 1]
    assert line["say"] == "Seat 1: place R2,000.00 from the tray on the seat's spot"
    assert sum(b["value_cents"] * b["count"] for b in line["breakdown"]) == STACK
    short_read = feed.place(1, "ante", list(range(0, 79)))  # R1,975: nothing issued
    assert alerts(short_read, "chip_issue_wrong") == []
    assert feed.core.chips.chip_float.held_by("E1") == ()
    [line] = [x for x in feed.core.status()["chips"]["to_issue"] if x["seat"] == 1]
    assert (line["missing_cents"], line["over_cents"]) == (R25, 0)
    assert line["say"] == "Seat 1: R1,975.00 read of R2,000.00: add R25.00"
    short = feed(IssueChips(seat=1, by="D12"))  # the button, kept as a fallback, says why
    assert not short.ok and "worth R1,975.00, the starting stack is R2,000.00: add R25.00" in (
        str(short.error))
    assert alerts(short, "chip_issue_wrong")
    feed.place(1, "ante", list(range(0, 81)))  # R2,025: over
    [line] = [x for x in feed.core.status()["chips"]["to_issue"] if x["seat"] == 1]
    assert line["over_cents"] == R25 and "take R25.00 back to the tray" in line["say"]
    feed.place(1, "ante", list(range(0, 80)))  # exactly the stack: issued, no button
    assert feed.core.chips.chip_float.held_by("E1") == tuple(uid(n) for n in range(80))
    assert [x["seat"] for x in feed.core.status()["chips"]["to_issue"]] == [2]
    again = feed(IssueChips(seat=1, by="D12"))
    assert "already has its starting stack issued" in str(again.error)
    # Seat 2 stacks one of E1's chips among float chips: not issued, the screen says why.
    feed.place(1, "ante", [])
    feed.place(2, "ante", [*range(100, 179), 3])
    assert feed.core.chips.chip_float.held_by("E2") == ()
    [line] = feed.core.status()["chips"]["to_issue"]
    assert line["wrong"] == ["chip E004000000000003 is issued to entry E1, not in the float"]
    pooled = feed(IssueChips(seat=2, by="D12"))
    assert "chip E004000000000003 is issued to entry E1, not in the float" in str(pooled.error)
    assert feed.core.status() == feed.replayed().status()  # issued from the journaled reads


def test_a_chip_of_one_entry_on_another_entrys_spot_is_pooling_and_counts_nothing() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    feed.place(1, "ante", list(range(80)))
    assert_issued(feed, 1)
    feed.place(1, "ante", [])
    moved = feed.place(2, "ante", [4, 200])
    [alert] = alerts(moved, "chip_pooling")
    assert "chip E004000000000004 on seat 2 ante belongs to entry E1, played by entry E2" in (
        alert.message)
    assert feed.core.status()["spots"]["2"] == {"ante": R25}  # only the float chip 200
    assert feed.core.status() == feed.replayed().status()


def test_a_verified_payout_binds_the_paid_float_chips_to_the_winner() -> None:
    feed = Feed()
    start(feed, ("E1", 1))
    play_winning_hand(feed)
    on_ante = feed.core.spots.uids_on(1, "ante")
    feed.chips(1, "ante", 2 * R25)
    feed.chips(1, "play", 2 * R25)
    assert feed.core.payout is None  # verified
    paid = feed.core.spots.uids_on(1, "ante") | feed.core.spots.uids_on(1, "play")
    assert set(feed.core.chips.chip_float.held_by("E1")) >= paid
    assert not on_ante & set(feed.core.chips.chip_float.held_by("E1"))  # float chips, replaced


def test_a_loss_taken_returns_the_entrys_chips_to_the_float() -> None:
    chips = ChipFloat(registry())
    chips.issue("E1", frozenset(uid(n) for n in range(80)), seat=1, stack_cents=200_000)
    chips.paid("E1", frozenset({uid(1), uid(2)}), frozenset())
    assert uid(1) not in chips.held_by("E1") and len(chips.held_by("E1")) == 78
    assert chips.owner(uid(1)) is None


def test_a_static_registry_still_issues_and_its_chips_return_to_the_float() -> None:
    chips = ChipFloat(registry(c1="E9", c2="E9"), require_issued=False)
    assert chips.issued_to("E9") == (uid(1), uid(2))
    assert chips.check(uid(1), entry="E1") is not None  # issued to E9 statically
    done = chips.reconcile("E9", 3, frozenset({uid(1)}))
    assert (done.returned, done.missing, done.missing_cents) == ((uid(1),), (uid(2),), R25)
    assert chips.check(uid(1), entry="E1") is None  # back in the float: counts for anyone
    required = ChipFloat(registry(c1="E9"))  # the default (D346): a float chip is an alert
    required.reconcile("E9", 3, frozenset({uid(1)}))
    problem = required.check(uid(1), entry="E1", seat=1)
    assert problem is not None and problem.kind == "not_issued"
    required.set_open(frozenset({1}))  # a stack being placed or a payout paid on seat 1
    assert required.check(uid(1), entry="E1", seat=1) is None
    try:
        chips.issue("E1", frozenset({uid(2)}), seat=1, stack_cents=R25)
    except FloatError as exc:
        assert "issued to entry E9" in str(exc)
    else:  # pragma: no cover - the test fails
        raise AssertionError("a missing chip of E9 was issued to E1")


# ---- the end of the heat -------------------------------------------------------------------


def test_returned_chips_reconcile_with_nothing_missing() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1))
    feed.place(1, "ante", list(range(80)))
    assert_issued(feed, 1)
    feed.place(1, "ante", [])
    assert "still playing" in str(feed(ReturnChips(seat=1, by="D12")).error)
    assert feed(DeskOrder(command=Unseat(seat=1))).ok
    feed.place(1, "ante", list(range(40)))
    feed.place(1, "odds", list(range(40, 80)))
    back = feed(ReturnChips(seat=1, by="D12"))
    assert back.ok and back.detail["missing"] == 0
    [report] = reconciled(back)
    assert (len(report.issued), len(report.returned), report.missing, report.returned_cents) \
        == (80, 80, (), 200_000)
    assert feed.core.chips.chip_float.held_by("E1") == ()
    closed = feed(DeskOrder(command=CloseHeat()))
    assert closed.ok and reconciled(closed) == []  # reconciled once
    assert feed.core.status() == feed.replayed().status()


def test_chips_missing_at_heat_close_are_reported_and_an_alert() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1), ("E2", 2))
    for seat, first in ((1, 0), (2, 100)):
        feed.place(seat, "ante", list(range(first, first + 80)))
        assert_issued(feed, seat)
        feed.place(seat, "ante", [])
    for seat in (1, 2):
        assert feed(DeskOrder(command=Unseat(seat=seat))).ok
    feed.place(1, "ante", list(range(0, 78)))  # two chips short
    feed.place(2, "ante", list(range(100, 180)))
    closed = feed(DeskOrder(command=CloseHeat()))
    assert closed.ok, closed.error
    one, two = reconciled(closed)
    assert (one.entry_id, one.missing, one.missing_cents) == (
        "E1", ("E00400000000004E", "E00400000000004F"), 2 * R25)
    assert (two.entry_id, two.missing) == ("E2", ())
    [alert] = alerts(closed, "chips_missing")
    assert "MISSING 2 chips R50.00" in alert.message and "E00400000000004E" in alert.message
    assert ChipsReconciled.decode(one.encode()) == one


def test_the_dealer_steps_decode_from_the_journal() -> None:
    assert decode_input("dealer", {"action": "issue_chips", "seat": 3, "by": "D1"}) == (
        IssueChips(seat=3, by="D1"))
    assert decode_input("dealer", {"action": "return_chips", "seat": 2}) == ReturnChips(seat=2)
    assert decode_input("dealer", {"action": "issue_chips"}).reason == (  # type: ignore[union-attr]
        "missing field 'seat'")



def test_an_entry_that_was_never_issued_chips_and_holds_none_is_not_reported() -> None:
    feed = start(Feed(verify_payouts=False), ("E1", 1))
    assert "no entry's chips are waiting" in str(feed(ReturnChips(seat=2, by="D12")).error)
    assert feed(DeskOrder(command=Unseat(seat=1))).ok
    back = feed(ReturnChips(seat=1, by="D12"))
    assert back.ok and back.detail["missing"] == 0 and reconciled(back) == []
    closed = feed(DeskOrder(command=CloseHeat()))
    assert closed.ok and reconciled(closed) == [] and not alerts(closed, "chips_missing")


# ---- the float by default (D346): require_issued on a table that checks its payouts -------


def test_by_default_no_hand_opens_before_the_stack_is_issued_and_a_tray_chip_is_an_alert(
) -> None:
    feed = start(Feed(require_issued=True), ("E1", 1))
    assert feed.core.status()["chips"]["require_issued"] is True
    refused = feed(NoMoreBets(by="D12"))
    assert not refused.ok and "starting stack is issued" in str(refused.error)
    assert "Seat 1: place R2,000.00 from the tray on the seat's spot" in str(refused.error)
    placing = feed.place(1, "ante", list(range(40)))  # half placed: no alert for tray chips
    assert alerts(placing, "not_issued") == []
    feed.place(1, "ante", list(range(80)))
    assert_issued(feed, 1)
    feed.place(1, "ante", [])  # handed to the player
    # The entry's own chips count; a chip from the tray on its spot is an alert, counts nothing.
    mixed = feed.place(1, "ante", [0, 300])
    [alert] = alerts(mixed, "not_issued")
    assert "chip E00400000000012C on seat 1 ante is not issued to any entry" in alert.message
    assert feed.core.status()["spots"]["1"] == {"ante": R25}
    assert feed.core.status() == feed.replayed().status()


def test_by_default_a_payout_paid_from_the_tray_is_no_alert_and_binds_to_the_winner() -> None:
    feed = start(Feed(require_issued=True), ("E1", 1))
    feed.place(1, "ante", list(range(80)))
    assert_issued(feed, 1)
    feed.place(1, "ante", [])
    feed.place(1, "ante", [0])
    feed.place(1, "odds", [1])
    assert feed(NoMoreBets(by="D12")).ok
    feed.deal_all()
    feed.place(1, "play", [2])
    assert feed(SettleHand(by="D12")).ok
    paying = [feed.place(1, "ante", [0, 300]), feed.place(1, "play", [2, 301])]
    assert [a for d in paying for a in alerts(d, "not_issued")] == []
    assert feed.core.payout is None  # verified
    assert {uid(300), uid(301)} <= set(feed.core.chips.chip_float.held_by("E1"))
    assert feed.core.status() == feed.replayed().status()


def test_the_suggested_stack_is_exact_playable_and_from_the_chips_there_are() -> None:
    from game.chips.float import suggest_stack
    free = {250: 400, 2_500: 4_000, 10_000: 1_500, 50_000: 400}
    assert suggest_stack(200_000, free) == {50_000: 2, 2_500: 40}  # half in R25s, not R2.50s
    assert suggest_stack(200_000, {2_500: 20, 50_000: 3}) == {50_000: 3, 2_500: 20}
    assert suggest_stack(200_000, {50_000: 3}) == {}  # the float cannot make it
    for stack in (2_500, 77_500, 200_000, 1_000_000):
        made = suggest_stack(stack, free)
        assert sum(v * n for v, n in made.items()) == stack
        assert all(n <= free[v] for v, n in made.items())


def test_change_made_on_a_spot_between_hands_binds_the_tray_chips_to_the_entry() -> None:
    feed = start(Feed(require_issued=True), ("E1", 1))
    feed.place(1, "ante", list(range(80)))
    assert_issued(feed, 1)
    feed.place(1, "ante", [])
    feed.place(1, "ante", [0, 1, 2, 3])  # the player puts R100 of its chips down for change
    feed.place(1, "ante", [])  # the dealer takes them to the tray
    half = feed.place(1, "ante", [300, 301])  # and counts the change out: no alert meanwhile
    done = feed.place(1, "ante", [300, 301, 302, 303])
    assert alerts(half, "not_issued") == alerts(done, "not_issued") == []
    held = set(feed.core.chips.chip_float.held_by("E1"))
    assert {uid(n) for n in range(300, 304)} <= held and not {uid(n) for n in range(4)} & held
    assert feed.core.chips.change == {}
    # Snapshot mid-change, then replay: the same state.
    feed.place(1, "ante", [])
    feed.place(1, "odds", [4, 5])
    feed.place(1, "odds", [])
    feed.place(1, "odds", [310])  # half the change counted out ...
    assert feed.core.chips.change[(1, "odds")][0] == "E1"
    state = take_snapshot(feed.core)
    assert {"seat": 1, "spot": "odds", "entry_id": "E1",  # (the ante's pick-up is one too)
            "taken": [uid_text(uid(4)), uid_text(uid(5))],
            "placed": [uid_text(uid(310))]} in state["chips"]["change"]
    restored = feed._new()
    restore_snapshot(restored, state)
    assert restored.status() == feed.core.status() == feed.replayed().status()
    feed.place(1, "ante", [6])
    opened = feed(NoMoreBets(by="D12"))  # ... and the hand opens: that is no change
    assert opened.ok, opened.error
    [alert] = alerts(opened, "not_issued")
    assert "E004000000000136 on seat 1 odds" in alert.message
    assert feed.core.status()["spots"]["1"] == {"ante": R25}  # the tray chip counts nothing
    assert feed.core.status() == feed.replayed().status()


def test_tray_chips_placed_without_chips_taken_off_are_no_change() -> None:
    feed = start(Feed(require_issued=True), ("E1", 1))
    feed.place(1, "ante", list(range(80)))
    feed.place(1, "ante", [])
    [alert] = alerts(feed.place(1, "odds", [300]), "not_issued")
    assert "E00400000000012C" in alert.message and (1, "odds") not in feed.core.chips.change
    feed.place(1, "odds", [])
    feed.place(1, "ante", [0])
    feed.place(1, "ante", [])  # R25 taken off ...
    over = feed.place(1, "ante", [300, 301])  # ... R50 of tray chips put down: no change
    assert len(alerts(over, "not_issued")) == 2 and (1, "ante") not in feed.core.chips.change
