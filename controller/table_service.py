"""The table daemon's adapter around its decision core: one journaled input in, the messages
it causes out.

The running daemon's inputs reach it through the journal: `TableService.decide(record,
given)` is the journal's `Decider` (controller/journal/deciding.py), called by
`Journal.append_batch` for each record just inserted, in the same transaction as the
messages it returns. ``given`` is the typed input the record's payload encodes (a device's
reading, `game.table.inputs.encode_input`), decided on as it is; None for a request
journaled as it came, whose payload is decoded (`game.table.inputs.decode_input`). Replay
(`apply`, `replay`) decodes every record; a typed input decodes back to itself, so both
decide the same. The pure core (`game.table.core.TableCore`) decides, and its typed messages
become `Outgoing` rows for the outbox. The time comes with the record, so replaying the
journal rebuilds the identical state after a crash. Every input returns an `Applied`: the
outgoing messages and a result for whoever sent it (accepted, or refused with the reason).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.journal.records import JournalRecord
from game.chips.registry import ChipRegistry
from game.chips.spot_book import SpotBook
from game.hand import Hand
from game.hand.deal import DealSequence
from game.messages.desk import DeskOrder
from game.messages.table import ScoreRecorded
from game.paytables.lines import Paytables
from game.staff import LockoutPolicy
from game.table.core import TableCore
from game.table.inputs import TableInput, decode_input
from game.table.session import TableSession
from game.tournament.schema import TournamentSettings
from wire.outbox import Outgoing

__all__ = ["Applied", "TableService", "replay"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Applied:
    """What one input did: the messages it causes and the answer for its sender."""

    messages: tuple[Outgoing, ...] = ()
    ok: bool = True
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def answer(self) -> dict[str, Any]:
        """The console's answer for it: ``ok``, and the ``error`` or ``detail`` when set."""
        out: dict[str, Any] = {"ok": self.ok}
        if self.error:
            out["error"] = self.error
        if self.detail:
            out["detail"] = dict(self.detail)
        return out


class TableService:
    """One table's state behind the journal: decodes each input and hands it to the core."""

    def __init__(
        self,
        *,
        table_id: str,
        settings: TournamentSettings,
        paytables: Paytables,
        deal: DealSequence,
        registry: ChipRegistry,
        marker_set: str = "bonus-marker",
        verify_payouts: bool = False,
        lockout: LockoutPolicy | None = None,
    ) -> None:
        self.core = TableCore(table_id=table_id, settings=settings, paytables=paytables,
                              deal=deal, registry=registry, marker_set=marker_set,
                              verify_payouts=verify_payouts, lockout=lockout)
        # Inputs are applied on the journal's writer thread; `status` is read on others (the
        # local API, a test's poll): one at a time, so a read never meets a half-applied
        # input ("dictionary changed size during iteration" in the float's view).
        self._state = threading.RLock()

    def decide(self, record: JournalRecord, given: TableInput | None) -> Applied:
        """The journal's decider: apply ``record``, just inserted, in its transaction; on
        ``given``, the typed input its payload encodes, or (None) on its payload decoded."""
        if given is None:
            given = decode_input(record.kind, record.payload)
        return self._apply(given, record.wall)

    def apply(self, kind: str, payload: Mapping[str, Any], wall: datetime) -> Applied:
        """Apply one journaled input; never raises for bad input (it is refused with a reason)."""
        return self._apply(decode_input(kind, payload), wall)

    def _apply(self, given: TableInput, wall: datetime) -> Applied:
        with self._state:
            decision = self.core.apply(given, wall)
        return Applied(messages=tuple(Outgoing(message=m) for m in decision.messages),
                       ok=decision.ok, error=decision.error, detail=decision.detail)

    # ---- views of the core's state ------------------------------------------------------

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.core.table_id

    @property
    def deal(self) -> DealSequence:
        """The order cards are dealt in."""
        return self.core.deal

    @property
    def session(self) -> TableSession | None:
        """The open heat, if any."""
        return self.core.session

    @property
    def heat_id(self) -> str | None:
        """The open heat's id, if any."""
        return self.core.heat_id

    @property
    def hand(self) -> Hand | None:
        """The hand in progress, if any."""
        return self.core.hand

    @property
    def spots(self) -> SpotBook:
        """What lies on every betting spot."""
        return self.core.spots

    @property
    def held(self) -> list[DeskOrder]:
        """Desk commands waiting for the hand in progress to end."""
        return self.core.held

    @property
    def unacknowledged(self) -> Mapping[str, ScoreRecorded]:
        """Scores not yet acknowledged, by entry id."""
        return self.core.unacknowledged

    @property
    def hands_opened(self) -> int:
        """Hands opened since the journal began."""
        return self.core.hands_opened

    @property
    def inputs_applied(self) -> int:
        """Inputs applied since start (replay included)."""
        return self.core.inputs_applied

    @property
    def alerts_raised(self) -> int:
        """Alerts raised since start (replay included)."""
        return self.core.alerts_raised

    def status(self) -> dict[str, Any]:
        """A summary for the status message and `showdown table status` (read between inputs:
        it waits for an input being applied on the writer thread)."""
        with self._state:
            return self.core.status()


def replay(service: TableService, records: Sequence[tuple[str, Mapping[str, Any], datetime]]
           ) -> list[Applied]:
    """Apply journaled inputs in order (rebuilding state after a restart)."""
    return [service.apply(kind, payload, wall) for kind, payload, wall in records]
