"""The hand state machine driven as the table drives it: RFID snapshots, shoe reads, console.

Expected nets are worked by hand from rules.md §5-§7 and §10 (units of the R25 Ante), not by
running the code. The shoe orders below are written out by hand for the default sequence
(rules.md §0 item 5): pass 1 seats then dealer, pass 2 the same, burn, flop, burn, turn, river.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TypeVar

import pytest

from game.cards import parse_card, parse_cards
from game.deal import DEFAULT_DEAL, UTH_DEAL, DealSequence, Target
from game.errors import DuplicateCard, IllegalAction, InvalidCard, InvalidWager
from game.evaluate import Category
from game.events import (
    AlertRaised,
    AlertResolved,
    BetsClosed,
    CardCorrected,
    CardDealt,
    CardRead,
    Event,
    HandOpened,
    HandSettled,
    HandVoided,
    PlayMade,
    SeatChecked,
    SeatFolded,
    SeatStart,
    SettleRequested,
    WagersLocked,
    WagersSeen,
)
from game.hand import TRANSITIONS, Hand, Phase
from game.house import HouseRules
from game.paytables import CategoryTable, Pay, Paytables, PocketLine, Sweet16Table
from game.settle import SeatWagers

U = 2_500  # R25: one unit (the minimum Ante)
START = 200_000  # R2,000

# ---- helpers shared with the other hand test files ----------------------------------------


def spec_paytables() -> Paytables:
    """rules.md §0: Odds §6.1/§6.2, Trips Plus 100-40-30-8-7-4-3, Pocket Bonus table A, Sweet 16."""
    c = Category
    pairs = frozenset(r * 2 for r in "23456789TJQK")
    return Paytables(
        trips_plus=CategoryTable("trips_plus", {
            c.ROYAL_FLUSH: Pay(100), c.STRAIGHT_FLUSH: Pay(40), c.FOUR_OF_A_KIND: Pay(30),
            c.FULL_HOUSE: Pay(8), c.FLUSH: Pay(7), c.STRAIGHT: Pay(4), c.THREE_OF_A_KIND: Pay(3),
        }),
        odds_win=CategoryTable("odds_win", {
            c.ROYAL_FLUSH: Pay(500), c.STRAIGHT_FLUSH: Pay(50), c.FOUR_OF_A_KIND: Pay(10),
            c.FULL_HOUSE: Pay(3), c.FLUSH: Pay(3, 2), c.STRAIGHT: Pay(1),
        }),
        odds_lose=CategoryTable("odds_lose", {
            c.STRAIGHT_FLUSH: Pay(500), c.FOUR_OF_A_KIND: Pay(25), c.FULL_HOUSE: Pay(6),
            c.FLUSH: Pay(5), c.STRAIGHT: Pay(4),
        }),
        pocket_bonus=(
            PocketLine("A-A", Pay(30), frozenset({"AA"})),
            PocketLine("A-K/Q/J suited", Pay(20), frozenset({"AKs", "AQs", "AJs"})),
            PocketLine("A-K/Q/J offsuit", Pay(10), frozenset({"AKo", "AQo", "AJo"})),
            PocketLine("other pair", Pay(5), pairs),
        ),
        sweet16=Sweet16Table({
            "sweet_16": Pay(160), "suited_16": Pay(16),
            "same_colour_16": Pay(12), "mixed_colour_16": Pay(6),
        }),
        source="rules.md §0",
    )


PAYTABLES = spec_paytables()


def new_hand(
    seats: Iterable[int],
    *,
    balance: int = START,
    markers_left: int = 0,
    rules: HouseRules | None = None,
    deal: DealSequence = DEFAULT_DEAL,
    hand_id: str = "T1-H1",
) -> Hand:
    """A hand at a table with these seats occupied, each with the same balance."""
    return Hand(
        hand_id=hand_id,
        seats=[SeatStart(seat=s, balance_cents=balance, markers_left=markers_left) for s in seats],
        rules=rules or HouseRules(),
        paytables=PAYTABLES,
        deal=deal,
    )


def bet(ante: int = U, *, play: int = 0, trips: int = 0, pocket: int = 0, sweet: int = 0,
        odds: int | None = None, markers: Iterable[str] = ()) -> SeatWagers:
    """A snapshot of one seat's spots (Odds = Ante unless given)."""
    return SeatWagers(ante=ante, odds=ante if odds is None else odds, play=play, trips_plus=trips,
                      pocket_bonus=pocket, sweet16=sweet, markers=frozenset(markers))


