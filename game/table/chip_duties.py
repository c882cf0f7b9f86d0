"""The table core's chip duties (promotion rule 19), mixed into `game.table.core.TableCore`:
a UID on two spots at once (`chip_clone`), the starting stack issued at seating, the float's
bindings moved by each checked payout, and each entry's chips reconciled at the end of its heat
(`chips.reconciled`, with a `chips_missing` alert for the supervisor).

Pure, like the core: every change comes from a journaled input (a reader's inventory, the
dealer's "issue chips" or "chips returned", a payout checked, a heat closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from game.chips.float import ChipFloat, FloatError
from game.chips.spot_book import CloneReport, SpotBook, SpotKey
from game.errors import GameError
from game.messages.chips import ChipsReconciled
from game.messages.fields import format_ts
from game.messages.table import TableMessage
from game.table.inputs import ChipsSeen, IssueChips, ReturnChips
from game.table.payout_check import PayoutCheck
from game.wagers.settle import WAGERS, HandSettlement

if TYPE_CHECKING:
    from game.table.session import TableSession

__all__ = ["ChipDuties"]

Out = list[TableMessage]


class ChipRefused(GameError):
    """A chip step that cannot be done now; the message says why."""


class ChipDuties:
    """The chip part of the table core; see the module docstring."""

    spots: SpotBook
    chip_float: ChipFloat
    session: TableSession | None
    heat_id: str | None
    payout: PayoutCheck | None

    if TYPE_CHECKING:
        def _alert(self, out: Out, kind: str, message: str, at: datetime, *,
                   source: str = "table", seat: int | None = None,
                   hand_id: str | None = None, alert_id: int | None = None) -> None: ...

        def _wagers_changed(self, seat: int, out: Out, at: datetime,
                            source: Literal["rfid", "manual"]) -> None: ...

        def _payout_seen(self, seat: int, spot: str, out: Out, at: datetime, *,
                         keyed: bool) -> None: ...

    def _chips_init(self, registry_float: ChipFloat) -> None:
        self.chip_float = registry_float
        self._chip_seats: dict[int, str] = {}  # seat -> the entry whose chips it holds
        self._pay_before: dict[SpotKey, frozenset[bytes]] = {}  # at settlement
        self._pay_after: dict[SpotKey, frozenset[bytes]] = {}  # when the spot was paid
        self._pay_entries: dict[int, str] = {}

    # ---- reads --------------------------------------------------------------------------

    def _chips_seen(self, given: ChipsSeen, at: datetime, out: Out) -> None:
        """An antenna's inventory: clones reported, every spot whose count changed re-fed."""
        report = self.spots.see_chips(given.seat, given.spot, given.uids)
        for clone in report.alerts:
            self._alert(out, clone.kind, clone.detail, at, source="chips", seat=clone.seat)
        self._wagers_changed(given.seat, out, at, source="rfid")
        self._payout_seen(given.seat, given.spot, out, at, keyed=False)
        self._refeed(report, given.seat, at, out)

    def _refeed(self, report: CloneReport, seat: int, at: datetime, out: Out) -> None:
        """The other spots whose count a new inventory (or a keyed amount) changed, because a
        UID there started or stopped being duplicated, are fed again."""
        for other in sorted({s for s, _ in report.spots} - {seat}):
            self._wagers_changed(other, out, at, source="rfid")
        for key in sorted(report.spots):
            self._payout_seen(*key, out, at, keyed=False)
        self._note_paid()

    # ---- seating and issuing ------------------------------------------------------------

    def _chips_seated(self, entry_id: str, seat: int, at: datetime, out: Out) -> None:
        """An entry sits down: a finished entry's chips still waiting at the seat are
        reconciled first (as they lie), then the seat's chips are the new entry's."""
        earlier = self._chip_seats.get(seat)
        if earlier is not None and earlier != entry_id:
            self._reconcile(earlier, seat, at, out)
        self._chip_seats[seat] = entry_id
        self.spots.seat_entries[seat] = entry_id

    def _chip_action(self, given: IssueChips | ReturnChips, at: datetime,
                     out: Out) -> dict[str, Any]:
        """The dealer's "issue chips" or "chips returned" for a seat."""
        if isinstance(given, ReturnChips):
            return self._return_chips(given.seat, at, out)
        session = self.session
        entry = session.seats.get(given.seat) if session is not None else None
        if session is None or entry is None:
            raise ChipRefused(f"seat {given.seat} has no entry to issue chips to")
        hand = session.hand
        if entry.hands_played or (hand is not None and given.seat in hand.seats):
            raise ChipRefused(f"entry {entry.entry_id} has played already: a starting stack"
                              " is issued before its first hand")
        on_spots = frozenset(u for spot in WAGERS for u in self.spots.uids_on(given.seat, spot))
        try:
            issued = self.chip_float.issue(
                entry.entry_id, on_spots, seat=given.seat,
                stack_cents=session.rules.starting_chips_cents,
                cloned=[u for u in on_spots if self.spots.cloned(u)])
        except FloatError as exc:
            self._alert(out, "chip_issue_wrong", str(exc), at, source="chips", seat=given.seat)
            raise ChipRefused(str(exc)) from None
        self._wagers_changed(given.seat, out, at, source="rfid")
        return {"entry_id": entry.entry_id, "issued": len(issued),
                "value": self.chip_float.value(issued)}

    # ---- the payout moves chips ---------------------------------------------------------

    def _payout_started(self, check: PayoutCheck, entries: Mapping[int, str]) -> None:
        """Remember what each checked spot held at settlement, and whose it is."""
        self._pay_entries = dict(entries)
        self._pay_before = {k: self.spots.uids_on(*k) for k in check.spots}
        self._pay_after = {k: self.spots.uids_on(*k) for k, s in check.spots.items() if s.paid}

    def _note_paid(self) -> None:
        check = self.payout
        if check is None:
            return
        for key, spot in check.spots.items():
            if spot.paid and key not in self._pay_after:
                self._pay_after[key] = self.spots.uids_on(*key)

    def _payout_ended(self, check: PayoutCheck) -> None:
        """The payout is verified (or overridden as it stands): losses taken go back to the
        float, float chips paid onto a spot are its entry's."""
        for key, before in sorted(self._pay_before.items()):
            if key not in check.spots:
                continue
            after = self._pay_after.get(key, self.spots.uids_on(*key))
            self.chip_float.paid(self._pay_entries.get(key[0]), before, after)
        self._pay_before, self._pay_after, self._pay_entries = {}, {}, {}

    def _losses_taken(self, settlement: HandSettlement, entries: Mapping[int, str]) -> None:
        """No payout check at this table: a losing wager's chips go back to the float when the
        hand settles (a win paid from the float stays the float's)."""
        for seat in settlement.seats:
            for result in seat.results:
                if result.result == "lose":
                    self.chip_float.paid(entries.get(seat.seat),
                                         self.spots.uids_on(seat.seat, result.wager),
                                         frozenset())

    # ---- the end of the heat ------------------------------------------------------------

    def _return_chips(self, seat: int, at: datetime, out: Out) -> dict[str, Any]:
        entry = self._chip_seats.get(seat)
        if entry is None:
            raise ChipRefused(f"no entry's chips are waiting to be returned at seat {seat}")
        sitting = self.session.seats.get(seat) if self.session is not None else None
        if sitting is not None and sitting.entry_id == entry:
            raise ChipRefused(f"entry {entry} is still playing at seat {seat}: its chips are"
                              " returned when its play has ended")
        done = self._reconcile(entry, seat, at, out)
        if done is None:
            return {"entry_id": entry, "returned": 0, "missing": 0, "missing_value": 0}
        return {"entry_id": entry, "returned": len(done.returned),
                "missing": len(done.missing), "missing_value": done.missing_cents}

    def _reconcile_heat(self, at: datetime, out: Out) -> None:
        """The heat closes: every entry whose chips were not returned yet is reconciled from
        what lies on its seat's spots now."""
        for seat, entry in sorted(self._chip_seats.items()):
            self._reconcile(entry, seat, at, out)

    def _reconcile(self, entry: str, seat: int, at: datetime,
                   out: Out) -> ChipsReconciled | None:
        """Reconcile one entry's chips (None: it was issued none and holds none)."""
        chips = self.chip_float
        self._chip_seats.pop(seat, None)
        self.spots.seat_entries.pop(seat, None)
        if not chips.issued_to(entry) and not chips.held_by(entry):
            return None
        done = chips.reconcile(entry, seat, self.spots.seat_uids(seat))
        message = ChipsReconciled.of(done, chip_set=chips.registry.chip_set,
                                     heat_id=self.heat_id, at=format_ts(at))
        out.append(message)
        if done.missing:
            self._alert(out, "chips_missing", f"chips not returned to the float: "
                        f"{done.summary()}", at, source="chips", seat=seat)
        elif done.foreign:
            self._alert(out, "chip_pooling", f"chips of other entries returned with entry"
                        f" {entry}'s: {done.summary()}", at, source="chips", seat=seat)
        return message

    def chips_view(self) -> dict[str, Any]:
        """The float for the table's status."""
        view = dict(self.chip_float.view())
        seated = self.session.seats if self.session is not None else {}
        view["waiting_return"] = {str(s): e for s, e in sorted(self._chip_seats.items())
                                  if s not in seated or seated[s].entry_id != e}
        view["on_seats"] = {str(s): len(self.spots.seat_uids(s)) for s in self._chip_seats}
        return view
