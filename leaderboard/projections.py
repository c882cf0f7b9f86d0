"""What a stored table message changes in the leaderboard's tables (docs/ingest.md).

Ingest stores every valid message once in ``messages`` and, in the same transaction, applies
it here: ``score.recorded`` -> a Score row (one per entry, never overwritten),
``score.acknowledged`` / ``score.voided`` -> the Score's acknowledgement and void fields,
``hand.settled`` / ``hand.voided`` -> a Hand row, ``entry.seated`` -> the Entry's table and
seat. Other types are only stored.

Messages can arrive out of order (seq 5 before 4). Every projection gives the same result
whatever the arrival order: an acknowledgement or void whose score has not arrived yet is
kept in ``messages`` and applied when the score arrives; of two records of one hand from its
table the higher seq wins. A projection that cannot be applied (a second score for one
entry, an acknowledgement of a different figure, a body without its required fields) is
refused with a reason; the message itself stays stored, so the table's sequence has no hole.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, cast

from sqlalchemy import JSON, Connection, Table, Text, bindparam, select, update
from sqlalchemy import cast as cast_
from sqlalchemy.dialects import postgresql, sqlite

from controller.envelope import Envelope, canonical_json
from game.tournament import Stage
from leaderboard.models import Entry, Hand, Message, Rejection, Score, TableProgress

__all__ = [
    "ACK_CONFLICT",
    "ACK_MISMATCH",
    "ENTRIES",
    "ENTRY_SEATED",
    "HANDS",
    "HAND_CONFLICT",
    "HAND_SETTLED",
    "HAND_VOIDED",
    "MALFORMED_BODY",
    "MESSAGES",
    "PROGRESS",
    "PROJECTED_TYPES",
    "PROJECTION_REASONS",
    "REJECTIONS",
    "SCORES",
    "SCORE_ACKNOWLEDGED",
    "SCORE_CONFLICT",
    "SCORE_RECORDED",
    "SCORE_VOIDED",
    "VOID_CONFLICT",
    "LaterMessages",
    "Projected",
    "Refused",
    "Statements",
    "as_utc",
    "body_problem",
    "body_text",
    "insert_ignoring_conflicts",
    "later_messages_query",
    "project",
    "project_hands",
    "statements",
    "wall_of",
]

SCORE_RECORDED: Final = "score.recorded"
SCORE_ACKNOWLEDGED: Final = "score.acknowledged"
SCORE_VOIDED: Final = "score.voided"
HAND_SETTLED: Final = "hand.settled"
HAND_VOIDED: Final = "hand.voided"
ENTRY_SEATED: Final = "entry.seated"
PROJECTED_TYPES: Final = frozenset(
    {SCORE_RECORDED, SCORE_ACKNOWLEDGED, SCORE_VOIDED, HAND_SETTLED, HAND_VOIDED, ENTRY_SEATED}
)

# Reasons a stored message's projection is refused (counted with the ingest's own reasons).
MALFORMED_BODY: Final = "malformed_body"
SCORE_CONFLICT: Final = "score_conflict"
ACK_CONFLICT: Final = "ack_conflict"
ACK_MISMATCH: Final = "ack_mismatch"
VOID_CONFLICT: Final = "void_conflict"
HAND_CONFLICT: Final = "hand_conflict"
PROJECTION_REASONS: Final = (
    MALFORMED_BODY, SCORE_CONFLICT, ACK_CONFLICT, ACK_MISMATCH, VOID_CONFLICT, HAND_CONFLICT,
)

_INT64_MAX: Final = 2**63 - 1
_INT32_MAX: Final = 2**31 - 1
_HAND_STATUS: Final = {HAND_SETTLED: "settled", HAND_VOIDED: "void"}
_SCORE_STATUSES: Final = frozenset({"finished", "ended_early"})  # game.standings.ScoreStatus
_STAGES: Final = frozenset(stage.value for stage in Stage)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """A projection that was not applied: which message, why (``reason``), and the detail."""

    table: str
    seq: int
    type: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Projected:
    """What applying one message did: the kinds of rows it changed, and any refusals."""

    changes: tuple[str, ...] = ()
    refused: tuple[Refused, ...] = ()
    notes: tuple[str, ...] = ()  # harmless remarks for the log (deferred, unknown entry, ...)


# --- body checks -----------------------------------------------------------------------------

# field -> (kind, required). Kinds: "idN" non-empty text of at most N characters,
# "textN" likewise (N 0 = unbounded), "count" 0..2**31-1, "cents" 0..2**63-1,
# "stage" a Stage value, "score_status" a ScoreStatus value, "table" the sender's own id.
_Spec = Mapping[str, tuple[str, bool]]
_SPECS: Final[Mapping[str, _Spec]] = {
    SCORE_RECORDED: {
        "entry_id": ("id40", True), "stage": ("stage", True), "heat_id": ("id64", True),
        "score": ("cents", True), "hands": ("count", True), "status": ("score_status", True),
        "table": ("table", False), "seat": ("count", False),
    },
    SCORE_ACKNOWLEDGED: {
        "entry_id": ("id40", True), "score": ("cents", True), "method": ("text32", True),
    },
    SCORE_VOIDED: {"entry_id": ("id40", True), "reason": ("text0", True)},
    HAND_SETTLED: {"hand_id": ("id64", True), "heat_id": ("id64", False),
                   "table": ("table", False), "status": ("hand_status", False)},
    HAND_VOIDED: {"hand_id": ("id64", True), "heat_id": ("id64", False),
                  "table": ("table", False), "status": ("hand_status", False)},
    ENTRY_SEATED: {"entry_id": ("id40", True), "seat": ("count", True)},
}


def _text_problem(value: object, limit: int) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    if not value:
        return "must not be empty"
    if limit and len(value) > limit:
        return f"must be at most {limit} characters"
    if "\x00" in value:
        return "must not contain NUL"
    return None


def _int_problem(value: object, limit: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number"
    if not 0 <= value <= limit:
        return f"must be within 0..{limit}"
    return None


def _field_problem(kind: str, value: object, envelope: Envelope) -> str | None:
    if kind.startswith("id"):
        return _text_problem(value, int(kind[2:]))
    if kind.startswith("text"):
        return _text_problem(value, int(kind[4:]))
    if kind == "count":
        return _int_problem(value, _INT32_MAX)
    if kind == "cents":
        return _int_problem(value, _INT64_MAX)
    if kind == "stage":
        return None if value in _STAGES else f"must be one of {sorted(_STAGES)}"
    if kind == "score_status":
        return None if value in _SCORE_STATUSES else f"must be one of {sorted(_SCORE_STATUSES)}"
    if kind == "table":
        return None if value == envelope.table else f"must be the sender {envelope.table!r}"
    if kind == "hand_status":
        expected = _HAND_STATUS[envelope.type]
        return None if value == expected else f"must be {expected!r} for {envelope.type}"
    raise AssertionError(f"unknown field kind {kind!r}")  # pragma: no cover


def body_problem(envelope: Envelope) -> str | None:
    """Why a projected type's body cannot be applied (a missing or bad field), or None."""
    spec = _SPECS.get(envelope.type)
    if spec is None:
        return None
    body = envelope.body
    for name, (kind, required) in spec.items():
        if name not in body or (body[name] is None and not required):
            if required:
                return f"{envelope.type} body lacks {name!r}"
            continue
        problem = _field_problem(kind, body[name], envelope)
        if problem is not None:
            return f"{envelope.type} body field {name!r} {problem} (got {_show(body[name])})"
    return None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- SQL --------------------------------------------------------------------------------------


