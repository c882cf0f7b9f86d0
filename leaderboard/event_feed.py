"""The significant events of the central database, as a report or a feed: every audit row,
every stored table message and every message the ingest refused, each with its severity
from the catalogue (leaderboard.significant_events), oldest first. `showdown leaderboard
events` prints them.

An audit row's time is when the service wrote it and its "who" the person (or the service)
that acted; a stored message's time is when the service received it and its "who" the table
that signed it (its own clock's time and seq are in the detail); a refused message's time is
when it arrived, its "who" the table it claimed to come from. A `Cursor` remembers the
last row of each read, so a feed reads only what came after.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from sqlalchemy import ColumnElement, Engine, or_, select, true
from sqlalchemy.orm import QueryableAttribute

from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import AuditEntry, Message, Rejection
from leaderboard.significant_events import (
    EventKind,
    Severity,
    at_least,
    known_names,
    names_at_least,
    severity_of,
)

__all__ = ["Cursor", "EventLine", "EventQuery", "read_events"]

Source = Literal["audit", "message", "rejection"]
_DETAIL_CHARS: Final = 240  # of a terminal line; --json has the whole detail
_SPARE: Final = timedelta(seconds=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventQuery:
    """Which events: received from ``since`` (inclusive) until ``until`` (exclusive), of
    ``severity`` or above."""

    since: datetime | None = None
    until: datetime | None = None
    severity: Severity = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class Cursor:
    """The last audit row, stored message and rejection already read (0: none)."""

    audit_id: int = 0
    message_id: int = 0
    rejection_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EventLine:
    """One significant event: when, how severe, who (a person or a table), what, detail."""

    at: datetime
    severity: Severity
    source: Source
    row_id: int  # the audit row's, the stored message's or the rejection's id
    who: str
    event: str
    detail: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The event as a JSON object."""
        return {"at": _iso(self.at), "severity": self.severity, "source": self.source,
                "id": self.row_id, "who": self.who, "event": self.event,
                "detail": self.detail}

    def text(self) -> str:
        """One line for a terminal: time, severity, who, event, detail (shortened)."""
        detail = " ".join(f"{k}={_short(v)}" for k, v in self.detail.items())
        if len(detail) > _DETAIL_CHARS:
            detail = detail[:_DETAIL_CHARS - 3] + "..."
        return f"{_iso(self.at)}  {self.severity:<8}  {self.who:<12}  {self.event}  {detail}"


def _iso(moment: datetime) -> str:
    return as_utc(moment).isoformat(timespec="seconds").replace("+00:00", "Z")


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value if value and " " not in value else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _within(moment: datetime, query: EventQuery) -> bool:
    return ((query.since is None or moment >= query.since)
            and (query.until is None or moment < query.until))


def _worth_reading(kind: EventKind, column: QueryableAttribute[str],
                   floor: Severity) -> ColumnElement[bool]:
    """Only the rows whose name can reach ``floor`` (a name the catalogue does not know is
    a warning), so a report of warnings does not read every settled hand."""
    if floor == "info":
        return true()
    wanted = column.in_(sorted(names_at_least(kind, floor)))
    if at_least("warning", floor):
        return or_(wanted, column.not_in(sorted(known_names(kind))))
    return wanted


def read_events(engine: Engine, query: EventQuery, cursor: Cursor = Cursor()
                ) -> tuple[list[EventLine], Cursor]:
    """The events after ``cursor`` that ``query`` selects, oldest first, and the cursor past
    every row read (also those below the severity asked for)."""
    audit = select(AuditEntry.id, AuditEntry.at, AuditEntry.actor, AuditEntry.action,
                   AuditEntry.detail).where(AuditEntry.id > cursor.audit_id)
    messages = select(Message.id, Message.received_at, Message.table_id, Message.type,
                      Message.seq, Message.ts, Message.body).where(
        Message.id > cursor.message_id)
    rejections = select(Rejection.id, Rejection.received_at, Rejection.table_id,
                        Rejection.reason, Rejection.topic, Rejection.detail,
                        Rejection.payload_sha256).where(Rejection.id > cursor.rejection_id)
    audit = audit.where(_worth_reading("audit", AuditEntry.action, query.severity))
    messages = messages.where(_worth_reading("message", Message.type, query.severity))
    rejections = rejections.where(_worth_reading("rejection", Rejection.reason, query.severity))
    # The database narrows by time with a second to spare (SQLite compares the text of its
    # times, and the ingest's are written in another form than the desk's); `_within`
    # decides exactly.
    if query.since is not None:
        audit = audit.where(AuditEntry.at >= as_utc(query.since) - _SPARE)
        messages = messages.where(Message.received_at >= as_utc(query.since) - _SPARE)
        rejections = rejections.where(Rejection.received_at >= as_utc(query.since) - _SPARE)
    if query.until is not None:
        audit = audit.where(AuditEntry.at < as_utc(query.until) + _SPARE)
        messages = messages.where(Message.received_at < as_utc(query.until) + _SPARE)
        rejections = rejections.where(Rejection.received_at < as_utc(query.until) + _SPARE)
    lines: list[EventLine] = []
    audit_id, message_id, rejection_id = (cursor.audit_id, cursor.message_id,
                                          cursor.rejection_id)
    with engine.connect() as connection:
        for row_id, at, actor, action, detail in connection.execute(audit.order_by(
                AuditEntry.id)):
            audit_id = max(audit_id, row_id)
            body = detail if isinstance(detail, dict) else {"detail": detail}
            lines.append(EventLine(at=from_db(at), severity=severity_of("audit", action, body),
                                   source="audit", row_id=row_id, who=actor, event=action,
                                   detail=body))
        for row_id, at, table, type_, seq, ts, body in connection.execute(messages.order_by(
                Message.id)):
            message_id = max(message_id, row_id)
            content = body if isinstance(body, dict) else {"body": body}
            lines.append(EventLine(
                at=from_db(at), severity=severity_of("message", type_, content),
                source="message", row_id=row_id, who=table, event=type_,
                detail={"seq": seq, "ts": ts, **{k: v for k, v in content.items()
                                                  if k not in ("seq", "ts")}}))
        for row_id, at, table, reason, topic, text, sha256 in connection.execute(
                rejections.order_by(Rejection.id)):
            rejection_id = max(rejection_id, row_id)
            lines.append(EventLine(
                at=from_db(at), severity=severity_of("rejection", reason), source="rejection",
                row_id=row_id, who=table or "-", event=reason,
                detail={"topic": topic, "detail": text, "payload_sha256": sha256}))
    chosen = [e for e in lines if at_least(e.severity, query.severity) and _within(e.at, query)]
    chosen.sort(key=lambda e: (e.at, e.source, e.row_id))
    return chosen, Cursor(audit_id=audit_id, message_id=message_id, rejection_id=rejection_id)
