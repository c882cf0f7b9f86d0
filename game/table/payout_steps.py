"""The table core's payout steps (D72): after settlement each wagered spot's chips are checked
against what it must hold, spot by spot as the readers report, before the next hand opens.

A mixin of `game.table.core.TableCore`, kept apart so the core stays one screenful of
dispatch; it uses the core's payout check, spots, session and alerts, and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from game.chips.spot_book import SpotBook
from game.hand import Hand
from game.messages.console import PayoutChecked
from game.messages.fields import format_ts
from game.messages.table import TableMessage
from game.table.inputs import PayoutCheckPressed, PayoutOverride
from game.table.payout_check import PayoutCheck
from game.table.session import TableSession

__all__ = ["PayoutSteps"]

Out = list[TableMessage]


class PayoutSteps:
    """The payout check's steps; the core supplies the state below and `_alert`."""

    payout: PayoutCheck | None
    spots: SpotBook
    session: TableSession | None
    heat_id: str | None

    def _alert(self, out: Out, kind: str, message: str, at: datetime, *,
               source: str = "table", seat: int | None = None, hand_id: str | None = None,
               alert_id: int | None = None, evidence: Mapping[str, Any] | None = None) -> None:
        raise NotImplementedError  # the core's

    def _payout_started(self, check: PayoutCheck, entries: Mapping[int, str]) -> None:
        """A hook: the check of a settled hand's payout began (the chip float notes it)."""

    def _payout_ended(self, check: PayoutCheck) -> None:
        """A hook: the payout is verified or overridden (the chip float moves the chips)."""

    def _start_payout(self, hand: Hand, entries: Mapping[int, str], at: datetime,
                      out: Out) -> None:
        def held(seat: int, spot: str) -> tuple[int, bool]:
            wagers, _ = self.spots.wagers(seat, entries.get(seat), report=False)
            return wagers.amount(spot), self.spots.keyed(seat, spot)

        assert hand.settlement is not None
        self.payout = PayoutCheck.of(hand_id=hand.hand_id, heat_id=self.heat_id,
                                     settlement=hand.settlement, held=held)
        self._payout_started(self.payout, entries)
        self._payout_done(out, at)

    def _payout_seen(self, seat: int, spot: str, out: Out, at: datetime, *,
                     keyed: bool) -> None:
        check = self.payout
        if check is None or (seat, spot) not in check.spots:
            return
        entry = self.session.seats.get(seat) if self.session else None
        wagers, _ = self.spots.wagers(seat, entry.entry_id if entry else None, report=False)
        over = check.see(seat, spot, wagers.amount(spot), keyed=keyed)
        if over is not None:
            kind, words = over.problem()
            self._alert(out, kind, words, at, source="payout", seat=seat,
                        hand_id=check.hand_id)
        self._payout_done(out, at)

    def _payout_done(self, out: Out, at: datetime) -> None:
        check = self.payout
        if check is None or not check.complete:
            return
        self._payout_ended(check)
        out.append(PayoutChecked(hand_id=check.hand_id, heat_id=check.heat_id,
                                 outcome="verified",
                                 unverifiable=tuple(s.line for s in check.keyed()),
                                 at=format_ts(at)))
        self.payout = None

    def _payout_action(self, given: PayoutCheckPressed | PayoutOverride, at: datetime,
                       out: Out) -> dict[str, Any]:
        check = self.payout
        assert check is not None, "the core refuses a payout action with no payout waiting"
        if isinstance(given, PayoutOverride):
            self._payout_ended(check)
            out.append(PayoutChecked(hand_id=check.hand_id, heat_id=check.heat_id,
                                     outcome="overridden",
                                     mismatches=tuple(s.line for s in check.unpaid()),
                                     unverifiable=tuple(s.line for s in check.keyed()),
                                     by=given.by, reason=given.reason, at=format_ts(at)))
            self.payout = None
            return {"hand_id": check.hand_id, "payout": "overridden"}
        for spot in check.unpaid():
            kind, words = spot.problem()
            self._alert(out, kind, words, at, source="payout", seat=spot.seat,
                        hand_id=check.hand_id)
        return {"hand_id": check.hand_id, "payout": check.view()}
