"""Play at a running table daemon: a virtual desk opens heats and seats entries (signed over
MQTT when the caller wires a desk), and a virtual dealer with virtual players puts chips on the
simulated RFID reader, deals from the simulated shoe and presses the console's buttons.

Everything reaches the daemon the way it would at a real table: chips through the real USB
driver, cards through the real serial driver, card taps through the real ID reader driver,
console actions through the same handler as the local API. The people sign in as a real
table's do (simulators.staff): before the first heat the virtual desk enrols a virtual dealer
and a virtual supervisor in a staff roster; the dealer presses the buttons in its own session,
and the supervisor signs in only for what a dealer may not do (void, resolve an alert,
override a payout), then signs out. After each settle the dealer pays and takes on the chip
reader until the table has verified the payout (simulators.payout); each participant
acknowledges their score with the proofs the table asks for (a tap of their rewards card on
the simulated ID reader, their PIN, a signature drawn on the screen).

The table is seen only through `drivers.protocols.TableHandle`; the composition root
(controller.wiring) hands in that handle and the simulated devices.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal

from drivers.protocols import TableHandle
from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import Target
from game.messages.desk import CloseHeat, OpenHeat, Seat
from game.money import format_rand
from game.poker.cards import Card
from game.staff import StaffRoster
from game.tournament.entries import Stage
from game.wagers.settle import WAGERS, SeatWagers
from simulators.chip_steps import (
    PaidSpots,
    change_on_spot,
    issue_stacks,
    return_chips,
    sync_owners,
)
from simulators.decks import DeckMode, DeckSource
from simulators.felt import ChipTable
from simulators.id_reader import IdReaderSimulator
from simulators.payout import only_over_left, overpay_seen, pay_spots
from simulators.players import PlayerStyle, VirtualPlayer
from simulators.scripted_play import Decks, SeatPlayer
from simulators.shoe import ShoeSimulator, ShoeSimulatorError
from simulators.staff import StaffCredential, VirtualStaff, patron_proof, seat_hashes, signature_png
from simulators.status_checks import cards_read, devices_up, heat_is, seated, spots_shown
from simulators.table_stuck import TableStuck

__all__ = ["MARKER_SET", "PLAY_CHIP_SET", "OverpayFix", "TableStuck", "VirtualTable",
           "play_registry"]

PLAY_CHIP_SET = "showdown-sim"
MARKER_SET = "bonus-marker"
# A seat's spots as the table's status shows them: spot -> cents, and "markers" -> sorted list.
_Spots = dict[str, Any]
# (value, how many): R25, R100, R500, then the change a payout needs (a 3:2 pay on R25 is
# R37.50) and plaques for the largest pays (one spot reports at most 120 chips).
_FLOAT = ((2_500, 4_000), (10_000, 1_500), (50_000, 400), (1_000, 400), (250, 400),
          (500_000, 150))
OverpayFix = Literal["override", "take_back"]
_SIGN_IN_AGAIN = "needs a signed-in dealer"
DEVICE_PATIENCE_S = 60.0  # how long the dealer waits for a device that is down to come back
_LOOK_AGAIN_S = 0.05  # the longest an event-driven wait goes without looking at the status


def _uid(kind: int, value_code: int, n: int) -> bytes:
    return bytes([0xE0, 0x5E, kind, value_code, (n >> 24) & 0xFF, (n >> 16) & 0xFF,
                  (n >> 8) & 0xFF, n & 0xFF])


def _needs(wagers: SeatWagers) -> list[list[int]]:
    """What a seat's own chips must make at once: its wagers, with each Play it may bet."""
    laid = [wagers.amount(spot) for spot in WAGERS if wagers.amount(spot)]
    return [[*laid, n * wagers.ante] for n in (3, 2, 1)] if wagers.ante else [laid]


def play_registry() -> ChipRegistry:
    """The self-playing table's chips: a large unissued float, and 18 Final bonus markers."""
    chips = [Chip(uid=_uid(1, code, n), value_cents=value, chip_set=PLAY_CHIP_SET)
             for code, (value, count) in enumerate(_FLOAT, start=1) for n in range(count)]
    chips += [Chip(uid=_uid(9, 0, n), value_cents=50_000, chip_set=MARKER_SET)
              for n in range(18)]
    return ChipRegistry(chips, chip_set=PLAY_CHIP_SET)


