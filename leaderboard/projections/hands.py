"""Hands a table reports: ``hand.settled`` / ``hand.voided`` -> a Hand row holding the record
and whether any of it was keyed by hand (``manual``, rule 58).

Of two records of one hand from its table the higher seq wins; a hand id another table
published first is refused. `hand_values` is the one row rule, used one message at a time
and, by ``bulk`` and `project_hands`, for many at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection, update

from leaderboard.projections.decoding import decode
from leaderboard.projections.results import HAND_CONFLICT, Outcome, Projected
from leaderboard.projections.sql import HANDS, Statements, body_text, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import HandSettled, HandVoided, MessageError

__all__ = ["BODY", "HAND_KEY", "hand", "hand_values", "manual", "project_hands"]

HAND_KEY: Final = ("hand_id",)
BODY: Final = ("body",)  # given as JSON text (body_text())


def hand_values(envelope: Envelope, message: HandSettled | HandVoided,
                text: str | None) -> dict[str, Any]:
    """The Hand row of a hand message (``text``: the body's JSON text, if the caller has it)."""
    return {"hand_id": message.hand_id, "table_id": envelope.table, "seq": envelope.seq,
            "status": message.STATUS, "heat_id": message.heat_id,
            "body": text if text is not None else body_text(envelope),
            "at": wall_of(envelope), "manual": manual(message)}


def manual(message: HandSettled | HandVoided) -> bool:
    """Whether the record says a card or wager was keyed by hand (rule 58); a record from
    before manual entry was marked has no ``manual`` and was not."""
    return bool(message.record.get("manual", False))


def hand(connection: Connection, sql: Statements, envelope: Envelope,
         message: HandSettled | HandVoided, *, text: str | None, result: Outcome) -> None:
    """Apply one hand record: insert it, or replace an older record of the same table."""
    hand_id = message.hand_id
    if insert_new(connection, HANDS, [hand_values(envelope, message, text)], key=HAND_KEY,
                  json_text=BODY):
        result.changes.append(envelope.type)
        return
    held = connection.execute(sql.hand_of, {"hand": hand_id}).one()
    if held.table_id != envelope.table:
        result.refuse(envelope, HAND_CONFLICT,
                      f"hand {hand_id} was already published by {held.table_id} seq {held.seq}")
        return
    if envelope.seq < held.seq:
        result.notes.append(f"hand {hand_id}: the stored record (seq {held.seq}) is newer")
        return
    connection.execute(update(HANDS).where(HANDS.c.hand_id == hand_id).values(
        table_id=envelope.table, seq=envelope.seq, status=message.STATUS,
        heat_id=message.heat_id, body=envelope.body, at=wall_of(envelope),
        manual=manual(message)))
    result.changes.append(envelope.type)


def project_hands(connection: Connection, envelopes: Sequence[tuple[Envelope, str | None]]
                  ) -> dict[tuple[str, int], Projected]:
    """Insert the Hand rows of several new hand messages at once (insert_new).

    For messages of distinct, new hands with valid bodies: returns the projection of each
    one inserted, by (table, seq). The others (a hand already stored, a bad body) are left
    out: project() them one by one. Hands touch nothing else, so this may run after the
    other messages of a batch have been projected.
    """
    rows: dict[str, tuple[Envelope, dict[str, Any]]] = {}
    for envelope, text in envelopes:
        try:
            message = decode(envelope)
        except MessageError:
            continue
        if isinstance(message, HandSettled | HandVoided):
            if message.hand_id in rows:
                raise ValueError(f"project_hands: hand {message.hand_id} given twice")
            rows[message.hand_id] = (envelope, hand_values(envelope, message, text))
    if not rows:
        return {}
    inserted = insert_new(connection, HANDS, [values for _, values in rows.values()],
                          key=HAND_KEY, json_text=BODY)
    return {(e.table, e.seq): Projected(changes=(e.type,))
            for hand_id, (e, _) in rows.items() if (hand_id,) in inserted}
