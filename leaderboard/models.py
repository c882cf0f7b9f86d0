"""The central service's database (SQLAlchemy 2, typed). Money is integer cents (BigInteger).

Everything that identifies a patron lives here and only here: tables and MQTT carry opaque
entry and patron ids. The schema is created and upgraded by Alembic
(`leaderboard/migrations`, `leaderboard.db.upgrade`).

What the desk checks, the database enforces as well (revision 0002), so that two desk
instances or two HTTP requests racing cannot leave an inconsistent tournament: one Final
seat draw per stage, one semi-final or Final place per heat and seat until seated, one award
of a kind per entry. Every stored message keeps the signed envelope it came in, so it can be
verified again (`showdown leaderboard audit`).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    event,
    false,
    select,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import DeclarativeBase, Mapped, Mapper, mapped_column, relationship

from leaderboard.display_names import entry_code

__all__ = [
    "AuditEntry", "AuditHead", "AuditTip", "Base", "CentralLease", "ChipReconciliation",
    "CommandResultRecord", "DeskCommandRecord", "DeskSession", "Dispute", "DisputeBundleRecord",
    "Draw", "DrawCommitment", "Entry", "Exclusion", "Hand", "IdentityHold", "Message",
    "OutsideWrite", "Patron", "PatronDocument", "PayoutCheck", "PrizeAward", "Proxy", "Refusal",
    "Rejection", "RosterState", "Score", "StaffRecord", "StandingsChange", "TableProgress",
    "TableRecord",
]

Cents = BigInteger

# A semi-final or Final place is given a seat of its heat by the desk (chosen, rule 27, or
# drawn, rule 40) before it is seated at a table: no two places waiting to be seated may hold
# one heat's seat. Once seated (table_id set, by the desk or by a table's `entry.seated`) the
# table reports where the place sits and the database records it, whatever it says. A
# qualifying seat is taken by entry after entry during a heat: no such index.
UNSEATED_PLACE_SQL = "stage IN ('semi_final', 'final') AND table_id IS NULL"


class Base(DeclarativeBase):
    """Declarative base of every leaderboard table."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012


class TableRecord(Base):
    """An enrolled table: its venue and Ed25519 public key (messages from others are rejected)."""

    __tablename__ = "tables"
    table_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    venue: Mapped[str] = mapped_column(String(64))
    public_key: Mapped[str] = mapped_column(String(64))
    enrolled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class Message(Base):
    """Every valid message a table published, once: the idempotency key is (table, seq)."""

    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_messages_table_seq"),)
    # `envelope` is the payload exactly as received and verified (canonical JSON, so its UTF-8
    # bytes are the signed message) and `payload_sha256` the hex SHA-256 of those bytes: the
    # evidence to verify the message again against the table's key. NULL only on rows stored
    # before revision 0002.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    type: Mapped[str] = mapped_column(String(64))
    ts: Mapped[str] = mapped_column(String(40))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    payload_sha256: Mapped[str | None] = mapped_column(String(64))
    envelope: Mapped[str | None] = mapped_column(Text, deferred=True)  # loaded when read