def all_sides(ante: int = U, play: int = 0) -> SeatWagers:
    return bet(ante, play=play, trips=ante, pocket=ante, sweet=ante)


def read(hand: Hand, cards: str) -> None:
    for card in parse_cards(cards):
        hand.read_card(card)


E = TypeVar("E", bound=Event)


def of(hand: Hand, kind: type[E]) -> list[E]:
    """The hand's events of one type, in order."""
    return [e for e in hand.events if isinstance(e, kind)]


def alerts(hand: Hand) -> list[AlertRaised]:
    return [e for e in hand.events if isinstance(e, AlertRaised)]


def set_play(hand: Hand, seat: int, amount: int) -> None:
    locked = hand.wagers(seat)
    assert locked is not None
    hand.see_wagers(seat, dataclasses.replace(locked, play=amount))


# The §10 examples 1 and 2 board: 3h 8c 4h 8h 4s, dealer Kc 4c (4s full of 8s, opens).
# Seat A Th 2h (flush, bad beat), B 8d 8s (four 8s), C 2c 7d (two pair, folds),
# D As Ks (two pair, A kicker), E 9s 6s (two pair), F 5h 6h (8-high flush, bad beat).


def test_six_seats_end_to_end() -> None:
    hand = new_hand(range(1, 7))
    hand.see_wagers(1, all_sides())  # A: Play 1x at the river
    hand.see_wagers(2, all_sides())  # B: Play 3x preflop
    hand.see_wagers(3, all_sides())  # C: checks twice, folds
    hand.see_wagers(4, all_sides())  # D: Play 3x preflop
    hand.see_wagers(5, bet())  # E: Play 2x on the flop, no side bets
    hand.see_wagers(6, bet(trips=U))  # F: Play 1x at the river, Trips Plus only
    assert hand.phase is Phase.WAGERS_OPEN
    hand.no_more_bets()
    assert hand.phase is Phase.BETS_CLOSED
    assert hand.seats_in_hand == (1, 2, 3, 4, 5, 6)
    read(hand, "Th 8d 2c As 9s 5h")
    assert hand.phase is Phase.HOLE_CARDS
    read(hand, "Kc 2h 8s 7d Ks 6s 6h 4c")
    assert hand.phase is Phase.PREFLOP_DECISIONS
    set_play(hand, 2, 3 * U)
    set_play(hand, 4, 3 * U)
    read(hand, "Qd")  # burn: no decision yet
    assert hand.phase is Phase.PREFLOP_DECISIONS
    read(hand, "3h")
    assert hand.phase is Phase.FLOP
    read(hand, "8c 4h")
    assert hand.phase is Phase.FLOP_DECISIONS
    set_play(hand, 5, 2 * U)
    read(hand, "Jc 8h")
    assert hand.phase is Phase.TURN_RIVER
    read(hand, "4s")
    assert hand.phase is Phase.RIVER_DECISIONS
    set_play(hand, 1, U)
    set_play(hand, 6, U)
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert not alerts(hand)
    plays = {(e.seat, e.street, e.amount_cents) for e in of(hand, PlayMade)}
    assert plays == {(2, "preflop", 3 * U), (4, "preflop", 3 * U), (5, "flop", 2 * U),
                     (1, "river", U), (6, "river", U)}
    assert [(e.seat, e.street) for e in of(hand, SeatChecked)] == [
        (1, "preflop"), (3, "preflop"), (5, "preflop"), (6, "preflop"),
        (1, "flop"), (3, "flop"), (6, "flop"),
    ]
    assert [e.seat for e in of(hand, SeatFolded)] == [3]
    # §10 ex. 1: -1 -1 +5 +7 -1 -1 = +8; ex. 2: +1 +3 +10 +30 +5 +6 = +55; C folds: -1 -1 and
    # three losing side bets = -5; D: -1 -3 -1 (two pair) -1 (trips) +20 (AKs) -1 (21) = +13;
    # E: -1 -2 -1 = -4; F: -1 -1 +5 (bad-beat flush) +7 (Trips Plus flush) = +10.
    assert hand.nets_cents() == {1: 8 * U, 2: 55 * U, 3: -5 * U, 4: 13 * U, 5: -4 * U, 6: 10 * U}
    settled = hand.events[-1]
    assert isinstance(settled, HandSettled)
    assert settled.settlement.dealer_opens
    assert settled.settlement.dealer_hand.category is Category.FULL_HOUSE


