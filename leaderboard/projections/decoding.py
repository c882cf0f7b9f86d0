"""Reading a stored message's body once, into its typed definition (wire.messages).

Only the projected types are read; a body that breaks a rule of its definition is refused as
``malformed_body`` with the definition's own words (which field, what is wrong).
"""

from __future__ import annotations

import enum
from typing import Final

from leaderboard.projections.results import PROJECTED_TYPES
from wire.envelope import Envelope
from wire.messages import (
    TABLE_MESSAGES,
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
    MessageError,
    PayoutChecked,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
)

__all__ = ["NOT_READ", "Decoded", "NotRead", "Projectable", "body_problem", "decode", "read"]

Projectable = (ScoreRecorded | ScoreAcknowledged | ScoreVoided | HandSettled | HandVoided
               | EntrySeated | EntryUnseated | ScoreDisputed | PayoutChecked | CommandResult
               | HandDisputed | HandCorrected | ChipsReconciled | ChipsCounted | DecksEvent)
# What reading a body gave: its message, the rule it breaks, or None (a type only stored).
Decoded = Projectable | MessageError | None
_CLASSES: Final = {t: TABLE_MESSAGES[t] for t in PROJECTED_TYPES}


class NotRead(enum.Enum):
    """The body has not been read yet (the caller did not decode it)."""

    NOT_READ = "not read"


NOT_READ: Final = NotRead.NOT_READ


def decode(envelope: Envelope) -> Projectable | None:
    """The envelope's body as its typed message; None for a type that is only stored.

    Raises MessageError for a body that breaks a rule (a table's id must be the sender's).
    """
    kind = _CLASSES.get(envelope.type)
    if kind is None:
        return None
    message: Projectable = kind.decode(envelope.body, sender=envelope.table)
    return message


def read(envelope: Envelope) -> Decoded:
    """`decode`, with a broken rule returned rather than raised: read once, used twice (the
    ingest reads every body of a batch once and hands it to both projection paths)."""
    try:
        return decode(envelope)
    except MessageError as exc:
        return exc


def body_problem(envelope: Envelope) -> str | None:
    """Why a projected type's body cannot be applied (a missing or bad field), or None."""
    try:
        decode(envelope)
    except MessageError as exc:
        return str(exc)
    return None
