"""The table's chip duties (promotion rule 19), a component the table core
(`game.table.core.TableCore`) creates and holds as ``core.chips``: the starting stack issued
at seating, the float's bindings moved by each checked payout (or by the losses taken when
the table checks no payout), and each entry's chips reconciled when its chips come back or
its heat closes (`chips.reconciled`, with a `chips_missing` alert for the supervisor).

Its interface is its public methods and what they take: the core passes in what a step reads
of it (the session, and a `ChipOutput` with the heat, the input's time, the input's messages
and the core's alert) and keeps no step of its own inside. The component holds the chip float
and the spots it shares with the core, and no reference to the core.

Pure, like the core: every change comes from a journaled input (the dealer's "issue chips" or
"chips returned", a seating, a payout checked, a heat closed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from game.chips.float import ChipFloat, FloatError
from game.chips.spot_book import SpotBook, SpotKey
from game.errors import GameError
from game.messages.chips import ChipsReconciled
from game.messages.fields import format_ts
from game.messages.table import TableMessage
from game.money import format_rand
from game.table.payout_check import PayoutCheck
from game.table.session import TableSession
from game.wagers.settle import WAGERS, HandSettlement

__all__ = ["ChipAlert", "ChipOutput", "ChipRefused", "TableChips"]

ChipAlert = Callable[[str, str, int], None]
"""Raise a chip alert at the table: ``alert(kind, message, seat)`` (the core counts it)."""


class ChipRefused(GameError):
    """A chip step that cannot be done now; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipOutput:
    """Where a chip step reports, given by the core for one input: the heat its messages
    belong to, the input's time, the input's messages, and the core's alert."""

    heat_id: str | None
    at: datetime
    out: list[TableMessage]
    alert: ChipAlert


