"""The technician's bench: what a person does to a simulated table's simulated devices, each
action checked first and refused with a specific reason (`BenchRefusal`, nothing changed).

- the shoe deals a chosen card, or the next card of the bench's own shuffle of the cards not
  yet dealt in this hand; a card already dealt in the hand is refused;
- chips are placed on a spot from the seat's stack (the chips the table's float says the
  seated entry holds, off the felt; when its own chips cannot make the amount, change is
  made on the spot between hands, as a table requiring issued chips sees it (D346), or
  colours change from the tray where the table does not require it) or from the tray (float chips: a
  starting stack, a payout), the values chosen as a dealer counts them; taken off a spot all
  at once or by amount, back to whoever holds them;
- a rewards or employee card is tapped on the ID reader;
- each device is unplugged and plugged back, and given the faults its simulator offers.

It works on the `drivers.adapter` protocols of the simulated devices (the table's wiring hands
them over) and on a `BenchTable` view of the running daemon: never on `simulators/`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from controller.sim_bench.change import choose_chips
from drivers.adapter import (
    FAULT_NAMES,
    ONE_SHOT_FAULTS,
    SimulatedChips,
    SimulatedDevice,
    SimulatedIds,
    SimulatedShoe,
    SimulatedShoeStates,
    SimulatedUnknownChips,
)
from drivers.readings import SPOTS
from game.chips.registry import ChipRegistry
from game.errors import InvalidCard
from game.money import format_rand
from game.poker.cards import DECK, Card, parse_card

__all__ = ["DEVICES", "ID_FORMS", "SHOE_STATES", "Bench", "BenchDevices", "BenchRefusal",
           "BenchTable"]

DEVICES: Final = ("shoe", "rfid", "id_reader")
SHOE_STATES: Final = ("jam", "cover_open", "empty", "ready")
ID_FORMS: Final = ("track2", "uid", "plain")
_NAMES: Final = {"shoe": "the shoe", "rfid": "the chip reader", "id_reader": "the ID reader"}
_CHANGE_CHIPS: Final = 50  # chips counted out as change in the wager's value, at most
_WAIT_S: Final = 30.0  # the longest the bench waits for the table to read a change (a guard)
_T = TypeVar("_T")


class BenchRefusal(Exception):
    """An action the bench refuses: ``status`` (400 bad input, 409 not now) and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BenchTable(Protocol):
    """What the bench reads of the running daemon."""

    @property
    def table_id(self) -> str:
        """The table's id."""
        ...

    def status(self) -> Mapping[str, Any]:
        """The daemon's status (seats, spots, hand)."""
        ...

    def chip_holders(self) -> Mapping[bytes, str]:
        """The table's float: the entry holding each chip bound to one."""
        ...

    def hand_cards(self) -> Sequence[str]:
        """The cards the hand in play has read ("As", ...)."""
        ...

    def console_url(self) -> str | None:
        """The dealer's console, once it listens."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchDevices:
    """The simulated devices of the table (None: that device is not simulated), and the chip
    registry its simulated reader mints chips from."""

    shoe: SimulatedShoe | None = None
    rfid: SimulatedChips | None = None
    id_reader: SimulatedIds | None = None
    registry: ChipRegistry | None = None
    seed: int = 0


class Bench:
    """The bench's actions on one table's simulated devices; one action at a time."""

    def __init__(self, table: BenchTable, devices: BenchDevices) -> None:
        self.table = table
        self.devices = devices
        self._lock = asyncio.Lock()
        self._plugged: dict[str, bool] = dict.fromkeys(DEVICES, True)
        self._hand: object = ()  # the hand the bench's cards were dealt in
        self._dealt: list[str] = []

    # ---- reading ----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The simulated devices as the bench page shows them."""
        status = self.table.status()
        devices: dict[str, Any] = {}
        for role in DEVICES:
            sim = self._device(role)
            if sim is None:
                devices[role] = {"simulated": False}
                continue
            devices[role] = {"simulated": True, "plugged": self._is_plugged(role, sim),
                             "faults": _active_faults(sim), "fault_names": list(FAULT_NAMES),
                             "one_shot": list(ONE_SHOT_FAULTS)}
        if self.devices.shoe is not None:
            devices["shoe"]["dealt"] = self._cards_this_hand()
        if self.devices.rfid is not None:
            devices["rfid"].update(self._chips_view(self.devices.rfid, status))
        hand = status.get("hand") or {}
        return {"ok": True, "table": self.table.table_id, "console": self.table.console_url(),
                "heat": status.get("heat"), "hand": hand.get("hand_id"),
                "phase": hand.get("phase"), "devices": devices}

    def _chips_view(self, chips: SimulatedChips, status: Mapping[str, Any]
                    ) -> dict[str, Any]:
        values = self._values()
        lying: dict[str, int] = {}
        on_felt: set[bytes] = set()
        for where in chips.spots():
            uids = chips.chips_on(where.seat, where.spot)
            on_felt |= uids
            if uids:
                lying[f"{where.seat}/{where.spot}"] = sum(values.get(u, 0) for u in uids)
        seats = {}
        for seat, info in sorted((status.get("seats") or {}).items()):
            entry = str(info["entry_id"])
            seats[seat] = {"entry_id": entry, "stack": sum(
                values[u] for u in self._held(entry, on_felt))}
        return {"spots": [[w.seat, w.spot] for w in chips.spots()], "lying": lying,
                "seats": seats, "tray": sum(values[u] for u in self._held(None, on_felt))}

    # ---- the shoe -----------------------------------------------------------------------

    async def deal(self, card: object = None) -> dict[str, Any]:
        """Deal `card` ("As"), or the next card of the bench's shuffle when None."""
        async with self._lock:
            shoe = self._need("shoe", self.devices.shoe)
            dealt = self._cards_this_hand()
            if card is None:
                left = [str(c) for c in self._deck() if str(c) not in dealt]
                if not left:
                    raise BenchRefusal(409, "every card of the deck was dealt in this hand")
                chosen = left[0]
            else:
                if not isinstance(card, str):
                    raise BenchRefusal(400, "card: a card such as \"As\" or \"10h\"")
                try:
                    chosen = str(parse_card(card))
                except InvalidCard as exc:
                    raise BenchRefusal(400, f"card: {exc}") from None
                if chosen in dealt:
                    raise BenchRefusal(409, f"{chosen} was dealt already in this hand"
                                            f" ({', '.join(dealt)})")
            await self._on_device("shoe", lambda: shoe.deal_card(chosen))
            self._dealt.append(chosen)
            return {"ok": True, "done": f"the shoe dealt {chosen}", "card": chosen}

    async def shoe_state(self, state: object) -> dict[str, Any]:
        """Put the shoe in a state: jammed, cover open, empty, or ready again."""
        async with self._lock:
            shoe = self._need("shoe", self.devices.shoe)
            if not isinstance(state, str) or state not in SHOE_STATES:
                raise BenchRefusal(400, f"state: one of {', '.join(SHOE_STATES)}")
            if not isinstance(shoe, SimulatedShoeStates):
                raise BenchRefusal(409, "this simulated shoe has no states to put it in")
            await self._on_device("shoe", lambda: shoe.set_state(state))
            return {"ok": True, "done": f"the shoe reports {state.replace('_', ' ')}"}

    async def power_cycle(self) -> dict[str, Any]:
        """The shoe loses power and comes back (what it had not sent is lost)."""
        async with self._lock:
            shoe = self._need("shoe", self.devices.shoe)
            if not isinstance(shoe, SimulatedShoeStates):
                raise BenchRefusal(409, "this simulated shoe cannot lose power")
            await self._on_device("shoe", shoe.power_cycle)
            return {"ok": True, "done": "the shoe lost power and came back"}

    def _cards_this_hand(self) -> list[str]:
        """The hand's cards as the daemon read them, and those the bench dealt since."""
        hand = (self.table.status().get("hand") or {}).get("hand_id")
        if hand != self._hand:
            self._hand, self._dealt = hand, []
        read = list(self.table.hand_cards()) if hand is not None else []
        return read + [c for c in self._dealt if c not in read]

    def _deck(self) -> list[Card]:
        """The hand's shuffle: seeded by the simulators' seed and the hand's id, so a table
        that restarts mid-heat deals each hand a new order (a counter that restarts with the
        process would deal an earlier hand's order again: the table holds the heat with a
        repeated-run deck alert) and the same run replays the same cards."""
        deck = list(DECK)
        random.Random(f"{self.devices.seed}:{self._hand}").shuffle(deck)
        return deck

    # ---- chips --------------------------------------------------------------------------

    async def place(self, seat: object, spot: object, cents: object,
                    source: object = "stack") -> dict[str, Any]:
        """Put `cents` on a seat's spot from the seat's stack or from the tray."""
        async with self._lock:
            chips = self._need("rfid", self.devices.rfid)
            where = self._spot(chips, seat, spot)
            amount = _cents(cents)
            if source not in ("stack", "tray"):
                raise BenchRefusal(400, "from: \"stack\" (the seat's chips) or \"tray\""
                                        " (the float: a starting stack, a payout)")
            on_felt = {u for w in chips.spots() for u in chips.chips_on(w.seat, w.spot)}
            values = self._values()
            tray = self._held(None, on_felt)
            if source == "stack":
                entry = self._entry(where[0])
                pool, whose = self._held(entry, on_felt), f"seat {where[0]}'s stack"
                have = sum(values[u] for u in pool)
                if have < amount:
                    raise BenchRefusal(409, f"{whose} holds {format_rand(have)}: it cannot"
                                            f" wager {format_rand(amount)}")
                uids = choose_chips(amount, ((u, values[u]) for u in pool))
                if uids is None and (self.table.status().get("chips") or {}).get(
                        "require_issued"):  # change made on the spot (D346)
                    return await self._change_on_spot(chips, where, entry=entry,
                                                      amount=amount, pool=pool, tray=tray,
                                                      values=values)
                if uids is None:  # the dealer colours change from the tray (the table
                    # counts float chips for any seat: require_issued off)
                    uids = choose_chips(amount, ((u, values[u]) for u in pool + tray))
                    whose += " with change from the tray"
            else:
                pool, whose = tray, "the tray"
                uids = choose_chips(amount, ((u, values[u]) for u in pool))
            if uids is None:
                have = sum(values[u] for u in pool)
                raise BenchRefusal(409, f"{whose} cannot make {format_rand(amount)} (it holds"
                                        f" {format_rand(have)} in {_chips(len(pool))})")
            await self._on_device("rfid", lambda: chips.place(*where, uids=uids))
            return {"ok": True, "chips": len(uids),
                    "done": f"placed {format_rand(amount)} ({_chips(len(uids))}) from {whose}"
                            f" on seat {where[0]} {where[1]}"}

    async def _change_on_spot(self, chips: SimulatedChips, where: tuple[int, str], *,
                              entry: str, amount: int, pool: list[bytes], tray: list[bytes],
                              values: Mapping[bytes, int]) -> dict[str, Any]:
        """The seat's own chips cannot make `amount`: its largest chips are put on the spot,
        read, taken to the tray and read gone; tray chips worth the same are counted out
        there, the table binds them to the entry (D346), and the player takes back what
        is not the wager."""
        seat, spot = where
        hand = self.table.status().get("hand") or {}
        if hand:
            raise BenchRefusal(409, f"seat {seat}'s own chips cannot make"
                                    f" {format_rand(amount)}, and change is made on a spot"
                                    " between hands: take the hand to its end first")
        give: list[bytes] = []
        for uid in sorted(pool, key=lambda u: (-values[u], u)):
            if sum(values[u] for u in give) >= amount:
                break
            give.append(uid)
        worth = sum(values[u] for u in give)
        wager = choose_chips(amount, ((u, values[u]) for u in tray))
        # the rest in chips no bigger than the wager, for the wagers to come (as many as a
        # spot's reader reads well), else the fewest chips
        rest = None if wager is None else [] if worth == amount else choose_chips(
            worth - amount, ((u, values[u]) for u in tray
                             if u not in wager and values[u] <= amount))
        if wager is not None and (rest is None or len(rest) > _CHANGE_CHIPS):
            rest = choose_chips(worth - amount,
                                ((u, values[u]) for u in tray if u not in wager))
        if wager is None or rest is None:
            raise BenchRefusal(409, f"the tray cannot change {format_rand(worth)} for seat"
                                    f" {seat}'s wager of {format_rand(amount)}")
        lying = sum(values.get(u, 0) for u in chips.chips_on(seat, spot))
        change = [*wager, *rest]
        await self._on_device("rfid", lambda: chips.place(*where, uids=give))
        await self._until_read(where, lying + worth, "the chips for change")
        await self._on_device("rfid", lambda: chips.remove(*where, give))
        await self._until_read(where, lying, "the chips for change taken to the tray")
        await self._on_device("rfid", lambda: chips.place(*where, uids=change))
        await self._until(f"the change to be bound to entry {entry}", lambda: all(
            self.table.chip_holders().get(u) == entry for u in change))
        if rest:
            await self._on_device("rfid", lambda: chips.remove(*where, rest))
        await self._until_read(where, lying + amount, "the wager")
        return {"ok": True, "chips": len(wager),
                "done": f"placed {format_rand(amount)} ({_chips(len(wager))}) from seat {seat}'s"
                        f" stack on seat {seat} {spot}, with change made on the spot"
                        f" ({format_rand(worth)} changed from the tray)"}

    async def _until_read(self, where: tuple[int, str], cents: int, what: str) -> None:
        seat, spot = where
        await self._until(f"{what} to be read on seat {seat} {spot}", lambda: int(
            ((self.table.status().get("spots") or {}).get(str(seat)) or {}).get(spot, 0))
            == cents)

    async def _until(self, what: str, check: Callable[[], bool]) -> None:
        """Wait for the table to read what the bench did (a refusal after `_WAIT_S`)."""
        deadline = asyncio.get_running_loop().time() + _WAIT_S
        while not check():
            if asyncio.get_running_loop().time() > deadline:
                raise BenchRefusal(504, f"the table did not show {what} within {_WAIT_S:g} s")
            await asyncio.sleep(0.02)

    async def take(self, seat: object, spot: object, cents: object = None) -> dict[str, Any]:
        """Take every chip off a spot, or chips worth `cents`."""
        async with self._lock:
            chips = self._need("rfid", self.devices.rfid)
            where = self._spot(chips, seat, spot)
            lying = chips.chips_on(*where)
            values = self._values()
            if not lying:
                raise BenchRefusal(409, f"no chips lie on seat {where[0]} {where[1]}")
            uids: list[bytes] | None = sorted(lying)
            if cents is not None:
                amount = _cents(cents)
                uids = choose_chips(amount, ((u, values.get(u, 0)) for u in sorted(lying)))
                if uids is None:
                    have = sum(values.get(u, 0) for u in lying)
                    raise BenchRefusal(409, f"the chips on seat {where[0]} {where[1]} (worth"
                                            f" {format_rand(have)}) cannot make"
                                            f" {format_rand(amount)}")
            taken = list(uids or ())
            await self._on_device("rfid", lambda: chips.remove(*where, taken))
            worth = sum(values.get(u, 0) for u in taken)
            return {"ok": True, "chips": len(taken),
                    "done": f"took {format_rand(worth)} ({_chips(len(taken))}) off seat"
                            f" {where[0]} {where[1]}"}

    async def unknown_chip(self, seat: object, spot: object, count: object = 1
                           ) -> dict[str, Any]:
        """Lay chips the registry does not know on a spot (a chip from elsewhere)."""
        async with self._lock:
            chips = self._need("rfid", self.devices.rfid)
            where = self._spot(chips, seat, spot)
            if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 20:
                raise BenchRefusal(400, "count: 1 to 20 chips")
            if not isinstance(chips, SimulatedUnknownChips):
                raise BenchRefusal(409, "this simulated chip reader cannot lay unknown chips")
            n = count
            await self._on_device("rfid", lambda: chips.place_unknown(*where, n))
            return {"ok": True, "done": f"laid {_chips(n)} the registry does not know on seat"
                                        f" {where[0]} {where[1]}"}

    def _spot(self, chips: SimulatedChips, seat: object, spot: object) -> tuple[int, str]:
        if isinstance(seat, str) and seat.isdigit():
            seat = int(seat)
        if not isinstance(seat, int) or isinstance(seat, bool):
            raise BenchRefusal(400, "seat: a seat number such as 1")
        if not isinstance(spot, str) or spot not in SPOTS:
            raise BenchRefusal(400, f"spot: one of {', '.join(SPOTS)}, not {str(spot)[:40]!r}")
        covered = {(w.seat, w.spot) for w in chips.spots()}
        if (seat, spot) not in covered:
            seats = sorted({s for s, _ in covered})
            raise BenchRefusal(400, f"seat {seat} {spot}: no such spot under this table's"
                                    f" chip reader (seats {', '.join(map(str, seats))})")
        return seat, spot

    def _entry(self, seat: int) -> str:
        info = (self.table.status().get("seats") or {}).get(str(seat))
        if not info:
            raise BenchRefusal(409, f"seat {seat} has no entry seated, so no stack: place"
                                    " from the tray")
        return str(info["entry_id"])

    def _values(self) -> dict[bytes, int]:
        """The face value of each chip of the set in play."""
        registry = self.devices.registry
        if registry is None:
            return {}
        return {c.uid: c.value_cents for c in registry if c.chip_set == registry.chip_set}

    def _held(self, holder: str | None, on_felt: set[bytes]) -> list[bytes]:
        """The chips of the set in play `holder` holds (None: the tray), off the felt, in
        UID order: the table's float, or the registry's issue where the float says nothing."""
        registry = self.devices.registry
        if registry is None:
            return []
        holders = self.table.chip_holders()
        return sorted(c.uid for c in registry
                      if c.chip_set == registry.chip_set and c.uid not in on_felt
                      and holders.get(c.uid, c.issued_to) == holder)

    # ---- the ID reader ------------------------------------------------------------------

    async def tap(self, number: object, form: object = "track2") -> dict[str, Any]:
        """Tap a rewards or employee card: its number as the reader sends this form."""
        async with self._lock:
            ids = self._need("id_reader", self.devices.id_reader)
            if not isinstance(number, str) or not number.strip():
                raise BenchRefusal(400, "number: the card's number (digits, or a UID in hex)")
            if form not in ID_FORMS:
                raise BenchRefusal(400, f"form: one of {', '.join(ID_FORMS)}")
            text = number.strip()
            await self._on_device("id_reader", lambda: ids.tap(text, form), bad_input=True)
            return {"ok": True, "done": f"tapped card {_masked(text)} ({form})"}

    # ---- any device ---------------------------------------------------------------------

    async def plug(self, role: str, plugged: bool) -> dict[str, Any]:
        """Unplug a device, or plug it back."""
        async with self._lock:
            sim = self._need(role, self._device(role))
            await self._on_device(role, sim.plug if plugged else sim.unplug)
            self._plugged[role] = plugged
            done = "plugged in" if plugged else "unplugged"
            return {"ok": True, "done": f"{_NAMES[role]} {done}"}

    async def fault(self, role: str, name: object, value: object = None) -> dict[str, Any]:
        """Switch a fault (with a value: a probability, a delay in seconds, true/false for
        "silent"; 0 or false turns it off), or put a one-shot fault on the next message."""
        async with self._lock:
            sim = self._need(role, self._device(role))
            if not isinstance(name, str) or name not in FAULT_NAMES:
                raise BenchRefusal(400, f"fault {str(name)[:40]!r} does not exist; the faults"
                                        f" are {', '.join(FAULT_NAMES)}")
            if value is None:
                if name not in ONE_SHOT_FAULTS:
                    raise BenchRefusal(400, f"fault {name} needs a value (one-shot faults:"
                                            f" {', '.join(ONE_SHOT_FAULTS)})")
                await self._on_device(role, lambda: sim.inject(name), bad_input=True)
                return {"ok": True, "done": f"{_NAMES[role]}: {name} on the next message"}
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if (name == "silent" and isinstance(value, bool)) or (name != "silent" and number):
                setting: float | bool = value  # type: ignore[assignment]
            else:
                raise BenchRefusal(400, f"fault {name}: the value is"
                                        f" {'true or false' if name == 'silent' else 'a number'}")
            await self._on_device(role, lambda: sim.set_fault(name, setting), bad_input=True)
            return {"ok": True, "done": f"{_NAMES[role]}: {name} = {value}"}

    def _device(self, role: str) -> SimulatedDevice | None:
        if role not in DEVICES:
            raise BenchRefusal(400, f"no device {role[:40]!r}: one of {', '.join(DEVICES)}")
        found: SimulatedDevice | None = getattr(self.devices, role)
        return found

    def _need(self, role: str, sim: _T | None) -> _T:
        if sim is None:
            raise BenchRefusal(409, f"{_NAMES[role]} of this table is not simulated: the bench"
                                    " drives simulated devices only")
        return sim

    def _is_plugged(self, role: str, sim: object) -> bool:
        plugged = getattr(sim, "plugged", None)
        if isinstance(plugged, bool):
            return plugged
        if hasattr(sim, "path"):  # a pty device: its path is None while unplugged
            return sim.path is not None
        return self._plugged[role]

    async def _on_device(self, role: str, call: Callable[[], object], *,
                         bad_input: bool = False) -> None:
        """Run a simulator's control in a worker thread (a simulator may wait on its own
        thread); what it refuses is a refusal naming the device."""
        try:
            await asyncio.to_thread(call)
        except ValueError as exc:
            raise BenchRefusal(400 if bad_input else 409, f"{_NAMES[role]}: {exc}") from None
        except Exception as exc:  # the simulated device cannot do it now (unplugged, jammed)
            raise BenchRefusal(409, f"{_NAMES[role]} refused: {exc}") from None


def _cents(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise BenchRefusal(400, "cents: a whole number of cents above 0 (R25 is 2500)")
    return value


def _active_faults(sim: object) -> list[dict[str, Any]]:
    faults = getattr(sim, "faults", None)
    active = []
    for name in FAULT_NAMES:
        value = getattr(faults, name, None)
        if value:
            active.append({"name": name, "value": value})
    return active


def _chips(n: int) -> str:
    return f"{n} chip" if n == 1 else f"{n} chips"


def _masked(number: str) -> str:
    return number if len(number) <= 4 else "…" + number[-4:]
