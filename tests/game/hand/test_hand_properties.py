"""Properties of the hand state machine over random hands (hypothesis).

- A random legal hand (1-6 seats, random wagers, deck and decisions) settles, its cards land
  where the default sequence puts them (worked out here independently), its decisions are the
  ones the players made, and its record replays to the identical state.
- An injected duplicate card, or a wrong Play size at a random decision, is always alerted and
  never accepted; once the dealer corrects it the hand settles exactly as the clean hand does.
- Opening snapshots arriving in any order: an illegal one is always alerted, naming its seat.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from game.hand import Hand, Phase
from game.hand.deal import DEFAULT_DEAL, Target
from game.hand.events import AlertRaised, PlayMade, SeatChecked, SeatFolded, SeatStart
from game.hand.replay import replay
from game.poker.cards import DECK, Card
from game.wagers.house_limits import HouseRules
from game.wagers.settle import SeatWagers
from tests.game.hand_helpers import PAYTABLES, U, new_hand

MULTIPLE = {"preflop": 3, "flop": 2, "river": 1}
STREETS = ("preflop", "flop", "river")


@dataclass(frozen=True)
class Plan:
    """A legal hand: seats, their wagers and balances, decisions, and the shoe order."""

    seats: tuple[int, ...]
    wagers: dict[int, SeatWagers]
    balances: dict[int, int]
    decisions: dict[int, str]  # "preflop" / "flop" / "river" (the street it plays) or "fold"
    deck: tuple[Card, ...]
    play_after: dict[str, int]  # cards read before the Play spots for that street are set

    @property
    def n(self) -> int:
        return len(self.seats)

    @property
    def flop_at(self) -> int:  # index of the first flop card in shoe order (after one burn)
        return 2 * (self.n + 1) + 1

    @property
    def turn_at(self) -> int:
        return self.flop_at + 4  # flop 3 cards, burn

    @property
    def total(self) -> int:
        return self.turn_at + 2


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    seats = tuple(sorted(draw(st.sets(st.integers(1, 6), min_size=1, max_size=6))))
    deck = tuple(draw(st.permutations(DECK)))
    wagers: dict[int, SeatWagers] = {}
    balances: dict[int, int] = {}
    decisions: dict[int, str] = {}
    for seat in seats:
        ante = draw(st.sampled_from([1, 2, 4, 10])) * U
        side = st.sampled_from([0, U, 4 * U, 10 * U])
        w = SeatWagers(ante=ante, odds=ante, trips_plus=draw(side), pocket_bonus=draw(side),
                       sweet16=draw(side))
        staked = w.staked_cents
        balance = staked + ante + draw(st.integers(0, 8)) * ante  # always covers a 1x Play
        affordable = [s for s in STREETS if MULTIPLE[s] * ante <= balance - staked]
        wagers[seat], balances[seat] = w, balance
        decisions[seat] = draw(st.sampled_from([*affordable, "fold"]))
    n = len(seats)
    flop_at = 2 * (n + 1) + 1
    play_after = {
        "preflop": draw(st.integers(0, flop_at)),
        "flop": draw(st.integers(flop_at + 1, flop_at + 4)),
        "river": draw(st.integers(flop_at + 5, flop_at + 6)),
    }
    return Plan(seats, wagers, balances, decisions, deck, play_after)


def open_hand(plan: Plan) -> Hand:
    """Open the hand with the plan's seats and balances, and close the bets."""
    hand = Hand(
        hand_id="prop",
        seats=[SeatStart(seat=s, balance_cents=plan.balances[s]) for s in plan.seats],
        rules=HouseRules(),
        paytables=PAYTABLES,
        deal=DEFAULT_DEAL,
    )
    for seat in plan.seats:
        hand.see_wagers(seat, plan.wagers[seat])
    hand.no_more_bets()
    return hand


def set_plays(hand: Hand, plan: Plan, street: str) -> None:
    """Players whose plan is to play on this street put their Play on the spot."""
    for seat in plan.seats:
        if plan.decisions[seat] == street:
            amount = MULTIPLE[street] * plan.wagers[seat].ante
            hand.see_wagers(seat, dataclasses.replace(plan.wagers[seat], play=amount))