def test_three_active_seats_are_dealt_in_seat_order() -> None:
    hand = new_hand([1, 2, 4, 5, 6])  # seats 1 and 5 place nothing: not in the hand
    hand.see_wagers(2, all_sides())
    hand.see_wagers(4, all_sides())
    hand.see_wagers(6, all_sides())
    hand.no_more_bets()
    assert hand.seats_in_hand == (2, 4, 6)
    read(hand, "8d 2c Th Kc 8s 7d 2h 4c")
    assert dict(hand.cards())[Target(kind="seat", index=1, seat=4)] == parse_card("7d")
    set_play(hand, 2, 3 * U)
    read(hand, "Qd 3h 8c 4h Jc 8h 4s")
    set_play(hand, 6, U)
    hand.settle()
    # Same board as above: 2 is §10 example 2 (+55), 4 folds (-5), 6 is example 1 (+8).
    assert hand.nets_cents() == {2: 55 * U, 4: -5 * U, 6: 8 * U}


def test_one_seat_dealer_does_not_open() -> None:
    # §10 example 3: board Ad Kd 9c 4h 2c, dealer Td 3c (no pair), seat Tc 7s Play 1x:
    # Ante push, Play +1, Odds push (below a straight), three losing side bets: -2 units.
    hand = new_hand([3])
    hand.see_wagers(3, all_sides())
    hand.no_more_bets()
    read(hand, "Tc Td 7s 3c 5c Ad Kd 9c 6c 4h 2c")
    set_play(hand, 3, U)
    hand.settle()
    assert hand.nets_cents() == {3: -2 * U}
    settled = hand.events[-1]
    assert isinstance(settled, HandSettled) and not settled.settlement.dealer_opens


def test_play_two_times_on_the_flop() -> None:
    # §10 example 5 board 5s 6d 7c 8h 9s, dealer Tc 2d; seat Kh Kd plays 2x on the flop:
    # Ante -1, Play -2, Odds +4 (bad-beat straight), Trips +4, Pocket +5 (KK), Sweet 16 -1 (20).
    hand = new_hand([1])
    hand.see_wagers(1, all_sides())
    hand.no_more_bets()
    read(hand, "Kh Tc Kd 2d 2s 5s 6d 7c")
    assert hand.phase is Phase.FLOP_DECISIONS
    assert [(e.seat, e.street) for e in of(hand, SeatChecked)] == [(1, "preflop")]
    set_play(hand, 1, 2 * U)
    read(hand, "3s 8h 9s")
    assert hand.wagers(1) == all_sides(play=2 * U)
    hand.settle()
    assert hand.nets_cents() == {1: 9 * U}
    assert of(hand, SeatFolded) == []