class TableProgress(Base):
    """Per table: the highest contiguous seq stored, the highest seen, and the gaps."""

    __tablename__ = "table_progress"
    table_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    contiguous_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    highest_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    gaps: Mapped[list[Any]] = mapped_column(JSON, default=list)
    resend_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Rejection(Base):
    """A message refused at ingest, with its reason (counted and kept for the regulator)."""

    __tablename__ = "rejections"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    reason: Mapped[str] = mapped_column(String(40), index=True)
    table_id: Mapped[str | None] = mapped_column(String(64))
    topic: Mapped[str] = mapped_column(String(256))
    detail: Mapped[str] = mapped_column(Text)
    payload_sha256: Mapped[str] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Patron(Base):
    """A patron (PII stays here): identified by rewards card or ID document."""

    __tablename__ = "patrons"
    __table_args__ = (Index("uq_patrons_screen_name_key", "screen_name_key", unique=True),)
    patron_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    id_kind: Mapped[str] = mapped_column(String(20))  # rewards_card | id_document | licence
    id_number: Mapped[str] = mapped_column(String(64), unique=True)
    birth_date: Mapped[date] = mapped_column(Date)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # How the participant proves it is them at the table (revision 0004): game.staff hashes
    # of the rewards card number and PIN, each with its own salt; never the raw secret.
    card_hash: Mapped[str | None] = mapped_column(String(200))
    pin_hash: Mapped[str | None] = mapped_column(String(200))
    # Revision 0005: clear | held (a possible list match awaits a supervisor) | refused (a
    # supervisor refused the match) | disqualified (rule 57), and why (the last change).
    standing: Mapped[str] = mapped_column(String(16), server_default=text("'clear'"))
    standing_reason: Mapped[str | None] = mapped_column(Text)
    # Revision 0011: how the page may show the patron. Their first name and initial only
    # with consent given at registration; a screen name they chose (checked:
    # leaderboard.display_names), unique by its key (case and spacing ignored).
    name_consent: Mapped[bool] = mapped_column(Boolean, server_default=false())
    screen_name: Mapped[str | None] = mapped_column(String(40))
    screen_name_key: Mapped[str | None] = mapped_column(String(80))
    documents: Mapped[list[PatronDocument]] = relationship(
        back_populates="patron", order_by="PatronDocument.id")


