"""A table rehearsal: the virtual dealer (simulators.table_play) playing one table while the
faults of a schedule (simulators.table_faults) strike its simulated shoe, chip reader, payout
and deck, and the virtual staff putting each right as a real table's would: waiting for a
device to come back, clearing a jam, taking a bad chip off a spot, voiding a hand whose card
was lost, paying what was forgotten, a supervisor overriding or clearing with a reason.

Each fault is recorded with the table's message seq when it struck, so the run report
(simulators.rehearsal_report) can match it with the alerts the table published.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from game.chips.registry import Chip, ChipRegistry
from game.money import format_rand
from game.poker.cards import Card
from simulators.chip_steps import PaidSpots, sync_owners
from simulators.decks import FACTORY_ORDER
from simulators.payout import pay_spots
from simulators.rehearsal_report import FaultRecord, RunReport, TableMessage
from simulators.rfid import RfidReaderSimulator
from simulators.scripted_play import Decks, ScriptError, SeatPlayer
from simulators.table_faults import FAULTS, FaultSchedule, FaultSpec
from simulators.table_play import TableStuck, VirtualTable, play_registry

__all__ = ["FOREIGN_SET", "CardLost", "RehearsalTable", "rehearsal_registry"]

FOREIGN_SET: Final = "cash-2019"  # another casino's chips, registered so the table knows them
_FOREIGN = [bytes([0xE0, 0x5E, 7, 1, 0, 0, 0, n]) for n in range(8)]
UNPLUGGED_S: Final = 1.0  # how long a pulled cable stays out
MessageFeed = Callable[[int], Sequence[TableMessage]]  # the table's messages after a seq


def rehearsal_registry() -> ChipRegistry:
    """The virtual table's chips (simulators.table_play) and a few of another chip set."""
    base = play_registry()
    chips = [*base, *(Chip(uid=u, value_cents=2_500, chip_set=FOREIGN_SET) for u in _FOREIGN)]
    return ChipRegistry(chips, chip_set=base.chip_set)


class CardLost(TableStuck):
    """A card left the shoe and the table never read it: the hand cannot be dealt on."""


