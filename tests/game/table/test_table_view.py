"""What the table's screens show (`game.table.view.screen_view`), read from a pure table core
fed typed inputs: seats and their entries, the hand with its cards in position and each
seat's decisions, alerts with what to do, the settlement per spot, the payout check, the
scores waiting and game recall."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.hand.events import ALERT_KINDS, AlertKind
from game.messages.desk import DeskOrder, OpenHeat, Seat
from game.poker.cards import parse_card
from game.table.core import Decision, TableCore
from game.table.inputs import (
    CardSeen,
    ClearFault,
    DeviceTrouble,
    Dispute,
    NoMoreBets,
    ResolveAlert,
    SettleHand,
    TableInput,
    WagerKeyed,
)
from game.table.view import ALERT_HELP, alert_help, money, screen_view
from runtime.settings_files import read_paytables, read_tournament

T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
R25 = 2_500
SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)
REGISTRY = ChipRegistry([Chip(uid=bytes.fromhex("E004000000000001"), value_cents=R25,
                               chip_set="house")], chip_set="house")
# Every card of the deck in a fixed order; each hand deals from the front.
DECK = [parse_card(r + s) for r in "AKQJT98765432" for s in "shdc"]


class Table:
    """A core with payouts checked, fed inputs a second apart."""

    def __init__(self) -> None:
        self.core = TableCore(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                              deal=DEFAULT_DEAL, registry=REGISTRY,
                              verify_payouts=True)
        self.now = T0

    def __call__(self, given: TableInput) -> Decision:
        self.now += timedelta(seconds=1)
        return self.core.apply(given, self.now)

    def view(self, **kw: Any) -> dict[str, Any]:
        doc = screen_view(self.core, now=self.now, **kw)
        json.dumps(doc)  # JSON-ready, all of it
        return doc

    def seat(self, *seats: int) -> None:
        assert self(DeskOrder(command=OpenHeat(stage="qualifying", heat_id="Q1"))).ok
        for seat in seats:
            assert self(DeskOrder(command=Seat(entry_id=f"E{seat}", seat=seat))).ok

    def wagers(self, *seats: int) -> None:
        for seat in seats:
            assert self(WagerKeyed(seat=seat, spot="ante", amount_cents=R25)).ok
            assert self(WagerKeyed(seat=seat, spot="odds", amount_cents=R25)).ok

    def deal(self, count: int, start: int = 0) -> list[str]:
        cards = DECK[start:start + count]
        for card in cards:
            self(CardSeen(card=card))
        return [str(c) for c in cards]

    def hand(self, seats: tuple[int, ...] = (1, 2), *, play: int | None = None) -> None:
        """A whole hand: wagers, deal, settle (``play`` puts a river Play 1x on that seat),
        then the payout: every spot keyed to what it must hold."""
        self.wagers(*seats)
        assert self(NoMoreBets()).ok
        self.deal(len(self.core.deal.targets(list(seats))))
        if play is not None:
            assert self(WagerKeyed(seat=play, spot="play", amount_cents=R25)).ok
        assert self(SettleHand()).ok, self.core.hand
        check = self.core.payout
        assert check is not None
        for (seat, spot), pay in list(check.spots.items()):
            assert self(WagerKeyed(seat=seat, spot=spot, amount_cents=pay.expected)).ok
        assert self.core.payout is None
        if self.core.decks.held:  # the test deals its deck in order: the table holds it
            assert self(ClearFault(role="deck", reason="the test's deck is dealt in order")).ok


def test_a_table_with_no_heat_shows_nothing_open() -> None:
    view = Table().view()
    assert (view["heat"], view["seats"], view["hand"], view["payout"]) == (None, [], None, None)
    assert (view["alerts"], view["scores"], view["recall"], view["settlement"]) == (
        [], [], [], None)
    assert view["roster"] is False and view["table"] == "t07"


def test_seats_show_entries_chips_hands_and_the_spots_as_read() -> None:
    table = Table()
    table.seat(1, 3)
    table.wagers(1)
    view = table.view()
    assert view["heat"] == {"heat_id": "Q1", "stage": "qualifying", "hands_per_entry": 10,
                            "markers_per_entry": 0}
    first, third = view["seats"]
    assert (first["seat"], first["entry_id"], third["seat"]) == (1, "E1", 3)
    assert first["chips"] == {"cents": 200_000, "rand": "R2,000.00"}
    assert (first["hands_played"], first["hands_total"], first["hands_left"]) == (0, 10, 10)
    assert first["seconds_since_last_hand"] is None
    assert first["spots"] == [
        {"spot": "ante", "label": "Ante", "cents": R25, "rand": "R25.00", "keyed": True},
        {"spot": "odds", "label": "Odds", "cents": R25, "rand": "R25.00", "keyed": True}]
    assert first["staked"] == money(5_000) and third["spots"] == []
    assert first["in_hand"] is False and first["locked"] is None


def test_the_hand_shows_its_cards_in_position_and_each_seats_decisions() -> None:
    table = Table()
    table.seat(1, 2)
    table.wagers(1, 2)
    assert table(NoMoreBets()).ok
    targets = table.core.deal.targets([1, 2])
    holes = 2 * 3
    dealt = table.deal(holes + 3)  # the hole cards and the flop: preflop decisions taken
    view = table.view()
    hand = view["hand"]
    assert hand["phase"] == table.core.hand.phase.value  # type: ignore[union-attr]
    assert [c["card"] for c in hand["cards"]] == dealt
    assert [c["target"] for c in hand["cards"]] == [str(t) for t in targets[:len(dealt)]]
    want_dealer = [d for d, t in zip(dealt, targets, strict=False) if t.kind == "dealer"]
    assert hand["dealer"] == want_dealer
    board = [d for d, t in zip(dealt, targets, strict=False) if t.kind == "board"]
    assert hand["board"] == board + [None] * (5 - len(board))
    for seat in view["seats"]:
        want = [d for d, t in zip(dealt, targets, strict=False)
                if t.kind == "seat" and t.seat == seat["seat"]]
        assert seat["hole"] == want and len(want) == 2
        assert seat["in_hand"] is True
        assert seat["decisions"] == [{"street": "preflop", "decision": "check",
                                      "text": "check preflop"}]
    assert hand["next_target"] == str(targets[len(dealt)])
    # rule 58: this table's wagers were keyed by hand (Table.wagers), so the hand is manual
    assert hand["manual"] is True
    assert table(CardSeen(card=DECK[20], source="manual", by="S1")).ok
    assert table.view()["hand"]["manual"] is True


def test_an_alert_says_what_to_do_and_a_resolution_clears_it() -> None:
    table = Table()
    table.seat(1)
    table.wagers(1)
    assert table(NoMoreBets()).ok
    table.deal(1)
    table(CardSeen(card=DECK[0]))  # the same card again
    view = table.view()
    [alert] = view["alerts"]
    assert alert["kind"] == "duplicate_card" and alert["resolvable"] is True
    assert alert["what_to_do"] == ALERT_HELP["duplicate_card"]
    assert alert["card"] == str(DECK[0])
    assert view["hand"]["paused"] is True
    assert view["hand"]["can"] == {"no_more_bets": False, "settle": False, "reveal": False}
    assert table(ResolveAlert(alert_id=alert["alert_id"], reason="set aside")).ok
    assert table.view()["alerts"] == []


def test_table_alerts_are_shown_while_they_belong_to_the_hand_in_play() -> None:
    table = Table()
    table.seat(1)
    old = {"kind": "unknown_chip", "message": "chip X on seat 1 ante is not in the registry",
           "source": "chips", "at": "2026-07-03T10:00:00.000Z", "seat": 1}
    lost = {"kind": "device_disconnected", "message": "SIM-SR48: cable pulled",
            "source": "device", "at": "2026-07-03T11:00:01.500Z"}
    hand_alert = {"kind": "duplicate_card", "message": "x", "source": "hand",
                  "at": "2026-07-03T11:00:31.000Z", "hand_id": "t07-000001", "alert_id": 1}
    shown = table.view(notices=[old, lost, hand_alert])["alerts"]
    assert [a["kind"] for a in shown] == ["unknown_chip", "device_disconnected"]
    assert shown[1]["what_to_do"].startswith("The SIM-SR48 reports a problem")
    assert shown[0]["resolvable"] is False
    table.wagers(1)
    assert table(NoMoreBets()).ok  # a hand opened after both: they are history now
    assert table.view(notices=[old, lost])["alerts"] == []
    payout = {"kind": "payout_overpaid", "message": "seat 1 ante holds R50.00",
              "source": "payout", "at": "2026-07-03T09:00:00.000Z", "hand_id": "t07-000001"}
    assert table.view(notices=[payout])["alerts"] == []  # no payout check is open


def test_a_device_fault_blocking_play_is_shown_with_how_to_clear_it() -> None:
    table = Table()
    table.seat(1)
    assert table(DeviceTrouble(device="SIM-SR48", kind="disconnected", detail="cable pulled",
                               role="rfid")).ok
    faults = [a for a in table.view()["alerts"] if a["kind"] == "device_fault"]
    assert [(a["role"], a["clearable"]) for a in faults] == [("rfid", True)]
    assert "a supervisor clears the fault" in faults[0]["what_to_do"]


def test_every_alert_kind_has_an_instruction() -> None:
    kinds = set(get_args(AlertKind)) | set(ALERT_KINDS) | {
        "unknown_chip", "other_chip_set", "issued_to_other_entry", "not_issued",
        "misplaced_marker", "payout_overpaid", "payout_underpaid", "loser_not_taken",
        "card_without_hand", "chip_count_discrepancy", "chip_count_missing", "deck_balance"}
    assert kinds <= set(ALERT_HELP)
    assert alert_help("device_stalled", "SIM-000001").startswith("The SIM-000001 reports")
    assert "supervisor" in alert_help("something_new")


def test_after_settlement_each_wager_says_what_to_pay_or_take_and_the_payout_is_checked(
        ) -> None:
    table = Table()
    table.seat(1, 2)
    table.wagers(1, 2)
    assert table(NoMoreBets()).ok
    table.deal(len(table.core.deal.targets([1, 2])))
    assert table(WagerKeyed(seat=1, spot="play", amount_cents=R25)).ok  # Play 1x at the river
    assert table(SettleHand()).ok
    view = table.view()
    assert view["hand"] is None and view["last_hand"]["status"] == "settled"
    settlement = view["settlement"]
    assert settlement["hand_id"] == "t07-000001"
    record = table.core.recent[0]["settlement"]
    for seat in settlement["seats"]:
        for wager in seat["wagers"]:
            stored = next(s for s in record["seats"] if s["seat"] == seat["seat"])
            result = stored["wagers"][wager["spot"]]
            assert (wager["result"], wager["reason"]) == (result["result"], result["reason"])
            net = result["net"]
            want = ("pay", net) if net > 0 else ("take", -net) if net < 0 else ("push", 0)
            assert (wager["action"], wager["amount"]["cents"]) == want
            assert wager["text"].startswith(want[0])
    folded = next(s for s in settlement["seats"] if s["seat"] == 2)
    assert {w["spot"]: w["action"] for w in folded["wagers"]} == {"ante": "take",
                                                                  "odds": "take"}
    payout = view["payout"]
    assert payout["complete"] is False
    spots = {(s["seat"], s["spot"]): s for s in payout["spots"]}
    assert spots[(2, "ante")]["expected"] == money(0)
    assert spots[(2, "ante")]["held"] == money(R25)
    assert spots[(2, "ante")]["what_to_do"].endswith("take the losing chips")
    for spot in spots.values():
        held, expected = spot["held"]["cents"], spot["expected"]["cents"]
        over = expected > 0 and held > expected  # a loser not taken is waiting, not "over"
        assert spot["state"] == ("paid" if held == expected else
                                 "over" if over else "waiting")
        assert spot["difference"] == money(held - expected)
    check = table.core.payout
    assert check is not None
    for (seat, spot), pay in list(check.spots.items()):
        assert table(WagerKeyed(seat=seat, spot=spot, amount_cents=pay.expected)).ok
    assert table.view()["payout"] is None


def test_scores_wait_for_the_participant_and_recall_keeps_the_last_ten_hands() -> None:
    table = Table()
    table.seat(1, 2)
    for _ in range(10):
        table.hand()
    view = table.view()
    assert view["seats"] == []  # both entries played their ten hands
    assert [s["entry_id"] for s in view["scores"]] == ["E1", "E2"]
    score = view["scores"][0]
    assert score["hands"] == 10 and score["status"] == "finished"
    assert score["score"] == money(200_000 - 10 * 2 * R25)
    assert score["disputed"] is False
    assert table(Dispute(entry_id="E2", note="I did not fold")).ok
    assert table.view()["scores"][1] | {} == {**table.view()["scores"][1], "disputed": True,
                                              "note": "I did not fold"}
    recall = view["recall"]
    assert [r["hand_id"] for r in recall] == [f"t07-{n:06d}" for n in range(10, 0, -1)]
    assert recall[0]["status"] == "settled"
    assert [s["net"] for s in recall[0]["seats"]] == [money(-5_000), money(-5_000)]
    assert len(recall[0]["board"]) == 5 and len(recall[0]["dealer"]) == 2


def test_time_since_the_last_hand_is_counted_from_now() -> None:
    table = Table()
    table.seat(1)
    table.hand((1,))
    ended = datetime.fromisoformat(table.core.last_hand_at["E1"])
    later = screen_view(table.core, now=ended + timedelta(seconds=95))
    [seat] = later["seats"]
    assert seat["hands_played"] == 1 and seat["hands_left"] == 9
    assert seat["seconds_since_last_hand"] == 95


def test_the_cards_stay_on_the_table_view_until_the_next_hand_opens() -> None:
    table = Table()
    table.seat(1, 2)
    table.wagers(1, 2)
    assert table(NoMoreBets()).ok
    targets = table.core.deal.targets([1, 2])
    dealt = table.deal(len(targets))
    live = table.view()["cards"]
    assert live["live"] is True and live["status"] == "river_decisions"
    assert table(SettleHand()).ok
    after = table.view()
    assert after["hand"] is None
    cards = after["cards"]
    assert (cards["hand_id"], cards["live"], cards["status"]) == ("t07-000001", False, "settled")
    assert cards["dealer"] == live["dealer"] == [
        d for d, t in zip(dealt, targets, strict=True) if t.kind == "dealer"]
    assert cards["board"] == live["board"] and None not in cards["board"]
    assert cards["burns"] == live["burns"]
    assert cards["holes"] == live["holes"] == {
        str(s): [d for d, t in zip(dealt, targets, strict=True)
                 if t.kind == "seat" and t.seat == s] for s in (1, 2)}
    # the next hand opens: its own (no) cards
    check = table.core.payout
    assert check is not None
    for (seat, spot), pay in list(check.spots.items()):
        assert table(WagerKeyed(seat=seat, spot=spot, amount_cents=pay.expected)).ok
    if table.core.decks.held:
        assert table(ClearFault(role="deck", reason="the test's deck is dealt in order")).ok
    table.wagers(1, 2)
    assert table(NoMoreBets()).ok
    opened = table.view()["cards"]
    assert (opened["hand_id"], opened["live"]) == ("t07-000002", True)
    assert opened["dealer"] == [] and opened["board"] == [None] * 5 and opened["holes"] == {}


def test_identical_alerts_collapse_into_one_line_with_a_count_and_every_id() -> None:
    table = Table()
    table.seat(1)
    table.wagers(1)
    assert table(NoMoreBets()).ok
    table.deal(1)
    table(CardSeen(card=DECK[0]))  # the same card again, twice: two identical alerts
    table(CardSeen(card=DECK[0]))
    ids = [a.alert_id for a in table.core.hand.open_alerts]  # type: ignore[union-attr]
    notice = {"kind": "unknown_chip", "message": "chip X on seat 1 ante is not in the registry",
              "source": "chips", "at": table.now.isoformat(), "seat": 1}
    alerts = table.view(notices=[notice, notice, dict(notice, seat=2)])["alerts"]
    kinds = [(a["kind"], a["count"]) for a in alerts]
    assert ids == [1, 2]  # both reads raised the same words
    [hand_alert] = [a for a in alerts if a["kind"] == "duplicate_card"]
    assert (hand_alert["count"], hand_alert["alert_ids"], hand_alert["alert_id"]) == (2, ids, 1)
    assert hand_alert["resolvable"] is True
    assert ("unknown_chip", 2) in kinds and ("unknown_chip", 1) in kinds  # seat 2 is its own
    [chips] = [a for a in alerts if a["kind"] == "unknown_chip" and a["seat"] == 1]
    assert chips["alert_ids"] == [] and chips["resolvable"] is False


def test_a_deck_hold_shown_as_a_fault_and_as_its_alert_is_one_line() -> None:
    from game.table.view import collapse_alerts

    fault = {"alert_id": None, "kind": "deck_suspect", "role": "deck", "message": "12 pairs",
             "seat": None, "source": "deck", "resolvable": False, "clearable": True}
    notice = {"alert_id": None, "kind": "deck_suspect", "message": "12 pairs", "seat": None,
              "source": "deck", "resolvable": False}
    [one] = collapse_alerts([fault, notice])
    assert (one["count"], one["clearable"], one["role"], one["alert_ids"]) == (
        2, True, "deck", [])
