"""The journal's rows to and from values: timestamps, flags and JSON text as stored, records
and messages read back, and the outbox rows an append writes (each checked, then hashed)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeAlias, cast

from controller.clock import ClockReading
from controller.journal.checksums import outbox_checksum, outbox_row_checksum, stored_json
from controller.journal.records import (
    CheckedMessage,
    JournalError,
    JournalRecord,
    StoredMessage,
)
from wire.outbox import TOPIC_SUFFIXES, OutgoingItem, TopicSuffix

__all__ = ["checked", "flag", "json_object", "message", "outbox_rows", "record", "text",
           "unflag", "wall_text"]

Row: TypeAlias = Mapping[Any, Any]  # a stored row by column name
_MAX_TEXT: Final = 2000  # operator names, reasons, fault details


def wall_text(wall: datetime) -> str:
    """A wall time as stored: ISO 8601 with microseconds and offset."""
    return wall.isoformat(timespec="microseconds")


def flag(value: bool | None) -> int | None:
    """A flag as stored: 0, 1 or NULL."""
    return None if value is None else int(value)


def unflag(value: object) -> bool | None:
    """A stored flag read back."""
    return None if value is None else bool(value)


def text(value: object, what: str) -> str:
    """Operator text (names, reasons, details) on one line, non-empty, bounded."""
    if not isinstance(value, str) or not value.strip():
        raise JournalError(f"{what} must be non-empty text")
    value = " ".join(value.split())
    if len(value) > _MAX_TEXT:
        raise JournalError(f"{what} is longer than {_MAX_TEXT} characters")
    return value


def json_object(text: str, what: str) -> dict[str, Any]:
    """A stored JSON object read back; JournalError naming `what` when it is not one."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as e:
        raise JournalError(f"{what} is not JSON: {e}") from e
    if not isinstance(value, dict):
        raise JournalError(f"{what} is not a JSON object")
    return value


def record(row: Row) -> JournalRecord:
    """A journal row read back."""
    seq = int(row["seq"])
    try:
        return JournalRecord(
            seq=seq, kind=row["kind"],
            payload=json_object(row["payload"], f"journal seq {seq}: payload"),
            wall=datetime.fromisoformat(row["wall"]), mono_ns=int(row["mono_ns"]),
            boot_id=row["boot_id"], checksum=row["checksum"], synced=unflag(row["synced"]))
    except (TypeError, ValueError) as e:
        raise JournalError(f"journal seq {seq} cannot be read: {e} (run showdown journal "
                           "verify)") from e


def message(row: Row) -> StoredMessage:
    """An outbox row read back."""
    seq = int(row["seq"])
    try:
        return StoredMessage(
            seq=seq, record_seq=int(row["record_seq"]),
            topic_suffix=cast(TopicSuffix, row["topic_suffix"]), type=row["type"],
            body=json_object(row["body"], f"outbox seq {seq}: body"),
            retain=bool(row["retain"]), wall=datetime.fromisoformat(row["wall"]),
            mono_ns=int(row["mono_ns"]), boot_id=row["boot_id"],
            delivered=bool(row["delivered"]), synced=unflag(row["synced"]))
    except (TypeError, ValueError) as e:
        raise JournalError(f"outbox seq {seq} cannot be read: {e} (run showdown journal "
                           "verify)") from e


def checked(row: Row) -> CheckedMessage:
    """An outbox row read for display: what decodes, and what is wrong with it."""
    problems: list[str] = []
    body: dict[str, Any] | None = None
    try:
        body = json_object(row["body"], "body")
    except JournalError as e:
        problems.append(str(e))
    if outbox_row_checksum(row, row["prev_checksum"]) != row["checksum"]:
        problems.append("checksum mismatch: the stored message was changed")
    return CheckedMessage(seq=int(row["seq"]), type=str(row["type"]),
                          topic_suffix=str(row["topic_suffix"]), wall=str(row["wall"]),
                          boot_id=str(row["boot_id"]), delivered=bool(row["delivered"]),
                          body=body, problems=tuple(problems))


def outbox_rows(produced: Sequence[OutgoingItem], *, record: JournalRecord, wall: str,
                 clock: ClockReading, last_seq: int, prev: str,
                 ) -> tuple[list[dict[str, Any]], list[StoredMessage]]:
    """The outbox rows (and their values) for what one record produced, chained after
    `last_seq`/`prev`; JournalError naming the first item that is not a message."""
    if isinstance(produced, (str, bytes, Mapping)) or not isinstance(produced, Sequence):
        raise JournalError(f"outgoing must return a sequence of messages, got "
                           f"{type(produced).__name__}")
    rows: list[dict[str, Any]] = []
    messages: list[StoredMessage] = []
    for i, item in enumerate(produced):
        if not all(hasattr(item, a) for a in ("topic_suffix", "type", "body", "retain")):
            raise JournalError(f"outgoing item {i} is a {type(item).__name__}, not a message "
                               "(topic_suffix, type, body, retain)")
        if item.topic_suffix not in TOPIC_SUFFIXES:
            raise JournalError(f"outgoing item {i}: topic_suffix {item.topic_suffix!r} is not "
                               f"one of {sorted(TOPIC_SUFFIXES)}")
        if not isinstance(item.type, str) or not item.type.strip():
            raise JournalError(f"outgoing item {i}: type must be non-empty text")
        if not isinstance(item.body, Mapping):
            raise JournalError(f"outgoing item {i}: body must be a mapping")
        if not isinstance(item.retain, bool):
            raise JournalError(f"outgoing item {i}: retain must be true or false")
        topic = item.topic_suffix
        body, plain = stored_json(item.body, what=f"outgoing item {i} body")
        seq = last_seq + 1 + i
        checksum = outbox_checksum(seq=seq, record_seq=record.seq, topic_suffix=item.topic_suffix,
                                   type=item.type, body=body, retain=bool(item.retain), wall=wall,
                                   mono_ns=clock.mono_ns, boot_id=clock.boot_id,
                                   synced=clock.synced, prev=prev)
        rows.append({"seq": seq, "record_seq": record.seq, "topic_suffix": item.topic_suffix,
                     "type": item.type, "body": body, "retain": int(bool(item.retain)),
                     "wall": wall, "mono_ns": clock.mono_ns, "boot_id": clock.boot_id,
                     "synced": flag(clock.synced), "prev_checksum": prev, "checksum": checksum,
                     "delivered": 0, "delivered_wall": None})
        messages.append(StoredMessage(
            seq=seq, record_seq=record.seq, topic_suffix=topic, type=item.type,
            body=plain, retain=bool(item.retain), wall=clock.wall,
            mono_ns=clock.mono_ns, boot_id=clock.boot_id, delivered=False, synced=clock.synced))
        prev = checksum
    return rows, messages
