"""Read the recorded tournament for the recomputation: every table message the central
service stored (each envelope verified again against the table's own key, read from the
table's key file, not from the central enrolment), the desk's records of entries, rulings and
the seat draw, and a check that each table's journal outbox holds exactly what was stored.

Reads only; the database is never changed. Works on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from leaderboard.models import AuditEntry, Draw, Entry, Message
from tests.e2e.records import (
    Acknowledgement,
    DeskRuling,
    EntryFact,
    Evidence,
    HandCorrection,
    HandSeat,
    RecordedHand,
    ScoreMessage,
    Seating,
    TableVoid,
    Unseating,
)
from tests.e2e.records import Draw as DrawFact
from wire.envelope import EnvelopeError, parse_ts, verify_envelope
from wire.signing import KeyRing, load_private_key

__all__ = ["STANDINGS_TYPES", "journal_differences", "load_evidence", "table_keys"]


def table_keys(key_files: Iterable[Path]) -> KeyRing:
    """The tables' public keys, derived from their own private key files."""
    return KeyRing(load_private_key(path).public_key for path in key_files)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _hand(table: str, seq: int, at: datetime, body: Mapping[str, Any]) -> RecordedHand:
    nets = {int(k): int(v) for k, v in (body.get("nets") or {}).items()}
    settled = {int(s["seat"]): s for s in (body.get("settlement") or {}).get("seats", [])}
    problems: list[str] = []
    seats: list[HandSeat] = []
    for s in body.get("seats", []):
        seat = int(s["seat"])
        wagers = s.get("wagers") or {}
        chips = sum(int(v) for k, v in wagers.items() if k != "markers")
        net = nets.get(seat, 0)
        result = settled.get(seat)
        used = 0
        wager_lines: dict[str, Any] = {}
        outcome = None
        if result is not None:
            wager_lines = dict(result.get("wagers") or {})
            outcome = result.get("outcome")
            used = len(result.get("markers_used") or [])
            lines = sum(int(w["net"]) for w in (result.get("wagers") or {}).values())
            if int(result["net"]) != net or lines != net:
                problems.append(f"seat {seat}: nets {net}, settlement {result['net']},"
                                f" its wagers add up to {lines}")
        elif body.get("status") == "settled":
            problems.append(f"seat {seat} has no settlement")
        seats.append(HandSeat(seat=seat, entry_id=s.get("entry_id"), net_cents=net,
                              chips_wagered_cents=chips, markers_used=used,
                              outcome=outcome, lines=wager_lines))
    return RecordedHand(table=table, seq=seq, hand_id=str(body["hand_id"]),
                        heat_id=body.get("heat_id"), stage=body.get("stage"),
                        status=str(body.get("status")), at=at, seats=tuple(seats),
                        problems=tuple(problems))


def _message(evidence: Evidence, table: str, seq: int, kind: str, *, at: datetime,
             body: Mapping[str, Any]) -> None:
    if kind in ("hand.settled", "hand.voided"):
        hand = _hand(table, seq, at, body)
        evidence.hands.append(hand)
        evidence.problems += [f"{table} hand {hand.hand_id}: {p}" for p in hand.problems]
    elif kind == "hand.corrected":
        evidence.corrections.append(HandCorrection(
            table=table, seq=seq, hand_id=body["hand_id"], entry_id=body["entry_id"],
            ruling=body["ruling"], recorded_net=int(body["recorded_net"]),
            counted_net=int(body["counted_net"])))
    elif kind == "score.recorded":
        evidence.scores.append(ScoreMessage(
            table=table, seq=seq, entry_id=body["entry_id"], stage=body["stage"],
            heat_id=body.get("heat_id"), score_cents=int(body["score"]),
            hands=int(body["hands"]), status=body["status"], at=at,
            markers_forfeited=body.get("markers_forfeited")))
    elif kind == "score.acknowledged":
        evidence.acknowledgements.append(Acknowledgement(
            table=table, seq=seq, entry_id=body["entry_id"], score_cents=int(body["score"]),
            method=str(body.get("method")), at=at))
    elif kind == "score.voided":
        evidence.table_voids.append(TableVoid(table=table, seq=seq,
                                              entry_id=body["entry_id"], at=at))
    elif kind == "entry.seated":
        evidence.seatings.append(Seating(table=table, seq=seq, entry_id=body["entry_id"],
                                         seat=int(body["seat"]), heat_id=body.get("heat_id"),
                                         at=at))
    elif kind == "entry.unseated":
        played = body.get("hands_played")
        evidence.unseatings.append(Unseating(
            table=table, seq=seq, entry_id=body["entry_id"],
            hands_played=int(played) if played is not None else None, at=at))


