"""What people did at a table's console, as the table reports it: ``score.disputed`` -> a
Dispute row (open until a supervisor resolves it at the desk), ``payout.checked`` -> a
PayoutCheck row. One row per message, keyed by (table, seq); they touch no other row, so the
order they arrive in does not matter and ``bulk`` applies them all at once. (``staff.session``
is only stored, in ``messages``.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from leaderboard.projections.results import Projected
from leaderboard.projections.sql import DISPUTES, PAYOUT_CHECKS, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import PayoutChecked, ScoreDisputed

__all__ = ["ConsoleMessage", "console_rows", "dispute_values", "payout_values"]

ConsoleMessage = ScoreDisputed | PayoutChecked
_KEY: Final = ("table_id", "seq")
_LINES: Final = ("mismatches", "unverifiable")  # given as JSON text


def dispute_values(envelope: Envelope, message: ScoreDisputed) -> dict[str, Any]:
    """The Dispute row of a ``score.disputed`` message."""
    return {"entry_id": message.entry_id, "table_id": envelope.table, "seq": envelope.seq,
            "stage": message.stage, "heat_id": message.heat_id, "score_cents": message.score,
            "note": message.note, "at": wall_of(envelope), "resolved_at": None,
            "resolved_by": None, "resolution": None}


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def payout_values(envelope: Envelope, message: PayoutChecked) -> dict[str, Any]:
    """The PayoutCheck row of a ``payout.checked`` message (its lines as JSON text)."""
    return {"hand_id": message.hand_id, "table_id": envelope.table, "seq": envelope.seq,
            "heat_id": message.heat_id, "outcome": message.outcome,
            "mismatches": _json([m.encode() for m in message.mismatches]),
            "unverifiable": _json([m.encode() for m in message.unverifiable]),
            "by": message.by, "reason": message.reason, "at": wall_of(envelope)}


def console_rows(connection: Connection,
                 chosen: Sequence[tuple[int, Envelope, ConsoleMessage]]) -> dict[int, Projected]:
    """Insert the rows of these messages (by their index in the caller's list); returns the
    projection of each one inserted (a message whose row is stored already changes nothing)."""
    disputes = [(i, e, values) for i, e, m in chosen if isinstance(m, ScoreDisputed)
                for values in (dispute_values(e, m),)]
    payouts = [(i, e, values) for i, e, m in chosen if isinstance(m, PayoutChecked)
               for values in (payout_values(e, m),)]
    done: dict[int, Projected] = {}
    for table, mine, text in ((DISPUTES, disputes, ()), (PAYOUT_CHECKS, payouts, _LINES)):
        if not mine:
            continue
        inserted = insert_new(connection, table, [values for _, _, values in mine], key=_KEY,
                              json_text=text)
        done.update({i: Projected(changes=(e.type,)) for i, e, _ in mine
                     if (e.table, e.seq) in inserted})
    return done