class PatronDocument(Base):
    """Every document a patron presented (ID document, passport, licence, rewards card):
    the number normalised, and one patron per number whatever its kind (revision 0005)."""

    __tablename__ = "patron_documents"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    patron_id: Mapped[str] = mapped_column(ForeignKey("patrons.patron_id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    number: Mapped[str] = mapped_column(String(64), unique=True)
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    added_by: Mapped[str] = mapped_column(String(200))
    patron: Mapped[Patron] = relationship(back_populates="documents")


class IdentityHold(Base):
    """A possible list match (by name, with birth date where the list has one) holding a
    registration, a buy-in or a seating for a supervisor's decision (revision 0005)."""

    __tablename__ = "identity_holds"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    patron_id: Mapped[str] = mapped_column(ForeignKey("patrons.patron_id"), index=True)
    context: Mapped[str] = mapped_column(String(32))  # registration | buy_in | seating | ...
    matches: Mapped[list[Any]] = mapped_column(JSON)
    opened_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    opened_by: Mapped[str] = mapped_column(String(200))
    decision: Mapped[str | None] = mapped_column(String(16))  # approved | refused
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    decided_by: Mapped[str | None] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(Text)


class Exclusion(Base):
    """One line of an imported list: refusal of entry, self-exclusion, excluded, staff..."""

    __tablename__ = "exclusions"
    __table_args__ = (Index("ix_exclusions_id_number", "id_number"),
                      Index("ix_exclusions_letters_key", "letters_key"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    list_kind: Mapped[str] = mapped_column(String(32))
    id_number: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200), default="")
    source: Mapped[str] = mapped_column(String(200))
    source_date: Mapped[date] = mapped_column(Date)
    imported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Revision 0005: the birth date where the list gives one, and the name's normal forms
    # (leaderboard.name_match) the name check looks rows up by.
    birth_date: Mapped[date | None] = mapped_column(Date)
    name_key: Mapped[str] = mapped_column(String(200), server_default="")
    letters_key: Mapped[str] = mapped_column(String(100), server_default="")


class ExclusionNameKey(Base):
    """A key a list row's name is found by (revision 0013; leaderboard.name_similarity's
    blocking keys: a part's form, phonetic codes, pet-form groups, ...), with the part's
    number and how many parts the name has. The key index covers the lookup."""

    __tablename__ = "exclusion_name_keys"
    __table_args__ = (Index("ix_exclusion_name_keys_key", "key", "exclusion_id", "part",
                            "parts"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    exclusion_id: Mapped[int] = mapped_column(ForeignKey("exclusions.id"), index=True)
    part: Mapped[int] = mapped_column(Integer)
    parts: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(64))


class Refusal(Base):
    """Every refusal, with its reason (registration or seating)."""

    __tablename__ = "refusals"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id_number: Mapped[str] = mapped_column(String(64))
    patron_id: Mapped[str | None] = mapped_column(String(40))
    context: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Entry(Base):
    """One entry (one buy-in, one heat, one score); tables know only `entry_id`."""

    __tablename__ = "entries"
    __table_args__ = (
        Index("uq_entries_place_seat", "heat_id", "seat", unique=True,
              postgresql_where=text(UNSEATED_PLACE_SQL),
              sqlite_where=text(UNSEATED_PLACE_SQL)),
        Index("uq_entries_stage_code", "stage", "entry_code", unique=True),
    )
    entry_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    patron_id: Mapped[str] = mapped_column(ForeignKey("patrons.patron_id"), index=True)
    stage: Mapped[str] = mapped_column(String(16))
    heat_id: Mapped[str | None] = mapped_column(String(64))
    heat_day: Mapped[date | None] = mapped_column(Date)
    table_id: Mapped[str | None] = mapped_column(String(64))
    seat: Mapped[int | None] = mapped_column(Integer)
    buy_in_cents: Mapped[int] = mapped_column(Cents, default=0)
    bought_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), default="registered")
    played_by: Mapped[str | None] = mapped_column(String(40))  # a proxy's patron id
    # Revision 0005: how the buy-in was paid (rule 6: cash | value_chips; NULL before 0005),
    # and a rule 57 disqualification (the score never counts, whatever the status says).
    payment: Mapped[str | None] = mapped_column(String(16))
    disqualified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    disqualified_reason: Mapped[str | None] = mapped_column(Text)
    # Revision 0011: the short code the page shows ("K7-42F", leaderboard.display_names),
    # unique in its stage; set when the entry is first stored (`_code_new_entry` below).
    entry_code: Mapped[str | None] = mapped_column(String(16))
    patron: Mapped[Patron] = relationship()


class Score(Base):
    """An entry's score as its table recorded it (one per entry), and its acknowledgement."""

    __tablename__ = "scores"
    entry_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    stage: Mapped[str] = mapped_column(String(16), index=True)
    heat_id: Mapped[str | None] = mapped_column(String(64))
    score_cents: Mapped[int] = mapped_column(Cents)
    hands: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    acknowledged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ack_method: Mapped[str | None] = mapped_column(String(32))
    ack_evidence: Mapped[str | None] = mapped_column(String(64))  # SHA-256 of a signature
    voided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    void_reason: Mapped[str | None] = mapped_column(Text)
    # A supervisor's ruling after a dispute (rules 22, 23; D65); score_cents stays the table's.
    corrected_cents: Mapped[int | None] = mapped_column(Cents)
    corrected_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    correction_reason: Mapped[str | None] = mapped_column(Text)

    @property
    def counted_cents(self) -> int:
        """The figure the standings count: the supervisor's correction, else the table's."""
        return self.score_cents if self.corrected_cents is None else self.corrected_cents

    @property
    def counted_acknowledged_at(self) -> datetime | None:
        """The patron's acknowledgement; for a corrected score never acknowledged, the
        correction (management's decision is final, rule 23; D65)."""
        if self.acknowledged_at is not None or self.corrected_cents is None:
            return self.acknowledged_at
        return self.corrected_at


class Hand(Base):
    """Every settled or voided hand as its table published it (for disputes and re-checks)."""

    __tablename__ = "hands"
    hand_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    heat_id: Mapped[str | None] = mapped_column(String(64))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Rule 58: a card or wager of the hand was keyed by hand (the record's "manual").
    manual: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Dispute(Base):
    """A dispute of an entry's score or of its result in a hand (rules 22, 37, 53): raised by
    the participant (at the table's console, or recorded at the desk), a dealer or a supervisor
    within the round, ruled by a supervisor, closed (leaderboard.desk.dispute_records)."""

    __tablename__ = "disputes"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_disputes_table_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entry_id: Mapped[str] = mapped_column(String(40), index=True)
    # The table's message that raised it (NULL seq: recorded at the desk).
    table_id: Mapped[str | None] = mapped_column(String(64))
    seq: Mapped[int | None] = mapped_column(BigInteger)
    stage: Mapped[str | None] = mapped_column(String(16))
    heat_id: Mapped[str | None] = mapped_column(String(64))
    score_cents: Mapped[int | None] = mapped_column(Cents)  # the score disputed, if recorded
    note: Mapped[str] = mapped_column(Text)  # the claim
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Revision 0005: who raised it (participant | dealer | supervisor), their entry or staff
    # id, the desk operator who recorded it, the hands it concerns.
    raised_by_role: Mapped[str] = mapped_column(String(16), default="participant",
                                                server_default="participant")
    raised_by: Mapped[str | None] = mapped_column(String(200))
    recorded_by: Mapped[str | None] = mapped_column(String(200))
    hand_ids: Mapped[list[Any] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default="open", server_default="open")
    ruling: Mapped[str | None] = mapped_column(String(16))  # dismissed | hand_voided | ...
    ruling_reason: Mapped[str | None] = mapped_column(Text)
    ruled_by: Mapped[str | None] = mapped_column(String(200))
    ruled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ruling_detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Closed: when, by whom, what the participant was told.
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    resolved_by: Mapped[str | None] = mapped_column(String(200))
    resolution: Mapped[str | None] = mapped_column(Text)


class DisputeBundleRecord(Base):
    """A table's dispute bundle the central service received for a dispute and countersigned
    with its own key (revision 0017): the bundle as countersigned (JSON text) and its digest."""

    __tablename__ = "dispute_bundles"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dispute_id: Mapped[int] = mapped_column(ForeignKey("disputes.id"), index=True)
    table_id: Mapped[str] = mapped_column(String(64))
    bundle_sha256: Mapped[str] = mapped_column(String(64))
    bundle: Mapped[str] = mapped_column(Text, deferred=True)
    countersigned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    countersigned_by: Mapped[str] = mapped_column(String(200))


class HandCorrection(Base):
    """A table's correcting record of a ruling on a settled hand (``hand.corrected``): the
    entry's chips moved; the hand's own row is never changed (revision 0005)."""

    __tablename__ = "hand_corrections"
    __table_args__ = (UniqueConstraint("table_id", "seq",
                                       name="uq_hand_corrections_table_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    hand_id: Mapped[str] = mapped_column(String(64), index=True)
    entry_id: Mapped[str] = mapped_column(String(40), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    ruling: Mapped[str] = mapped_column(String(16))
    recorded_net: Mapped[int] = mapped_column(BigInteger)
    counted_net: Mapped[int] = mapped_column(BigInteger)
    balance_before: Mapped[int] = mapped_column(Cents)
    balance_after: Mapped[int] = mapped_column(Cents)
    hands_played: Mapped[int] = mapped_column(Integer)
    dispute_id: Mapped[int | None] = mapped_column(Integer, index=True)
    by: Mapped[str | None] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(Text)
    heat_id: Mapped[str | None] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PayoutCheck(Base):
    """A settled hand's payout checked by the chip readers (``payout.checked``): verified,
    or overridden by a supervisor with the mismatches and the reason."""

    __tablename__ = "payout_checks"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_payout_checks_table_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    hand_id: Mapped[str] = mapped_column(String(64), index=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    heat_id: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))  # verified | overridden
    mismatches: Mapped[list[Any]] = mapped_column(JSON)
    unverifiable: Mapped[list[Any]] = mapped_column(JSON)
    by: Mapped[str | None] = mapped_column(String(40))  # the supervisor's staff id
    reason: Mapped[str | None] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ChipReconciliation(Base):
    """One entry's chips reconciled against its table's float at the end of its heat
    (``chips.reconciled``, promotion rule 19): UIDs issued, held, returned, missing (JSON lists
    of 16 hex digits) and the values in cents."""

    __tablename__ = "chip_reconciliations"
    __table_args__ = (
        UniqueConstraint("table_id", "seq", name="uq_chip_reconciliations_table_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entry_id: Mapped[str] = mapped_column(String(40), index=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    heat_id: Mapped[str | None] = mapped_column(String(64))
    seat: Mapped[int] = mapped_column(Integer)
    chip_set: Mapped[str] = mapped_column(String(64))
    issued: Mapped[list[Any]] = mapped_column(JSON)
    held: Mapped[list[Any]] = mapped_column(JSON)
    returned: Mapped[list[Any]] = mapped_column(JSON)
    missing: Mapped[list[Any]] = mapped_column(JSON)
    foreign: Mapped[list[Any]] = mapped_column(JSON)
    issued_cents: Mapped[int] = mapped_column(BigInteger)
    held_cents: Mapped[int] = mapped_column(BigInteger)
    returned_cents: Mapped[int] = mapped_column(BigInteger)
    missing_cents: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ChipCountRecord(Base):
    """A heat's opening or closing count of a table's tray, confirmed (``chips.counted``,
    revision 0015): counted and expected per chip value (JSON objects of value in cents ->
    how many; expected None when the table knew nothing to compare), the totals, the
    difference, the table's tolerance and whether it was over it, who counted and who
    confirmed."""

    __tablename__ = "chip_counts"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_chip_counts_table_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    heat_id: Mapped[str] = mapped_column(String(64), index=True)
    stage: Mapped[str] = mapped_column(String(16))  # opening | closing
    counted: Mapped[dict[str, Any]] = mapped_column(JSON)
    expected: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    total_cents: Mapped[int] = mapped_column(BigInteger)
    expected_cents: Mapped[int | None] = mapped_column(BigInteger)
    difference_cents: Mapped[int | None] = mapped_column(BigInteger)
    tolerance_cents: Mapped[int] = mapped_column(BigInteger)
    over_tolerance: Mapped[bool] = mapped_column(Boolean)
    dealer_id: Mapped[str] = mapped_column(String(40))
    supervisor_id: Mapped[str] = mapped_column(String(40))
    counted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    confirmed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class DeckEventRecord(Base):
    """One step of a table's deck inventory (``decks.event``, revision 0015): decks received,
    opened, used or destroyed on a venue day, by whom (a destruction's witness), the seal
    numbers, and the table's position after it with what the step broke of the balance."""

    __tablename__ = "deck_events"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_deck_events_table_seq"),
                      Index("ix_deck_events_day_table", "day", "table_id"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    day: Mapped[str] = mapped_column(String(10))  # the venue's day, YYYY-MM-DD
    kind: Mapped[str] = mapped_column(String(16))  # received | opened | used | destroyed
    decks: Mapped[int] = mapped_column(Integer)
    by: Mapped[str] = mapped_column(String(40))
    witness: Mapped[str | None] = mapped_column(String(40))
    seals: Mapped[list[Any]] = mapped_column(JSON)
    lot: Mapped[str | None] = mapped_column(String(40))
    source: Mapped[str | None] = mapped_column(String(100))
    note: Mapped[str | None] = mapped_column(Text)
    sealed: Mapped[int] = mapped_column(Integer)
    in_play: Mapped[int] = mapped_column(Integer)
    awaiting: Mapped[int] = mapped_column(Integer)
    problems: Mapped[list[Any]] = mapped_column(JSON)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class StaffRecord(Base):
    """A dealer or supervisor enrolled at the desk; the PIN and employee card only as
    game.staff hashes (revision 0004)."""

    __tablename__ = "staff"
    staff_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))  # dealer | clerk | supervisor | manager
    pin_hash: Mapped[str | None] = mapped_column(String(200))
    card_hash: Mapped[str | None] = mapped_column(String(200))  # with the roster's card salt
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    enrolled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The desk sign-in (revision 0005): the passphrase's hash and the lock-out's state.
    desk_hash: Mapped[str | None] = mapped_column(String(200))
    desk_failures: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    desk_failed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    desk_locked_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class DeskSession(Base):
    """A desk sign-in: the SHA-256 of its random token (never the token), whose it is, its
    absolute expiry and idle timeout, and when and why it ended (revision 0005)."""

    __tablename__ = "desk_sessions"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    staff_id: Mapped[str] = mapped_column(ForeignKey("staff.staff_id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    idle_seconds: Mapped[int] = mapped_column(Integer)
    client: Mapped[str] = mapped_column(String(40))  # api | cli | demo
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ended_why: Mapped[str | None] = mapped_column(String(40))  # signed_out | ...
    # The workstation and client address it was opened from (revision 0016).
    terminal: Mapped[str | None] = mapped_column(String(64))
    address: Mapped[str | None] = mapped_column(String(64))


class RosterState(Base):
    """The staff roster's one row: its version (raised by every change) and the card salt
    every employee card is hashed with, drawn once."""

    __tablename__ = "roster_state"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)  # 1
    version: Mapped[int] = mapped_column(BigInteger)
    card_salt: Mapped[str] = mapped_column(String(100))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PrizeAward(Base):
    """A prize awarded to an entry, and its claim (15 days, then expired)."""

    __tablename__ = "prize_awards"
    # An entry wins a prize of a kind once: a second book of the same prize is refused.
    __table_args__ = (Index("uq_prize_awards_kind_entry", "kind", "entry_id", unique=True),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(24))  # weekly | top_score | final
    place: Mapped[int] = mapped_column(Integer)  # week number or position
    entry_id: Mapped[str] = mapped_column(String(40))
    patron_id: Mapped[str] = mapped_column(String(40))
    amount_cents: Mapped[int] = mapped_column(Cents)
    awarded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    # Revision 0005: an unclaimed award withheld by the winner's disqualification (rule 57).
    withheld_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    withheld_reason: Mapped[str | None] = mapped_column(Text)


class Draw(Base):
    """The Final's seat draw: its inputs (random bytes, finalists) and result, replayable.

    One per stage: the draw stored first is the one in force, and is never drawn again.
    """

    __tablename__ = "draws"
    __table_args__ = (Index("uq_draws_stage", "stage", unique=True),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    stage: Mapped[str] = mapped_column(String(16))
    random_hex: Mapped[str] = mapped_column(Text)
    finalists: Mapped[list[Any]] = mapped_column(JSON)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    drawn_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    drawn_by: Mapped[str] = mapped_column(String(200))
    # Revision 0017: the commitment the seed was drawn from (NULL: drawn before 0017, or
    # without one by the library's callers that predate the two-step draw).
    commitment_id: Mapped[int | None] = mapped_column(
        ForeignKey("draw_commitments.id"), unique=True)


class DrawCommitment(Base):
    """A seat draw's seed drawn and committed before the draw (revision 0017): its SHA-256
    recorded and shown first, the seed itself revealed only by the draw that uses it (once),
    before a witness other than the person drawing."""

    __tablename__ = "draw_commitments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    stage: Mapped[str] = mapped_column(String(16))
    seed_hex: Mapped[str] = mapped_column(Text)  # secret until used
    seed_sha256: Mapped[str] = mapped_column(String(64))
    witness: Mapped[str] = mapped_column(String(40))  # a staff id
    committed_by: Mapped[str] = mapped_column(String(200))
    committed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Proxy(Base):
    """A proxy nominated to play a patron's extra semi-final or final place (rules 25, 41)."""

    __tablename__ = "proxies"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entry_id: Mapped[str] = mapped_column(ForeignKey("entries.entry_id"), unique=True)
    holder_patron_id: Mapped[str] = mapped_column(String(40))
    proxy_patron_id: Mapped[str] = mapped_column(String(40))
    nominated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    entry: Mapped[Entry] = relationship()


class AuditEntry(Base):
    """Every desk action: who, what, when, why."""

    __tablename__ = "audit"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64), index=True)  # the index: revision 0018
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The hash chain (revision 0018, leaderboard.audit_trail.chain): the previous row's
    # row_hash, and the SHA-256 of this row's content and prev_hash. NULL only in a row
    # written outside the service (verification names it).
    prev_hash: Mapped[str | None] = mapped_column(String(64))
    row_hash: Mapped[str | None] = mapped_column(String(64))


class AuditTip(Base):
    """The audit chain's one tip row (revision 0018): the last row's id and hash, locked by
    every writer so that rows are chained one after another; and the last row the migration
    chained as it found it (rows written before the chain existed)."""

    __tablename__ = "audit_tip"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)  # 1
    last_id: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(64))
    legacy_until: Mapped[int] = mapped_column(BigInteger)


class AuditHead(Base):
    """A signed head of the audit chain (revision 0018): the row it covers (id and hash),
    when, and the central key's Ed25519 signature (leaderboard.audit_trail.heads)."""

    __tablename__ = "audit_heads"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    row_id: Mapped[int] = mapped_column(BigInteger)
    row_hash: Mapped[str] = mapped_column(String(64))
    signed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    key_id: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(100))  # base64


class OutsideWrite(Base):
    """A write to a protected table made outside the service, recorded by the database's own
    triggers (revision 0018, leaderboard.audit_trail.outside_writes); append-only."""

    __tablename__ = "outside_writes"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    table_name: Mapped[str] = mapped_column(String(64))
    operation: Mapped[str] = mapped_column(String(8))  # INSERT | UPDATE | DELETE
    row_key: Mapped[str | None] = mapped_column(String(200))
    at: Mapped[str] = mapped_column(String(40))  # the database's clock, ISO 8601 UTC
    db_user: Mapped[str | None] = mapped_column(String(100))  # PostgreSQL: current_user
    client_addr: Mapped[str | None] = mapped_column(String(100))  # PostgreSQL only


class DeskCommandRecord(Base):
    """A command the desk recorded for a table, and what became of it (revision 0005): its
    `seq` (the envelope's, never reused, leaderboard.desk.command_seq), the audit row of the
    action, and its state: recorded, sent, send_failed, held, accepted or refused (with the
    table's reason)."""

    __tablename__ = "desk_commands"
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    audit_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                          ForeignKey("audit.id"), index=True)
    table_id: Mapped[str] = mapped_column(String(64), index=True)
    command: Mapped[str] = mapped_column(String(32))
    args: Mapped[dict[str, Any]] = mapped_column(JSON)
    # What a refusal puts back (the entry's table, seat, heat and status before a seat).
    undo: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str | None] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    result_seq: Mapped[int | None] = mapped_column(BigInteger)  # the table's message seq


