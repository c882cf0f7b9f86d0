"""What a stored table message changes in the leaderboard's tables (docs/ingest.md).

Ingest stores every valid message once in ``messages`` and, in the same transaction, applies
it here: scores (`scores`), hand records (`hands`), seatings (`seatings`); other types are
only stored. Messages can arrive out of order: every projection gives the same result
whatever the arrival order. A projection that cannot be applied (a second score for one
entry, an acknowledgement of a different figure, a body that breaks its definition) is
refused with a reason; the message itself stays stored, so the table's sequence has no hole.
`project` applies one message, `project_bulk` many of a batch by the same rules.
"""

from __future__ import annotations

from leaderboard.projections.bulk import project_bulk
from leaderboard.projections.decoding import body_problem
from leaderboard.projections.dispatch import project
from leaderboard.projections.hands import project_hands
from leaderboard.projections.results import (
    ACK_CONFLICT,
    ACK_MISMATCH,
    ENTRY_SEATED,
    ENTRY_UNSEATED,
    HAND_CONFLICT,
    HAND_SETTLED,
    HAND_VOIDED,
    MALFORMED_BODY,
    PROJECTED_TYPES,
    PROJECTION_REASONS,
    REFUNDED,
    RELEASED,
    SCORE_ACKNOWLEDGED,
    SCORE_CONFLICT,
    SCORE_RECORDED,
    SCORE_STALE,
    SCORE_VOIDED,
    SEAT_MISMATCH,
    SEAT_STALE,
    SEATED,
    UNPAID_STATUSES,
    VOID_CONFLICT,
    WITHDRAWN,
    Projected,
    Refused,
)
from leaderboard.projections.sql import (
    AUDIT,
    ENTRIES,
    HANDS,
    MESSAGES,
    PROGRESS,
    REJECTIONS,
    SCORES,
    LaterMessages,
    Statements,
    UnexpectedConflict,
    as_utc,
    body_text,
    insert_ignoring_conflicts,
    insert_new,
    later_messages_query,
    statements,
    wall_of,
)

__all__ = [
    "ACK_CONFLICT",
    "ACK_MISMATCH",
    "AUDIT",
    "ENTRIES",
    "ENTRY_SEATED",
    "ENTRY_UNSEATED",
    "HANDS",
    "HAND_CONFLICT",
    "HAND_SETTLED",
    "HAND_VOIDED",
    "MALFORMED_BODY",
    "MESSAGES",
    "PROGRESS",
    "PROJECTED_TYPES",
    "PROJECTION_REASONS",
    "REFUNDED",
    "REJECTIONS",
    "RELEASED",
    "SCORES",
    "SCORE_ACKNOWLEDGED",
    "SCORE_CONFLICT",
    "SCORE_RECORDED",
    "SCORE_STALE",
    "SCORE_VOIDED",
    "SEATED",
    "SEAT_MISMATCH",
    "SEAT_STALE",
    "UNPAID_STATUSES",
    "VOID_CONFLICT",
    "WITHDRAWN",
    "LaterMessages",
    "Projected",
    "Refused",
    "Statements",
    "UnexpectedConflict",
    "as_utc",
    "body_problem",
    "body_text",
    "insert_ignoring_conflicts",
    "insert_new",
    "later_messages_query",
    "project",
    "project_bulk",
    "project_hands",
    "statements",
    "wall_of",
]
