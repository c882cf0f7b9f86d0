"""What the ingest says about each message: outcomes, refusal reasons, counters.

Also the working records of one batch (``Item``, ``Batch``) that the screening, storing and
gap modules fill in, and ``Tally``, the running counters behind ``IngestCounters``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from leaderboard.projections import PROJECTION_REASONS, Projected, Refused
from wire.envelope import REJECTION_REASONS, Envelope
from wire.messages import Availability, CommandRejected
from wire.topics import ID_PATTERN, TOPIC_SUFFIXES

__all__ = [
    "INGEST_REASONS",
    "INGEST_SUFFIXES",
    "NOTICE_TYPES",
    "OUT_OF_WINDOW",
    "REPLAYED_SEQ",
    "STORE_ERROR",
    "TABLE_INACTIVE",
    "WRONG_TOPIC",
    "WRONG_VENUE",
    "Batch",
    "IngestCounters",
    "IngestResult",
    "Item",
    "Outcome",
    "Tally",
    "clean",
    "rejection_row",
]

Outcome = Literal["stored", "duplicate", "rejected", "notice", "ignored", "failed"]

# Rejection reasons of the ingest itself, beyond the envelope's (wire.envelope) and the
# projections' (leaderboard.projections).
WRONG_TOPIC: Final = "wrong_topic"  # a table's message on another table's topic
WRONG_VENUE: Final = "wrong_venue"  # an envelope of another venue
TABLE_INACTIVE: Final = "table_inactive"  # enrolled, but marked inactive
OUT_OF_WINDOW: Final = "out_of_window"  # too far ahead, or seq 0 on a sequenced type
REPLAYED_SEQ: Final = "replayed_seq"  # a stored (table, seq) with different content
STORE_ERROR: Final = "store_error"  # the database refused the message (it is asked again)
INGEST_REASONS: Final = (
    *REJECTION_REASONS, WRONG_TOPIC, WRONG_VENUE, TABLE_INACTIVE, OUT_OF_WINDOW, REPLAYED_SEQ,
    *PROJECTION_REASONS, STORE_ERROR,
)
# seq 0: unsequenced notices (docs/mqtt.md); never stored by seq, never a gap.
NOTICE_TYPES: Final = frozenset({Availability.TYPE, CommandRejected.TYPE})
INGEST_SUFFIXES: Final = TOPIC_SUFFIXES  # every topic a table publishes on
MAX_DETAIL: Final = 2_000
_MAX_TOPIC: Final = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestResult:
    """What happened to one received message.

    ``outcome``: stored (new), duplicate (a copy of a stored message), rejected (not stored,
    ``reason`` says why), notice (seq 0: availability, command rejections), ignored (not a
    table topic of this venue), failed (the database failed; the table will be asked again).
    A stored message whose projection was refused has ``reason`` set too.
    """

    outcome: Outcome
    table: str | None = None
    seq: int | None = None
    type: str | None = None
    reason: str | None = None
    detail: str = ""
    changes: tuple[str, ...] = ()

    @classmethod
    def about(cls, envelope: Envelope, outcome: Outcome, **fields: Any) -> IngestResult:
        """A result naming the envelope's table, seq and type."""
        return cls(outcome=outcome, table=envelope.table, seq=envelope.seq, type=envelope.type,
                   **fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestCounters:
    """A snapshot of the ingest's counters (since this instance started)."""

    received: int
    stored: int
    duplicates: int
    rejected: int
    notices: int
    ignored: int
    failed: int
    rejections: Mapping[str, int]
    resend_requests: int
    resend_failures: int
    batches: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "received": self.received, "stored": self.stored, "duplicates": self.duplicates,
            "rejected": self.rejected, "notices": self.notices, "ignored": self.ignored,
            "failed": self.failed, "rejections": dict(sorted(self.rejections.items())),
            "resend_requests": self.resend_requests, "resend_failures": self.resend_failures,
            "batches": self.batches,
        }


@dataclass(slots=True)
class Tally:
    """The running counters: outcomes and events by name, refusals by reason."""

    counts: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)

    def snapshot(self) -> IngestCounters:
        """The counters as they are now."""
        c = self.counts
        return IngestCounters(
            received=c["received"], stored=c["stored"], duplicates=c["duplicate"],
            rejected=c["rejected"], notices=c["notice"], ignored=c["ignored"],
            failed=c["failed"], rejections=dict(self.reasons),
            resend_requests=c["resend_requests"], resend_failures=c["resend_failures"],
            batches=c["batches"],
        )


@dataclass(slots=True)
class Item:
    """One message of a batch as it goes through screening and storing."""

    index: int
    topic: str
    payload: bytes
    sha256: str
    envelope: Envelope | None = None
    body_text: str | None = None  # the body's JSON text, cut from the payload
    claimed: str | None = None  # the table the message names, for rejections
    result: IngestResult | None = None
    projected: Projected | None = None

    def key(self) -> tuple[str, int]:
        """The (table, seq) of a verified message."""
        envelope = self.envelope
        assert envelope is not None
        return envelope.table, envelope.seq


@dataclass(slots=True)
class Batch:
    """What one transaction did: a result per message, and what to do after the commit."""

    results: list[IngestResult]
    resends: list[tuple[str, int]] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    refused: list[tuple[Item, Refused]] = field(default_factory=list)
    notes: list[tuple[Item, str]] = field(default_factory=list)


def clean(text: str, limit: int) -> str:
    """Text safe to store and log: no NUL, at most ``limit`` characters."""
    text = text.replace("\x00", "\\x00")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def rejection_row(reason: str, table: str | None, topic: str, detail: str, *, sha256: str,
                  now: datetime) -> dict[str, Any]:
    """A row of ``rejections``."""
    return {
        "reason": reason,
        "table_id": table if table is not None and ID_PATTERN.fullmatch(table) else None,
        "topic": clean(topic, _MAX_TOPIC), "detail": clean(detail, MAX_DETAIL),
        "payload_sha256": sha256, "received_at": now,
    }
