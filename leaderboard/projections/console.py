"""What people did at a table's console, as the table reports it: ``score.disputed`` (a
participant's) and ``hand.disputed`` (a dealer's or supervisor's) -> a Dispute row (open until
a supervisor rules on it at the desk), ``payout.checked`` -> a PayoutCheck row,
``hand.corrected`` (a ruling applied to an entry's chips) -> a HandCorrection row. One row per
message, keyed by (table, seq); they touch no other row, so the order they arrive in does not
matter and ``bulk`` applies them all at once. (``staff.session`` is only stored, in
``messages``.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from leaderboard.projections.results import Projected
from leaderboard.projections.sql import (
    DISPUTES,
    HAND_CORRECTIONS,
    PAYOUT_CHECKS,
    insert_new,
    wall_of,
)
from wire.envelope import Envelope
from wire.messages import HandCorrected, HandDisputed, PayoutChecked, ScoreDisputed

__all__ = ["ConsoleMessage", "console_rows", "correction_values", "dispute_values",
           "payout_values"]

ConsoleMessage = ScoreDisputed | PayoutChecked | HandDisputed | HandCorrected
_KEY: Final = ("table_id", "seq")
_LINES: Final = ("mismatches", "unverifiable")  # given as JSON text
_HANDS: Final = ("hand_ids", "ruling_detail")  # given as JSON text


def dispute_values(envelope: Envelope, message: ScoreDisputed | HandDisputed
                   ) -> dict[str, Any]:
    """The Dispute row of a ``score.disputed`` or ``hand.disputed`` message."""
    row: dict[str, Any] = {
        "entry_id": message.entry_id, "table_id": envelope.table, "seq": envelope.seq,
        "stage": message.stage, "heat_id": message.heat_id, "at": wall_of(envelope),
        "status": "open", "recorded_by": None, "ruling": None, "ruling_reason": None,
        "ruled_by": None, "ruled_at": None, "ruling_detail": None, "resolved_at": None,
        "resolved_by": None, "resolution": None}
    if isinstance(message, ScoreDisputed):
        row.update(score_cents=message.score, note=message.note,
                   raised_by_role="participant", raised_by=message.entry_id,
                   hand_ids=None)
    else:
        row.update(score_cents=None, note=message.claim,
                   raised_by_role=message.role or "staff", raised_by=message.by,
                   hand_ids=_json([message.hand_id]))
    return row


def correction_values(envelope: Envelope, message: HandCorrected) -> dict[str, Any]:
    """The HandCorrection row of a ``hand.corrected`` message."""
    return {"table_id": envelope.table, "seq": envelope.seq, "hand_id": message.hand_id,
            "entry_id": message.entry_id, "seat": message.seat, "ruling": message.ruling,
            "recorded_net": message.recorded_net, "counted_net": message.counted_net,
            "balance_before": message.balance_before, "balance_after": message.balance_after,
            "hands_played": message.hands_played, "dispute_id": message.dispute_id,
            "by": message.by, "reason": message.reason, "heat_id": message.heat_id,
            "at": wall_of(envelope)}


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
    disputes = [(i, e, values) for i, e, m in chosen
                if isinstance(m, ScoreDisputed | HandDisputed)
                for values in (dispute_values(e, m),)]
    corrections = [(i, e, correction_values(e, m)) for i, e, m in chosen
                   if isinstance(m, HandCorrected)]
    payouts = [(i, e, values) for i, e, m in chosen if isinstance(m, PayoutChecked)
               for values in (payout_values(e, m),)]
    done: dict[int, Projected] = {}
    for table, mine, text in ((DISPUTES, disputes, _HANDS), (PAYOUT_CHECKS, payouts, _LINES),
                              (HAND_CORRECTIONS, corrections, ())):
        if not mine:
            continue
        inserted = insert_new(connection, table, [values for _, _, values in mine], key=_KEY,
                              json_text=text)
        done.update({i: Projected(changes=(e.type,)) for i, e, _ in mine
                     if (e.table, e.seq) in inserted})
    return done
