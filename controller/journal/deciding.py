"""Store and decide in one transaction: what the journal asks of whoever decides on its
inputs (the table service, `controller.table_service.TableService.decide`), and what it
gives back (docs/journal.md, Durability).

    stored = journal.append_batch([Entry(kind=..., payload=..., clock=..., given=...)],
                                  decider)
    # one transaction, one fsync; for each entry, in order:
    #   the record is inserted (journal first), then
    #   decision = decider.decide(record, entry.given)
    #   and decision.messages go into the outbox with the next seqs
    stored[i].record, stored[i].messages, stored[i].decision

``given`` is whatever the caller holds for the input besides its stored payload (the
daemon: the typed input the payload encodes, or None for a request journaled as it came);
the journal never looks at it. If `decide` raises, the whole batch is rolled back (nothing
stored, no seq used) and the exception propagates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from controller.clock import ClockReading
from controller.journal.records import JournalRecord, StoredMessage
from wire.outbox import OutgoingItem

__all__ = ["Decider", "Decision", "Entry", "Stored"]

_Given = TypeVar("_Given")
_Given_contra = TypeVar("_Given_contra", contravariant=True)
_Decided = TypeVar("_Decided")
_Decided_co = TypeVar("_Decided_co", bound="Decision", covariant=True)


class Decision(Protocol):
    """What a decider gives for one record: at least the messages it causes."""

    @property
    def messages(self) -> Sequence[OutgoingItem]:
        """The messages to store in the outbox, in order, in the record's transaction."""
        ...


class Decider(Protocol[_Given_contra, _Decided_co]):
    """Decides on each input the journal has just inserted, inside its transaction."""

    def decide(self, record: JournalRecord, given: _Given_contra) -> _Decided_co:
        """The decision on ``record`` (inserted, not yet committed); ``given`` as submitted.
        Raising rolls the whole batch back."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry(Generic[_Given]):
    """One input to append: its kind and payload (stored as canonical JSON), the clock
    reading it is stamped with, and what the decider gets with its record."""

    kind: str
    payload: Mapping[str, Any]
    clock: ClockReading
    given: _Given


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored(Generic[_Decided]):
    """One input as committed: its record, its messages as stored, the decision on it."""

    record: JournalRecord
    messages: list[StoredMessage]
    decision: _Decided
