"""Reading the play reports' facts out of the central database (read only): the hands, the
stored messages a table published (alerts, staff sign-ins, heats, device states) decoded with
the wire contract, the payout overrides and the rulings applied to hands, staff names and the
tables' venues."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.models import (
    Hand,
    HandCorrection,
    Message,
    PayoutCheck,
    StaffRecord,
    TableRecord,
)
from leaderboard.reports.facts import (
    AlertFact,
    HandFact,
    HeatMark,
    StaffMark,
    TableEvent,
    hand_fact,
)
from leaderboard.reports.window import ReportWindow, parse_instant
from wire.messages import (
    Alert,
    DeviceState,
    HeatClosed,
    HeatOpened,
    MessageError,
    StaffEvent,
    decode_table_message,
)

__all__ = ["PlayFacts", "UnknownVenue", "read_play_facts"]

_TYPES = (Alert.TYPE, StaffEvent.TYPE, HeatOpened.TYPE, HeatClosed.TYPE, DeviceState.TYPE)


class UnknownVenue(ValueError):
    """``--venue`` names a venue no enrolled table belongs to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayFacts:
    """Everything the table, dealer and heat reports count, for the tables in scope.

    ``hands`` and ``alerts`` are those in the window; ``staff`` and ``heats`` are every
    sign-in and heat mark of those tables (the attribution needs what came before the
    window); ``unreadable`` names each stored record that could not be read, with why."""

    tables: Mapping[str, str]  # table id -> venue
    hands: tuple[HandFact, ...]
    alerts: tuple[AlertFact, ...]
    staff: tuple[StaffMark, ...]
    heats: tuple[HeatMark, ...]
    events: tuple[TableEvent, ...]
    staff_names: Mapping[str, str]
    unreadable: tuple[str, ...]


def _tables(session: Session, venue: str | None) -> dict[str, str]:
    rows = session.execute(select(TableRecord.table_id, TableRecord.venue)).all()
    tables = {str(t): str(v) for t, v in rows}
    if venue is None:
        return tables
    mine = {t: v for t, v in tables.items() if v == venue}
    if not mine:
        known = ", ".join(sorted(set(tables.values()))) or "none enrolled"
        raise UnknownVenue(f"no table is enrolled at venue {venue!r} (venues: {known})")
    return mine


def _when(body: Mapping[str, object], fallback: str) -> datetime | None:
    return parse_instant(body.get("at")) or parse_instant(fallback)


def _marks(rows: Iterable[tuple[str, int, str, str, Mapping[str, object]]],
           window: ReportWindow, unreadable: list[str]
           ) -> tuple[list[AlertFact], list[StaffMark], list[HeatMark], list[TableEvent]]:
    alerts: list[AlertFact] = []
    staff: list[StaffMark] = []
    heats: list[HeatMark] = []
    events: list[TableEvent] = []
    for table, seq, kind, ts, body in rows:
        try:
            message = decode_table_message(kind, body, sender=table)
        except MessageError as exc:
            unreadable.append(f"{table} message {seq}: {exc}")
            continue
        at = _when(body, ts)
        if isinstance(message, Alert):
            if window.contains(at):
                alerts.append(AlertFact(table=table, kind=message.kind, at=at,
                                        hand_id=message.hand_id))
        elif at is None:
            unreadable.append(f"{table} message {seq} ({kind}): no time")
        elif isinstance(message, StaffEvent):
            if message.event in ("signed_in", "signed_out") and message.staff_id:
                staff.append(StaffMark(table=table, at=at, seq=seq, staff_id=message.staff_id,
                                       role=message.role,
                                       signed_in=message.event == "signed_in"))
        elif isinstance(message, HeatOpened):
            heats.append(HeatMark(table=table, at=at, seq=seq, heat_id=message.heat_id,
                                  opened=True, stage=message.stage))
        elif isinstance(message, HeatClosed):
            heats.append(HeatMark(table=table, at=at, seq=seq, heat_id=message.heat_id,
                                  opened=False))
        elif (isinstance(message, DeviceState) and message.state == "fault_cleared"
              and window.contains(at)):
            events.append(TableEvent(table=table, kind="fault_cleared", at=at,
                                     by=message.detail or None))
    return alerts, staff, heats, events


def read_play_facts(session: Session, window: ReportWindow) -> PlayFacts:
    """Read the facts of the tables in scope (``window.venue``), hands and alerts in the
    window; UnknownVenue when the venue has no table."""
    tables = _tables(session, window.venue)
    unreadable: list[str] = []
    hands: list[HandFact] = []
    # A hand is published when it ends, so its envelope time (hands.at) is within a day of
    # its opening: a coarse filter in SQL; the window's own test is on the opening.
    start, end = window.utc_bounds(timedelta(days=1))
    query = select(Hand.table_id, Hand.body).order_by(Hand.table_id, Hand.seq)
    if start is not None:
        query = query.where(Hand.at >= start)
    if end is not None:
        query = query.where(Hand.at < end)
    for table, body in session.execute(query):
        if table not in tables:
            continue
        fact = hand_fact(table, body) if isinstance(body, Mapping) else "not an object"
        if isinstance(fact, str):
            unreadable.append(f"{table} hand: {fact}")
        elif window.contains(fact.opened):
            hands.append(fact)
    rows = session.execute(
        select(Message.table_id, Message.seq, Message.type, Message.ts, Message.body)
        .where(Message.type.in_(_TYPES)).order_by(Message.table_id, Message.seq))
    alerts, staff, heats, events = _marks(
        ((str(t), int(q), str(k), str(ts), b) for t, q, k, ts, b in rows
         if t in tables and isinstance(b, Mapping)), window, unreadable)
    for check in session.scalars(select(PayoutCheck).where(PayoutCheck.outcome == "overridden")):
        at = parse_instant(check.at.isoformat()) if check.at else None
        if check.table_id in tables:
            events.append(TableEvent(table=check.table_id, kind="payout_override", at=at,
                                     hand_id=check.hand_id, by=check.by))
    for ruling in session.scalars(select(HandCorrection)):
        if ruling.table_id in tables:
            at = parse_instant(ruling.at.isoformat()) if ruling.at else None
            events.append(TableEvent(table=ruling.table_id, kind="ruling", at=at,
                                     hand_id=ruling.hand_id, by=ruling.by,
                                     extra={"ruling": ruling.ruling}))
    names = {str(s): str(n) for s, n in session.execute(
        select(StaffRecord.staff_id, StaffRecord.name))}
    return PlayFacts(tables=tables, hands=tuple(hands), alerts=tuple(alerts),
                     staff=tuple(staff), heats=tuple(heats), events=tuple(events),
                     staff_names=names, unreadable=tuple(unreadable))