def test_events_in_order_and_inputs_recorded_with_their_time() -> None:
    at = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    hand = new_hand([1])
    hand.see_wagers(1, bet(), at=at)
    hand.no_more_bets(at=at)
    hand.read_card(parse_card("Ah"), source="manual", at=at)
    assert [type(e) for e in hand.events] == [
        HandOpened, WagersSeen, BetsClosed, WagersLocked, CardRead, CardDealt,
    ]
    assert hand.events[4] == CardRead(card=parse_card("Ah"), source="manual", at=at)
    assert hand.events[5] == CardDealt(
        position=0, target=Target(kind="seat", index=0, seat=1), card=parse_card("Ah")
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        hand.events[5].position = 3  # type: ignore[misc]


# ---- no more bets -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wagers", "balance", "field"),
    [
        (bet(odds=2 * U), START, "odds"),  # Odds must equal Ante (rules.md §3)
        (bet(trips=30_000), START, "trips_plus"),  # side bet above R250 (§0 item 8)
        (bet(1_000), START, "ante"),  # not a multiple of R25 / below the minimum
        (bet(ante=0, odds=0, trips=U), START, "trips_plus"),  # side bet without the main bets
        (bet(20_000, trips=U), 60_000, "total"),  # 3 x R200 + R25 > R600 (§0 item 9)
        (bet(markers=["sweet16"]), START, "markers"),  # no markers outside the Final
    ],
)
def test_illegal_opening_wagers_alert_naming_seat_and_field(
    wagers: SeatWagers, balance: int, field: str
) -> None:
    hand = new_hand([1, 2], balance=balance)
    hand.see_wagers(1, bet())
    hand.see_wagers(2, wagers)
    hand.no_more_bets()
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.field) == ("wager_invalid", 2, field)
    assert hand.paused and hand.phase is Phase.BETS_CLOSED
    assert hand.seats_in_hand == (1,)
    # A card now is held: the seats in the hand are not final.
    hand.read_card(parse_card("2c"))
    assert alerts(hand)[-1].kind == "card_held"
    assert hand.cards() == ()
    # Not fixed yet: resolving is refused with the reason.
    with pytest.raises(InvalidWager):
        hand.resolve_alert(alert.alert_id, "dealer asked the player")
    hand.see_wagers(2, bet())
    hand.resolve_alert(alert.alert_id, "player corrected the wager")
    assert hand.events[-1] == WagersLocked(seat=2, wagers=bet())
    hand.resolve_alert(alerts(hand)[-1].alert_id, "2c set aside; reshuffled into the next deck")
    assert not hand.paused
    assert hand.seats_in_hand == (1, 2)


def test_a_seat_whose_chips_are_removed_leaves_the_hand() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    hand.see_wagers(2, bet(odds=U + U))
    hand.no_more_bets()
    hand.see_wagers(2, SeatWagers())
    hand.resolve_alert(1, "player took the wager back")
    assert hand.seats_in_hand == (1,)
    read(hand, "2c 3c 4c 5c")
    assert hand.phase is Phase.PREFLOP_DECISIONS


def test_no_more_bets_refusals() -> None:
    hand = new_hand([1])
    with pytest.raises(IllegalAction, match="no seat has a wager"):
        hand.no_more_bets()
    assert not hand.can_no_more_bets()
    hand.see_wagers(1, bet())
    assert hand.can_no_more_bets()
    hand.no_more_bets()
    with pytest.raises(IllegalAction, match="not allowed in phase bets_closed"):
        hand.no_more_bets()


def test_final_markers_are_locked_and_used() -> None:
    # Final: a R500 marker on Trips Plus with R25 in chips; §10 example 1's seat (Th 2h flush)
    # wins Trips Plus 7 to 1 on the full R525; Ante -1, Play -1, Odds +5 (bad-beat flush).
    rules = HouseRules(markers_per_entry=3)
    hand = new_hand([1], markers_left=3, rules=rules)
    hand.see_wagers(1, bet(trips=U, markers=["trips_plus"]))
    hand.no_more_bets()
    read(hand, "Th Kc 2h 4c Qd 3h 8c 4h Jc 8h 4s")
    set_play(hand, 1, U)
    hand.settle()
    assert hand.nets_cents() == {1: 3 * U + 7 * (U + 50_000)}
    settlement = hand.settlement
    assert settlement is not None
    assert settlement.seats[0].markers_used == frozenset({"trips_plus"})


# ---- wager changes after no more bets -------------------------------------------------------


def test_wager_change_after_no_more_bets_pauses_until_restored() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, all_sides())
    hand.see_wagers(2, bet())
    hand.no_more_bets()
    read(hand, "2c 3c")
    hand.see_wagers(1, bet(2 * U, odds=U, trips=U, pocket=U, sweet=U))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.field) == ("wager_changed", 1, "ante")
    assert "Ante R25.00 -> R50.00" in alert.message
    # Further snapshots of the same seat do not pile up alerts.
    hand.see_wagers(1, bet(3 * U, odds=U, trips=U, pocket=U, sweet=U))
    assert len(alerts(hand)) == 1
    with pytest.raises(IllegalAction, match="still differ"):
        hand.resolve_alert(alert.alert_id, "chips put back")
    hand.see_wagers(1, all_sides())
    assert hand.paused  # a correct snapshot alone does not resume: the dealer confirms
    hand.resolve_alert(alert.alert_id, "chips put back")
    assert not hand.paused
    read(hand, "4c 5c 6c 7c")
    assert hand.phase is Phase.PREFLOP_DECISIONS


