"""A seeded day at one table, played straight into the table's decision core
(`game.table.core.TableCore`, no daemon, no devices): the
desk's signed commands, the staff's sign-ins, the dealer's buttons, the RFID reader's
inventories of physical chips and the shoe's cards, as typed inputs with their times.

The chips are physical: every UID lies in the tray, in a player's pocket or on a spot, and
the dealer pays from the tray with chips the table's float holds (so a verified payout binds
them to the winner), makes change, takes losers and returns each entry's chips at the end.
Virtual patrons (simulators.players) bet and decide. A seeded generator puts in what a real
day has: failed sign-ins up to a lock-out, a refused console press, a reader lost mid-hand,
a card read twice, a dealer's void, a wager keyed by hand, an overpay the supervisor
overrides or the dealer takes back, an unseat held until the hand ends, a disputed hand
ruled on, a disputed score, duplicated desk commands. Every input is kept (``inputs``) for
a replay on another core: the snapshot tests (tests/game/table/test_table_snapshot_play.py) and
bench/snapshot.py cut it at safe points. `DayStuck` says which step the table refused.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from game.chips.registry import Chip, ChipRegistry
from game.hand import Hand, Phase
from game.hand.deal import DEFAULT_DEAL
from game.messages.desk import (
    AckScore,
    CloseHeat,
    CorrectHand,
    DeskOrder,
    OpenHeat,
    Seat,
    TableCommand,
    Unseat,
    VoidHand,
)
from game.messages.table import HandSettled, ScoreRecorded
from game.money import format_rand
from game.poker.cards import DECK
from game.staff import LockoutPolicy, StaffMember, StaffRoster, hash_secret
from game.table.core import Decision, TableCore
from game.table.inputs import (
    Acknowledge,
    CardSeen,
    ChipsSeen,
    ClearFault,
    DeviceTrouble,
    Dispute,
    DisputeHand,
    NoMoreBets,
    PayoutOverride,
    ResolveAlert,
    ReturnChips,
    SettleHand,
    StaffChange,
    TableInput,
    VoidByDealer,
    WagerKeyed,
)
from game.tournament.entries import Entry, Stage
from game.wagers.settle import WAGERS, SeatWagers
from runtime.settings_files import read_paytables, read_tournament
from simulators.players import PlayerStyle, VirtualPlayer

__all__ = ["DEALER", "ROSTER", "SUPERVISOR", "DayStuck", "Floor", "day", "new_core",
           "registry"]

SETTINGS = read_tournament(None)
PAYTABLES = read_paytables(None)
T0 = datetime(2026, 7, 3, 10, 0, tzinfo=UTC)
PLAY_SET, MARKER_SET = "house", "bonus-marker"
_DENOMS = ((50_000, 300), (10_000, 600), (2_500, 2_400), (1_000, 400), (250, 600))
_HASH = hash_secret("2468", b"floor-salt-0123")
ROSTER = StaffRoster(version=1, members=(
    StaffMember(staff_id="D1", name="Dineo", role="dealer", pin_hash=_HASH),
    StaffMember(staff_id="D2", name="Thabo", role="dealer", pin_hash=_HASH),
    StaffMember(staff_id="S1", name="Sipho", role="supervisor", pin_hash=_HASH),
))
DEALER, SUPERVISOR = "D1", "S1"


class DayStuck(RuntimeError):
    """The table refused a step the virtual staff needed; the message names it."""


def _done(decision: Decision, step: str) -> Decision:
    if not decision.ok:
        raise DayStuck(f"{step} was refused: {decision.error}")
    return decision


def registry() -> ChipRegistry:
    """The day's chips: a float of five denominations, and 30 Final bonus markers."""
    chips = [Chip(uid=bytes([0xE0, 0x04, d, 0, 0, 0, n >> 8, n & 0xFF]), value_cents=value,
                  chip_set=PLAY_SET)
             for d, (value, count) in enumerate(_DENOMS, start=1) for n in range(count)]
    chips += [Chip(uid=bytes([0xE0, 0x04, 9, 0, 0, 0, 0, n]), value_cents=50_000,
                   chip_set=MARKER_SET) for n in range(30)]
    # Float chips count for any seat (require_issued off, D346): the day's players get change
    # from the tray between hands, off the spots, where a table requiring issued chips
    # cannot see it.
    return ChipRegistry(chips, chip_set=PLAY_SET, require_issued=False)


