"""The line-by-line comparison of a recorded hand with its replay (pure: no journal)."""

from __future__ import annotations

import copy
from typing import Any

from wire.dispute_replay import Message, relevant
from wire.replay_lines import compare, describe


def hand(net: int = 7_500) -> dict[str, Any]:
    """A settled hand record: seat 2 wins its Ante and a Trips Plus with a marker."""
    return {
        "hand_id": "t01-000004", "status": "settled", "dealer": ["Kd", "2c"],
        "board": ["Ah", "Ad", "9c", "4s", "2h"], "burns": ["5s", "Jd"],
        "reads": [{"card": "Ac"}], "corrections": [], "alerts": [], "resolutions": [],
        "seats": [{"seat": 2, "entry_id": "F-1", "hole": ["Ac", "As"],
                   "wagers": {"ante": 2_500, "odds": 2_500, "trips_plus": 0,
                              "markers": ["trips_plus"]},
                   "decision": {"play": 3, "street": "preflop", "amount": 7_500}}],
        "settlement": {"dealer": {"hand": "Pair of aces", "opens": True}, "seats": [
            {"seat": 2, "hand": "Four of a kind, aces", "category": "four_of_a_kind",
             "outcome": "win", "net": net, "markers_used": ["trips_plus"],
             "wagers": {"ante": {"result": "win", "stake": 2_500, "net": 2_500, "line": None,
                                 "marker": False},
                        "trips_plus": {"result": "win", "stake": 0, "net": 1_500_000,
                                       "line": "four_of_a_kind", "marker": True}}}]},
        "nets": {"2": net}, "settled_at": "2026-07-03T11:00:00Z",
    }


def test_equal_hands_match_on_every_line() -> None:
    lines = compare([Message(type="hand.settled", body=hand())],
                    [Message(type="hand.settled", body=hand())])
    assert lines and all(g.match for g in lines)
    items = {(g.subject, g.item) for g in lines}
    assert {("dealer", "cards"), ("board", "cards"), ("seat 2", "ante"),
            ("seat 2", "trips_plus"), ("seat 2", "markers used"), ("seat 2", "net"),
            ("hand", "settled_at")} <= items


def test_a_different_amount_is_named_on_its_own_line() -> None:
    replayed = hand()
    bet = replayed["settlement"]["seats"][0]["wagers"]["trips_plus"]
    bet["net"] = 1_250_000
    bad = [g for g in compare([Message(type="hand.settled", body=hand())],
                              [Message(type="hand.settled", body=replayed)]) if not g.match]
    assert [(g.subject, g.item) for g in bad] == [("seat 2", "trips_plus"),
                                                  ("seat 2", "trips_plus paid")]
    assert describe(bad[0].item, bad[0].recorded) == (
        "win +R15,000.00 on R0.00 + marker (four_of_a_kind)")


def test_a_hand_replayed_void_pairs_with_the_settled_record() -> None:
    void = copy.deepcopy(hand())
    void.update(status="void", void={"reason": "misdeal", "by": "S1"})
    lines = compare([Message(type="hand.settled", body=hand())],
                    [Message(type="hand.voided", body=void)])
    status = next(g for g in lines if g.item == "status")
    assert (status.recorded, status.replayed, status.match) == ("settled", "void", False)
    assert any(g.item == "void" and g.recorded is None for g in lines)


def test_a_message_only_one_side_has_is_a_difference() -> None:
    check = Message(type="payout.checked", body={"hand_id": "t01-000004",
                                                 "outcome": "verified"})
    lines = compare([check], [])
    assert lines and not any(g.match for g in lines)
    assert {g.replayed for g in lines} == {None}


def test_describe_amounts_decisions_and_lists() -> None:
    assert describe("net", -27_500) == "-R275.00"
    assert describe("decision", {"play": 2, "street": "flop", "amount": 10_000}) == (
        "play 2x flop (R100.00)")
    assert describe("decision", {"fold": True}) == "fold"
    assert describe("cards", ["Ah", "Kd"]) == "Ah Kd"
    assert describe("wagers", {"ante": 2_500}) == "ante R25.00"
    assert describe("opens", True) == "yes" and describe("x", None) == "-"


def test_relevant_keeps_the_bundles_hands_entries_and_heat() -> None:
    manifest = {"hand_ids": ["h1"], "entry_ids": ["E1"], "selector": "hand", "id": "h1"}
    messages = [Message(type="hand.settled", body={"hand_id": "h1"}),
                Message(type="hand.settled", body={"hand_id": "h2"}),
                Message(type="score.recorded", body={"entry_id": "E1"}),
                Message(type="score.recorded", body={"entry_id": "E2"}),
                Message(type="heat.opened", body={"heat_id": "Q1"})]
    assert [m.body for m in relevant(messages, manifest=manifest)] == [
        {"hand_id": "h1"}, {"entry_id": "E1"}]
    heat = {**manifest, "selector": "heat", "id": "Q1"}
    assert {"heat_id": "Q1"} in [m.body for m in relevant(messages, manifest=heat)]


def test_each_bet_says_what_its_spot_had_to_hold_and_what_the_readers_saw() -> None:
    check = {"hand_id": "t01-000004", "outcome": "overridden",
             "mismatches": [{"seat": 2, "spot": "trips_plus", "expected": 1_500_000,
                             "held": 1_000_000}],
             "unverifiable": [{"seat": 2, "spot": "ante", "expected": 5_000, "held": 5_000}]}
    recorded = [Message(type="hand.settled", body=hand()),
                Message(type="payout.checked", body=check)]
    lines = {(g.subject, g.item): g for g in compare(recorded, [
        Message(type="hand.settled", body=hand())])}
    trips = lines[("seat 2", "trips_plus paid")]
    assert describe(trips.item, trips.recorded) == (
        "spot to hold R15,000.00: not paid (overridden), held R10,000.00")
    assert describe(trips.item, trips.replayed) == (
        "spot to hold R15,000.00: no payout check of the chip readers")
    ante = lines[("seat 2", "ante paid")]
    assert describe(ante.item, ante.recorded) == "spot to hold R50.00: keyed by hand, not read"
    assert not trips.match and not lines[("payout.checked", "outcome")].match