def insert_ignoring_conflicts(
    connection: Connection, table: Table
) -> postgresql.Insert | sqlite.Insert:
    """``INSERT ... ON CONFLICT DO NOTHING`` for PostgreSQL or SQLite (add ``.returning()``).

    Rows that would break a unique key are skipped; RETURNING then names only the rows that
    were inserted (on PostgreSQL ``rowcount`` is -1 here, so RETURNING is how to tell).
    """
    name = connection.dialect.name
    if name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    if name == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing()
    raise NotImplementedError(f"ingest supports PostgreSQL and SQLite, not {name}")


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime (SQLite gives back naive UTC, PostgreSQL aware)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def body_text(envelope: Envelope, payload: bytes | None = None) -> str:
    """The body's JSON text: cut from the verified payload, or serialized if none is given.

    verify_envelope accepts only the canonical form, whose keys are sorted: the payload is
    ``{"body":<body>,"boot":"...",...}``, and no field after ``boot`` can hold ``,"boot":"``
    (ids, base64, integers), so the last such occurrence ends the body.
    """
    if payload is not None and payload.startswith(b'{"body":'):
        end = payload.rfind(b',"boot":"')
        if end > 0:
            return payload[8:end].decode("utf-8")
    return canonical_json(dict(envelope.body)).decode("utf-8")


