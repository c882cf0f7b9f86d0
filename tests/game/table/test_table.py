"""The table session: seating entries between hands, applying settlements, ending entries."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from game.errors import IllegalAction
from game.hand.deal import DEFAULT_DEAL
from game.poker.cards import parse_cards
from game.table.session import TableSession
from game.tournament.entries import Entry, EntryStatus, Stage
from game.wagers.settle import SeatWagers
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import VirtualPlayer

SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)
QUAL = SETTINGS.stage(Stage.QUALIFYING).rules
FINAL = SETTINGS.stage(Stage.FINAL).rules
R = 100


def table(rules=QUAL) -> TableSession:  # type: ignore[no-untyped-def]
    return TableSession(table_id="T9", rules=rules, paytables=PAYTABLES, deal=DEFAULT_DEAL)


def play_simple_hand(t: TableSession, hand_id: str, cards: str, ante: int = 25 * R) -> None:
    """Every seated entry bets Ante = Odds = `ante`, checks, and plays 1x at the river."""
    hand = t.open_hand(hand_id)
    for seat in t.seats:
        hand.see_wagers(seat, SeatWagers(ante=ante, odds=ante))
    hand.no_more_bets()
    for card in parse_cards(cards):
        hand.read_card(card)
    for seat in hand.seats_in_hand:
        hand.see_wagers(seat, SeatWagers(ante=ante, odds=ante, play=ante))
    hand.settle()


# one seat: holes seat, dealer, seat, dealer; burn; flop; burn; turn, river.
# Seat As Ad vs dealer 7c 2d, board Ks 9h 4c / 3d 8s: seat wins with aces, dealer does not open:
# Ante push, Odds push (pair), Play +1x.
ONE_SEAT_WIN = "As 7c Ad 2d 5h Ks 9h 4c 6h 3d 8s"


def test_a_seated_entry_plays_and_its_ledger_moves() -> None:
    t = table()
    t.seat_entry(Entry.start(entry_id="E1", rules=QUAL), 2)
    play_simple_hand(t, "T9-1", ONE_SEAT_WIN)
    assert t.close_hand() == ()
    entry = t.seats[2]
    assert entry.balance_cents == 2_000 * R + 25 * R
    assert entry.hands_played == 1


def test_entries_end_after_their_stage_hands_and_leave_the_seat() -> None:
    t = table()
    t.seat_entry(Entry.start(entry_id="E1", rules=QUAL), 1)
    for n in range(QUAL.hands):
        play_simple_hand(t, f"T9-{n}", ONE_SEAT_WIN)
        ended = t.close_hand()
    assert len(ended) == 1
    assert ended[0].entry_id == "E1"
    assert ended[0].status is EntryStatus.FINISHED
    assert ended[0].score_cents == 2_000 * R + QUAL.hands * 25 * R
    assert ended[0].hands_played == 10
    assert t.seats == {}
    assert t.ended == ended


def test_a_void_hand_counts_for_nobody() -> None:
    t = table()
    t.seat_entry(Entry.start(entry_id="E1", rules=QUAL), 1)
    hand = t.open_hand("T9-1")
    hand.see_wagers(1, SeatWagers(ante=25 * R, odds=25 * R))
    hand.void("misdeal", by="supervisor")
    assert t.close_hand() == ()
    assert t.seats[1].hands_played == 0
    assert t.seats[1].balance_cents == 2_000 * R


def test_seating_rules() -> None:
    t = table()
    e1 = Entry.start(entry_id="E1", rules=QUAL)
    t.seat_entry(e1, 1)
    with pytest.raises(IllegalAction, match="taken"):
        t.seat_entry(Entry.start(entry_id="E2", rules=QUAL), 1)
    with pytest.raises(IllegalAction, match="already seated"):
        t.seat_entry(e1, 2)
    with pytest.raises(IllegalAction, match=r"1\.\.6"):
        t.seat_entry(Entry.start(entry_id="E3", rules=QUAL), 7)
    with pytest.raises(IllegalAction, match="final"):
        t.seat_entry(Entry.start(entry_id="E4", rules=FINAL), 3)
    t.open_hand("T9-1")
    with pytest.raises(IllegalAction, match="between hands"):
        t.seat_entry(Entry.start(entry_id="E5", rules=QUAL), 4)
    with pytest.raises(IllegalAction, match="still open"):
        t.open_hand("T9-2")
    with pytest.raises(IllegalAction, match="not settled or void"):
        t.close_hand()


def test_an_entry_can_join_between_any_two_hands() -> None:
    t = table()
    t.seat_entry(Entry.start(entry_id="E1", rules=QUAL), 1)
    play_simple_hand(t, "T9-1", ONE_SEAT_WIN)
    t.close_hand()
    t.seat_entry(Entry.start(entry_id="E2", rules=QUAL), 3)
    # seats 1 and 3: holes 1, 3, dealer, 1, 3, dealer
    play_simple_hand(t, "T9-2", "As Kc 7c Ad Kd 2d 5h Qs 9h 4c 6h 3d 8s")
    t.close_hand()
    assert t.seats[1].hands_played == 2
    assert t.seats[3].hands_played == 1


def test_virtual_heats_conserve_chips_and_score_every_entry() -> None:
    for seed in range(4):
        rng = random.Random(seed)
        t = table(FINAL)
        players = {}
        for seat in (1, 2, 4, 6):
            t.seat_entry(Entry.start(entry_id=f"E{seat}", rules=FINAL), seat)
            players[seat] = VirtualPlayer(name=str(seat), rng=random.Random(rng.random()))
        dealer = VirtualDealer(rng=random.Random(seed))
        nets: dict[int, int] = dict.fromkeys(players, 0)
        n = 0
        while t.seats:
            n += 1
            hand = dealer.play_hand(t, players, f"H{n}")
            assert not hand.open_alerts
            for seat, net in hand.nets_cents().items():
                nets[seat] += net
            t.close_hand()
        scores = {e.seat: e for e in t.ended}
        assert set(scores) == set(players)
        for seat, e in scores.items():
            assert e.score_cents == FINAL.starting_chips_cents + nets[seat]
            assert e.score_cents >= 0
            assert e.hands_played == FINAL.hands or e.status is EntryStatus.ENDED_EARLY


def test_virtual_players_only_make_legal_wagers() -> None:
    rng = random.Random(11)
    player = VirtualPlayer(name="p", rng=rng)
    for balance in (0, 50 * R, 75 * R, 100 * R, 300 * R, 2_000 * R):
        for _ in range(50):
            w = player.wagers(seat=1, balance_cents=balance, markers_left=3, rules=FINAL.house)
            if balance < 75 * R:
                assert w == SeatWagers()
            else:
                assert w.ante == w.odds >= 25 * R
                assert w.staked_cents + w.ante <= balance
                assert len(w.markers) <= 3
                assert replace(w, markers=frozenset()).staked_cents == w.staked_cents
