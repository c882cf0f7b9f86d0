"""Outbox messages: what the table has committed to send, and the source the MQTT link drains.

The journal (controller/journal/) stores these rows in the same transaction as the input
that caused them; controller/mqtt_link.py publishes them in ``seq`` order and marks each one
delivered only after the broker's PUBACK.

The link reads messages through the ``OutboxItem`` protocol, so the journal may hand it its
own row type (with more fields) as long as it has these attributes; ``OutboxMessage`` is a
plain implementation for tests and simple sources. ``Outgoing`` is what an input causes
before the journal numbers it: a typed message (wire.messages) and whether it is retained.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from wire.messages import Message, topic_of
from wire.topics import TOPIC_SUFFIXES, TopicSuffix

__all__ = ["TOPIC_SUFFIXES", "OutboxItem", "OutboxMessage", "OutboxSource", "Outgoing",
           "OutgoingItem", "TopicSuffix"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """A message an input causes, not yet numbered: the journal gives it the next seq."""

    message: Message
    retain: bool = False

    @property
    def topic_suffix(self) -> TopicSuffix:
        """The topic it goes on (wire.messages.TOPIC_OF)."""
        return topic_of(self.message)

    @property
    def type(self) -> str:
        """The message type (a definition's TYPE in wire.messages)."""
        return self.message.TYPE

    @property
    def body(self) -> Mapping[str, Any]:
        """The JSON body."""
        return self.message.encode()


class OutgoingItem(Protocol):
    """A message to send, not yet numbered: what the journal stores for each one an input
    causes (`Outgoing` is one; tests may pass their own)."""

    @property
    def topic_suffix(self) -> str:
        """One of TOPIC_SUFFIXES."""

    @property
    def type(self) -> str:
        """The message type (a definition's TYPE in wire.messages)."""

    @property
    def body(self) -> Mapping[str, Any]:
        """The JSON body."""

    @property
    def retain(self) -> bool:
        """Publish retained."""


class OutboxItem(OutgoingItem, Protocol):
    """What the MQTT link reads from an outbox message: an outgoing item, numbered and
    stamped."""

    @property
    def seq(self) -> int:
        """Per-table sequence number: gap-free, increasing, surviving restarts."""

    @property
    def wall(self) -> datetime:
        """Aware UTC wall-clock time of the input that caused it."""

    @property
    def mono_ns(self) -> int:
        """Monotonic nanoseconds of that input."""

    @property
    def boot_id(self) -> str:
        """The boot the monotonic value counts from."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxMessage:
    """One committed outgoing message; ``seq`` is per table, gap-free and increasing."""

    seq: int
    topic_suffix: TopicSuffix
    type: str
    body: Mapping[str, Any]
    wall: datetime
    mono_ns: int
    boot_id: str
    delivered: bool = False
    retain: bool = False


@runtime_checkable
class OutboxSource(Protocol):
    """What the MQTT link needs from the journal: undelivered messages and a delivery mark."""

    def pending(self, limit: int = 100) -> Sequence[OutboxItem]:
        """Return up to ``limit`` undelivered messages in increasing ``seq`` order."""
        ...

    def mark_delivered(self, seq: int) -> None:
        """Record that message ``seq`` was acknowledged by the broker (PUBACK)."""
        ...
