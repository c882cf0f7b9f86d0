"""Scores a table reports: ``score.recorded`` -> a Score row (one per entry, never
overwritten), ``score.acknowledged`` / ``score.voided`` -> its acknowledgement (with the
method and any signature's SHA-256) and void.

An acknowledgement or void whose score has not arrived yet is kept in ``messages`` and applied
when the score arrives. A score from a table the desk has since moved the entry from (released
from a failed table, seated elsewhere) is stored and refused as stale, whatever the order. Each
rule here is used one message at a time and, by ``bulk``, for many at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from leaderboard.projections.decoding import decode
from leaderboard.projections.results import (
    ACK_CONFLICT,
    ACK_MISMATCH,
    REFUNDED,
    SCORE_ACKNOWLEDGED,
    SCORE_CONFLICT,
    SCORE_RECORDED,
    SCORE_STALE,
    SCORE_VOIDED,
    VOID_CONFLICT,
    Outcome,
)
from leaderboard.projections.seatings import undone_because
from leaderboard.projections.sql import LaterMessages, Statements, wall_of
from wire.envelope import Envelope
from wire.messages import MessageError, ScoreAcknowledged, ScoreRecorded, ScoreVoided

__all__ = ["ack_values", "acknowledges", "score_acknowledged", "score_recorded", "score_row",
           "score_voided", "stale_score"]

Row = dict[str, Any]


def score_row(connection: Connection, sql: Statements, place: Any, envelope: Envelope,
              message: ScoreRecorded, *, result: Outcome) -> Row | None:
    """The Score row to insert for a recorded score, given the entry's row ``place`` (None:
    unknown here); None, with the refusal in ``result``, when the score is stale."""
    stale = stale_score(connection, sql, place, envelope.table)
    if stale is not None:
        result.refuse(envelope, SCORE_STALE,
                      f"entry {message.entry_id}: this score of {message.score} cents from"
                      f" {envelope.table} seq {envelope.seq} is not counted: {stale}")
        return None
    return {"entry_id": message.entry_id, "table_id": envelope.table, "seq": envelope.seq,
            "stage": message.stage, "heat_id": message.heat_id, "score_cents": message.score,
            "hands": message.hands, "status": message.status, "recorded_at": wall_of(envelope)}


def stale_score(connection: Connection, sql: Statements, held: Any, table: str) -> str | None:
    """Why a score from `table` does not count: the desk released the place from that failed
    table or seated it at another; else None. A refunded entry's score is stored and left
    out of the standings instead."""
    if held is None or held.status == REFUNDED:
        return None
    return undone_because(connection, sql, held, table)


def score_recorded(connection: Connection, sql: Statements, envelope: Envelope,
                   message: ScoreRecorded, *, later: LaterMessages | None,
                   result: Outcome) -> None:
    """Apply one recorded score, then the acknowledgements and voids that arrived before it."""
    entry_id = message.entry_id
    place = connection.execute(sql.places_of, {"entries": [entry_id]}).first()
    row = score_row(connection, sql, place, envelope, message, result=result)
    if row is None:
        return
    inserted = connection.execute(sql.insert_score, {
        **row, "acknowledged_at": None, "ack_method": None, "ack_evidence": None,
        "voided_at": None, "void_reason": None}).first()
    if inserted is None:
        held = connection.execute(sql.score_of, {"entry": entry_id}).one()
        result.refuse(
            envelope, SCORE_CONFLICT,
            f"entry {entry_id} already has a score of {held.score_cents} cents from "
            f"{held.table_id} seq {held.seq}; this score of {message.score} cents from "
            f"{envelope.table} seq {envelope.seq} is not counted",
        )
        return
    result.changes.append(SCORE_RECORDED)
    if later is None:
        return
    # Acknowledgements and voids of this score that arrived before it: apply them now, in
    # seq order (a second acknowledgement is refused as it would have been after the score).
    for seq, kind, ts, later_body in later(envelope.table, envelope.seq,
                                           (SCORE_ACKNOWLEDGED, SCORE_VOIDED)):
        if not isinstance(later_body, Mapping) or later_body.get("entry_id") != entry_id:
            continue
        follower = Envelope(venue=envelope.venue, table=envelope.table, seq=seq, ts=ts,
                            type=kind, body=later_body, boot="stored", mono=0, sig="")
        try:
            decoded = decode(follower)
        except MessageError:
            continue  # refused as malformed when it arrived
        if isinstance(decoded, ScoreAcknowledged):
            score_acknowledged(connection, sql, follower, decoded, result)
        elif isinstance(decoded, ScoreVoided):
            score_voided(connection, sql, follower, decoded, result)


def ack_values(envelope: Envelope, message: ScoreAcknowledged) -> Row:
    """The parameters of the acknowledgement's UPDATE."""
    return {"entry": message.entry_id, "at": wall_of(envelope), "method": message.method,
            "evidence": message.evidence}


def score_acknowledged(connection: Connection, sql: Statements, envelope: Envelope,
                       message: ScoreAcknowledged, result: Outcome) -> None:
    """Apply one acknowledgement (it waits if its score has not arrived)."""
    held = connection.execute(sql.score_of, {"entry": message.entry_id}).first()
    if acknowledges(held, envelope, message, result):
        connection.execute(sql.acknowledge, ack_values(envelope, message))
        result.changes.append(SCORE_ACKNOWLEDGED)


def acknowledges(held: Any, envelope: Envelope, message: ScoreAcknowledged,
                 result: Outcome) -> bool:
    """Whether an acknowledgement applies to the score row ``held`` (None: no score yet);
    if not, its note or refusal is added to ``result``."""
    entry_id = message.entry_id
    if held is None:
        result.notes.append(f"acknowledgement of entry {entry_id} waits for its score")
        return False
    where = f"{envelope.table} seq {envelope.seq}"
    if held.table_id != envelope.table or held.seq > envelope.seq:
        result.refuse(envelope, ACK_CONFLICT,
                      f"acknowledgement of entry {entry_id} ({where}) does not follow its "
                      f"score ({held.table_id} seq {held.seq})")
        return False
    if message.score != held.score_cents:
        result.refuse(envelope, ACK_MISMATCH,
                      f"entry {entry_id} acknowledged {message.score} cents ({where}) but its "
                      f"recorded score is {held.score_cents} cents; not acknowledged")
        return False
    if held.acknowledged_at is not None:
        result.refuse(envelope, ACK_CONFLICT,
                      f"entry {entry_id} was already acknowledged; {where} is a second "
                      "acknowledgement")
        return False
    return True


def score_voided(connection: Connection, sql: Statements, envelope: Envelope,
                 message: ScoreVoided, result: Outcome) -> None:
    """Apply one void of a score (it waits if its score has not arrived)."""
    entry_id = message.entry_id
    held = connection.execute(sql.score_of, {"entry": entry_id}).first()
    if held is None:
        result.notes.append(f"void of entry {entry_id}'s score waits for the score")
        return
    if held.table_id != envelope.table or held.seq > envelope.seq:
        result.refuse(envelope, VOID_CONFLICT,
                      f"void of entry {entry_id} ({envelope.table} seq {envelope.seq}) does "
                      f"not follow its score ({held.table_id} seq {held.seq})")
        return
    if held.voided_at is not None:
        result.notes.append(f"entry {entry_id}'s score was already voided")
        return
    connection.execute(sql.void, {"entry": entry_id, "at": wall_of(envelope),
                                  "reason": message.reason})
    result.changes.append(SCORE_VOIDED)
