"""What lies on each betting spot: the latest RFID inventory (or keyed amount) per spot, valued
through the chip registry into each seat's `SeatWagers`.

An unknown chip, a chip of another set or a chip issued to another entry never counts as value:
it is reported as a problem (once while it stays on the spot) for the pit to act on. Final
bonus markers are registered plaques of the marker set: one on a side-bet spot puts a marker
on that bet.

One UID on two spots at once (any seats) is a cloned chip or a misread: it counts on none of
them while the duplication lasts, and it is reported once (`chip_clone`, naming every spot)
until at most one spot holds it. Who a chip belongs to at run time is the table's chip float
(`game.chips.float`), when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from game.chips.registry import ChipProblem, ChipRegistry, format_uid
from game.wagers.settle import SIDE_BETS, WAGERS, SeatWagers

if TYPE_CHECKING:
    from game.chips.float import ChipFloat

__all__ = ["CloneReport", "SpotBook", "SpotProblem"]

SpotKey = tuple[int, str]  # (seat, spot)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotProblem:
    """A chip on a spot that must not count: why, where, which chip."""

    seat: int
    spot: str
    uid: str
    kind: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CloneReport:
    """What a new inventory did to duplicated UIDs: new `chip_clone` problems, and the other
    spots whose count changed (a UID there started or stopped being duplicated)."""

    alerts: tuple[SpotProblem, ...] = ()
    spots: frozenset[SpotKey] = frozenset()


# A problem on a spot and its key (seat, spot, UID): reported once while it lasts.
_Found = tuple[tuple[int, str, bytes], SpotProblem]


class SpotBook:
    """The latest state of every betting spot, and the wagers it makes for each seat."""

    def __init__(self, registry: ChipRegistry, *, marker_set: str = "bonus-marker",
                 chip_float: ChipFloat | None = None) -> None:
        self.registry = registry
        self.marker_set = marker_set
        self.chip_float = chip_float
        self._uids: dict[SpotKey, frozenset[bytes]] = {}
        self._manual: dict[SpotKey, int] = {}
        self._reported: set[tuple[int, str, bytes]] = set()
        self._holders: dict[bytes, set[SpotKey]] = {}  # UID -> the spots that hold it
        self._clones: set[bytes] = set()  # UIDs on two spots or more, already reported
        # seat -> the entry whose chips lie there (seated, or finished and not yet returned)
        self.seat_entries: dict[int, str] = {}
        # seat -> (entry, the chip float's version), the wagers and every problem they hold
        # with its key: `wagers` reads them again only when the seat's spots, the duplicated
        # UIDs, the entry or the float changed (a seat's six spots, chip by chip, after
        # every report of any spot)
        self._wager_cache: dict[int, tuple[tuple[str | None, int], SeatWagers,
                                           tuple[_Found, ...]]] = {}

    def see_chips(self, seat: int, spot: str, uids: frozenset[bytes]) -> CloneReport:
        """Record an antenna's inventory (replaces what the spot held; clears a keyed amount)."""
        before = self._uids.get((seat, spot), frozenset())
        self._uids[(seat, spot)] = uids
        self._manual.pop((seat, spot), None)
        return self._moved((seat, spot), before, uids)

    def key_amount(self, seat: int, spot: str, amount_cents: int) -> CloneReport:
        """Record an amount keyed by the dealer for a spot (reader failure, rule 58)."""
        self._manual[(seat, spot)] = amount_cents
        return self._moved((seat, spot), self._uids.pop((seat, spot), frozenset()), frozenset())

    def uids_on(self, seat: int, spot: str) -> frozenset[bytes]:
        """The UIDs the reader last saw on one spot (none when keyed by hand)."""
        return self._uids.get((seat, spot), frozenset())

    def lying(self) -> dict[SpotKey, frozenset[bytes]]:
        """Every spot the reader last saw chips on, with their UIDs (a copy)."""
        return {key: uids for key, uids in self._uids.items() if uids}

    def seat_uids(self, seat: int) -> frozenset[bytes]:
        """Every UID on the seat's wager spots that is not duplicated elsewhere."""
        return frozenset(u for spot in WAGERS for u in self.uids_on(seat, spot)
                         if u not in self._clones)

    def cloned(self, uid: bytes) -> bool:
        """True while this UID lies on two spots or more (it counts on none of them)."""
        return uid in self._clones

    def forget_wagers(self) -> None:
        """Read every seat's wagers again (its state was set from outside: a snapshot)."""
        self._wager_cache.clear()

    def _moved(self, key: SpotKey, before: frozenset[bytes],
               after: frozenset[bytes]) -> CloneReport:
        self._wager_cache.pop(key[0], None)
        clones = len(self._clones)
        report = self._recount(key, before, after)
        if report.spots or report.alerts or len(self._clones) != clones:
            self._wager_cache.clear()  # a UID started or stopped counting elsewhere
        return report

    def _recount(self, key: SpotKey, before: frozenset[bytes],
                 after: frozenset[bytes]) -> CloneReport:
        touched: set[SpotKey] = set()
        alerts: list[SpotProblem] = []
        for uid in before - after:
            holders = self._holders.get(uid, set())
            holders.discard(key)
            if uid in self._clones and len(holders) <= 1:
                self._clones.discard(uid)
                touched |= holders
            if not holders:
                self._holders.pop(uid, None)
        for uid in sorted(after - before):
            holders = self._holders.setdefault(uid, set())
            holders.add(key)
            if len(holders) > 1 and uid not in self._clones:
                self._clones.add(uid)
                touched |= holders
                spots = ", ".join(f"seat {s} {p}" for s, p in sorted(holders))
                alerts.append(SpotProblem(
                    seat=key[0], spot=key[1], uid=format_uid(uid), kind="chip_clone",
                    detail=f"chip {format_uid(uid)} is on {len(holders)} spots at once ({spots}):"
                    " a cloned chip or a misread; it counts on none of them until only one"
                    " spot holds it"))
        return CloneReport(alerts=tuple(alerts), spots=frozenset(touched - {key}))

    def keyed(self, seat: int, spot: str) -> bool:
        """True when the spot's amount was keyed by hand, not read."""
        return (seat, spot) in self._manual

    def clear_seat(self, seat: int) -> None:
        """A seat's entry left: forget keyed amounts and reported problems, but keep what the
        readers last saw on its spots (they report a spot only when its chips change, so chips
        still lying there must still be seen by the next entry)."""
        for key in [k for k in self._manual if k[0] == seat]:
            self._manual.pop(key, None)
        self._reported = {r for r in self._reported if r[0] != seat}
        self._wager_cache.pop(seat, None)

    def wagers(self, seat: int, entry_id: str | None, *, report: bool = True
               ) -> tuple[SeatWagers, list[SpotProblem]]:
        """The seat's wagers as the spots show them, and NEW problems (each reported once).

        With ``report=False`` nothing is marked as reported (a read-only view). A seat with no
        entry checks its chips for the entry that last sat there until its chips are returned.
        """
        entry_id = entry_id if entry_id is not None else self.seat_entries.get(seat)
        state = (entry_id, -1 if self.chip_float is None else self.chip_float.version)
        cached = self._wager_cache.get(seat)
        if cached is None or cached[0] != state:
            cached = (state, *self._read_wagers(seat, entry_id))
            self._wager_cache[seat] = cached
        _, wagers, found = cached
        if not report:
            return wagers, []
        problems = [problem for key, problem in found if key not in self._reported]
        self._reported = ({r for r in self._reported if r[0] != seat}
                          | {key for key, _ in found})
        return wagers, problems

    def _read_wagers(self, seat: int, entry_id: str | None
                     ) -> tuple[SeatWagers, tuple[_Found, ...]]:
        """The seat's wagers chip by chip, and every problem on its spots with its key."""
        amounts = dict.fromkeys(WAGERS, 0)
        markers: set[str] = set()
        problems: list[_Found] = []
        for spot in WAGERS:
            if (seat, spot) in self._manual:
                amounts[spot] = self._manual[(seat, spot)]
                continue
            for uid in sorted(self._uids.get((seat, spot), frozenset())):
                if uid in self._clones:
                    continue  # reported as chip_clone; counts on no spot
                chip = self.registry.lookup(uid)
                if chip is not None and chip.chip_set == self.marker_set:
                    if spot in SIDE_BETS and chip.issued_to in (None, entry_id):
                        markers.add(spot)
                        continue
                    problem = (
                        "a bonus marker counts only on a side bet"
                        if spot not in SIDE_BETS
                        else f"marker issued to entry {chip.issued_to}, played by {entry_id}"
                    )
                    _note(problems, seat=seat, spot=spot, uid=uid, kind="misplaced_marker",
                          detail=f"bonus marker {format_uid(uid)} on seat {seat} {spot}:"
                          f" {problem}")
                    continue
                found = self._check(uid, entry_id, f"seat {seat} {spot}", seat, spot)
                if found is None and chip is not None:
                    amounts[spot] += chip.value_cents
                elif found is not None:
                    _note(problems, seat=seat, spot=spot, uid=uid, kind=found.kind,
                          detail=found.detail)
        return SeatWagers(markers=frozenset(markers), **amounts), tuple(problems)

    def _check(self, uid: bytes, entry_id: str | None, where: str,
               seat: int, spot: str) -> ChipProblem | None:
        if self.chip_float is not None:
            return self.chip_float.check(uid, entry=entry_id, where=where, seat=seat,
                                         spot=spot)
        return self.registry.check(uid, entry=entry_id, where=where)


def _note(problems: list[_Found], *, seat: int, spot: str,
          uid: bytes, kind: str, detail: str) -> None:
    """A problem on a spot, with its key (each is reported once while it lasts)."""
    tag = format_uid(uid) if len(uid) == 8 else uid.hex().upper()
    problems.append(((seat, spot, uid),
                     SpotProblem(seat=seat, spot=spot, uid=tag, kind=kind, detail=detail)))