REGISTRY = registry()


def new_core(*, verify_payouts: bool = True) -> TableCore:
    """A table core as the daemon builds it at start-up."""
    return TableCore(table_id="T01", settings=SETTINGS, paytables=PAYTABLES, deal=DEFAULT_DEAL,
                     registry=REGISTRY, verify_payouts=verify_payouts,
                     lockout=LockoutPolicy(free=3))


class Floor:
    """One table's day; see the module docstring. ``trouble`` is the chance of each kind of
    mishap per hand."""

    def __init__(self, *, seed: int, verify_payouts: bool = True, trouble: float = 0.15) -> None:
        self.rng = random.Random(seed)
        self.trouble = trouble
        self.core = new_core(verify_payouts=verify_payouts)
        self.now = T0
        self.inputs: list[tuple[TableInput, datetime]] = []
        self.value = {c.uid: c.value_cents for c in REGISTRY}
        self.tray = {c.uid for c in REGISTRY if c.chip_set == PLAY_SET}
        self.markers = [c.uid for c in REGISTRY if c.chip_set == MARKER_SET]  # the box
        self.marker_uids = frozenset(self.markers)
        self.pockets: dict[str, set[bytes]] = {}
        self.lying: dict[tuple[int, str], set[bytes]] = {}  # (seat, spot) -> UIDs there
        self.keyed: dict[tuple[int, str], int] = {}  # spots whose amount was keyed
        self.players: dict[str, VirtualPlayer] = {}
        self.seq = 0
        self.signed_in: set[str] = set()
        self.scores: list[ScoreRecorded] = []
        self.settled: list[HandSettled] = []
        self.heats = 0

    # ---- inputs -------------------------------------------------------------------------

    def __call__(self, given: TableInput, *, seconds: float = 2) -> Decision:
        """Apply one input ``seconds`` after the last, and keep it."""
        self.now += timedelta(seconds=seconds)
        self.inputs.append((given, self.now))
        decision = self.core.apply(given, self.now)
        for message in decision.messages:
            if isinstance(message, ScoreRecorded):
                self.scores.append(message)
            elif isinstance(message, HandSettled):
                self.settled.append(message)
        return decision

    def desk(self, command: TableCommand, *, again: bool = False) -> Decision:
        """A signed desk command (``again``: QoS 1 delivers the last one twice)."""
        if not again:
            self.seq += 1
        return self(DeskOrder(command=command, signer="desk", command_seq=self.seq,
                              command_id=f"c{self.seq}"))

    def chance(self, scale: float = 1.0) -> bool:
        """A mishap of one kind happens now."""
        return self.rng.random() < self.trouble * scale

    def sign_in(self, staff_id: str) -> None:
        """The staff member signs in at the console (if not signed in already)."""
        if staff_id not in self.signed_in:
            _done(self(StaffChange(event="signed_in", method="pin", staff_id=staff_id)),
                  f"{staff_id}'s sign-in")
            self.signed_in.add(staff_id)

    def sign_out(self, staff_id: str) -> None:
        """The staff member signs out (if signed in)."""
        if staff_id in self.signed_in:
            _done(self(StaffChange(event="signed_out", method="pin", staff_id=staff_id)),
                  f"{staff_id}'s sign-out")
            self.signed_in.discard(staff_id)

    def supervise(self, given: TableInput) -> Decision:
        """The supervisor signs in for one action, then out."""
        self.sign_in(SUPERVISOR)
        done = self(given)
        self.sign_out(SUPERVISOR)
        return done

    # ---- chips --------------------------------------------------------------------------

    def show(self, seat: int, spot: str) -> None:
        """The reader reports a spot (a keyed spot is keyed again instead)."""
        key = (seat, spot)
        if key in self.keyed:
            self.keyed[key] = self.worth(self.lying.get(key, set()))
            self.supervise(WagerKeyed(seat=seat, spot=spot, amount_cents=self.keyed[key],
                                      by=SUPERVISOR))
        else:
            self(ChipsSeen(seat=seat, spot=spot, uids=frozenset(self.lying.get(key, set()))),
                 seconds=0.3)

    def worth(self, uids: Iterable[bytes]) -> int:
        """Cents of the chips among ``uids`` (bonus markers are worth nothing on a spot)."""
        return sum(self.value[u] for u in uids if u not in self.marker_uids)

    def take(self, source: set[bytes], cents: int, *, for_entry: str | None = None,
             float_only: bool = False) -> set[bytes]:
        """Chips from ``source`` worth exactly ``cents`` (largest first), removed from it;
        with ``float_only`` only chips the table's float holds or binds to ``for_entry``
        (those first)."""
        chosen: set[bytes] = set()
        left = cents
        owner = self.core.chips.chip_float.owner
        for uid in sorted(source, key=lambda u: (owner(u) != for_entry, -self.value[u], u)):
            if self.value[uid] <= left and (not float_only or owner(uid) in (None, for_entry)):
                chosen.add(uid)
                left -= self.value[uid]
            if not left:
                source -= chosen
                return chosen
        raise DayStuck(f"no chips make {format_rand(cents)} exactly")

    def from_pocket(self, entry: str, cents: int) -> set[bytes]:
        """The player's chips worth ``cents``, getting change from the tray when needed."""
        pocket = self.pockets[entry]
        try:
            return self.take(pocket, cents)
        except DayStuck:  # the pocket cannot make it: change from the tray
            total = self.worth(pocket)
            self.tray |= pocket
            pocket.clear()
            wanted = self.take(self.tray, cents, for_entry=entry, float_only=True)
            if total > cents:
                pocket |= self.take(self.tray, total - cents, for_entry=entry, float_only=True)
            return wanted

    def place(self, seat: int, entry: str, wagers: SeatWagers) -> None:
        """The player puts its opening wagers on the seat's spots (a marker on a side bet);
        now and then a spot the reader cannot see is keyed by the supervisor."""
        for spot in WAGERS:
            amount = wagers.amount(spot)
            marker = spot in wagers.markers
            if not amount and not marker:
                continue
            chips = self.from_pocket(entry, amount) if amount else set()
            if marker:
                chips.add(self.markers.pop())
            self.lying[(seat, spot)] = chips
            if self.chance() and not marker and spot != "play":
                self.keyed[(seat, spot)] = amount  # the reader cannot see this spot
            self.show(seat, spot)

    def pick_up(self, seat: int, entry: str | None) -> None:
        """The player takes every chip on the seat's spots (markers go back to the box)."""
        for spot in WAGERS:
            chips = self.lying.pop((seat, spot), set())
            was_keyed = self.keyed.pop((seat, spot), None) is not None
            if chips or was_keyed:
                self.markers += sorted(chips & self.marker_uids)
                chips -= self.marker_uids
                if entry is not None:
                    self.pockets.setdefault(entry, set()).update(chips)
                else:
                    self.tray |= chips
                self(ChipsSeen(seat=seat, spot=spot, uids=frozenset()), seconds=0.3)

    # ---- a heat -------------------------------------------------------------------------

    def heat(self, stage: Stage, seats: Iterable[int]) -> None:
        """Open a heat, seat and issue entries, play until every entry has ended, return
        their chips, acknowledge their scores, close the heat."""
        self.heats += 1
        heat_id = f"{stage.value[0].upper()}{self.heats}"
        self.desk(OpenHeat(stage=stage.value, heat_id=heat_id))
        if self.chance():
            self.desk(OpenHeat(stage=stage.value, heat_id=heat_id), again=True)
        rules = SETTINGS.stage(stage).rules
        for seat in seats:
            entry = f"{heat_id}-{seat}"
            self.desk(Seat(entry_id=entry, seat=seat, pin_hash=_HASH))
            self.players[entry] = VirtualPlayer(name=entry, rng=random.Random(self.rng.random()),
                                                style=PlayerStyle(side_bet_chance=0.4))
            self.lying[(seat, "ante")] = self.take(self.tray, rules.starting_chips_cents,
                                                   float_only=True)
            self.show(seat, "ante")
            self.sign_in(DEALER)
            if seat in self.core.chips.unissued(self.core.session):  # issued as it was read
                raise DayStuck(f"seat {seat}'s stack was read and not issued: "
                               f"{self.core.chips.to_issue(self.core.session)}")
            self.pockets[entry] = set()
            self.pick_up(seat, entry)
        while self.core.session is not None and self.core.session.seats:
            self.hand()
        self.finish_heat()

    def finish_heat(self) -> None:
        """Return every entry's chips, acknowledge (or dispute, then acknowledge) the scores,
        close the heat."""
        for seat, entry in sorted(self.core.chips.seats.items()):
            self.lying[(seat, "ante")] = set(self.pockets.pop(entry, set()))
            self.show(seat, "ante")
            self(ReturnChips(seat=seat, by=DEALER))
            self.pick_up(seat, None)
        for score in list(self.scores):
            if self.chance(2):
                self(Dispute(entry_id=score.entry_id, note="the last hand paid me short"))
            if self.rng.random() < 0.5:
                self(Acknowledge(entry_id=score.entry_id, method="pin", by=score.entry_id))
            else:
                self.desk(AckScore(entry_id=score.entry_id))
        self.scores.clear()
        if self.chance():  # a dealer's dispute of the heat's last hand, after its scores
            self.late_dispute()
        self.desk(CloseHeat())
        self.sign_out(DEALER)

    def late_dispute(self) -> None:
        """The dealer disputes a result in the heat's last hand after the scores are in."""
        if self.settled:
            last = self.settled[-1]
            self(DisputeHand(hand_id=last.hand_id, seat=1, claim="trips paid short",
                             by=DEALER))

    # ---- a hand -------------------------------------------------------------------------

    def hand(self) -> None:
        """One hand: wagers, no more bets, the deal with the decisions, settle, the payout,
        the pick-up; and whatever mishaps the seed brings."""
        session = self.core.session
        assert session is not None
        self.between_hands()
        seated = dict(session.seats)
        hand = self.open_hand(seated)
        lost_reader = self.chance()
        self.deal(seated, hand, lost_reader=lost_reader)
        if hand.phase not in (Phase.VOID, Phase.SETTLED):
            self.decide(seated, hand, "river")
            if self.chance(0.25):
                self.desk(VoidHand(hand_id=hand.hand_id, reason="shoe fault at the desk"))
        if hand.phase not in (Phase.VOID, Phase.SETTLED):
            self.settle(hand, lost_reader=lost_reader)
        if hand.phase is Phase.SETTLED:
            self.payout()
        for seat, entry in seated.items():
            self.pick_up(seat, entry.entry_id)

    def open_hand(self, seated: Mapping[int, Entry]) -> Hand:
        """The wagers go down and the dealer presses no more bets; the desk may send an
        unseat or a ruling that the table holds until the hand ends."""
        session = self.core.session
        assert session is not None
        for seat, entry in sorted(seated.items()):
            wagers = self.players[entry.entry_id].wagers(
                seat=seat, balance_cents=entry.balance_cents, markers_left=entry.markers_left,
                rules=session.rules.house)
            self.place(seat, entry.entry_id, wagers)
        if self.core.device_faults:
            self(DeviceTrouble(device="RFID-1", kind="reconnected", detail="back", role="rfid"))
        if self.core.decks.held:
            self.supervise(ClearFault(role="deck", reason="deck counted and replaced",
                                      by=SUPERVISOR))
        _done(self(NoMoreBets(by=DEALER)), "no more bets")
        hand = self.core.hand
        if hand is None:
            raise DayStuck("no more bets opened no hand")
        if self.chance(0.3):  # the desk unseats an entry mid-hand: held until the hand ends
            seat = self.rng.choice(sorted(seated))
            self.desk(Unseat(seat=seat, entry_id=seated[seat].entry_id, reason="left"))
        if self.chance(0.5) and self.settled:  # a ruling on the last hand, held too
            last = self.settled[-1].record
            entries = [s["entry_id"] for s in last["seats"] if s["entry_id"]]
            if entries and last["heat_id"] == self.core.heat_id:
                self.desk(CorrectHand(hand_id=last["hand_id"], entry_id=entries[0],
                                      ruling="void", reason="misread at the desk"))
        return hand

    def deal(self, seated: Mapping[int, Entry], hand: Hand, *, lost_reader: bool) -> None:
        """The shoe deals a shuffled deck, the seats deciding before the flop and the turn;
        a card may be read twice, the reader may be lost, the dealer may void a misdeal."""
        deck = list(DECK)
        self.rng.shuffle(deck)
        twice_at = self.rng.randrange(20) if self.chance() else None  # a card read twice
        void_at = self.rng.randrange(20) if self.chance(0.3) else None  # a misdeal
        while (target := hand.next_target) is not None:
            if target.kind == "board" and target.index in (0, 3):
                self.decide(seated, hand, "preflop" if target.index == 0 else "flop")
            if lost_reader and target.kind == "board" and target.index == 3:
                self(DeviceTrouble(device="RFID-1", kind="lost", detail="USB unplugged",
                                   role="rfid"))
            card = deck.pop()
            self(CardSeen(card=card, read_index=52 - len(deck)), seconds=1)
            if twice_at == 52 - len(deck) and not hand.open_alerts:
                self(CardSeen(card=card, read_index=52 - len(deck)), seconds=0.5)  # twice
            self.resolve(hand)
            if hand.phase is Phase.VOID:
                return
            if void_at == 52 - len(deck):
                self.supervise(VoidByDealer(reason="misdeal", by=SUPERVISOR))
                return

    def settle(self, hand: Hand, *, lost_reader: bool) -> None:
        """Settle (refused while the reader is down: it comes back, or the supervisor clears
        the fault)."""
        if lost_reader or self.core.device_faults:
            if self(SettleHand(by=DEALER)).ok:
                raise DayStuck("the table settled a hand with its chip reader lost")
            if self.rng.random() < 0.5:
                self(DeviceTrouble(device="RFID-1", kind="reconnected", detail="back",
                                   role="rfid"))
            else:
                self.supervise(ClearFault(role="rfid", reason="manual entry", by=SUPERVISOR))
        self.resolve(hand)
        _done(self(SettleHand(by=DEALER)), f"settling hand {hand.hand_id}")

    def decide(self, seated: Mapping[int, Entry], hand: Hand, street: str) -> None:
        """Each seat still to decide puts its Play on the spot, or not."""
        board = [c for t, c in hand.cards() if t.kind == "board"]
        for seat in hand.seats_in_hand:
            wagers = hand.wagers(seat)
            if wagers is None or (seat, "play") in self.lying or not wagers.ante:
                continue
            hole = [c for t, c in hand.cards() if t.kind == "seat" and t.seat == seat]
            entry = seated[seat]
            amount = self.players[entry.entry_id].play(
                seat=seat, street=street, hole=hole, board=board, wagers=wagers,
                balance_cents=entry.balance_cents)
            if amount:
                self.lying[(seat, "play")] = self.from_pocket(entry.entry_id, amount)
                self.show(seat, "play")

    def resolve(self, hand: Hand) -> None:
        """The supervisor resolves whatever holds the hand."""
        for alert in list(hand.open_alerts):
            self.supervise(ResolveAlert(alert_id=alert.alert_id, reason="set aside, checked",
                                        by=SUPERVISOR))

    def payout(self) -> None:
        """Pay winners and take losers spot by spot; an overpay is overridden or taken back."""
        hand = self.settled[-1].record
        over: tuple[int, str, bytes] | None = None
        for seat_result in hand["settlement"]["seats"]:
            seat = seat_result["seat"]
            for spot, result in seat_result["wagers"].items():
                key = (seat, spot)
                chips = self.lying.setdefault(key, set())
                markers = chips & self.marker_uids
                chips -= markers
                self.markers += sorted(markers)
                expected = max(0, result["stake"] + result["net"])
                held = self.worth(chips)
                if expected < held:
                    self.tray |= chips
                    chips.clear()
                    held = 0
                if expected > held:
                    chips |= self.take(self.tray, expected - held, float_only=True)
                    if over is None and self.chance():
                        extra = self.take(self.tray, 2_500, float_only=True)
                        chips |= extra
                        over = (seat, spot, next(iter(extra)))
                self.show(seat, spot)
        if over is not None and self.core.payout is not None:
            if self.rng.random() < 0.5:
                self.lying[over[:2]].discard(over[2])
                self.tray.add(over[2])
                self.show(*over[:2])
            else:
                self.supervise(PayoutOverride(reason="overpay left with the player",
                                              by=SUPERVISOR))
        if self.core.payout is not None:
            raise DayStuck(f"the payout was not verified: {self.core.payout.view()}")

    def between_hands(self) -> None:
        """What happens at a table between hands: sign-ins failing, a card read with no hand,
        a disputed hand ruled on, a console press by someone not signed in."""
        if self.chance():
            for _ in range(self.rng.choice((1, 3))):
                self(StaffChange(event="sign_in_failed", method="pin", staff_id="D2",
                                 detail="wrong PIN"))
        if self.chance():
            self(CardSeen(card=self.rng.choice(DECK)))
        if self.chance():
            self(NoMoreBets(by="D2"))  # refused: D2 is not signed in
        if self.chance() and self.settled and self.core.session is not None:
            self.rule_on_last_hand()
        if self.chance() and self.core.session is not None and len(self.core.session.seats) > 1:
            self.pooling()

    def pooling(self) -> None:
        """A player puts down a chip of another entry's, then gives it back."""
        session = self.core.session
        assert session is not None
        (_, lender), (seat, _) = sorted(session.seats.items())[:2]
        owned = sorted(u for u in self.pockets.get(lender.entry_id, set())
                       if self.core.chips.chip_float.owner(u) == lender.entry_id)
        if owned:
            self.lying[(seat, "trips_plus")] = {owned[0]}
            self.show(seat, "trips_plus")
            self.lying.pop((seat, "trips_plus"))
            self.show(seat, "trips_plus")

    def rule_on_last_hand(self) -> None:
        """The dealer disputes a seated entry's result in the last hand; the desk rules."""
        last = self.settled[-1]
        seats = {s["seat"]: s for s in last.record["settlement"]["seats"]}
        session = self.core.session
        assert session is not None
        for seat, entry in sorted(session.seats.items()):
            if seat in seats and last.record["heat_id"] == self.core.heat_id:
                self(DisputeHand(hand_id=last.hand_id, seat=seat, claim="misread", by=DEALER))
                ruling = self.rng.choice(("void", "correct"))
                net = None if ruling == "void" else seats[seat]["net"] + 2_500
                self.desk(CorrectHand(hand_id=last.hand_id, entry_id=entry.entry_id,
                                      ruling=ruling, reason="surveillance", net=net))
                return


def day(*, seed: int, heats: int = 3, verify_payouts: bool = True,
        trouble: float = 0.15) -> Floor:
    """A day of heats in the three stages, finishing with a Final with bonus markers."""
    floor = Floor(seed=seed, verify_payouts=verify_payouts, trouble=trouble)
    floor.desk(ROSTER)
    stages = [Stage.QUALIFYING, Stage.SEMI_FINAL, Stage.FINAL]
    for n in range(heats):
        stage = stages[n] if n < len(stages) else floor.rng.choice(stages)
        floor.heat(stage, sorted(floor.rng.sample(range(1, 7), floor.rng.randint(2, 4))))
        floor.now += timedelta(minutes=20)
    return floor