def wall_of(envelope: Envelope) -> datetime:
    """The envelope's ``ts`` (already checked by verify_envelope) as an aware UTC datetime."""
    return datetime.fromisoformat(envelope.ts)


SCORES: Final = cast(Table, Score.__table__)
HANDS: Final = cast(Table, Hand.__table__)
ENTRIES: Final = cast(Table, Entry.__table__)
MESSAGES: Final = cast(Table, Message.__table__)
PROGRESS: Final = cast(Table, TableProgress.__table__)
REJECTIONS: Final = cast(Table, Rejection.__table__)


class Statements:
    """The ingest's statements for one dialect, built once (SQLAlchemy then caches them)."""

    def __init__(self, connection: Connection) -> None:
        def insert(table: Table) -> postgresql.Insert | sqlite.Insert:
            return insert_ignoring_conflicts(connection, table)

        # Bodies arrive as JSON text (body_text()): stored as they are, not serialized again.
        body: Any = bindparam("p_body", type_=Text)
        if connection.dialect.name == "postgresql":
            body = cast_(body, JSON)
        self.insert_messages = insert(MESSAGES).values(
            table_id=bindparam("p_table"), seq=bindparam("p_seq"), type=bindparam("p_type"),
            ts=bindparam("p_ts"), body=body, received_at=bindparam("p_received_at"),
        ).returning(MESSAGES.c.table_id, MESSAGES.c.seq)
        if connection.dialect.name == "postgresql":
            # psycopg caches the parsing of statements up to 4 KB; a 500-row VALUES is parsed
            # afresh every time (about 20 ms). Pages of 16 rows stay under the limit.
            self.insert_messages = self.insert_messages.execution_options(
                insertmanyvalues_page_size=_PG_PAGE_ROWS)
        self.insert_progress = insert(PROGRESS)
        self.insert_score = insert(SCORES).returning(SCORES.c.entry_id)
        self.insert_hand = insert(HANDS).values(
            hand_id=bindparam("p_hand"), table_id=bindparam("p_table"), seq=bindparam("p_seq"),
            status=bindparam("p_status"), heat_id=bindparam("p_heat"), body=body,
            at=bindparam("p_at"),
        ).returning(HANDS.c.hand_id)
        if connection.dialect.name == "postgresql":
            self.insert_hand = self.insert_hand.execution_options(
                insertmanyvalues_page_size=_PG_PAGE_ROWS)
        self.score_of = select(
            Score.table_id, Score.seq, Score.score_cents, Score.acknowledged_at, Score.voided_at
        ).where(Score.entry_id == bindparam("entry"))
        self.hand_of = select(Hand.table_id, Hand.seq).where(Hand.hand_id == bindparam("hand"))
        self.acknowledge = (
            update(SCORES).where(SCORES.c.entry_id == bindparam("entry"))
            .values(acknowledged_at=bindparam("at"), ack_method=bindparam("method"))
        )
        self.void = (
            update(SCORES).where(SCORES.c.entry_id == bindparam("entry"))
            .values(voided_at=bindparam("at"), void_reason=bindparam("reason"))
        )
        self.seat = (
            update(ENTRIES).where(ENTRIES.c.entry_id == bindparam("entry"))
            .values(table_id=bindparam("table"), seat=bindparam("seat"))
            .returning(ENTRIES.c.entry_id)
        )
        self.later = (
            select(Message.seq, Message.type, Message.ts, Message.body)
            .where(Message.table_id == bindparam("table"), Message.seq > bindparam("seq"),
                   Message.type.in_(bindparam("types", expanding=True)))
            .order_by(Message.seq)
        )


_STATEMENTS: dict[str, Statements] = {}
_PG_PAGE_ROWS: Final = 16


def statements(connection: Connection) -> Statements:
    """The prebuilt statements for ``connection``'s dialect."""
    name = connection.dialect.name
    built = _STATEMENTS.get(name)
    if built is None:
        built = _STATEMENTS[name] = Statements(connection)
    return built


# Stored messages of one table after a seq, of some types: (seq, type, ts, body), in seq order.
LaterMessages = Callable[[str, int, Collection[str]], Sequence[tuple[int, str, str, Any]]]