class CommandResultRecord(Base):
    """Every ``command.result`` a table published, once per (table, seq): the command it
    answers (``command_seq``, read from its command id) and the verdict (revision 0005)."""

    __tablename__ = "command_results"
    __table_args__ = (UniqueConstraint("table_id", "seq", name="uq_command_results_table_seq"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(BigInteger)
    command_id: Mapped[str | None] = mapped_column(String(200))
    command_seq: Mapped[int | None] = mapped_column(BigInteger, index=True)
    command: Mapped[str | None] = mapped_column(String(32))
    accepted: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(Text)
    held_until: Mapped[str | None] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CentralLease(Base):
    """The central lease's one row (revision 0019): the active instance, its fencing epoch
    (incremented by every takeover) and when the lease expires and was last renewed and
    taken, in seconds since 1970 on the database's clock (leaderboard.central_lease)."""

    __tablename__ = "central_lease"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)  # 1
    holder: Mapped[str] = mapped_column(String(200))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[float] = mapped_column(Float)
    renewed_at: Mapped[float] = mapped_column(Float)
    taken_at: Mapped[float] = mapped_column(Float)


class StandingsChange(Base):
    """A score or an entry was written (by a trigger, revision 0010): the incremental
    standings read the entries again from the rows after the last one they applied."""

    __tablename__ = "standings_changes"
    __table_args__ = {"sqlite_autoincrement": True}  # noqa: RUF012
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    entry_id: Mapped[str] = mapped_column(String(40))


@event.listens_for(Entry, "before_insert")
def _code_new_entry(_mapper: Mapper[Entry], connection: Connection, entry: Entry) -> None:
    """Every new entry gets its short code, made longer while another entry of its stage
    has it (a race between two desks is caught by the unique index)."""
    if entry.entry_code is not None:
        return

    def taken(code: str) -> bool:
        return connection.scalar(select(Entry.entry_id).where(
            Entry.stage == entry.stage, Entry.entry_code == code).limit(1)) is not None

    entry.entry_code = entry_code(entry.entry_id, taken)