def run(plan: Plan) -> Hand:
    """Drive the plan through a hand: Play spots set at the planned moments, cards, settle."""
    hand = open_hand(plan)
    for index in range(plan.total + 1):
        for street in STREETS:
            if plan.play_after[street] == index:
                set_plays(hand, plan, street)
        if index < plan.total:
            hand.read_card(plan.deck[index])
    hand.settle()
    return hand


def expected_targets(plan: Plan) -> dict[Target, Card]:
    """Default sequence worked out directly: two passes (seats, dealer), burn, 3, burn, 2."""
    n, d = plan.n, plan.deck
    out: dict[Target, Card] = {}
    for i, seat in enumerate(plan.seats):
        out[Target(kind="seat", index=0, seat=seat)] = d[i]
        out[Target(kind="seat", index=1, seat=seat)] = d[n + 1 + i]
    out[Target(kind="dealer", index=0)] = d[n]
    out[Target(kind="dealer", index=1)] = d[2 * n + 1]
    f = plan.flop_at
    out[Target(kind="burn", index=0)] = d[f - 1]
    out[Target(kind="burn", index=1)] = d[f + 3]
    for k in range(3):
        out[Target(kind="board", index=k)] = d[f + k]
    out[Target(kind="board", index=3)] = d[f + 4]
    out[Target(kind="board", index=4)] = d[f + 5]
    return out


FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(plans())
def test_legal_hand_settles_as_played_and_replays_identically(plan: Plan) -> None:
    hand = run(plan)
    assert hand.phase is Phase.SETTLED
    assert not [e for e in hand.events if isinstance(e, AlertRaised)]
    assert dict(hand.cards()) == expected_targets(plan)
    plays = {e.seat: (e.street, e.amount_cents) for e in hand.events if isinstance(e, PlayMade)}
    folds = {e.seat for e in hand.events if isinstance(e, SeatFolded)}
    for seat in plan.seats:
        decision = plan.decisions[seat]
        if decision == "fold":
            assert seat in folds and seat not in plays
        else:
            assert plays[seat] == (decision, MULTIPLE[decision] * plan.wagers[seat].ante)
    checks = [(e.seat, e.street) for e in hand.events if isinstance(e, SeatChecked)]
    for seat in plan.seats:
        d = plan.decisions[seat]
        expected = {"preflop": [], "flop": ["preflop"]}.get(d, ["preflop", "flop"])
        assert [s for (x, s) in checks if x == seat] == expected
    settlement = hand.settlement
    assert settlement is not None
    assert [s.seat for s in settlement.seats] == list(plan.seats)
    for s in settlement.seats:
        assert sum(r.net_cents for r in s.results) == hand.nets_cents()[s.seat]
    again = replay(hand.events, paytables=PAYTABLES)
    assert again.state() == hand.state()
    assert again.events == hand.events


@FAST
@given(plans(), st.data())
def test_injected_duplicate_is_alerted_and_the_hand_still_settles_as_clean(
    plan: Plan, data: st.DataObject
) -> None:
    clean = run(plan)
    at = data.draw(st.integers(1, plan.total), label="inject before card")
    dup = data.draw(st.sampled_from(plan.deck[:at]), label="duplicate")
    keep_dealing = data.draw(st.integers(0, 2), label="cards dealt before the dealer stops")

    hand = open_hand(plan)
    rekeyed: set[int] = set()
    for index in range(plan.total + 1):
        for street in STREETS:
            if plan.play_after[street] == index:
                set_plays(hand, plan, street)
        if index == at:
            placed = len(hand.cards())
            hand.read_card(dup)
            alert = hand.events[-1]
            assert isinstance(alert, AlertRaised)
            assert (alert.kind, alert.card) == ("duplicate_card", dup)
            assert len(hand.cards()) == placed
            assert hand.paused and not hand.can_settle()
            # Held cards stop short of the next point where the players set their Play
            # spots: the re-keyed reads must meet the spots the clean run met.
            stop = min([p for p in plan.play_after.values() if p > index] + [plan.total])
            held = range(index, min(index + keep_dealing, stop))
            for i in held:  # the dealer did not stop at once: these reads are held
                hand.read_card(plan.deck[i])
                assert isinstance(hand.events[-1], AlertRaised)
                assert hand.events[-1].kind == "card_held"
            for open_alert in hand.open_alerts:
                hand.resolve_alert(open_alert.alert_id, "double read; held cards re-keyed")
            for i in held:
                hand.read_card(plan.deck[i], source="manual")
            rekeyed.update(held)
        if index < plan.total and index not in rekeyed:
            hand.read_card(plan.deck[index])
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert hand.settlement == clean.settlement
    assert hand.nets_cents() == clean.nets_cents()
    assert replay(hand.events, paytables=PAYTABLES).state() == hand.state()