def later_messages_query(
    connection: Connection, exclude: Collection[tuple[str, int]]
) -> LaterMessages:
    """A LaterMessages reading ``messages``, skipping keys in ``exclude`` (not applied yet)."""
    query = statements(connection).later

    def later(table: str, seq: int, types: Collection[str]) -> Sequence[tuple[int, str, str, Any]]:
        rows = connection.execute(query, {"table": table, "seq": seq, "types": list(types)})
        return [(r.seq, r.type, r.ts, r.body) for r in rows if (table, r.seq) not in exclude]

    return later


# --- projections -----------------------------------------------------------------------------


class _Result:
    def __init__(self) -> None:
        self.changes: list[str] = []
        self.refused: list[Refused] = []
        self.notes: list[str] = []

    def refuse(self, envelope: Envelope, reason: str, detail: str) -> None:
        self.refused.append(Refused(table=envelope.table, seq=envelope.seq, type=envelope.type,
                                    reason=reason, detail=detail))

    def frozen(self) -> Projected:
        return Projected(changes=tuple(self.changes), refused=tuple(self.refused),
                         notes=tuple(self.notes))


def project(
    connection: Connection, envelope: Envelope, *, later: LaterMessages | None = None,
    text: str | None = None,
) -> Projected:
    """Apply one newly stored message; ``later`` is given when the table's higher seqs exist.

    ``text`` is the body's JSON text if the caller has it (body_text()).
    Runs inside the caller's transaction (the one that stored the message).
    """
    result = _Result()
    if envelope.type not in PROJECTED_TYPES:
        return result.frozen()
    problem = body_problem(envelope)
    if problem is not None:
        result.refuse(envelope, MALFORMED_BODY, problem)
        return result.frozen()
    sql = statements(connection)
    if envelope.type == SCORE_RECORDED:
        _score_recorded(connection, sql, envelope, later, result)
    elif envelope.type == SCORE_ACKNOWLEDGED:
        _score_acknowledged(connection, sql, envelope, result)
    elif envelope.type == SCORE_VOIDED:
        _score_voided(connection, sql, envelope, result)
    elif envelope.type in _HAND_STATUS:
        _hand(connection, sql, envelope, text, result)
    else:
        _entry_seated(connection, sql, envelope, later, result)
    return result.frozen()


