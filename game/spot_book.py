"""What lies on each betting spot: the latest RFID inventory (or keyed amount) per spot, valued
through the chip registry into each seat's `SeatWagers`.

An unknown chip, a chip of another set or a chip issued to another entry never counts as value:
it is reported as a problem (once while it stays on the spot) for the pit to act on. Final
bonus markers are registered plaques of the marker set: one on a side-bet spot puts a marker
on that bet.
"""

from __future__ import annotations

from dataclasses import dataclass

from game.chips import ChipRegistry, format_uid
from game.settle import SIDE_BETS, WAGERS, SeatWagers

__all__ = ["SpotBook", "SpotProblem"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotProblem:
    """A chip on a spot that must not count: why, where, which chip."""

    seat: int
    spot: str
    uid: str
    kind: str
    detail: str


class SpotBook:
    """The latest state of every betting spot, and the wagers it makes for each seat."""

    def __init__(self, registry: ChipRegistry, *, marker_set: str = "bonus-marker") -> None:
        self.registry = registry
        self.marker_set = marker_set
        self._uids: dict[tuple[int, str], frozenset[bytes]] = {}
        self._manual: dict[tuple[int, str], int] = {}
        self._reported: set[tuple[int, str, bytes]] = set()

    def see_chips(self, seat: int, spot: str, uids: frozenset[bytes]) -> None:
        """Record an antenna's inventory (replaces what the spot held; clears a keyed amount)."""
        self._uids[(seat, spot)] = uids
        self._manual.pop((seat, spot), None)

    def key_amount(self, seat: int, spot: str, amount_cents: int) -> None:
        """Record an amount keyed by the dealer for a spot (reader failure, rule 58)."""
        self._manual[(seat, spot)] = amount_cents
        self._uids.pop((seat, spot), None)

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

    def wagers(self, seat: int, entry_id: str | None, *, report: bool = True
               ) -> tuple[SeatWagers, list[SpotProblem]]:
        """The seat's wagers as the spots show them, and NEW problems (each reported once).

        With ``report=False`` nothing is marked as reported (a read-only view).
        """
        amounts = dict.fromkeys(WAGERS, 0)
        markers: set[str] = set()
        problems: list[SpotProblem] = []
        present: set[tuple[int, str, bytes]] = set()
        for spot in WAGERS:
            if (seat, spot) in self._manual:
                amounts[spot] = self._manual[(seat, spot)]
                continue
            for uid in sorted(self._uids.get((seat, spot), frozenset())):
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
                    self._note(problems, present, seat=seat, spot=spot, uid=uid,
                               kind="misplaced_marker",
                               detail=f"bonus marker {format_uid(uid)} on seat {seat} {spot}:"
                               f" {problem}")
                    continue
                found = self.registry.check(uid, entry=entry_id, where=f"seat {seat} {spot}")
                if found is None and chip is not None:
                    amounts[spot] += chip.value_cents
                elif found is not None:
                    self._note(problems, present, seat=seat, spot=spot, uid=uid,
                               kind=found.kind, detail=found.detail)
        if not report:
            return SeatWagers(markers=frozenset(markers), **amounts), []
        self._reported = {r for r in self._reported if r[0] != seat} | present
        return SeatWagers(markers=frozenset(markers), **amounts), problems

    def _note(self, problems: list[SpotProblem], present: set[tuple[int, str, bytes]], *,
              seat: int, spot: str, uid: bytes, kind: str, detail: str) -> None:
        key = (seat, spot, uid)
        present.add(key)
        if key not in self._reported:
            tag = format_uid(uid) if len(uid) == 8 else uid.hex().upper()
            problems.append(SpotProblem(seat=seat, spot=spot, uid=tag, kind=kind, detail=detail))