def test_side_bet_removed_and_marker_moved_are_changes() -> None:
    rules = HouseRules(markers_per_entry=3)
    hand = new_hand([1], markers_left=3, rules=rules)
    hand.see_wagers(1, bet(trips=U, markers=["trips_plus"]))
    hand.no_more_bets()
    hand.see_wagers(1, bet(trips=U, markers=["sweet16"]))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.field) == ("wager_changed", "markers")


def test_late_wager_on_a_seat_not_in_the_hand() -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    hand.see_wagers(2, bet())
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat) == ("late_wager", 2)
    with pytest.raises(IllegalAction, match="still has chips"):
        hand.resolve_alert(alert.alert_id, "chips returned")
    hand.see_wagers(2, SeatWagers())
    hand.resolve_alert(alert.alert_id, "late bet returned to the player")
    assert hand.seats_in_hand == (1,)


def test_play_changed_after_it_was_made_is_an_alert() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    read(hand, "2c 3c 4c 5c")
    set_play(hand, 1, 3 * U)
    read(hand, "6c 7c")  # burn, first flop card: Play 3x locked
    set_play(hand, 1, 0)
    (alert,) = alerts(hand)
    assert (alert.kind, alert.field) == ("wager_changed", "play")
    assert "Play R75.00 -> R0.00" in alert.message


def test_play_spot_may_change_freely_before_its_decision_point() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.no_more_bets()
    read(hand, "2c 3c 4c 5c")
    set_play(hand, 1, 3 * U)
    set_play(hand, 1, 0)  # changed mind before the flop: no alert
    read(hand, "6c 7c")
    assert not alerts(hand)
    assert of(hand, SeatChecked) == [SeatChecked(seat=1, street="preflop")]


# ---- decisions inferred from the Play spot ---------------------------------------------------


def _to_preflop(seats: Iterable[int] = (1,), balance: int = START) -> Hand:
    hand = new_hand(seats, balance=balance)
    for s in hand.seats:
        hand.see_wagers(s, bet())
    hand.no_more_bets()
    n = len(hand.seats) + 1
    deck = iter(parse_cards("2c 3c 4c 5c 6c 7c 8c 9c Tc Jc Qc Kc Ac 2d 3d 4d"))
    for _ in range(2 * n):
        hand.read_card(next(deck))
    return hand


