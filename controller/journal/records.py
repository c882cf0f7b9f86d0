"""The journal's values: records, stored messages, faults, integrity problems, its errors
and the record kinds it keeps for itself (creation, faults, clearing)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

from wire.outbox import TopicSuffix

__all__ = [
    "CREATED_KIND",
    "FAULTS_CLEARED_KIND",
    "FAULT_KIND",
    "OWN_KIND_PREFIX",
    "CheckedMessage",
    "Fault",
    "IntegrityProblem",
    "JournalBusy",
    "JournalDamaged",
    "JournalError",
    "JournalRecord",
    "JournalUnreadable",
    "ProblemArea",
    "StoredMessage",
    "is_own_kind",
]

OWN_KIND_PREFIX: Final = "journal."
CREATED_KIND: Final = "journal.created"
FAULT_KIND: Final = "journal.fault"
FAULTS_CLEARED_KIND: Final = "journal.faults_cleared"


class JournalError(Exception):
    """Root of the journal's errors: misuse, refusals and unreadable data."""


class JournalUnreadable(JournalError):
    """The file is missing, is not a showdown journal, or SQLite cannot read it."""


class JournalBusy(JournalError):
    """Another process has the journal open for writing (the table daemon, usually)."""


class JournalDamaged(JournalError):
    """Refused because the journal fails verification: it is replaced, never repaired."""


def is_own_kind(kind: str) -> bool:
    """True for the journal's own record kinds (creation, faults), which replay skips."""
    return kind.startswith(OWN_KIND_PREFIX)


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalRecord:
    """One journal record: an input (or the journal's own event) with its time and checksum."""

    seq: int
    kind: str
    payload: Mapping[str, Any]
    wall: datetime
    mono_ns: int
    boot_id: str
    checksum: str
    synced: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredMessage:
    """An outgoing message as the journal stores it (a `wire.outbox.OutboxItem`): its
    per-table seq, the record that caused it, its delivery state."""

    seq: int
    record_seq: int
    topic_suffix: TopicSuffix
    type: str
    body: Mapping[str, Any]
    retain: bool
    wall: datetime
    mono_ns: int
    boot_id: str
    delivered: bool
    synced: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedMessage:
    """An outbox message read for display: whatever could be decoded, and what is wrong with it."""

    seq: int
    type: str
    topic_suffix: str
    wall: str
    boot_id: str
    delivered: bool
    body: Mapping[str, Any] | None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """A recorded error condition; open until an operator clears it (its id is its record seq)."""

    seq: int
    kind: str
    detail: str
    wall: datetime
    boot_id: str


ProblemArea: TypeAlias = Literal["database", "journal", "outbox", "head", "faults"]


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityProblem:
    """One thing `verify()` found wrong: where (area and seq), a stable code, and the detail."""

    area: ProblemArea
    code: str
    detail: str
    seq: int | None = None

    def __str__(self) -> str:
        where = self.area if self.seq is None else f"{self.area} seq {self.seq}"
        return f"{where}: {self.detail} [{self.code}]"