def _messages(session: Session, keys: KeyRing, evidence: Evidence) -> None:
    rows = session.execute(select(Message.table_id, Message.seq, Message.type,
                                  Message.envelope).order_by(Message.table_id, Message.seq))
    for table, seq, kind, text in rows:
        where = f"{table} seq {seq}"
        if text is None:
            evidence.problems.append(f"{where}: stored without its envelope")
            continue
        try:
            envelope = verify_envelope(text.encode("utf-8"), keys)
        except EnvelopeError as exc:
            evidence.problems.append(f"{where}: {kind}: signature check failed: {exc}")
            continue
        if (envelope.table, envelope.seq, envelope.type) != (table, seq, kind):
            evidence.problems.append(f"{where}: stored as {kind}, the envelope says"
                                     f" {envelope.table} seq {envelope.seq} {envelope.type}")
            continue
        try:
            _message(evidence, table, seq, kind, at=parse_ts(envelope.ts), body=envelope.body)
        except (KeyError, TypeError, ValueError) as exc:
            evidence.problems.append(f"{where}: {kind} body unreadable: {exc!r}")


def _desk(session: Session, evidence: Evidence) -> None:
    for e in session.scalars(select(Entry).order_by(Entry.entry_id)):
        evidence.entries[e.entry_id] = EntryFact(
            entry_id=e.entry_id, patron_id=e.patron_id, stage=e.stage, heat_id=e.heat_id,
            heat_day=e.heat_day, buy_in_cents=e.buy_in_cents, status=e.status,
            disqualified=e.disqualified_at is not None, table=e.table_id, seat=e.seat,
            played_by=e.played_by,
            bought_at=_utc(e.bought_at) if e.stage == "qualifying" else None)
    rulings = session.scalars(select(AuditEntry).where(
        AuditEntry.action.in_(("score.voided", "score.corrected"))).order_by(AuditEntry.id))
    for row in rulings:
        detail = row.detail or {}
        at = _utc(row.at)
        assert at is not None
        if row.action == "score.corrected" and "corrected_cents" in detail:
            evidence.rulings.append(DeskRuling(entry_id=detail["entry_id"], kind="corrected",
                                               at=at, cents=int(detail["corrected_cents"])))
        elif row.action == "score.voided" and "recorded_cents" in detail:
            evidence.rulings.append(DeskRuling(entry_id=detail["entry_id"], kind="voided", at=at))
    draw = session.scalars(select(Draw).where(Draw.stage == "final").order_by(Draw.id)).first()
    if draw is not None:
        result = draw.result or {}
        evidence.draw = DrawFact(
            random_hex=draw.random_hex, finalists=tuple(draw.finalists),
            seats=tuple(int(s) for s in result.get("seats", [])),
            result={str(a["finalist"]): int(a["seat"]) for a in result.get("assignments", [])})


def load_evidence(engine: Engine, keys: KeyRing) -> Evidence:
    """Everything recorded in the central database, each message's signature checked."""
    evidence = Evidence()
    with Session(engine) as session, session.begin():
        _messages(session, keys, evidence)
        _desk(session, evidence)
    return evidence


# What the standings are computed from: never allowed to be missing centrally.
STANDINGS_TYPES = frozenset({"hand.settled", "hand.voided", "hand.corrected", "score.recorded",
                             "score.acknowledged", "score.voided", "entry.seated",
                             "entry.unseated"})


def journal_differences(journal: Path, table: str, engine: Engine) -> list[str]:
    """Every message of a table's journal outbox (seq >= 1) must be stored centrally with the
    same type and body, and nothing else from that table: one line per difference. Messages
    after the last one stored that the standings do not read (a heat closed, a command's
    answer) may still be in flight when the run stops; they are not counted."""
    uri = f"file:{journal}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        outbox = {int(seq): (kind, json.loads(body)) for seq, kind, body in db.execute(
            "SELECT seq, type, body FROM outbox WHERE seq >= 1 ORDER BY seq")}
    with Session(engine) as session:
        stored = {int(seq): (kind, body) for seq, kind, body in session.execute(
            select(Message.seq, Message.type, Message.body).where(Message.table_id == table))}
    last = max(stored, default=0)
    out: list[str] = []
    for seq in sorted(set(outbox) | set(stored)):
        if seq not in stored:
            if seq > last and outbox[seq][0] not in STANDINGS_TYPES:
                continue  # in flight at the end of the run
            out.append(f"{table} seq {seq} ({outbox[seq][0]}): in the journal, not stored"
                       " centrally")
        elif seq not in outbox:
            out.append(f"{table} seq {seq} ({stored[seq][0]}): stored centrally, not in the"
                       " table's journal")
        elif outbox[seq] != stored[seq]:
            out.append(f"{table} seq {seq}: the journal's {outbox[seq][0]} differs from the"
                       f" stored {stored[seq][0]}")
    return out
