"""An entry's chips reconciled at the end of its heat, as its table reports it:
``chips.reconciled`` -> a ChipReconciliation row. One row per message, keyed by (table, seq);
it touches no other row, so the order messages arrive in does not matter and ``bulk`` applies
them all at once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from leaderboard.projections.results import Projected
from leaderboard.projections.sql import CHIP_RECONCILIATIONS, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import ChipsReconciled

__all__ = ["chip_rows", "reconciliation_values"]

_KEY: Final = ("table_id", "seq")
_LISTS: Final = ("issued", "held", "returned", "missing", "foreign")  # given as JSON text


def reconciliation_values(envelope: Envelope, message: ChipsReconciled) -> dict[str, Any]:
    """The ChipReconciliation row of a ``chips.reconciled`` message (UID lists as JSON text)."""
    lists = {name: json.dumps(list(getattr(message, name)), separators=(",", ":"))
             for name in _LISTS}
    return {"entry_id": message.entry_id, "table_id": envelope.table, "seq": envelope.seq,
            "heat_id": message.heat_id, "seat": message.seat, "chip_set": message.chip_set,
            **lists, "issued_cents": message.issued_cents, "held_cents": message.held_cents,
            "returned_cents": message.returned_cents, "missing_cents": message.missing_cents,
            "at": wall_of(envelope)}


def chip_rows(connection: Connection,
              chosen: Sequence[tuple[int, Envelope, ChipsReconciled]]) -> dict[int, Projected]:
    """Insert the rows of these messages (by their index in the caller's list); returns the
    projection of each one inserted (a message whose row is stored already changes nothing)."""
    if not chosen:
        return {}
    rows = [reconciliation_values(e, m) for _, e, m in chosen]
    inserted = insert_new(connection, CHIP_RECONCILIATIONS, rows, key=_KEY, json_text=_LISTS)
    return {i: Projected(changes=(e.type,)) for i, e, _ in chosen if (e.table, e.seq) in inserted}