class RehearsalTable(VirtualTable):
    """The virtual dealer with a fault schedule; `rehearse` plays, `report` says what came."""

    card_by_card = True  # its faults come between one card and the next
    chips: RfidReaderSimulator  # its reader faults (unplug, a hung firmware) are the SR-48's

    def __init__(self, *args: Any, schedule: FaultSchedule, messages: MessageFeed,
                 hands: int | None = None, deck_label: str = "shuffled",
                 unshuffled: str | None = None, unplugged_s: float = UNPLUGGED_S,
                 **options: Any) -> None:
        """``unshuffled``: every deck is one (the mode's name: factory, riffle, repeated)."""
        super().__init__(*args, **options)
        self.unshuffled_mode = unshuffled
        self.schedule = schedule
        self.messages = messages
        self.hands_limit = hands
        self.unplugged_s = unplugged_s
        self.report = RunReport(seed=self.seed, deck=deck_label)
        self.hand_no = 0  # hands dealt this run (voided ones too)
        self._strikes: list[FaultSpec] = []
        self._underpay_due: FaultSpec | None = None
        self._open: list[FaultRecord] = []  # struck this hand: their alerts end with it
        self._pending_overpay: FaultSpec | None = None
        self._power: FaultRecord | None = None  # a power cut waiting for its card to leave
        self.decks = _FaultDecks(self.decks, self)
        # Journals the device trouble healed since the last notice (D347), before the report.
        self.flush_recoveries: Callable[[], Awaitable[None]] | None = None

    # ---- the run ----------------------------------------------------------------------

    async def rehearse(self) -> RunReport:
        """Play until `hands` hands (or `heats` heats) are done; the report, even when the
        dealer had to stop (the reason is in it)."""
        try:
            await self._play()
        except (TableStuck, ScriptError) as exc:
            self.report.stopped = str(exc)
        self.report.hands_played = self.hand_no
        for spec in self.schedule.specs:
            if spec.hand is not None and spec.hand > self.hand_no:
                self._missed(spec, f"the run ended before hand {spec.hand}")
        for due in (self._pending_overpay, self._underpay_due):
            if due is not None:
                self._missed(due, "no winning spot to mis-pay in the hands played")
        if self.flush_recoveries is not None:
            await self.flush_recoveries()
        self.report.match(self.messages(0))
        return self.report

    def _missed(self, spec: FaultSpec, why: str) -> None:
        record = self._record(spec, "nothing: it never struck", to_end=True)
        record.problem = why

    def _done(self) -> bool:
        return self.hands_limit is not None and self.hand_no >= self.hands_limit

    async def _play(self) -> None:
        await self.ensure_roster()
        if self.unshuffled_mode is not None:
            spec = FaultSpec(FAULTS["deck.unshuffled"], probability=1.0,
                             written=f"--deck {self.unshuffled_mode}")
            self._record(spec, f"every hand dealt from an unshuffled deck"
                         f" ({self.unshuffled_mode})", to_end=True, remedy=(
                             "the table holds each next hand until a supervisor counts the"
                             " deck and clears the hold with a reason"))
        for spec in self.schedule.line_faults():
            setattr(self.shoe.faults, spec.kind.name.split(".")[1], spec.probability)
            self._record(spec, f"{spec.probability:.0%} of the shoe's frames, all run",
                         remedy="the driver refuses a bad frame and the shoe sends it again"
                         " (go-back-N)", to_end=True)
        players: dict[int, SeatPlayer] = {}
        left_open = await self._resume()
        for _ in range(max(self.heats, 1)):
            entries = left_open or await self.seat_heat()
            left_open = {}
            players = {seat: players.get(seat) or self.make_players({seat: e})[seat]
                       for seat, e in entries.items()}
            self._heat_hand, self._overpay_due = 0, False
            while self.table.status().get("seats") and not self._done():
                await self.play_hand(players)
                if self.hand_pause:
                    await asyncio.sleep(self.hand_pause)
            if self.table.status().get("seats"):
                return  # stopped mid-heat after `hands` hands: the table keeps its heat open
            await self.finish_heat()
            if self._done():
                return

    async def _resume(self) -> dict[int, str]:
        """A run directory used again: the heat an earlier run left open is played out first
        (its interrupted hand voided by the supervisor, its payout paid); its seats."""
        sync_owners(self)
        status = self.table.status()
        if not status.get("heat"):
            await self.pick_up()
            return {}
        if status.get("hand"):
            await self.supervise("void", reason="hand interrupted when the last rehearsal"
                                 " stopped (virtual supervisor)")
        await super().settle_payout()
        await self.pick_up()
        return {int(s): str(e["entry_id"]) for s, e in status.get("seats", {}).items()}

    async def play_hand(self, players: Mapping[int, SeatPlayer]) -> None:
        """One hand with this hand's faults; a hand whose card was lost is voided."""
        self.hand_no += 1
        self._strikes = self.schedule.for_hand(self.hand_no)
        self._open = []
        for spec in self._take("payout.overpay"):
            self._overpay_due = True
            self._pending_overpay = spec
        for spec in self._take("payout.underpay"):
            self._underpay_due = spec
        try:
            await super().play_hand(players)
        except CardLost as exc:
            await self._void(str(exc))
        for spec in self._strikes:  # a card the hand never reached, no wager to put a chip on
            self._missed(spec, "the hand offered nothing to strike (no such card, no wager)")
        last = self._last_seq()
        for record in self._open:
            record.to_seq = last if record.to_seq is None else record.to_seq

    async def _void(self, why: str) -> None:
        reason = f"{why} (virtual supervisor)"
        await self.supervise("void", reason=reason)
        self.report.hands_voided += 1
        for record in self._open:
            if record.spec.kind.name == "shoe.power":
                record.remedy = (f"supervisor {self.staff.supervisor.staff_id} voided the hand"
                                 f" ({why}); every wager returned")
        self.chips.clear()  # the players take their wagers back
        await self.until("the table to be cleared", lambda s: not any(
            v for v in s.get("spots", {}).values()))

    # ---- faults at the wagers ------------------------------------------------------------

    async def after_wagers(self, placed: Mapping[str, Mapping[str, Any]]) -> None:
        """Chip and reader faults strike once the wagers lie on the spots."""
        seats = [int(s) for s, v in placed.items() if v.get("ante")]
        for spec in self._take("rfid."):
            name = spec.kind.name
            if name in ("rfid.unplug", "rfid.stall"):
                await self._reader_down(spec)
            elif seats:
                await self._bad_chip(spec, seats)

    async def _reader_down(self, spec: FaultSpec) -> None:
        sim = self.chips
        record = self._record(spec, "the chip reader's cable pulled" if spec.kind.name ==
                              "rfid.unplug" else "the chip reader's firmware hung (silent)")
        if spec.kind.name == "rfid.unplug":
            sim.unplug()
        else:
            sim.faults.silent = True
        seen = await self._until(lambda s: "rfid" in s.get("device_faults", {}))
        if spec.kind.name == "rfid.unplug":
            await asyncio.sleep(self.unplugged_s)
            sim.plug()
            fix = f"the dealer plugged it back after {self.unplugged_s:g} s"
        else:
            sim.faults.silent = False
            fix = "the reader answered again"
        back = await self._until(lambda s: not s.get("device_faults"))
        record.remedy = f"{fix}; the driver reconnected" if back else f"{fix}; still down"
        if not seen:
            record.problem = "the table never showed the chip reader down"

    async def _bad_chip(self, spec: FaultSpec, seats: Sequence[int]) -> None:
        sim, seat = self.chips, seats[0]
        name = spec.kind.name
        if name == "rfid.pooled_chip":
            await self._pooled_chip(spec, seats)
            return
        if name == "rfid.cloned_chip":
            uid = sorted(sim.chips_on(seat, "ante"))[0]
            where = (seats[1] if len(seats) > 1 else seat, "odds")
            sim.place(*where, uids=[uid], clone=True)
            what = (f"a copy of chip {uid.hex().upper()} (seat {seat} ante) put on seat"
                    f" {where[0]} odds")
        else:
            uids = list(sim.place_unknown(seat, "ante") if name == "rfid.unknown_chip"
                        else sim.place(seat, "ante", uids=[_free_foreign(sim)]))
            uid, where = uids[0], (seat, "ante")
            what = f"chip {uid.hex().upper()} ({name.split('.')[1]}) put on seat {seat} ante"
        record = self._record(spec, what)
        if not await self._alert_seen(record):
            record.problem = f"the table raised no {spec.kind.alerts[0]} within the wait"
        sim.remove(*where, [uid])
        record.remedy = (f"the dealer took the chip off seat {where[0]} {where[1]} and the"
                         " spot was read again")

    async def _pooled_chip(self, spec: FaultSpec, seats: Sequence[int]) -> None:
        """A player passes one of its chips to another seat's player, who wagers it."""
        sim = self.chips
        if len(seats) < 2:
            self._missed(spec, "one seat wagered: no other seat to pass a chip to")
            return
        giver, taker = seats[1], seats[0]
        lying = {u for uids in sim.table().values() for u in uids}
        entry = sim.seat_entries.get(giver)
        mine = [u for u in sim.chips_of(entry) if u not in lying] if entry else []
        if not mine:
            self._missed(spec, f"seat {giver}'s entry holds no chip off the felt to pass")
            return
        uid = mine[0]
        sim.place(taker, "ante", uids=[uid])
        record = self._record(spec, f"chip {uid.hex().upper()} of seat {giver}'s entry {entry}"
                              f" put on seat {taker} ante")
        if not await self._alert_seen(record):
            record.problem = f"the table raised no {spec.kind.alerts[0]} within the wait"
        sim.remove(taker, "ante", [uid])
        record.remedy = (f"the dealer took the chip off seat {taker} ante and gave it back to"
                         f" seat {giver}'s player; the spot was read again")

    # ---- faults at the shoe ---------------------------------------------------------------

    async def before_card(self, position: int) -> None:
        """Shoe faults strike before the card they name is drawn."""
        for spec in [s for s in self._strikes if s.kind.name.startswith("shoe.")
                     and s.card == position]:
            self._strikes.remove(spec)
            await self._shoe_fault(spec, position)

    async def _shoe_fault(self, spec: FaultSpec, position: int) -> None:
        shoe, name = self.shoe, spec.kind.name
        if name in ("shoe.corrupt", "shoe.drop"):
            shoe.faults.inject(name.split(".")[1])
            self._record(spec, f"card {position}'s frame {name.split('.')[1]}"
                         f"{'ed' if name.endswith('corrupt') else 'ped'} on the line",
                         remedy="the driver asked again and the shoe resent the frame")
        elif name == "shoe.jam":
            shoe.set_state("jam")
            self._record(spec, f"the shoe jammed before card {position}",
                         remedy="the dealer cleared the jam and drew the card again")
        elif name == "shoe.power":
            shoe.faults.silent = True  # the card's report never leaves the shoe
            self._power = self._record(spec, f"the shoe lost power as card {position} left it")
        else:
            await self._shoe_down(spec, position)

    async def _shoe_down(self, spec: FaultSpec, position: int) -> None:
        shoe = self.shoe
        unplug = spec.kind.name == "shoe.unplug"
        record = self._record(spec, f"before card {position}: " + (
            "the shoe's cable pulled" if unplug else "the shoe's firmware hung (silent)"))
        if unplug:
            shoe.disconnect()
        else:
            shoe.faults.silent = True
        seen = await self._until(lambda s: "shoe" in s.get("device_faults", {}))
        if unplug:
            await asyncio.sleep(self.unplugged_s)
            path = shoe.reconnect()
            fix = f"the dealer plugged it back after {self.unplugged_s:g} s (now {path})"
        else:
            shoe.faults.silent = False
            fix = "the shoe answered again"
        back = await self._until(lambda s: not s.get("device_faults"))
        record.remedy = (f"the dealer waited; {fix}; the driver reconnected" if back
                         else f"{fix}; the shoe stayed down")
        if not seen:
            record.problem = "the table never showed the shoe down"

    async def after_card(self, position: int) -> None:
        """The power cut lands after its card left the shoe: that card is lost."""
        record = self._power
        if record is None:
            return
        self._power = None
        self.shoe.power_cycle()
        self.shoe.faults.silent = False
        await self._alert_seen(record)
        await self._until(lambda s: not s.get("device_faults"))
        read = await self._until(lambda s: (s.get("hand") or {}).get("cards_read", 0)
                                 >= position, limit=1.0)
        if read:
            record.remedy = "the card was read after all; the hand went on"
            return
        raise CardLost(f"card {position} left the shoe as it lost power and was never read")

    # ---- faults at the payout and the deck ----------------------------------------------------

    async def settle_payout(self) -> None:
        """The payout, with a mis-pay this hand if one is due."""
        spec = self._underpay_due
        payout = self.table.status().get("payout")
        if spec is not None and payout is not None:
            winners = [s for s in payout["spots"] if s.get("result") == "win"
                       and s.get("state") != "paid"]
            if winners:
                self._underpay_due = None
                await self._underpay(spec, payout, winners[0])
                return
        overpay = self._pending_overpay
        before, seq = self.faults_injected, self._last_seq()
        await super().settle_payout()
        if overpay is not None and self.faults_injected > before:
            self._pending_overpay = None
            late = "" if overpay.hand == self.hand_no else (
                f" (due at hand {overpay.hand}: the first winning hand since)")
            record = self._record(overpay, "the dealer paid a winning spot one chip too"
                                  f" many{late}", remedy=self.fault_log[-1].split("; ", 1)[-1])
            record.from_seq = seq

    async def _underpay(self, spec: FaultSpec, payout: Mapping[str, Any],
                        short: Mapping[str, Any]) -> None:
        hand_id, key = payout["hand_id"], (short["seat"], short["spot"])
        moved = PaidSpots(self.chips, payout["spots"], self.table.chip_holders)
        pay_spots(self.chips, [s for s in payout["spots"] if (s["seat"], s["spot"]) != key])
        record = self._record(spec, f"hand {hand_id}: the dealer did not pay seat {key[0]}"
                              f" {key[1]} ({format_rand(int(short['expected']))} due)")
        await self.until("every other spot to be paid", lambda s: all(
            x["state"] == "paid" for x in (s.get("payout") or {}).get("spots", [])
            if (x["seat"], x["spot"]) != key) or (s.get("payout") or {}).get("hand_id")
            != hand_id)
        checked = await self._press("payout_check", {})  # "payout done": the table checks
        refused = await self._press("no_more_bets", {})
        if refused.get("ok"):
            record.problem = "the table opened the next hand with a spot unpaid"
            return
        self.hands_blocked += 1
        pay_spots(self.chips, [short])
        await self.until(f"the payout of {hand_id} to be verified",
                         lambda s: (s.get("payout") or {}).get("hand_id") != hand_id)
        self.payouts_verified += 1
        moved.verified()
        shown = "; ".join(f"{k}: {v}" for k, v in (("payout done", checked.get("error")),
                                                   ("next hand", refused.get("error"))) if v)
        record.remedy = (f"the table refused to go on ({shown or 'payout not verified'}); the"
                         " dealer paid the rest onto the spot and the readers verified it")

    def unshuffled(self) -> bool:
        """Whether this hand's deck is the unshuffled one (recorded as it is dealt)."""
        for spec in self._take("deck.unshuffled"):
            self._record(spec, "the hand dealt from a deck in new-deck order",
                         remedy="the table holds the next hand until a supervisor counts the"
                         " deck and clears the hold with a reason", to_end=True)
            return True
        return False

    # ---- bookkeeping ----------------------------------------------------------------------

    def _take(self, prefix: str) -> list[FaultSpec]:
        taken = [s for s in self._strikes if s.kind.name.startswith(prefix)]
        self._strikes = [s for s in self._strikes if s not in taken]
        return taken

    def _record(self, spec: FaultSpec, what: str, *, remedy: str = "",
                to_end: bool = False) -> FaultRecord:
        record = FaultRecord(spec=spec, hand=self.hand_no, what=what,
                             from_seq=self._last_seq(), remedy=remedy)
        self.report.faults.append(record)
        if not to_end:
            self._open.append(record)
        return record

    def _last_seq(self) -> int:
        seen = self.messages(0)
        return seen[-1].seq if seen else 0

    async def _alert_seen(self, record: FaultRecord) -> bool:
        kinds = set(record.spec.kind.alerts)
        return await self._until(lambda _: any(
            m.kind in kinds for m in self.messages(record.from_seq)))

    async def _until(self, check: Callable[[Mapping[str, Any]], bool], *,
                     limit: float | None = None) -> bool:
        """Whether `check` came true within `limit` (default: the dealer's timeout)."""
        deadline = time.monotonic() + (self.timeout if limit is None else limit)
        while not check(self.table.status()):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True


class _FaultDecks:
    """The dealer's decks, with an unshuffled one on the hands a fault names."""

    def __init__(self, inner: Decks, table: RehearsalTable) -> None:
        self.inner, self.table = inner, table

    def next_deck(self) -> list[Card]:
        """The next hand's cards, top card first."""
        deck = self.inner.next_deck()  # drawn anyway: the later hands keep their cards
        return list(FACTORY_ORDER) if self.table.unshuffled() else deck


def _free_foreign(sim: Any) -> bytes:
    lying = {u for uids in sim.table().values() for u in uids}
    return next(u for u in _FOREIGN if u not in lying)
