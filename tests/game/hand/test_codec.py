"""Hand records: complete, JSON-ready, and re-checkable with `showdown settle`."""

from __future__ import annotations

import io
import json
import random

import pytest

from cli.main import main
from game.hand.deal import DEFAULT_DEAL
from game.hand.record import hand_record
from game.poker.cards import parse_cards
from game.table.session import TableSession
from game.tournament.entries import Entry, Stage
from game.wagers.settle import SeatWagers
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import VirtualPlayer

RULES = read_tournament(None).stage(Stage.FINAL).rules
PAYTABLES = read_paytables(None)


def new_table() -> TableSession:
    t = TableSession(table_id="T2", rules=RULES, paytables=PAYTABLES, deal=DEFAULT_DEAL)
    for seat in (1, 4):
        t.seat_entry(Entry.start(entry_id=f"E{seat}", rules=RULES), seat)
    return t


def test_record_of_a_settled_hand_rechecks_with_the_settle_tool(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    t = new_table()
    players = {s: VirtualPlayer(name=str(s), rng=random.Random(rng.random())) for s in (1, 4)}
    for n in range(6):
        hand = VirtualDealer(rng=random.Random(n)).play_hand(t, players, f"H{n}")
        record = hand_record(hand, entries={1: "E1", 4: "E4"}, table="T2")
        t.close_hand()
        assert json.loads(json.dumps(record)) == record  # plain JSON
        assert record["status"] == "settled"
        assert len(record["reads"]) == len(record["cards"]) == 2 * 2 + 2 + 5 + 2
        assert [s["entry_id"] for s in record["seats"]] == ["E1", "E4"]
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(record["settle"])))
        assert main(["settle"]) == 0
        rechecked = json.loads(capsys.readouterr().out)
        for seat, mine in zip(rechecked["seats"], record["settlement"]["seats"], strict=True):
            assert seat["net"] == mine["net"] == record["nets"][str(seat["seat"])]


def test_record_of_a_void_hand_keeps_what_happened() -> None:
    t = new_table()
    hand = t.open_hand("H1")
    hand.see_wagers(1, SeatWagers(ante=2500, odds=2500))
    hand.no_more_bets()
    for card in parse_cards("As Kd"):
        hand.read_card(card)
    hand.void("card exposed by the dealer", by="supervisor S. Naidoo")
    record = hand_record(hand, entries={1: "E1"}, table="T2")
    assert record["status"] == "void"
    assert record["void"]["reason"] == "card exposed by the dealer"
    assert record["nets"] == {"1": 0, "4": 0}
    assert "settle" not in record
    assert [r["card"] for r in record["reads"]] == ["As", "Kd"]


def test_open_hand_has_no_record() -> None:
    t = new_table()
    hand = t.open_hand("H1")
    with pytest.raises(ValueError, match="not settled or void"):
        hand_record(hand, entries={}, table="T2")
