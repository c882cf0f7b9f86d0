"""The table's felt in software: which chips lie on which betting spot, and who holds each chip.

Every simulated chip reader reads the same `Felt`: the SR-48 simulator (simulators.rfid) and
the Metratec QuasarMX simulators (simulators.quasar) alike, so the virtual dealer
(simulators.table_play, chip_steps, payout) lays and takes chips the same way whatever reader
the table has. A reader learns of moves through `listen` (called with the lock held), and
reads a spot with `lying`.

Chips are placed by seat and spot (``place(1, "ante", 2500)``), minted from a registry
(`build_sim_registry`, or one given); ``owners`` follows the table's float (an entry id, or
None: back in the float) where it moved a chip away from the registry's ``issued_to``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from itertools import islice
from typing import Protocol

from drivers.readings import SPOTS, SpotId
from game.chips.registry import ChipRegistry
from simulators.sim_chips import build_sim_registry, make_change, sim_seat_entries

__all__ = ["ChipTable", "Felt", "OnFelt", "spot_id"]

MoveListener = Callable[[tuple[SpotId, ...]], None]


class ChipTable(Protocol):
    """The table API the virtual dealer moves chips with: a `Felt`, the SR-48 simulator
    (`simulators.rfid.RfidReaderSimulator`) and a QuasarMX table
    (`simulators.quasar_table.QuasarTable`) alike."""

    @property
    def registry(self) -> ChipRegistry: ...

    seat_entries: dict[int, str]
    owners: dict[bytes, str | None]
    change_from_float: bool

    def chips_on(self, seat: int, spot: str) -> frozenset[bytes]: ...

    def table(self) -> dict[SpotId, frozenset[bytes]]: ...

    def owner_of(self, uid: bytes) -> str | None: ...

    def chips_of(self, entry: str) -> list[bytes]: ...

    def place(
        self, seat: int, spot: str, cents: int | None = None, *, uids: Iterable[bytes] = (),
        float_only: bool = False, clone: bool = False, avoid: Iterable[bytes] = (),
    ) -> tuple[bytes, ...]: ...

    def remove(
        self, seat: int, spot: str, uids: Iterable[bytes] | None = None
    ) -> tuple[bytes, ...]: ...

    def clear_seat(self, seat: int) -> None: ...

    def clear(self) -> None: ...

    def can_make(self, seat: int, amounts: Iterable[int]) -> bool: ...

    def moving(self) -> AbstractContextManager[None]: ...


class Felt:
    """The chips on a table's spots; thread-safe (one lock, shared with the readers on it)."""

    def __init__(
        self,
        *,
        registry: ChipRegistry | None = None,
        seat_entries: Mapping[int, str] | None = None,
        seed: int = 0,
        lock: threading.Condition | None = None,
    ) -> None:
        built = registry is None
        self.registry = build_sim_registry() if registry is None else registry
        self.seat_entries = dict(
            seat_entries if seat_entries is not None else sim_seat_entries() if built else {}
        )
        # Who holds each chip now, where the table's float moved it away from the registry's
        # issued_to (an entry id, or None: back in the float); kept by the virtual dealer.
        self.owners: dict[bytes, str | None] = {}
        # When an entry's own chips cannot make an amount, make it with float chips as well
        # (the virtual dealer colours change); off, such a placement is refused.
        self.change_from_float = False
        self.lock = lock if lock is not None else threading.Condition(threading.RLock())
        self._rng = random.Random(seed)
        self._table: dict[SpotId, list[bytes]] = {}
        self._where: dict[bytes, SpotId] = {}
        self._moving = 0  # open `moving()` blocks
        self._moved_listeners: list[MoveListener] = []
        self._settled_listeners: list[Callable[[], None]] = []
        self._in_play: dict[int, list[tuple[bytes, str | None]]] | None = None
        self._place_of: dict[bytes, tuple[int, int, str | None]] = {}  # uid -> value, order

    # ------------------------------------------------------------------ readers' side

    def listen(self, moved: MoveListener, settled: Callable[[], None] | None = None) -> None:
        """Call ``moved(spots)`` after chips move on these spots, and ``settled()`` when the
        last open `moving` block ends (both with the lock held)."""
        with self.lock:
            self._moved_listeners.append(moved)
            if settled is not None:
                self._settled_listeners.append(settled)

    @property
    def moving_blocks(self) -> int:
        """How many `moving` blocks are open now (their moves are reported when they end)."""
        return self._moving

    def lying(self, where: SpotId) -> tuple[bytes, ...]:
        """The UIDs on one spot in the order they were laid (a clone appears once per copy)."""
        with self.lock:
            return tuple(self._table.get(where, ()))

    # ------------------------------------------------------------------ table API

    def chips_on(self, seat: int, spot: str) -> frozenset[bytes]:
        """The UIDs lying on one betting spot now."""
        with self.lock:
            return frozenset(self._table.get(spot_id(seat, spot), ()))

    def table(self) -> dict[SpotId, frozenset[bytes]]:
        """Every spot holding chips, with its UIDs."""
        with self.lock:
            return {s: frozenset(u) for s, u in self._table.items() if u}

    def owner_of(self, uid: bytes) -> str | None:
        """The entry holding this chip now (None: the float)."""
        if uid in self.owners:
            return self.owners[uid]
        chip = self.registry.lookup(uid)
        return None if chip is None else chip.issued_to

    def chips_of(self, entry: str) -> list[bytes]:
        """The registered chips `owner_of` gives `entry` (of every chip set), in UID order."""
        mine = {u for u, owner in self.owners.items() if owner == entry and u in self.registry}
        mine.update(c.uid for c in self.registry.issued_any(entry) if c.uid not in self.owners)
        return sorted(mine)

    def place(
        self, seat: int, spot: str, cents: int | None = None, *, uids: Iterable[bytes] = (),
        float_only: bool = False, clone: bool = False, avoid: Iterable[bytes] = (),
    ) -> tuple[bytes, ...]:
        """Put chips on a spot: exactly ``cents`` from the seat's chips (with float chips too
        when they cannot make it and `change_from_float` is on; ``float_only``: from the float
        alone; never the chips in `avoid`), and/or given UIDs (``clone``: copies of chips
        that lie elsewhere, same UID)."""
        where = spot_id(seat, spot)
        with self.lock:
            chosen = [bytes(u) for u in uids]
            for uid in chosen:
                if len(uid) != 8:
                    raise ValueError(f"a UID is 8 bytes, got {uid.hex()}")
                if uid in self._where and not clone:
                    raise ValueError(f"chip {uid.hex().upper()} is already on {self._where[uid]}")
            if len(set(chosen)) != len(chosen):
                raise ValueError("the same chip twice")
            if cents is not None:
                chosen += self._pick(seat, cents, exclude={*chosen, *avoid},
                                     float_only=float_only)
            for uid in chosen:
                self._table.setdefault(where, []).append(uid)
                self._where.setdefault(uid, where)  # a clone's original keeps its place
            self._moved((where,))
            return tuple(chosen)

    def remove(
        self, seat: int, spot: str, uids: Iterable[bytes] | None = None
    ) -> tuple[bytes, ...]:
        """Take chips off a spot (all of them by default); returns the UIDs taken."""
        where = spot_id(seat, spot)
        with self.lock:
            here = self._table.get(where, [])
            taken = list(here) if uids is None else [u for u in uids if u in here]
            for uid in taken:
                here.remove(uid)
                if self._where.get(uid) == where:
                    del self._where[uid]
            self._moved((where,))
            return tuple(taken)

    def clear_seat(self, seat: int) -> None:
        """Take every chip off one seat's spots."""
        with self.lock:
            spots = [w for w in self._table if w.seat == seat]
            for where in spots:
                for uid in self._table.pop(where):
                    if self._where.get(uid) == where:
                        del self._where[uid]
            self._moved(spots)

    def clear(self) -> None:
        """Take every chip off the table."""
        with self.lock:
            spots = list(self._table)
            self._table.clear()
            self._where.clear()
            self._moved(spots)

    def can_make(self, seat: int, amounts: Iterable[int]) -> bool:
        """Whether the seat's entry can lay every one of ``amounts`` at once from its own
        chips off the felt (no float chips)."""
        with self.lock:
            saved, self.change_from_float = self.change_from_float, False
            used: set[bytes] = set()
            try:
                for cents in amounts:
                    if cents > 0:
                        used.update(self._pick(seat, cents, exclude=used))
            except ValueError:
                return False
            finally:
                self.change_from_float = saved
            return True

    def place_unknown(self, seat: int, spot: str, count: int = 1) -> tuple[bytes, ...]:
        """Put ``count`` chips the registry does not know (random NXP-style UIDs) on a spot."""
        uids: list[bytes] = []
        with self.lock:
            while len(uids) < count:
                uid = bytes([0xE0, 0x04]) + self._rng.randbytes(6)
                if uid not in self.registry and uid not in self._where and uid not in uids:
                    uids.append(uid)
        return self.place(seat, spot, uids=uids)

    def place_foreign(self, seat: int, spot: str, count: int = 1) -> tuple[bytes, ...]:
        """Put ``count`` registered chips of another chip set on a spot."""
        with self.lock:
            free = [
                c.uid for c in self.registry
                if c.chip_set != self.registry.chip_set and c.uid not in self._where
            ]
        if len(free) < count:
            raise ValueError(f"the registry has only {len(free)} free chips of other chip sets")
        return self.place(seat, spot, uids=free[:count])

    @contextmanager
    def moving(self) -> Iterator[None]:
        """Several moves made in one go (players laying their wagers): readers that report
        moves at once report them together when the block ends, as one sweep would."""
        with self.lock:
            self._moving += 1
        try:
            yield
        finally:
            with self.lock:
                self._moving -= 1
                if not self._moving:
                    for settled in self._settled_listeners:
                        settled()

    # ------------------------------------------------------------------ (lock held)

    def _moved(self, spots: Iterable[SpotId]) -> None:
        moved = tuple(spots)
        for listener in self._moved_listeners:
            listener(moved)

    def _pick(self, seat: int, cents: int, *, exclude: set[bytes],
              float_only: bool = False) -> list[bytes]:
        if cents <= 0:
            raise ValueError(f"an amount is a positive number of cents, got {cents}")
        entry = None if float_only else self.seat_entries.get(seat)
        counts: dict[int, int] | None = None
        tries = ((entry,), (entry, None)) if self.change_from_float else ((entry,),)
        if self._in_play is None:  # the set in play's chips by value, in UID order
            self._in_play, self._place_of = {}, {}
            for c in self.registry:  # (a registry is fixed)
                if c.chip_set == self.registry.chip_set:
                    self._in_play.setdefault(c.value_cents, []).append((c.uid, c.issued_to))
                    self._place_of[c.uid] = (c.value_cents, len(self._place_of), c.issued_to)
        owners, where = self.owners, self._where
        for holders in tries if entry is not None else ((None,),):
            pool: dict[int, list[bytes]] = {}
            # only an entry's own chips: look at those alone
            in_play = self._in_play if None in holders else self._held_by(holders[0])
            for value, chips in in_play.items():
                wanted = cents // value  # no amount needs more chips of one value
                pool[value] = list(islice(
                    (uid for uid, issued_to in chips
                     if owners.get(uid, issued_to) in holders and uid not in where
                     and uid not in exclude), wanted)) if wanted else []
            counts = make_change(cents, {v: len(u) for v, u in pool.items()})
            if counts is not None:
                break
        if counts is None:
            whose = f"entry {entry}" if entry else "the unissued float"
            raise ValueError(f"seat {seat}: cannot make {cents} cents from free chips of {whose}")
        return [uid for value, n in counts.items() for uid in pool[value][:n]]

    def _held_by(self, holder: str | None) -> dict[int, list[tuple[bytes, str | None]]]:
        """The chips in play `holder` may hold (owned now, or issued to them and never
        moved), by value in UID order: what `_pick` would find among them all, faster."""
        mine = [uid for uid, owner in self.owners.items() if owner == holder]
        issued = self.registry.issued_to(holder) if holder is not None else ()
        mine += [c.uid for c in issued if c.uid not in self.owners]
        found: dict[int, list[tuple[int, bytes, str | None]]] = {}
        for uid in mine:
            value, position, issued_to = self._place_of[uid]
            found.setdefault(value, []).append((position, uid, issued_to))
        return {value: [(uid, issued) for _, uid, issued in sorted(chips)]
                for value, chips in found.items()}


