"""Applying many messages of a batch at once: the same rules as one at a time (scores,
hands, seatings, disputes and payout checks), their reads and writes gathered into a few
statements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from leaderboard.audit_trail.chain import append_audit, audit_values
from leaderboard.projections.chips import chip_rows
from leaderboard.projections.console import console_rows
from leaderboard.projections.decoding import Decoded, read
from leaderboard.projections.hands import BODY, HAND_KEY, hand_values
from leaderboard.projections.results import (
    SCORE_ACKNOWLEDGED,
    SCORE_RECORDED,
    Outcome,
    Projected,
)
from leaderboard.projections.scores import ack_values, acknowledges, score_row
from leaderboard.projections.seatings import seating
from leaderboard.projections.sql import (
    HANDS,
    SCORES,
    insert_hands_from_messages,
    insert_new,
    rows_by_entry,
    statements,
    update_each,
)
from leaderboard.projections.tallies import tally_rows
from wire.envelope import Envelope
from wire.messages import (
    ChipsCounted,
    ChipsReconciled,
    DecksEvent,
    EntrySeated,
    HandCorrected,
    HandDisputed,
    HandSettled,
    HandVoided,
    PayoutChecked,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
)

__all__ = ["project_bulk"]

Items = Sequence[tuple[Envelope, str | None, bool]]
_SCORE_KEY: Final = ("entry_id",)


def project_bulk(connection: Connection, items: Items,
                 decoded: Sequence[Decoded] | None = None) -> dict[int, Projected]:
    """Apply at once, in a few statements, the messages of a batch whose effect does not
    depend on the order they are applied in; returns their projections by index in ``items``.

    ``items``: the batch's newly stored messages in arrival order, each with its body text
    and whether it arrived below its table's highest seq (out of order). The caller then
    project()s the others, one by one in arrival order: the result is the same as project()
    of every message in arrival order, because what is applied here touches only rows no
    other message of the batch touches:

    - a hand record whose hand id no other message of the batch names;
    - a score (in order) of an entry that no other score of the batch names and no
      acknowledgement or void before it in the batch (one of those would have found no
      score, and must still find none);
    - an acknowledgement of an entry that has no other acknowledgement or void in the batch,
      and no score but one applied here: the score row it is checked against (read once for
      all) is then the one it would see;
    - a seating (in order) of an entry no other seating of the batch names;
    - every dispute and payout check: each is its own row, keyed by (table, seq).

    A hand or score that was stored already is left to project() (which tells how).
    ``decoded``: what `decoding.read` gave for each item, if the caller read them already.
    """
    if decoded is None:
        decoded = [read(envelope) for envelope, _, _ in items]
    named: dict[tuple[str, Any], list[int]] = {}  # (kind, id) -> indices naming it (valid or not)
    for index, (envelope, _, _) in enumerate(items):
        kind = {HandSettled.TYPE: "hand", HandVoided.TYPE: "hand", ScoreRecorded.TYPE: "score",
                ScoreAcknowledged.TYPE: "follower", ScoreVoided.TYPE: "follower",
                EntrySeated.TYPE: "seat"}.get(envelope.type)
        if kind is not None:
            name = envelope.body.get("hand_id" if kind == "hand" else "entry_id")
            named.setdefault((kind, name), []).append(index)

    def alone(kind: str, name: Any) -> bool:
        return len(named.get((kind, name), ())) == 1

    hands = [(i, m) for i, m in enumerate(decoded)
             if isinstance(m, HandSettled | HandVoided) and alone("hand", m.hand_id)]
    scores = [(i, m) for i, m in enumerate(decoded)
              if isinstance(m, ScoreRecorded) and not items[i][2] and alone("score", m.entry_id)
              and all(f > i for f in named.get(("follower", m.entry_id), ()))]
    done: dict[int, Projected] = {}
    done.update(_bulk_hands(connection, items, hands))
    done.update(_bulk_scores(connection, items, scores))
    scored = {m.entry_id for i, m in scores if i in done and done[i].changes}
    acks = [(i, m) for i, m in enumerate(decoded)
            if isinstance(m, ScoreAcknowledged) and alone("follower", m.entry_id)
            and (("score", m.entry_id) not in named or m.entry_id in scored)]
    done.update(_bulk_acks(connection, items, acks))
    seats = [(i, m) for i, m in enumerate(decoded)
             if isinstance(m, EntrySeated) and not items[i][2] and alone("seat", m.entry_id)]
    done.update(_bulk_seats(connection, items, seats))
    console = [(i, items[i][0], m) for i, m in enumerate(decoded)
               if isinstance(m, ScoreDisputed | PayoutChecked | HandDisputed | HandCorrected)]
    if console:
        done.update(console_rows(connection, console))
    chips = [(i, items[i][0], m) for i, m in enumerate(decoded) if isinstance(m, ChipsReconciled)]
    done.update(chip_rows(connection, chips))
    tallies = [(i, items[i][0], m) for i, m in enumerate(decoded)
               if isinstance(m, ChipsCounted | DecksEvent)]
    done.update(tally_rows(connection, tallies))
    return done


def _bulk_hands(connection: Connection, items: Items,
                chosen: list[tuple[int, HandSettled | HandVoided]]) -> dict[int, Projected]:
    if not chosen:
        return {}
    rows = [hand_values(items[i][0], m, items[i][1]) for i, m in chosen]
    dialect = connection.dialect
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        inserted = insert_hands_from_messages(connection, rows)
    else:
        inserted = insert_new(connection, HANDS, rows, key=HAND_KEY, json_text=BODY)
    return {i: Projected(changes=(items[i][0].type,)) for i, m in chosen
            if (m.hand_id,) in inserted}


def _bulk_scores(connection: Connection, items: Items,
                 chosen: list[tuple[int, ScoreRecorded]]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = rows_by_entry(connection, sql.places_of, [m.entry_id for _, m in chosen])
    done: dict[int, Projected] = {}
    rows = []
    for i, m in chosen:
        result = Outcome()
        row = score_row(connection, sql, held.get(m.entry_id), items[i][0], m, result=result)
        if row is None:
            done[i] = result.frozen()
        else:
            rows.append(row)
    inserted = insert_new(connection, SCORES, rows, key=_SCORE_KEY) if rows else set()
    done.update({i: Projected(changes=(SCORE_RECORDED,)) for i, m in chosen
                 if i not in done and (m.entry_id,) in inserted})
    return done


def _bulk_acks(connection: Connection, items: Items,
               chosen: list[tuple[int, ScoreAcknowledged]]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = rows_by_entry(connection, sql.scores_of, [m.entry_id for _, m in chosen])
    done: dict[int, Projected] = {}
    updates = []
    for i, m in chosen:
        envelope, result = items[i][0], Outcome()
        if acknowledges(held.get(m.entry_id), envelope, m, result):
            updates.append(ack_values(envelope, m))
            result.changes.append(SCORE_ACKNOWLEDGED)
        done[i] = result.frozen()
    update_each(connection, sql.acknowledge, updates)
    return done


def _bulk_seats(connection: Connection, items: Items,
                chosen: list[tuple[int, EntrySeated]]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = rows_by_entry(connection, sql.places_of, [m.entry_id for _, m in chosen])
    done: dict[int, Projected] = {}
    updates, audits = [], []
    for i, m in chosen:
        result = Outcome()
        row, audit = seating(connection, sql, held.get(m.entry_id), items[i][0], m,
                             result=result)
        if row is not None:
            updates.append(row)
        if audit is not None:
            audits.append(audit)
        done[i] = result.frozen()
    update_each(connection, sql.seat_many, updates)
    if audits:
        append_audit(connection, audit_values(audits))
    return done