class TableChips:
    """The chip float's side of one table; see the module docstring."""

    def __init__(self, chip_float: ChipFloat, spots: SpotBook) -> None:
        self.chip_float = chip_float
        self.spots = spots  # the core's: the component reads the spots and their entries
        self.seats: dict[int, str] = {}  # seat -> the entry whose chips it holds
        self._pay_before: dict[SpotKey, frozenset[bytes]] = {}  # at settlement
        self._pay_after: dict[SpotKey, frozenset[bytes]] = {}  # when the spot was paid
        self._pay_entries: dict[int, str] = {}
        # change being made on a spot between hands (D346): the entry, its chips taken off
        # the spot, the float chips placed there since
        self.change: dict[SpotKey, tuple[str, frozenset[bytes], frozenset[bytes]]] = {}

    # ---- seating and issuing ------------------------------------------------------------

    def seated(self, entry_id: str, seat: int, to: ChipOutput) -> None:
        """An entry sits down: a finished entry's chips still waiting at the seat are
        reconciled first (as they lie), then the seat's chips are the new entry's."""
        earlier = self.seats.get(seat)
        if earlier is not None and earlier != entry_id:
            self._reconcile(earlier, seat, to)
        self.seats[seat] = entry_id
        self.spots.seat_entries[seat] = entry_id

    def unissued(self, session: TableSession | None) -> dict[int, str]:
        """Seat -> entry for every seated entry still waiting for its starting stack: it has
        played no hand, holds no chips and was issued none (here or by the registry)."""
        if session is None:
            return {}
        chips, hand = self.chip_float, session.hand
        return {seat: entry.entry_id for seat, entry in sorted(session.seats.items())
                if not entry.hands_played and (hand is None or seat not in hand.seats)
                and not chips.issued_to(entry.entry_id) and not chips.holds_any(entry.entry_id)}

    def refresh(self, session: TableSession | None) -> None:
        """Tell the float where float chips belong now: the seats whose starting stack is
        being placed and the spots of the payout being checked."""
        seats = set(self.unissued(session))
        seats.update(seat for seat, _spot in self._pay_before)
        self.chip_float.set_open(frozenset(seats), frozenset(self.change))

    def spot_changed(self, seat: int, spot: str, before: frozenset[bytes],
                     session: TableSession | None) -> bool:
        """Change made on a spot between hands (D346): the seated entry's chips taken off it,
        then, as its next changes, float chips worth the same placed on it: the taken chips
        go back to the float and the placed ones are the entry's. Any other change of the
        spot ends it (the float chips placed count for nobody again). True: chips moved."""
        key = (seat, spot)
        sitting = session.seats.get(seat) if session is not None else None
        hand = session.hand if session is not None else None
        if (sitting is None or key in self._pay_before
                or (hand is not None and seat in hand.seats)):
            self.change.pop(key, None)
            return False
        chips, entry = self.chip_float, sitting.entry_id
        after = self.spots.uids_on(seat, spot)
        taken = frozenset(u for u in before - after if chips.owner(u) == entry)
        added = after - before
        was, had_taken, had_placed = self.change.get(key, (entry, frozenset(), frozenset()))
        if was != entry:
            had_taken, had_placed = frozenset(), frozenset()
        if added:
            placed = had_placed | added
            if (not had_taken or taken or not all(chips.is_float_chip(u) for u in added)
                    or any(self.spots.cloned(u) for u in added)
                    or chips.value(placed) > chips.value(had_taken)):
                self.change.pop(key, None)
                return False
            if chips.value(placed) == chips.value(had_taken):
                chips.change(entry, had_taken, placed)
                self.change.pop(key, None)
                return True
            self.change[key] = (entry, had_taken, placed)
        elif taken:
            if had_placed:  # chips taken off while the change was placed: no change
                self.change.pop(key, None)
            else:
                self.change[key] = (entry, had_taken | taken, frozenset())
        return False

    def end_change(self) -> None:
        """A hand opens: change not finished is no change (its float chips count for
        nobody)."""
        self.change.clear()

    def auto_issue(self, seat: int, session: TableSession | None) -> dict[str, Any] | None:
        """The reader saw the seat's spots: when its entry waits for its starting stack and
        they hold float chips worth exactly the stack (and nothing else), the stack is issued
        to it (None: not now; the screens say what is missing or over)."""
        entry = self.unissued(session).get(seat)
        if entry is None or session is None:
            return None
        on_spots = frozenset(u for spot in WAGERS for u in self.spots.uids_on(seat, spot))
        if not on_spots or any(self.spots.cloned(u) for u in on_spots):
            return None
        stack = session.rules.starting_chips_cents
        worth, wrong = self.chip_float.stack_of(on_spots)
        if wrong or worth != stack:
            return None
        issued = self.chip_float.issue(entry, on_spots, seat=seat, stack_cents=stack)
        self.refresh(session)
        return {"entry_id": entry, "issued": len(issued), "value": worth, "seat": seat}

    def to_issue(self, session: TableSession | None) -> list[dict[str, Any]]:
        """Per seat waiting for its starting stack: what to place from the tray (amount and a
        suggested breakdown), what its spots hold now, and what is missing or over."""
        if session is None:
            return []
        out = []
        stack = session.rules.starting_chips_cents
        lying = {u for uids in self.spots.lying().values() for u in uids}
        for seat, entry in self.unissued(session).items():
            on_spots = frozenset(u for spot in WAGERS for u in self.spots.uids_on(seat, spot))
            worth, wrong = self.chip_float.stack_of(on_spots)
            gap = stack - worth
            out.append({
                "seat": seat, "entry_id": entry, "stack_cents": stack,
                "stack": format_rand(stack),
                "breakdown": [{"value_cents": v, "value": format_rand(v), "count": n}
                              for v, n in self.chip_float.breakdown(
                                  stack, besides=lying - on_spots).items()],
                "on_spots_cents": worth, "missing_cents": max(gap, 0),
                "over_cents": max(-gap, 0), "wrong": wrong,
                "say": _say(seat, stack, worth, wrong),
            })
        return out

    def issue(self, seat: int, session: TableSession | None, to: ChipOutput) -> dict[str, Any]:
        """The dealer's "issue chips" for a seat: the seated entry's starting stack is the
        chips on its spots now (ChipRefused when it cannot be)."""
        entry = session.seats.get(seat) if session is not None else None
        if session is None or entry is None:
            raise ChipRefused(f"seat {seat} has no entry to issue chips to")
        hand = session.hand
        if entry.hands_played or (hand is not None and seat in hand.seats):
            raise ChipRefused(f"entry {entry.entry_id} has played already: a starting stack"
                              " is issued before its first hand")
        on_spots = frozenset(u for spot in WAGERS for u in self.spots.uids_on(seat, spot))
        try:
            issued = self.chip_float.issue(
                entry.entry_id, on_spots, seat=seat,
                stack_cents=session.rules.starting_chips_cents,
                cloned=[u for u in on_spots if self.spots.cloned(u)])
        except FloatError as exc:
            to.alert("chip_issue_wrong", str(exc), seat)
            raise ChipRefused(str(exc)) from None
        return {"entry_id": entry.entry_id, "issued": len(issued),
                "value": self.chip_float.value(issued)}

    # ---- the payout moves chips ---------------------------------------------------------

    def payout_started(self, check: PayoutCheck, entries: Mapping[int, str]) -> None:
        """Remember what each checked spot held at settlement, and whose it is."""
        self._pay_entries = dict(entries)
        self._pay_before = {k: self.spots.uids_on(*k) for k in check.spots}
        self._pay_after = {k: self.spots.uids_on(*k) for k, s in check.spots.items() if s.paid}

    def note_paid(self, check: PayoutCheck | None) -> None:
        """Remember what each spot of ``check`` held when it was first seen paid."""
        if check is None:
            return
        for key, spot in check.spots.items():
            if spot.paid and key not in self._pay_after:
                self._pay_after[key] = self.spots.uids_on(*key)

    def payout_ended(self, check: PayoutCheck) -> None:
        """The payout is verified (or overridden as it stands): losses taken go back to the
        float, float chips paid onto a spot are its entry's."""
        for key, before in sorted(self._pay_before.items()):
            if key not in check.spots:
                continue
            after = self._pay_after.get(key, self.spots.uids_on(*key))
            self.chip_float.paid(self._pay_entries.get(key[0]), before, after)
        self._pay_before, self._pay_after, self._pay_entries = {}, {}, {}

    def holds_payout(self) -> bool:
        """True while a payout's chips are remembered (from its start to its end)."""
        return bool(self._pay_before or self._pay_after or self._pay_entries)

    def losses_taken(self, settlement: HandSettlement, entries: Mapping[int, str]) -> None:
        """No payout check at this table: a losing wager's chips go back to the float when the
        hand settles (a win paid from the float stays the float's)."""
        for seat in settlement.seats:
            for result in seat.results:
                if result.result == "lose":
                    self.chip_float.paid(entries.get(seat.seat),
                                         self.spots.uids_on(seat.seat, result.wager),
                                         frozenset())

    # ---- the end of an entry's play and of the heat -------------------------------------

    def give_back(self, seat: int, session: TableSession | None,
                  to: ChipOutput) -> dict[str, Any]:
        """The dealer's "chips returned" for a seat whose entry has finished playing."""
        entry = self.seats.get(seat)
        if entry is None:
            raise ChipRefused(f"no entry's chips are waiting to be returned at seat {seat}")
        sitting = session.seats.get(seat) if session is not None else None
        if sitting is not None and sitting.entry_id == entry:
            raise ChipRefused(f"entry {entry} is still playing at seat {seat}: its chips are"
                              " returned when its play has ended")
        done = self._reconcile(entry, seat, to)
        if done is None:
            return {"entry_id": entry, "returned": 0, "missing": 0, "missing_value": 0}
        return {"entry_id": entry, "returned": len(done.returned),
                "missing": len(done.missing), "missing_value": done.missing_cents}

    def reconcile_heat(self, to: ChipOutput) -> None:
        """The heat closes: every entry whose chips were not returned yet is reconciled from
        what lies on its seat's spots now."""
        for seat, entry in sorted(self.seats.items()):
            self._reconcile(entry, seat, to)

    def _reconcile(self, entry: str, seat: int, to: ChipOutput) -> ChipsReconciled | None:
        """Reconcile one entry's chips (None: it was issued none and holds none)."""
        chips = self.chip_float
        self.seats.pop(seat, None)
        self.spots.seat_entries.pop(seat, None)
        if not chips.issued_to(entry) and not chips.held_by(entry):
            return None
        done = chips.reconcile(entry, seat, self.spots.seat_uids(seat))
        message = ChipsReconciled.of(done, chip_set=chips.registry.chip_set,
                                     heat_id=to.heat_id, at=format_ts(to.at))
        to.out.append(message)
        if done.missing:
            to.alert("chips_missing", f"chips not returned to the float: {done.summary()}",
                     seat)
        elif done.foreign:
            to.alert("chip_pooling", f"chips of other entries returned with entry {entry}'s:"
                     f" {done.summary()}", seat)
        return message

    # ---- views --------------------------------------------------------------------------

    def view(self, session: TableSession | None) -> dict[str, Any]:
        """The float for the table's status."""
        view = dict(self.chip_float.view())
        seated = session.seats if session is not None else {}
        view["waiting_return"] = {str(s): e for s, e in sorted(self.seats.items())
                                  if s not in seated or seated[s].entry_id != e}
        view["on_seats"] = {str(s): len(self.spots.seat_uids(s)) for s in self.seats}
        view["require_issued"] = self.chip_float.require_issued
        view["to_issue"] = self.to_issue(session)
        return view


def _say(seat: int, stack: int, worth: int, wrong: list[str]) -> str:
    """The line the dealer reads for a seat waiting for its starting stack."""
    if wrong:
        return f"Seat {seat}: take back what is not from the tray: {'; '.join(wrong)}"
    if worth == 0:
        return f"Seat {seat}: place {format_rand(stack)} from the tray on the seat's spot"
    if worth < stack:
        return (f"Seat {seat}: {format_rand(worth)} read of {format_rand(stack)}:"
                f" add {format_rand(stack - worth)}")
    return (f"Seat {seat}: {format_rand(worth)} read, the stack is {format_rand(stack)}:"
            f" take {format_rand(worth - stack)} back to the tray")