def _score_recorded(connection: Connection, sql: Statements, envelope: Envelope,
                    later: LaterMessages | None, result: _Result) -> None:
    body = envelope.body
    entry_id = body["entry_id"]
    inserted = connection.execute(sql.insert_score, {
        "entry_id": entry_id, "table_id": envelope.table, "seq": envelope.seq,
        "stage": body["stage"], "heat_id": body["heat_id"], "score_cents": body["score"],
        "hands": body["hands"], "status": body["status"], "recorded_at": wall_of(envelope),
        "acknowledged_at": None, "ack_method": None, "voided_at": None, "void_reason": None,
    }).first()
    if inserted is None:
        held = connection.execute(sql.score_of, {"entry": entry_id}).one()
        result.refuse(
            envelope, SCORE_CONFLICT,
            f"entry {entry_id} already has a score of {held.score_cents} cents from "
            f"{held.table_id} seq {held.seq}; this score of {body['score']} cents from "
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
        if body_problem(follower) is not None:
            continue  # refused as malformed when it arrived
        if kind == SCORE_ACKNOWLEDGED:
            _score_acknowledged(connection, sql, follower, result)
        else:
            _score_voided(connection, sql, follower, result)


def _score_acknowledged(connection: Connection, sql: Statements, envelope: Envelope,
                        result: _Result) -> bool:
    body = envelope.body
    entry_id = body["entry_id"]
    held = connection.execute(sql.score_of, {"entry": entry_id}).first()
    if held is None:
        result.notes.append(f"acknowledgement of entry {entry_id} waits for its score")
        return False
    where = f"{envelope.table} seq {envelope.seq}"
    if held.table_id != envelope.table or held.seq > envelope.seq:
        result.refuse(envelope, ACK_CONFLICT,
                      f"acknowledgement of entry {entry_id} ({where}) does not follow its "
                      f"score ({held.table_id} seq {held.seq})")
        return False
    if body["score"] != held.score_cents:
        result.refuse(envelope, ACK_MISMATCH,
                      f"entry {entry_id} acknowledged {body['score']} cents ({where}) but its "
                      f"recorded score is {held.score_cents} cents; not acknowledged")
        return False
    if held.acknowledged_at is not None:
        result.refuse(envelope, ACK_CONFLICT,
                      f"entry {entry_id} was already acknowledged; {where} is a second "
                      "acknowledgement")
        return False
    connection.execute(sql.acknowledge, {"entry": entry_id, "at": wall_of(envelope),
                                         "method": body["method"]})
    result.changes.append(SCORE_ACKNOWLEDGED)
    return True


def _score_voided(connection: Connection, sql: Statements, envelope: Envelope,
                  result: _Result) -> bool:
    body = envelope.body
    entry_id = body["entry_id"]
    held = connection.execute(sql.score_of, {"entry": entry_id}).first()
    if held is None:
        result.notes.append(f"void of entry {entry_id}'s score waits for the score")
        return False
    if held.table_id != envelope.table or held.seq > envelope.seq:
        result.refuse(envelope, VOID_CONFLICT,
                      f"void of entry {entry_id} ({envelope.table} seq {envelope.seq}) does "
                      f"not follow its score ({held.table_id} seq {held.seq})")
        return False
    if held.voided_at is not None:
        result.notes.append(f"entry {entry_id}'s score was already voided")
        return False
    connection.execute(sql.void, {"entry": entry_id, "at": wall_of(envelope),
                                  "reason": body["reason"]})
    result.changes.append(SCORE_VOIDED)
    return True


def _hand(connection: Connection, sql: Statements, envelope: Envelope, text: str | None,
          result: _Result) -> None:
    body = envelope.body
    hand_id = body["hand_id"]
    values = _hand_values(envelope, text)
    if connection.execute(sql.insert_hand, values).first() is not None:
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
        table_id=envelope.table, seq=envelope.seq, status=_HAND_STATUS[envelope.type],
        heat_id=body.get("heat_id"), body=body, at=wall_of(envelope)))
    result.changes.append(envelope.type)


def _hand_values(envelope: Envelope, text: str | None) -> dict[str, Any]:
    body = envelope.body
    return {"p_hand": body["hand_id"], "p_table": envelope.table, "p_seq": envelope.seq,
            "p_status": _HAND_STATUS[envelope.type], "p_heat": body.get("heat_id"),
            "p_body": text if text is not None else body_text(envelope),
            "p_at": wall_of(envelope)}


def project_hands(connection: Connection, envelopes: Sequence[tuple[Envelope, str | None]]
                  ) -> dict[tuple[str, int], Projected]:
    """Insert the Hand rows of several new hand messages in one statement.

    For messages of distinct, new hands with valid bodies: returns the projection of each
    one inserted, by (table, seq). The others (a hand already stored, a bad body) are left
    out: project() them one by one. Hands touch nothing else, so this may run after the
    other messages of a batch have been projected.
    """
    rows = {}
    for envelope, text in envelopes:
        if envelope.type in _HAND_STATUS and body_problem(envelope) is None:
            hand_id = envelope.body["hand_id"]
            if hand_id in rows:
                raise ValueError(f"project_hands: hand {hand_id} given twice")
            rows[hand_id] = (envelope, _hand_values(envelope, text))
    if not rows:
        return {}
    inserted = {r.hand_id for r in connection.execute(
        statements(connection).insert_hand, [values for _, values in rows.values()])}
    return {(e.table, e.seq): Projected(changes=(e.type,))
            for hand_id, (e, _) in rows.items() if hand_id in inserted}


def _entry_seated(connection: Connection, sql: Statements, envelope: Envelope,
                  later: LaterMessages | None, result: _Result) -> None:
    body = envelope.body
    entry_id = body["entry_id"]
    if later is not None and any(
        isinstance(b, Mapping) and b.get("entry_id") == entry_id
        for _, _, _, b in later(envelope.table, envelope.seq, (ENTRY_SEATED,))
    ):
        result.notes.append(f"entry {entry_id}: a later seating from {envelope.table} applies")
        return
    changed = connection.execute(sql.seat, {"entry": entry_id, "table": envelope.table,
                                            "seat": body["seat"]}).first()
    if changed is None:
        result.notes.append(f"entry {entry_id} seated at {envelope.table} is not registered here")
        return
    result.changes.append(ENTRY_SEATED)

