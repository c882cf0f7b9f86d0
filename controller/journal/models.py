"""The journal's SQLite schema as SQLAlchemy 2 typed models (used only by controller.journal).

Three tables (docs/journal.md has the full description):

- ``journal``: one row per input, append-only; ``checksum`` chains each row to the previous.
- ``outbox``: one row per outgoing message, append-only except its delivery columns; a chain
  of its own; ``record_seq`` names the journal record that caused it.
- ``head``: one row holding the last seq and checksum of both chains, updated in the same
  transaction as every append, so that deleting rows at the end of a chain is detected.

Triggers refuse UPDATE and DELETE of journal rows, any change to an outbox row other than its
delivery columns, and deleting the head row. They stop program errors, not a person with the
file: against that, the checksums (and the signed copies the leaderboard holds) are the guard.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "TRIGGERS",
    "Base",
    "HeadRow",
    "JournalRow",
    "OutboxRow",
]

# PRAGMA application_id of a showdown journal ("SHJL"), and PRAGMA user_version of this schema.
APPLICATION_ID: Final = 0x53484A4C
SCHEMA_VERSION: Final = 1


class Base(DeclarativeBase):
    """Declarative base of the journal's tables."""


class JournalRow(Base):
    """A journal record as stored: JSON text, RFC 3339 wall time, and its chained checksum."""

    __tablename__ = "journal"
    __table_args__ = (
        CheckConstraint("seq >= 1", name="journal_seq_positive"),
        Index("ix_journal_kind", "kind", "seq"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String, nullable=False)
    payload: Mapped[str] = mapped_column(String, nullable=False)
    wall: Mapped[str] = mapped_column(String, nullable=False)
    mono_ns: Mapped[int] = mapped_column(BigInteger, nullable=False)
    boot_id: Mapped[str] = mapped_column(String, nullable=False)
    synced: Mapped[int | None] = mapped_column(Integer, nullable=True)
    prev_checksum: Mapped[str] = mapped_column(String, nullable=False)
    checksum: Mapped[str] = mapped_column(String, nullable=False)


class OutboxRow(Base):
    """An outgoing message as stored, with its delivery state (the only columns that change)."""

    __tablename__ = "outbox"
    __table_args__ = (
        CheckConstraint("seq >= 1", name="outbox_seq_positive"),
        CheckConstraint("topic_suffix IN ('events', 'scores', 'status')",
                        name="outbox_topic_suffix"),
        CheckConstraint("delivered IN (0, 1)", name="outbox_delivered_flag"),
        Index("ix_outbox_type", "type", "seq"),
        Index("ix_outbox_record", "record_seq"),
        Index("ix_outbox_pending", "seq", sqlite_where=text("delivered = 0")),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    record_seq: Mapped[int] = mapped_column(Integer, ForeignKey("journal.seq"), nullable=False)
    topic_suffix: Mapped[str] = mapped_column(String, nullable=False)
    type: Mapped[str] = mapped_column(String, nullable=False)
    body: Mapped[str] = mapped_column(String, nullable=False)
    retain: Mapped[int] = mapped_column(Integer, nullable=False)
    wall: Mapped[str] = mapped_column(String, nullable=False)
    mono_ns: Mapped[int] = mapped_column(BigInteger, nullable=False)
    boot_id: Mapped[str] = mapped_column(String, nullable=False)
    synced: Mapped[int | None] = mapped_column(Integer, nullable=True)
    prev_checksum: Mapped[str] = mapped_column(String, nullable=False)
    checksum: Mapped[str] = mapped_column(String, nullable=False)
    delivered: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    delivered_wall: Mapped[str | None] = mapped_column(String, nullable=True)


class HeadRow(Base):
    """The single row naming the end of both chains (seq 0 and the genesis value when empty)."""

    __tablename__ = "head"
    __table_args__ = (CheckConstraint("id = 1", name="head_single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    journal_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    journal_checksum: Mapped[str] = mapped_column(String, nullable=False)
    outbox_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    outbox_checksum: Mapped[str] = mapped_column(String, nullable=False)


# name -> CREATE TRIGGER statement (created with the tables); verify() checks each is present.
TRIGGERS: Final[dict[str, str]] = {
    "journal_no_update": (
        "CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal "
        "BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END"
    ),
    "journal_no_delete": (
        "CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal "
        "BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END"
    ),
    "outbox_no_update": (
        "CREATE TRIGGER outbox_no_update BEFORE UPDATE OF seq, record_seq, topic_suffix, type, "
        "body, retain, wall, mono_ns, boot_id, synced, prev_checksum, checksum ON outbox "
        "BEGIN SELECT RAISE(ABORT, 'outbox messages are append-only'); END"
    ),
    "outbox_no_delete": (
        "CREATE TRIGGER outbox_no_delete BEFORE DELETE ON outbox "
        "BEGIN SELECT RAISE(ABORT, 'outbox messages are append-only'); END"
    ),
    "head_no_delete": (
        "CREATE TRIGGER head_no_delete BEFORE DELETE ON head "
        "BEGIN SELECT RAISE(ABORT, 'the head row is required'); END"
    ),
}

