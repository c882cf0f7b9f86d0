"""The names the projections share: projected message types, entry statuses, the reasons a
projection is refused, and what applying a message returns (`Projected`, `Refused`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from wire.envelope import Envelope
from wire.messages import (
    ChipsCounted,
    ChipsReconciled,
    CommandResult,
    DecksEvent,
    EntrySeated,
    EntryUnseated,
    HandCorrected,
    HandDisputed,
    HandSettled,
    HandVoided,
    PayoutChecked,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
)

__all__ = [
    "ACK_CONFLICT",
    "ACK_MISMATCH",
    "ENTRY_SEATED",
    "ENTRY_UNSEATED",
    "HAND_CONFLICT",
    "HAND_SETTLED",
    "HAND_VOIDED",
    "INGEST_ACTOR",
    "MALFORMED_BODY",
    "PAYOUT_CHECKED",
    "PROJECTED_TYPES",
    "PROJECTION_REASONS",
    "REFUNDED",
    "RELEASED",
    "SCORE_ACKNOWLEDGED",
    "SCORE_CONFLICT",
    "SCORE_DISPUTED",
    "SCORE_RECORDED",
    "SCORE_STALE",
    "SCORE_VOIDED",
    "SEATED",
    "SEAT_MISMATCH",
    "SEAT_STALE",
    "UNPAID_STATUSES",
    "VOID_CONFLICT",
    "WITHDRAWN",
    "Outcome",
    "Projected",
    "Refused",
]

SCORE_RECORDED: Final = ScoreRecorded.TYPE
SCORE_ACKNOWLEDGED: Final = ScoreAcknowledged.TYPE
SCORE_VOIDED: Final = ScoreVoided.TYPE
HAND_SETTLED: Final = HandSettled.TYPE
HAND_VOIDED: Final = HandVoided.TYPE
ENTRY_SEATED: Final = EntrySeated.TYPE
ENTRY_UNSEATED: Final = EntryUnseated.TYPE
SCORE_DISPUTED: Final = ScoreDisputed.TYPE
PAYOUT_CHECKED: Final = PayoutChecked.TYPE
CHIPS_RECONCILED: Final = ChipsReconciled.TYPE
# Types applied to tables beyond ``messages`` (others, e.g. staff.session, are only stored).
PROJECTED_TYPES: Final = frozenset({SCORE_RECORDED, SCORE_ACKNOWLEDGED, SCORE_VOIDED,
                                    HAND_SETTLED, HAND_VOIDED, ENTRY_SEATED, ENTRY_UNSEATED,
                                    SCORE_DISPUTED, PAYOUT_CHECKED, CommandResult.TYPE,
                                    HandDisputed.TYPE, HandCorrected.TYPE, CHIPS_RECONCILED,
                                    ChipsCounted.TYPE, DecksEvent.TYPE})
# Entry statuses (leaderboard.desk sets all but withdrawn): an entry that left its seat
# before its last hand is withdrawn; it records no score (rule 14) and is never seated again.
# A refunded one's buy-in went back to the patron.
SEATED: Final = "seated"
WITHDRAWN: Final = "withdrawn"
REFUNDED: Final = "refunded"
# Entry statuses whose buy-in is not (or no longer) in the pools; their scores never count.
UNPAID_STATUSES: Final = frozenset({REFUNDED, "cancelled", "void", "voided", "refused"})
SEAT_MISMATCH: Final = "entry.seat_mismatch"  # the audit action of a seat the desk did not give
SEAT_STALE: Final = "entry.seat_stale"  # ... of a seating the desk has since undone
RELEASED: Final = "entry.released"  # the desk's action freeing a place from a failed table
INGEST_ACTOR: Final = "ingest"

# Reasons a stored message's projection is refused (counted with the ingest's own reasons).
MALFORMED_BODY: Final = "malformed_body"
SCORE_CONFLICT: Final = "score_conflict"
SCORE_STALE: Final = "score_stale"
ACK_CONFLICT: Final = "ack_conflict"
ACK_MISMATCH: Final = "ack_mismatch"
VOID_CONFLICT: Final = "void_conflict"
HAND_CONFLICT: Final = "hand_conflict"
PROJECTION_REASONS: Final = (
    MALFORMED_BODY, SCORE_CONFLICT, SCORE_STALE, ACK_CONFLICT, ACK_MISMATCH, VOID_CONFLICT,
    HAND_CONFLICT,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """A projection that was not applied: which message, why (``reason``), and the detail."""

    table: str
    seq: int
    type: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Projected:
    """What applying one message did: the kinds of rows it changed, and any refusals."""

    changes: tuple[str, ...] = ()
    refused: tuple[Refused, ...] = ()
    notes: tuple[str, ...] = ()  # harmless remarks for the log (deferred, unknown entry, ...)


class Outcome:
    """What applying one message does, collected while its rules run (then `frozen`)."""

    def __init__(self) -> None:
        self.changes: list[str] = []
        self.refused: list[Refused] = []
        self.notes: list[str] = []

    def refuse(self, envelope: Envelope, reason: str, detail: str) -> None:
        """Add a refusal of ``envelope``'s projection."""
        self.refused.append(Refused(table=envelope.table, seq=envelope.seq, type=envelope.type,
                                    reason=reason, detail=detail))

    def frozen(self) -> Projected:
        """The `Projected` of what was collected."""
        return Projected(changes=tuple(self.changes), refused=tuple(self.refused),
                         notes=tuple(self.notes))