class VirtualTable:
    """Plays heats at a table whose shoe, chip reader (and ID reader) are these simulators.

    ``overpay_hand`` (the heat's n-th hand) and ``overpay_chance`` (per hand, from a generator
    of the seed's own) make the dealer pay one chip too many on a winning spot (the first
    winning hand from then on); ``overpay_fix`` says who puts it right: the supervisor
    overrides the payout with a reason, or the dealer takes the chip back. The counters
    (`faults_injected`, `overrides`, `taken_back`, `hands_blocked`, `payouts_verified`,
    `acknowledged`) are for a demo's report and the tests.
    """

    # False: the dealer draws a street's cards one after the other, as a dealer does, and
    # looks at the table before each decision (a street's cards share a journal transaction);
    # True: each card once the one before is read (a rehearsal, whose faults come between
    # one card and the next).
    card_by_card: ClassVar[bool] = False

    def __init__(self, table: TableHandle, *, shoe: ShoeSimulator, chips: ChipTable,
                 ids: IdReaderSimulator | None = None, desk: Callable[..., Any] | None = None,
                 seed: int = 2026, stage: str = "qualifying", players: int = 3,
                 heats: int = 1, hand_pause: float = 0.0, timeout: float = 15.0,
                 overpay_hand: int | None = None, overpay_chance: float = 0.0,
                 overpay_fix: OverpayFix = "override", dispute_note: str | None = None,
                 deck_mode: DeckMode = "shuffled", decks: Decks | None = None,
                 player_for: Callable[[int], SeatPlayer] | None = None,
                 device_patience: float = DEVICE_PATIENCE_S) -> None:
        self.table = table
        # The first participant to finish disputes its score with this note, then (the
        # supervisor having explained the hand) acknowledges it.
        self.dispute_note = dispute_note
        self.disputed: list[str] = []
        self.shoe = shoe
        self.chips = chips
        chips.change_from_float = True  # the players' stacks need change from the tray
        self.ids = ids
        self.desk = desk
        self.seed = seed
        self.rng = random.Random(seed)
        # simulators.decks, or the caller's (a scripted deck)
        self.decks: Decks = decks or DeckSource(deck_mode, rng=self.rng, seed=seed)
        self.player_for = player_for  # seat -> its player (default: a virtual patron)
        self.device_patience = device_patience
        self.stage = Stage(stage)
        self.players = players
        self.heats = heats
        self.hand_pause = hand_pause
        self.timeout = timeout
        self.overpay_hand = overpay_hand
        self.overpay_chance = overpay_chance
        self.overpay_fix = overpay_fix
        self.staff = VirtualStaff(table.table_id)
        self.hands_played = 0
        self.scores: dict[str, int] = {}
        self.faults_injected = 0  # overpays paid on purpose
        self.changes_made = 0  # change made on a spot before a hand (D346)
        self.overrides = 0  # payouts a supervisor overrode
        self.taken_back = 0  # overpaid chips the dealer took back
        self.hands_blocked = 0  # no_more_bets the table refused while a payout was wrong
        self.deck_holds = 0  # suspect decks the virtual supervisor cleared
        self.payouts_verified = 0  # payouts the table verified by its chip readers
        self.stacks_issued = 0  # starting stacks issued at seating (simulators.chip_steps)
        self.reconciled: dict[str, int] = {}  # entry id -> chips missing when it returned them
        self.pocket_chips = 0  # a fault: the first entry to return its chips keeps this many
        self.acknowledged: dict[str, str] = {}  # entry id -> the proofs it acknowledged with
        self.supervisor_actions: list[str] = []
        self.fault_log: list[str] = []  # one line per fault injected and how it was put right
        self.last_refusal: str | None = None  # why the table last refused the next hand
        self._markers = [_uid(9, 0, n) for n in range(18)]
        self._faults = random.Random(f"{seed}:faults")  # never disturbs the cards' generator
        self._session: str | None = None  # the virtual dealer's console session
        self._roster: int | None = None  # the roster version this table sent
        self._heat_hand = 0
        self._overpay_due = False
        self.patron_of: dict[str, str] = {}  # entry -> its patron (one card for all theirs)
        self._patron_hashes: dict[str, dict[str, str]] = {}  # patron -> their Seat hashes

    # ---- waiting for the daemon ------------------------------------------------------

    async def until(self, what: str, check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Wait until `check` holds on the table's status (its handle's ``glance`` if it has
        one), woken by each input applied where the handle offers ``version``/``changed``,
        else polled. While a device is down the dealer waits for it to come back (up to
        `device_patience` seconds), then the wait restarts."""
        deadline = time.monotonic() + self.timeout
        changed, version = getattr(self.table, "changed", None), getattr(self.table, "version", 0)
        look = getattr(self.table, "glance", None) or self.table.status
        down_since: float | None = None
        while not check(status := look()):
            now = time.monotonic()
            if status.get("device_faults"):
                down_since = now if down_since is None else down_since
                if now - down_since > self.device_patience:
                    raise TableStuck(f"timed out waiting for {what}: a device stayed down"
                                     f" ({status.get('device_faults')})")
                deadline = max(deadline, now + self.timeout)
            else:
                down_since = None
            left = deadline - now
            if left < 0:
                raise TableStuck(f"timed out waiting for {what}; the table shows "
                                 f"{status.get('spots')}")
            if changed is None:
                await asyncio.sleep(0.01)
            else:  # a device's health changes without an input: look again now and then
                version = await changed(version, min(left, _LOOK_AGAIN_S))

    def glance(self) -> Mapping[str, Any]:
        """The table's status for one quick look (its handle's ``glance``, built part by part
        as read, where it has one): read it at once, before the next await."""
        look = getattr(self.table, "glance", None)
        return look() if look is not None else self.table.status()

    # ---- the people at the console ------------------------------------------------------

    async def ensure_roster(self, *, again: bool = False) -> None:
        """Have the desk send the staff roster enrolling the virtual staff (version one above
        the table's), unless the table already has the one this table sent; ``again``: send
        a new one anyway."""
        status = self.table.status()
        if not again and self._roster is not None \
                and status.get("roster_version") == self._roster:
            return
        version = int(status.get("roster_version") or 0) + 1
        roster = await self.staff.roster(version)
        await self.send_desk(StaffRoster.NAME, **roster.args())
        await self.until(f"staff roster {version}",
                         lambda s: s.get("roster_version") == version)
        self._roster, self._session = version, None

    async def sign_in(self, who: StaffCredential) -> str:
        """Sign a virtual staff member in with their PIN; the session token. A refused PIN
        means the table has another roster of the same version (one a killed run sent late):
        the desk sends ours again, newer, and the sign-in is tried once more."""
        await self.ensure_roster()
        request = {"action": "sign_in", "staff_id": who.staff_id, "pin": who.pin}
        answer = await self.table.console(request)
        if not answer.get("ok") and "wrong staff id or PIN" in str(answer.get("error")):
            await self.ensure_roster(again=True)
            answer = await self.table.console(request)
        detail = answer.get("detail") or {}
        if not answer.get("ok") or not isinstance(detail.get("session"), str):
            raise TableStuck(f"{who.staff_id} could not sign in: {answer.get('error')}")
        return str(detail["session"])

    async def console(self, action: str, **request: Any) -> Mapping[str, Any]:
        """Press a console button as the signed-in virtual dealer (signing in first, and once
        more if the session has ended, e.g. after a restart of the daemon)."""
        answer = await self._press(action, request)
        if not answer.get("ok") and _SIGN_IN_AGAIN in str(answer.get("error")):
            self._session = None
            answer = await self._press(action, request)
        if not answer.get("ok"):
            raise TableStuck(f"console {action} refused: {answer.get('error')}")
        return answer

    async def dealer_session(self) -> str:
        """The virtual dealer's console session (signing in when there is none)."""
        if self._session is None:
            self._session = await self.sign_in(self.staff.dealer)
        return self._session

    async def _press(self, action: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        session = await self.dealer_session()
        return await self.table.console({**request, "action": action, "session": session})

    async def supervise(self, action: str, **request: Any) -> Mapping[str, Any]:
        """A supervisor's action: the virtual supervisor signs in, acts, and signs out."""
        session = await self.sign_in(self.staff.supervisor)
        try:
            answer = await self.table.console({**request, "action": action,
                                               "session": session})
        finally:
            await self.table.console({"action": "sign_out", "session": session})
        if not answer.get("ok"):
            raise TableStuck(f"supervisor's {action} refused: {answer.get('error')}")
        self.supervisor_actions.append(action)
        return answer

    async def resolve_alerts(self, reason: str) -> int:
        """The supervisor resolves every open alert of the hand in play; how many."""
        hand = self.table.status().get("hand") or {}
        alerts = list(hand.get("open_alerts", []))
        for alert in alerts:
            await self.supervise("resolve_alert", alert_id=alert["id"], reason=reason)
        return len(alerts)

    async def seat_proofs(self, entry_id: str) -> dict[str, str]:
        """The hashes of the entry's patron's card and PIN for its Seat (once a patron)."""
        patron = self.patron_of.get(entry_id, entry_id)
        if patron not in self._patron_hashes:
            self._patron_hashes[patron] = await seat_hashes(patron_proof(self.seed, patron))
        return dict(self._patron_hashes[patron])

    async def acknowledge(self, entry_id: str) -> str:
        """The entry's participant acknowledges its score with every proof the table asks
        for (a card tap while the console waits for it, a PIN, a signature); the method."""
        methods = list(self.table.acknowledge_methods())
        proof = patron_proof(self.seed, self.patron_of.get(entry_id, entry_id))
        request: dict[str, Any] = {"action": "acknowledge", "entry_id": entry_id}
        if "pin" in methods:
            request["pin"] = proof.pin
        if "signature" in methods:
            request["signature"] = signature_png(self.seed, entry_id)
        if "card" in methods:
            answer = await self._with_tap(request, entry_id, proof.card_number)
        else:
            answer = await self.table.console(request)
        if not answer.get("ok"):
            raise TableStuck(f"the acknowledgement of {entry_id} was refused:"
                             f" {answer.get('error')}")
        method = self.acknowledged[entry_id] = "+".join(methods)
        return method

    async def _with_tap(self, request: Mapping[str, Any], entry_id: str,
                        number: str) -> Mapping[str, Any]:
        ids = self.ids
        if ids is None:
            raise TableStuck("the table asks for a rewards-card tap but its ID reader is not"
                             " a simulator (configure [console] acknowledge_with = [\"pin\"])")
        pending = asyncio.ensure_future(self.table.console({**request, "wait": self.timeout}))
        deadline = time.monotonic() + self.timeout
        try:
            while not pending.done():
                purpose = self.table.waiting_for_tap()
                if purpose is not None and entry_id in purpose:
                    ids.tap(number, "track2")
                    break
                if time.monotonic() > deadline:
                    raise TableStuck(f"the console never asked for {entry_id}'s card")
                await asyncio.sleep(0.01)
            return await pending
        finally:
            if not pending.done():
                pending.cancel()

    # ---- heats -----------------------------------------------------------------------

    async def run(self) -> None:
        """Play the configured number of heats (resuming one left open by a restart)."""
        await self.ensure_roster()
        sync_owners(self)  # after a restart of this process: whose chips are whose
        status = self.table.status()
        if status.get("hand"):  # the table PC restarted mid-hand: a supervisor voids it
            await self.supervise("void", reason="hand interrupted by a restart of the table PC")
        await self.settle_payout()  # a payout a restart left unpaid is paid now
        if status.get("hand") or status.get("payout") or self.chips.table():
            await self.pick_up()
        if status.get("heat"):  # a heat left open by a restart: play it out first
            await self.play_heat({int(s): e["entry_id"] for s, e in status["seats"].items()})
        for _ in range(self.heats):
            await self.play_heat(await self.seat_heat())

    async def pick_up(self) -> None:
        """The players pick up what lies on the spots (a voided hand's wagers, a payout
        verified, what a restart found) and the reader sees every spot empty."""
        self.chips.clear()
        await self.until("the table to be cleared",
                         lambda s: spots_shown(s) == {} and not self.table.chips_lying())

    async def seat_heat(self) -> dict[int, str]:
        """The virtual desk opens the next heat and seats `players` entries; seat -> entry."""
        table = self.table.table_id
        first = self.table.status().get("hands_opened", 0) + 1
        heat_id = f"{self.stage.value}-{table}-h{first}"
        await self.send_desk(OpenHeat.NAME, stage=self.stage.value, heat_id=heat_id)
        await self.until("the heat to open", heat_is(heat_id))
        entries = {seat: f"{table.upper()}-{first}-S{seat}"
                   for seat in range(1, self.players + 1)}
        for seat, entry in entries.items():
            await self.send_desk(Seat.NAME, entry_id=entry, seat=seat)
        await self.until("the entries to be seated", seated(len(entries)))
        return entries

    async def play_heat(self, entries: Mapping[int, str], *,
                        between_hands: Callable[[int], Awaitable[None]] | None = None) -> None:
        """Hands until every entry has ended, then acknowledgements and closing the heat.

        The players' choices come from the table's seed and the seat, not the entry id (the
        desk's ids are random), so a seed replays each table's heats card for card.
        ``between_hands(n)`` runs after the heat's n-th hand (the desk may act then).
        """
        players = self.make_players(entries)
        self._heat_hand, self._overpay_due = 0, False
        hands = 0
        while self.glance().get("seats"):
            await self.play_hand(players)
            hands += 1
            if between_hands is not None:
                await between_hands(hands)
            if self.hand_pause:
                await asyncio.sleep(self.hand_pause)
        await self.finish_heat()

    def make_players(self, entries: Mapping[int, str]) -> dict[int, SeatPlayer]:
        """The heat's players, one a seat (`player_for`, else virtual patrons seeded from
        the table's seed and the seat)."""
        if self.player_for is not None:
            return {seat: self.player_for(seat) for seat in entries}
        return {seat: VirtualPlayer(name=f"player {seat}",
                                    rng=random.Random(f"{self.rng.random()}:{seat}"),
                                    style=PlayerStyle(bold=seat % 2 == 0))
                for seat in entries}

    async def finish_heat(self) -> None:
        """Every entry has ended: acknowledgements, chips returned, the heat closed."""
        await self.acknowledge_all()
        await return_chips(self)
        await self.send_desk(CloseHeat.NAME)
        await self.until("the heat to close", lambda s: s.get("heat") is None)

    async def acknowledge_all(self) -> None:
        """Every score waiting at the table is acknowledged by its participant."""
        for entry in self.table.status().get("unacknowledged_scores", []):
            if self.dispute_note is not None and not self.disputed:
                answer = await self.table.console({"action": "dispute", "entry_id": entry,
                                                   "note": self.dispute_note})
                if not answer.get("ok"):
                    raise TableStuck(f"the dispute of {entry} was refused: {answer.get('error')}")
                self.disputed.append(entry)
            await self.acknowledge(entry)

    async def send_desk(self, command: str, **body: Any) -> None:
        """Send a desk command: signed over MQTT when a desk is wired, else straight in. A
        Seat gets the hashes of its virtual patron's proofs unless it names its own."""
        if command == Seat.NAME and "card_hash" not in body and "pin_hash" not in body:
            body.update(await self.seat_proofs(str(body["entry_id"])))
        if self.desk is not None:
            await self.desk(command, **body)
        else:
            refused = await self.table.desk_input({"command": command,
                                                   "signer": "virtual-desk", **body})
            if refused is not None:
                raise TableStuck(f"desk {command} refused: {refused}")

    # ---- one hand --------------------------------------------------------------------

    async def play_hand(self, players: Mapping[int, SeatPlayer]) -> None:
        """Wagers, no more bets, the deal with decisions at each street, settle, the payout
        checked by the readers, then the players pick up their chips."""
        sim = self.chips
        await issue_stacks(self)
        status = self.glance()
        house = self.table.house_rules()
        chosen = {seat_text: players[int(seat_text)].wagers(
                      seat=int(seat_text), balance_cents=info["balance"],
                      markers_left=info["markers_left"], rules=house)
                  for seat_text, info in status["seats"].items()}
        if (self.table.status().get("chips") or {}).get("require_issued"):  # change on a spot
            for seat_text, wagers in chosen.items():
                self.changes_made += await change_on_spot(self, int(seat_text),
                                                          _needs(wagers))
        placed: dict[str, _Spots] = {}
        with sim.moving():  # the players lay their wagers together
            for seat_text, wagers in chosen.items():
                placed[seat_text] = self._place(sim, int(seat_text), wagers)
        await self.after_wagers(placed)
        expected = {k: v for k, v in placed.items() if v}
        await self.until(f"the readers to see the wagers {expected}",
                         lambda s: spots_shown(s) == expected)
        await self.until("the shoe and the chip reader to be up", devices_up)
        if (self.glance().get("deck") or {}).get("held"):  # game.decks.check holds it
            await self.supervise("clear_fault", role="deck", reason=(
                "deck counted and replaced with a shuffled one (virtual supervisor)"))
            self.deck_holds += 1
        answer = await self.console("no_more_bets")
        in_hand: list[int] = list(answer["detail"]["seats"])
        targets = self.table.deal_targets(in_hand)
        deck = self.decks.next_deck()
        dealt: list[tuple[Target, Card]] = []
        decided: set[int] = set()
        for i, (target, card) in enumerate(zip(targets, deck, strict=False)):
            if target.kind == "board" and target.index in (0, 3):
                await self.until(f"card {i} to be read", cards_read(i))
                street = "preflop" if target.index == 0 else "flop"
                await self._decide(sim, players, in_hand, dealt, decided, street=street,
                                   placed=placed)
            await self.before_card(i + 1)
            self.deal_card(card)
            await self.after_card(i + 1)
            dealt.append((target, card))
            if self.card_by_card:
                await self.until(f"card {i + 1} to be read", cards_read(i + 1))
        await self.until(f"card {len(dealt)} to be read", cards_read(len(dealt)))
        await self._decide(sim, players, in_hand, dealt, decided, street="river",
                           placed=placed)
        await self.until("the shoe and the chip reader to be up", devices_up)
        await self.console("settle")
        self.hands_played += 1
        self._heat_hand += 1
        await self.settle_payout()
        sim.clear()
        # read gone chip by chip: a chip that counts nothing (the tray's, D346) shows no amount
        await self.until("the table to be cleared", lambda s: spots_shown(s) == {}
                         and not self.table.chips_lying())

    def deal_card(self, card: Card) -> None:
        """Draw a card through the shoe's reader. A jammed shoe is cleared by the dealer
        (the card path freed, the shoe ready again) and the card drawn again."""
        try:
            self.shoe.deal_card(card)
        except ShoeSimulatorError as exc:
            if self.shoe.state.value != "jam":
                raise TableStuck(f"the shoe cannot deal: {exc}") from exc
            self.shoe.set_state("ready")
            self.fault_log.append(f"the shoe jammed ({exc}); the dealer cleared it")
            self.shoe.deal_card(card)

    # ---- points where a rehearsal puts its faults (simulators.rehearsal) -------------

    async def after_wagers(self, placed: Mapping[str, _Spots]) -> None:
        """The players' wagers lie on the spots; the dealer has not looked yet."""

    async def before_card(self, position: int) -> None:
        """The dealer is about to draw the hand's card at ``position`` (1-based)."""

    async def after_card(self, position: int) -> None:
        """The card at ``position`` has left the shoe."""

    # ---- the payout -------------------------------------------------------------------

    async def settle_payout(self) -> None:
        """Pay and take on the chip reader until the table has verified the payout of the
        hand just settled (nothing to do when it does not check payouts). An overpay fault
        is put right by the supervisor's override or by the dealer taking the chip back."""
        payout = self.glance().get("payout")
        if payout is None:
            return
        hand_id = payout["hand_id"]
        inject = self._overpay_now()
        moved = PaidSpots(self.chips, payout["spots"], self.table.chip_holders)
        over = pay_spots(self.chips, payout["spots"], overpay=inject)
        if over is None:
            self._overpay_due = inject  # no winning spot this hand: the next winner's
            await self.until(f"the payout of {hand_id} to be verified",
                             lambda s: (s.get("payout") or {}).get("hand_id") != hand_id)
            self.payouts_verified += 1
            moved.verified()
            return
        self.faults_injected += 1
        await self.until(f"the table to see the overpay on seat {over.seat} {over.spot}",
                         overpay_seen(hand_id, over))
        refused = await self._press("no_more_bets", {})
        if _SIGN_IN_AGAIN in str(refused.get("error")):
            self._session = None
            refused = await self._press("no_more_bets", {})
        if refused.get("ok"):
            raise TableStuck(f"the table opened a hand with hand {hand_id}'s payout overpaid")
        self.hands_blocked += 1
        self.last_refusal = str(refused.get("error"))
        what = (f"hand {hand_id}: seat {over.seat} {over.spot} overpaid by"
                f" {format_rand(over.cents)}; the table raised the payout alert and refused"
                " the next hand")
        if self.overpay_fix == "take_back":
            self.chips.remove(over.seat, over.spot, [over.uid])
            self.taken_back += 1
            self.fault_log.append(f"{what}; the dealer took the chip back")
            await self.until(f"the payout of {hand_id} to be verified",
                             lambda s: (s.get("payout") or {}).get("hand_id") != hand_id)
            self.payouts_verified += 1
            moved.verified()
            return
        await self.until(f"every other spot of {hand_id} to be paid",
                         only_over_left(hand_id, over))
        await self.supervise("payout_override", reason=(
            f"seat {over.seat} {over.spot} overpaid by {format_rand(over.cents)}: the"
            " player keeps it (virtual supervisor, fault injected)"))
        self.overrides += 1
        moved.verified()
        self.fault_log.append(f"{what}; supervisor {self.staff.supervisor.staff_id} overrode it")

    def _overpay_now(self) -> bool:
        if self.overpay_hand is not None and self._heat_hand == self.overpay_hand:
            self._overpay_due = True
        if self.overpay_chance and self._faults.random() < self.overpay_chance:
            self._overpay_due = True
        due, self._overpay_due = self._overpay_due, False
        return due

    # ---- chips ------------------------------------------------------------------------

    def _place(self, sim: ChipTable, seat: int, wagers: SeatWagers) -> _Spots:
        out: _Spots = {}
        for spot in WAGERS:
            amount = wagers.amount(spot)
            uids = [self._markers.pop()] if spot in wagers.markers else []
            if amount or uids:
                sim.place(seat, spot, amount or None, uids=uids)
            if amount:
                out[spot] = amount
        if wagers.markers:
            out["markers"] = sorted(wagers.markers)
        return out

    async def _decide(self, sim: ChipTable, players: Mapping[int, SeatPlayer],
                      in_hand: list[int], dealt: list[tuple[Target, Card]], decided: set[int],
                      *, street: str, placed: dict[str, _Spots]) -> None:
        board = [c for t, c in dealt if t.kind == "board"]
        with sim.moving():  # the players decide together
            moved = self._decide_each(sim, players, in_hand, dealt, decided, street=street,
                                      placed=placed, board=board)
        if moved:
            await self.until(f"the {street} Play bets to be seen",
                             lambda s: spots_shown(s) == {k: v for k, v in placed.items() if v})

    def _decide_each(self, sim: ChipTable, players: Mapping[int, SeatPlayer],
                     in_hand: list[int], dealt: list[tuple[Target, Card]], decided: set[int],
                     *, street: str, placed: dict[str, _Spots], board: list[Card]) -> bool:
        """Each seat still to decide plays or checks; whether a Play bet went down."""
        moved = False
        for seat in in_hand:
            if seat in decided:
                continue
            hole = [c for t, c in dealt if t.kind == "seat" and t.seat == seat]
            info = self.glance()["seats"][str(seat)]
            spots = placed[str(seat)]
            wagers = SeatWagers(**{w: spots.get(w, 0) for w in WAGERS if w != "play"},
                                markers=frozenset(spots.get("markers", ())))
            amount = players[seat].play(seat=seat, street=street, hole=hole, board=board,
                                        wagers=wagers, balance_cents=info["balance"])
            if amount:
                sim.place(seat, "play", amount)
                spots["play"] = amount
                decided.add(seat)
                moved = True
        return moved