def spot_id(seat: int, spot: str) -> SpotId:
    """A `SpotId` checked: seat 1..6 and one of SPOTS (ValueError naming what is wrong)."""
    if seat not in range(1, 7):
        raise ValueError(f"seat must be 1..6, got {seat}")
    if spot not in SPOTS:
        raise ValueError(f"unknown spot {spot!r}; spots are {', '.join(SPOTS)}")
    return SpotId(seat, spot)


class OnFelt:
    """The table API of a simulated chip reader (or a table of them) that reads a `Felt`:
    each call is the felt's. A class using it sets ``self.felt``."""

    felt: Felt

    @property
    def registry(self) -> ChipRegistry:
        """The chips the felt mints wagers from."""
        return self.felt.registry

    @property
    def seat_entries(self) -> dict[int, str]:
        """Which entry sits at each seat (whose chips ``place(seat, ...)`` takes)."""
        return self.felt.seat_entries

    @seat_entries.setter
    def seat_entries(self, value: dict[int, str]) -> None:
        self.felt.seat_entries = value

    @property
    def owners(self) -> dict[bytes, str | None]:
        """Who holds each chip the table's float moved (see `Felt.owners`)."""
        return self.felt.owners

    @owners.setter
    def owners(self, value: dict[bytes, str | None]) -> None:
        self.felt.owners = value

    @property
    def change_from_float(self) -> bool:
        """Whether an entry's amount may be made with float chips too (`Felt`)."""
        return self.felt.change_from_float

    @change_from_float.setter
    def change_from_float(self, value: bool) -> None:
        self.felt.change_from_float = value

    def chips_on(self, seat: int, spot: str) -> frozenset[bytes]:
        """The UIDs lying on one betting spot now."""
        return self.felt.chips_on(seat, spot)

    def table(self) -> dict[SpotId, frozenset[bytes]]:
        """Every spot holding chips, with its UIDs."""
        return self.felt.table()

    def owner_of(self, uid: bytes) -> str | None:
        """The entry holding this chip now (None: the float)."""
        return self.felt.owner_of(uid)

    def chips_of(self, entry: str) -> list[bytes]:
        """The registered chips `owner_of` gives `entry` (of every chip set), in UID order."""
        return self.felt.chips_of(entry)

    def place(
        self, seat: int, spot: str, cents: int | None = None, *, uids: Iterable[bytes] = (),
        float_only: bool = False, clone: bool = False, avoid: Iterable[bytes] = (),
    ) -> tuple[bytes, ...]:
        """Put chips on a spot (`Felt.place`: ``cents`` of the seat's chips and/or UIDs)."""
        return self.felt.place(seat, spot, cents, uids=uids, float_only=float_only,
                               clone=clone, avoid=avoid)

    def remove(
        self, seat: int, spot: str, uids: Iterable[bytes] | None = None
    ) -> tuple[bytes, ...]:
        """Take chips off a spot (all of them by default); returns the UIDs taken."""
        return self.felt.remove(seat, spot, uids)

    def clear_seat(self, seat: int) -> None:
        """Take every chip off one seat's spots."""
        self.felt.clear_seat(seat)

    def clear(self) -> None:
        """Take every chip off the table."""
        self.felt.clear()

    def can_make(self, seat: int, amounts: Iterable[int]) -> bool:
        """Whether the seat's entry can lay ``amounts`` from its own chips (`Felt.can_make`)."""
        return self.felt.can_make(seat, amounts)

    def place_unknown(self, seat: int, spot: str, count: int = 1) -> tuple[bytes, ...]:
        """Put ``count`` chips the registry does not know (random NXP-style UIDs) on a spot."""
        return self.felt.place_unknown(seat, spot, count)

    def place_foreign(self, seat: int, spot: str, count: int = 1) -> tuple[bytes, ...]:
        """Put ``count`` registered chips of another chip set on a spot."""
        return self.felt.place_foreign(seat, spot, count)