@pytest.mark.parametrize(
    ("street", "wrong"),
    [("preflop", 2 * U), ("preflop", U), ("preflop", 4 * U), ("flop", 3 * U), ("flop", U),
     ("river", 2 * U), ("river", 3 * U), ("river", 1_000)],
)
def test_wrong_play_size_at_each_decision_is_an_alert_never_a_guess(
    street: str, wrong: int
) -> None:
    hand = _to_preflop()
    good = {"preflop": 3 * U, "flop": 2 * U, "river": U}[street]
    if street == "preflop":
        set_play(hand, 1, wrong)
    read(hand, "Kd Qd Jd Td")
    if street == "flop":
        set_play(hand, 1, wrong)
    read(hand, "9d 8d 7d")
    if street == "river":
        set_play(hand, 1, wrong)
        hand.settle()
    alert = alerts(hand)[0]
    assert (alert.kind, alert.seat, alert.field, alert.street) == ("play_size", 1, "play", street)
    assert not [e for e in of(hand, PlayMade) if e.amount_cents == wrong]
    assert hand.paused
    assert hand.phase is not Phase.SETTLED
    with pytest.raises(IllegalAction, match="not fixed yet"):
        hand.resolve_alert(alert.alert_id, "asked the player")
    set_play(hand, 1, good)
    hand.resolve_alert(alert.alert_id, "player corrected the Play")
    assert hand.events[-1] == PlayMade(seat=1, street=street, multiple=good // U, amount_cents=good)  # type: ignore[arg-type]


def test_play_the_seat_cannot_afford_is_an_alert() -> None:
    # Balance R100: Ante + Odds R50 leave R50; a 3x Play (R75) is impossible, 2x (R50) is fine.
    hand = _to_preflop(balance=10_000)
    set_play(hand, 1, 3 * U)
    read(hand, "Kd Qd")
    (alert,) = alerts(hand)
    assert (alert.kind, alert.seat, alert.street) == ("play_unaffordable", 1, "preflop")
    set_play(hand, 1, 0)
    hand.resolve_alert(alert.alert_id, "player took the Play back: checks")
    assert hand.events[-1] == SeatChecked(seat=1, street="preflop")
    read(hand, "Jd Td 9d")
    set_play(hand, 1, 2 * U)
    read(hand, "8d")
    assert hand.events[-1] == PlayMade(seat=1, street="flop", multiple=2, amount_cents=2 * U)


def test_fold_at_settle_when_play_spot_is_empty() -> None:
    hand = _to_preflop(seats=(1, 2))
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    set_play(hand, 2, U)
    hand.settle()
    assert of(hand, SeatFolded) == [SeatFolded(seat=1)]
    settlement = hand.settlement
    assert settlement is not None
    assert settlement.seats[0].outcome == "fold"
    # A fold forfeits Ante and Odds at once (rules.md §4.2).
    assert hand.nets_cents()[1] == -2 * U


def test_river_alert_pauses_in_showdown_then_settle_again() -> None:
    hand = _to_preflop(seats=(1, 2))
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    set_play(hand, 1, 2 * U)  # wrong at the river
    set_play(hand, 2, U)
    hand.settle()
    assert hand.phase is Phase.SHOWDOWN and hand.paused
    assert hand.settlement is None
    assert [a.kind for a in alerts(hand)] == ["play_size"]
    assert hand.events[-1] == PlayMade(seat=2, street="river", multiple=1, amount_cents=U)
    assert not hand.can_settle()
    set_play(hand, 1, 0)
    hand.resolve_alert(alerts(hand)[0].alert_id, "player withdrew the Play: fold")
    assert hand.events[-1] == SeatFolded(seat=1)
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert [type(e) for e in hand.events[-2:]] == [SettleRequested, HandSettled]


def test_no_decision_while_paused_and_non_gate_cards_still_placed() -> None:
    hand = _to_preflop(seats=(1, 2))
    set_play(hand, 1, 2 * U)  # wrong preflop
    read(hand, "Kd Qd")  # burn, flop 1: the decision point
    assert hand.phase is Phase.FLOP and hand.paused
    read(hand, "Jd Td")  # flop 2 and 3: placed (positions are certain, no decision crossed)
    assert hand.phase is Phase.FLOP_DECISIONS
    read(hand, "9d 8d")  # burn placed; the turn would open the flop decisions: held
    held = alerts(hand)[-1]
    assert (held.kind, held.card, held.position) == ("card_held", parse_card("8d"), 11)
    assert hand.next_target == Target(kind="board", index=3)
    read(hand, "7d")  # any card after a held card is held too
    assert alerts(hand)[-1].kind == "card_held"
    set_play(hand, 1, 3 * U)
    hand.resolve_alert(alerts(hand)[0].alert_id, "short Play made up to 3x")
    for a in alerts(hand)[1:]:
        hand.resolve_alert(a.alert_id, "held card re-keyed by hand")
    hand.read_card(parse_card("8d"), source="manual")
    hand.read_card(parse_card("7d"), source="manual")
    assert hand.phase is Phase.RIVER_DECISIONS
    assert hand.wagers(1) == bet(play=3 * U)


# ---- card alerts -----------------------------------------------------------------------------


def test_card_before_no_more_bets() -> None:
    hand = new_hand([1])
    hand.see_wagers(1, bet())
    hand.read_card(parse_card("As"))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card) == ("card_before_bets", parse_card("As"))
    with pytest.raises(IllegalAction, match="paused"):
        hand.no_more_bets()
    hand.resolve_alert(alert.alert_id, "exposed card burned")
    hand.no_more_bets()
    hand.read_card(parse_card("As"))  # the read was discarded: As is not in the hand
    assert hand.cards() == ((Target(kind="seat", index=0, seat=1), parse_card("As")),)


