"""The pure parts of a table rehearsal: the written faults and their schedule
(simulators.table_faults), scripted decks and seats (simulators.scripted_play) and the run
report's matching of alerts to faults (simulators.rehearsal_report)."""

from __future__ import annotations

import random

import pytest

from game.poker.cards import DECK, parse_cards
from game.wagers.house_limits import HouseRules
from simulators.decks import DeckSource
from simulators.players import VirtualPlayer
from simulators.rehearsal_report import FaultRecord, RunReport, TableMessage
from simulators.scripted_play import HandScript, ScriptedDeck, ScriptedPlayer, ScriptError
from simulators.table_faults import FAULTS, FaultSchedule, parse_fault

RULES = HouseRules()


def test_a_fault_is_read_at_a_hand_a_card_or_with_a_probability() -> None:
    at = parse_fault("shoe.stall@hand2.card5")
    assert (at.kind.name, at.hand, at.card, at.probability) == ("shoe.stall", 2, 5, None)
    assert parse_fault("shoe.unplug@hand3").card == 3  # a shoe fault: the 3rd card
    assert parse_fault("rfid.unplug@hand3").card is None
    assert parse_fault("shoe.corrupt=0.05").probability == 0.05
    assert str(parse_fault(" payout.overpay@hand1 ")) == "payout.overpay@hand1"


@pytest.mark.parametrize(("written", "why"), [
    ("shoe.melt@hand1", "unknown fault"), ("rfid.unplug", "either =P"),
    ("rfid.unplug=0.5@hand2", "either =P"), ("shoe.drop=1.5", "within 0"),
    ("shoe.drop=0", "within 0"), ("shoe.drop=x", "not a probability"),
    ("deck.unshuffled@hand0", "from 1"), ("rfid.stall@hand1.card2", "only shoe faults"),
    ("shoe.jam@hand1.card0", "from 1"), ("unplug", "DEVICE.KIND"),
])
def test_a_wrong_fault_says_what_is_wrong(written: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as caught:
        parse_fault(written)
    assert written.strip() in str(caught.value)


def test_probabilities_strike_by_the_seed_and_line_faults_hold_all_run() -> None:
    def strikes(seed: int) -> list[list[str]]:
        schedule = FaultSchedule.parse(["rfid.unplug=0.5", "shoe.corrupt=0.1",
                                        "deck.unshuffled@hand2"], seed=seed)
        assert [str(s) for s in schedule.line_faults()] == ["shoe.corrupt=0.1"]
        return [[str(s) for s in schedule.for_hand(h)] for h in range(1, 21)]

    first = strikes(3)
    assert first == strikes(3) and first != strikes(4)
    assert "deck.unshuffled@hand2" in first[1]
    unplugs = sum("rfid.unplug@hand" in " ".join(h) for h in first)
    assert 0 < unplugs < 20
    assert not any("shoe.corrupt" in " ".join(h) for h in first)


def test_every_fault_names_the_alert_it_raises_or_says_it_raises_none() -> None:
    silent = [name for name, kind in FAULTS.items() if not kind.alerts]
    assert silent == ["shoe.drop"]  # the protocol heals it without an alert


def test_a_scripted_deck_deals_its_cards_first_then_a_seeded_shuffle() -> None:
    listed = parse_cards("Ah 7c As 2d")
    deck = ScriptedDeck([listed], rng=random.Random(1),
                        after=DeckSource("shuffled", rng=random.Random(2)))
    first = deck.next_deck()
    assert first[:4] == list(listed) and sorted(first) == sorted(DECK)
    second = deck.next_deck()
    assert sorted(second) == sorted(DECK) and second[:4] != list(listed)


def _seat(*script: HandScript) -> ScriptedPlayer:
    return ScriptedPlayer(seat=1, script=script,
                          after=VirtualPlayer(name="p", rng=random.Random(1)))


def test_a_scripted_seat_wagers_and_plays_as_written_then_as_its_style() -> None:
    seat = _seat(HandScript(ante_cents=5_000, side_bets={"trips_plus": 2_500},
                            decision="flop"),
                 HandScript(ante_cents=2_500, decision="fold"))
    hole, board = parse_cards("2c 7d"), parse_cards("Kh Qs 9d")
    wagers = seat.wagers(seat=1, balance_cents=200_000, markers_left=0, rules=RULES)
    assert (wagers.ante, wagers.odds, wagers.trips_plus) == (5_000, 5_000, 2_500)
    play = {street: seat.play(seat=1, street=street, hole=hole, board=board, wagers=wagers,
                              balance_cents=200_000) for street in ("preflop", "flop")}
    assert play == {"preflop": 0, "flop": 10_000}  # checks preflop, plays 2x on the flop
    wagers = seat.wagers(seat=1, balance_cents=200_000, markers_left=0, rules=RULES)
    assert seat.play(seat=1, street="river", hole=hole, board=board, wagers=wagers,
                     balance_cents=200_000) == 0  # folds
    after = seat.wagers(seat=1, balance_cents=200_000, markers_left=0, rules=RULES)
    assert after.ante % RULES.min_ante_cents == 0 and after.ante > 0  # its style now


def test_a_scripted_wager_the_house_refuses_names_seat_and_hand() -> None:
    seat = _seat(HandScript(ante_cents=1_000))
    with pytest.raises(ScriptError, match="seat 1 hand 1"):
        seat.wagers(seat=1, balance_cents=200_000, markers_left=0, rules=RULES)
    broke = _seat(HandScript(ante_cents=50_000, decision="preflop"))
    wagers = broke.wagers(seat=1, balance_cents=160_000, markers_left=0, rules=RULES)
    with pytest.raises(ScriptError, match="preflop Play cannot be made"):
        broke.play(seat=1, street="preflop", hole=(), board=(), wagers=wagers,
                   balance_cents=160_000)


def test_the_report_matches_alerts_to_faults_and_keeps_the_rest_unexpected() -> None:
    report = RunReport(seed=1, deck="random")
    unplug = FaultRecord(spec=parse_fault("shoe.unplug@hand1"), hand=1, what="", from_seq=10,
                         to_seq=20)
    chip = FaultRecord(spec=parse_fault("rfid.unknown_chip@hand2"), hand=2, what="",
                       from_seq=20, to_seq=30)
    report.faults = [unplug, chip]
    report.match([
        TableMessage(9, "alert", "device_disconnected", "before it struck"),
        TableMessage(12, "alert", "device_disconnected", "the shoe"),
        TableMessage(14, "device", "device:reconnected", "back"),
        TableMessage(25, "alert", "chip_pooling", "not explained"),
    ])
    assert [a.seq for a in unplug.alerts] == [12] and unplug.problem is None
    assert chip.problem == "the table raised no unknown_chip for it"
    assert report.unexpected == ["alert device_disconnected: before it struck",
                                 "alert chip_pooling: not explained"]
    assert len(report.problems) == 3