@FAST
@given(plans(), st.data())
def test_wrong_play_size_is_always_alerted_never_accepted(plan: Plan, data: st.DataObject) -> None:
    clean = run(plan)
    seat = data.draw(st.sampled_from(plan.seats), label="seat")
    decision = plan.decisions[seat]
    last = STREETS.index(decision) if decision in STREETS else 2
    street = data.draw(st.sampled_from(STREETS[: last + 1]), label="street")
    ante = plan.wagers[seat].ante
    right = MULTIPLE[street] * ante
    wrong = data.draw(
        st.one_of(st.sampled_from([ante, 2 * ante, 3 * ante, 4 * ante]),
                  st.integers(1, 5 * ante)).filter(lambda a: a != right),
        label="wrong Play",
    )
    decide_at = {"preflop": plan.flop_at, "flop": plan.turn_at, "river": plan.total}[street]

    wrong_spots = dataclasses.replace(plan.wagers[seat], play=wrong)
    hand = open_hand(plan)
    for index in range(plan.total + 1):
        for s in STREETS:
            if plan.play_after[s] == index:
                set_plays(hand, plan, s)
        if index == decide_at:  # just before the decision point the wrong amount is on the spot
            hand.see_wagers(seat, wrong_spots)
        if index < plan.total:
            hand.read_card(plan.deck[index])
        else:
            hand.settle()
        if hand.paused:
            break
    alerts = [e for e in hand.events if isinstance(e, AlertRaised)]
    assert [(a.kind, a.seat, a.street) for a in alerts] == [("play_size", seat, street)]
    assert hand.paused and hand.phase is not Phase.SETTLED
    assert not any(isinstance(e, PlayMade) and e.seat == seat for e in hand.events)
    # The dealer has the player put the intended Play (or none) and resolves the alert.
    intended = right if decision == street else 0
    hand.see_wagers(seat, dataclasses.replace(plan.wagers[seat], play=intended))
    hand.resolve_alert(alerts[0].alert_id, "Play corrected by the player")
    for index in range(len(hand.cards()), plan.total):
        for s in STREETS:
            if plan.play_after[s] == index and s != street:
                set_plays(hand, plan, s)
        hand.read_card(plan.deck[index])
    for s in STREETS:
        if plan.play_after[s] == plan.total and s != street:
            set_plays(hand, plan, s)
    hand.settle()
    assert hand.phase is Phase.SETTLED
    assert hand.settlement == clean.settlement
    assert replay(hand.events, paytables=PAYTABLES).state() == hand.state()


BAD = {
    "odds": lambda w: dataclasses.replace(w, odds=w.odds + U),
    "trips_plus": lambda w: dataclasses.replace(w, trips_plus=30_000),
    "ante": lambda w: dataclasses.replace(w, ante=w.ante + 100, odds=w.ante + 100),
}


@FAST
@given(plans(), st.data())
def test_an_illegal_opening_wager_is_alerted_whatever_the_order(
    plan: Plan, data: st.DataObject
) -> None:
    bad_seat = data.draw(st.sampled_from(plan.seats), label="bad seat")
    field = data.draw(st.sampled_from(sorted(BAD)), label="field")
    snapshots = [(s, BAD[field](plan.wagers[s]) if s == bad_seat else plan.wagers[s])
                 for s in plan.seats]
    order = data.draw(st.permutations(snapshots), label="arrival order")
    hand = new_hand(plan.seats, balance=10 * 200_000)
    for seat, wagers in order:
        hand.see_wagers(seat, wagers)
    hand.no_more_bets()
    alerts = [e for e in hand.events if isinstance(e, AlertRaised)]
    assert [(a.kind, a.seat, a.field) for a in alerts] == [("wager_invalid", bad_seat, field)]
    assert hand.seats_in_hand == tuple(s for s in plan.seats if s != bad_seat)
    assert hand.paused