def test_duplicate_card_is_alerted_and_not_placed() -> None:
    hand = _to_preflop()
    read(hand, "Kd")
    hand.read_card(parse_card("2c"))  # already seat 1's first hole card
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card, alert.position) == ("duplicate_card", parse_card("2c"), 5)
    assert "seat 1 hole card 1" in alert.message
    assert len(hand.cards()) == 5
    read(hand, "Qd")  # held: the position is uncertain until the dealer resolves
    assert alerts(hand)[-1].kind == "card_held"
    for a in alerts(hand):
        hand.resolve_alert(a.alert_id, "double read; card re-keyed")
    read(hand, "Qd")
    assert hand.phase is Phase.FLOP


def test_misread_card_corrected_with_reason() -> None:
    hand = _to_preflop()
    event = hand.correct_card(1, parse_card("As"), "shoe misread As as 3c", by="dealer 7")
    assert event == CardCorrected(
        position=1, target=Target(kind="dealer", index=0), card=parse_card("As"),
        replaced=parse_card("3c"), reason="shoe misread As as 3c", by="dealer 7",
    )
    assert dict(hand.cards())[Target(kind="dealer", index=0)] == parse_card("As")
    assert CardRead(card=parse_card("3c")) in hand.events  # the original read is kept
    hand.read_card(parse_card("3c"))  # the real 3c may now come out of the shoe
    assert not alerts(hand)
    with pytest.raises(DuplicateCard):
        hand.correct_card(0, parse_card("As"), "typo")
    with pytest.raises(IllegalAction, match="reason"):
        hand.correct_card(0, parse_card("Ks"), "  ")
    with pytest.raises(IllegalAction, match="holds no card"):
        hand.correct_card(9, parse_card("Ks"), "no such card")
    with pytest.raises(IllegalAction, match="already holds"):
        hand.correct_card(0, parse_card("2c"), "same")
    with pytest.raises(InvalidCard):
        hand.correct_card(0, "Ks", "text, not a Card")  # type: ignore[arg-type]


def test_too_many_cards() -> None:
    hand = _to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    hand.read_card(parse_card("6d"))
    (alert,) = alerts(hand)
    assert (alert.kind, alert.card, alert.position) == ("extra_card", parse_card("6d"), 11)
    assert not hand.can_settle()
    hand.resolve_alert(alert.alert_id, "card returned to the discard")
    set_play(hand, 1, U)
    hand.settle()
    assert hand.phase is Phase.SETTLED


def test_settled_or_void_hand_takes_no_input() -> None:
    hand = _to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d 7d")
    hand.settle()
    for act in (
        lambda: hand.read_card(parse_card("6d")),
        lambda: hand.see_wagers(1, bet()),
        lambda: hand.void("too late"),
        hand.settle,
        lambda: hand.correct_card(0, parse_card("6d"), "late"),
    ):
        with pytest.raises(IllegalAction, match="settled"):
            act()
    assert not hand.can_read_card(parse_card("6d"))


def test_read_card_refuses_what_is_not_a_card() -> None:
    hand = new_hand([1])
    with pytest.raises(InvalidCard):
        hand.read_card("Ah")  # type: ignore[arg-type]
    with pytest.raises(IllegalAction):
        hand.read_card(parse_card("Ah"), source="camera")  # type: ignore[arg-type]


def test_malformed_snapshots_are_refused() -> None:
    hand = new_hand([1])
    with pytest.raises(InvalidWager) as err:
        hand.see_wagers(1, SeatWagers(ante=-2500))
    assert (err.value.seat, err.value.field) == (1, "ante")
    with pytest.raises(InvalidWager):
        hand.see_wagers(1, SeatWagers(odds=True))
    with pytest.raises(InvalidWager):
        hand.see_wagers(1, SeatWagers(markers=frozenset({"ante"})))
    with pytest.raises(IllegalAction, match="not at this hand"):
        hand.see_wagers(4, bet())
    assert not hand.can_see_wagers(4, bet())
    assert hand.can_see_wagers(1, bet())


