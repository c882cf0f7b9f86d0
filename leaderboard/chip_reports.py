"""The stored chip reconciliations (``chip_reconciliations``) read back, for the tournament
chip inventory (`game.chips.inventory`)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from game.messages.chips import ChipsReconciled
from leaderboard.models import ChipReconciliation

__all__ = ["stored_reconciliations"]


def stored_reconciliations(connection: Connection) -> list[tuple[str, int, ChipsReconciled]]:
    """Every stored reconciliation as (table, seq, message), in table and seq order."""
    found = connection.execute(select(ChipReconciliation).order_by(
        ChipReconciliation.table_id, ChipReconciliation.seq)).all()
    return [(r.table_id, r.seq, ChipsReconciled(
        entry_id=r.entry_id, seat=r.seat, chip_set=r.chip_set, heat_id=r.heat_id,
        issued=tuple(r.issued), held=tuple(r.held), returned=tuple(r.returned),
        missing=tuple(r.missing), foreign=tuple(r.foreign), issued_cents=r.issued_cents,
        held_cents=r.held_cents, returned_cents=r.returned_cents,
        missing_cents=r.missing_cents, at=r.at.isoformat())) for r in found]