# ---- settle, reveal, void ---------------------------------------------------------------------


def test_settle_only_when_all_cards_are_in() -> None:
    hand = _to_preflop()
    read(hand, "Kd Qd Jd Td 9d 8d")
    with pytest.raises(IllegalAction, match="not allowed in phase turn_river"):
        hand.settle()
    read(hand, "7d")
    assert hand.can_settle()


def test_face_down_board_with_console_reveals() -> None:
    # UTH style: the five board cards are read right after the holes, face down.
    hand = new_hand([1], deal=UTH_DEAL)
    hand.see_wagers(1, all_sides())
    hand.no_more_bets()
    read(hand, "8d Kc 8s 4c 3h 8c 4h 8h 4s")
    assert hand.phase is Phase.PREFLOP_DECISIONS
    assert not of(hand, SeatChecked)
    set_play(hand, 1, 3 * U)
    hand.reveal()
    assert hand.phase is Phase.FLOP_DECISIONS
    assert of(hand, PlayMade) == [
        PlayMade(seat=1, street="preflop", multiple=3, amount_cents=3 * U)
    ]
    hand.reveal()
    assert hand.phase is Phase.RIVER_DECISIONS
    hand.settle()
    assert hand.nets_cents() == {1: 55 * U}  # §10 example 2


def test_reveal_refusals() -> None:
    hand = _to_preflop()
    with pytest.raises(IllegalAction, match="first card"):
        hand.reveal()
    uth = new_hand([1], deal=UTH_DEAL)
    uth.see_wagers(1, bet())
    uth.no_more_bets()
    read(uth, "2c 3c 4c 5c 6c")
    with pytest.raises(IllegalAction, match="not all read"):
        uth.reveal()


@pytest.mark.parametrize("cards", [0, 2, 4, 5, 7, 9, 11])
def test_void_from_any_phase_returns_every_wager(cards: int) -> None:
    hand = new_hand([1, 2])
    hand.see_wagers(1, bet())
    if cards:
        hand.see_wagers(2, bet())
        hand.no_more_bets()
        deck = ["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc", "Jc", "Qc"]
        read(hand, " ".join(deck[:cards]))
    phase = hand.phase
    event = hand.void("misdeal: wrong number of cards", by="supervisor 2")
    assert event == HandVoided(reason="misdeal: wrong number of cards", by="supervisor 2")
    assert hand.phase is Phase.VOID
    assert hand.nets_cents() == {1: 0, 2: 0}
    assert hand.state().void_reason == "misdeal: wrong number of cards"
    assert phase in TRANSITIONS and Phase.VOID in TRANSITIONS[phase].values()


def test_void_while_paused_and_needs_reason() -> None:
    hand = _to_preflop()
    hand.read_card(parse_card("2c"))
    assert hand.paused
    with pytest.raises(IllegalAction, match="reason"):
        hand.void("")
    hand.void("foreign card in the deck")
    assert hand.phase is Phase.VOID


def test_resolve_alert_refusals() -> None:
    hand = _to_preflop()
    with pytest.raises(IllegalAction, match="no alert 1"):
        hand.resolve_alert(1, "nothing")
    hand.read_card(parse_card("2c"))
    with pytest.raises(IllegalAction, match="reason"):
        hand.resolve_alert(1, "")
    event = hand.resolve_alert(1, "double read")
    assert event == AlertResolved(alert_id=1, reason="double read")
    with pytest.raises(IllegalAction, match="already resolved"):
        hand.resolve_alert(1, "again")


def test_phase_table_shape() -> None:
    # Every phase is in the table; only SETTLED and VOID are final; void is reachable from all.
    assert set(TRANSITIONS) == set(Phase)
    for phase, row in TRANSITIONS.items():
        if phase in (Phase.SETTLED, Phase.VOID):
            assert row == {}
        else:
            assert Phase.VOID in row.values()


def test_hand_creation_is_checked() -> None:
    with pytest.raises(IllegalAction):
        new_hand([])
    with pytest.raises(IllegalAction):
        new_hand([2, 1])
    with pytest.raises(IllegalAction):
        new_hand([1], balance=-1)
    with pytest.raises(IllegalAction):
        new_hand([1], hand_id=" ")

