"""What a stored table message changes in the leaderboard's tables (docs/ingest.md).

Ingest stores every valid message once in ``messages`` and, in the same transaction, applies
it here: ``score.recorded`` -> a Score row (one per entry, never overwritten),
``score.acknowledged`` / ``score.voided`` -> the Score's acknowledgement and void fields,
``hand.settled`` / ``hand.voided`` -> a Hand row, ``entry.seated`` -> the Entry's table and
seat (a seat other than the desk's is also written to the audit; a seating the desk has since
undone, by a refund, a release from a failed table or a seating elsewhere, is audited and moves
nothing, D62), ``entry.unseated`` -> the Entry withdrawn (it records no score, rule 14). Other
types are only stored.

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
from sqlalchemy.exc import SQLAlchemyError

from game.tournament import Stage
from leaderboard.models import AuditEntry, Entry, Hand, Message, Rejection, Score, TableProgress
from wire.envelope import Envelope, canonical_json, parse_ts

__all__ = [
    "ACK_CONFLICT",
    "ACK_MISMATCH",
    "AUDIT",
    "ENTRIES",
    "ENTRY_SEATED",
    "ENTRY_UNSEATED",
    "HANDS",
    "HAND_CONFLICT",
    "HAND_SETTLED",
    "HAND_VOIDED",
    "MALFORMED_BODY",
    "MESSAGES",
    "PROGRESS",
    "PROJECTED_TYPES",
    "PROJECTION_REASONS",
    "REFUNDED",
    "REJECTIONS",
    "RELEASED",
    "SCORES",
    "SCORE_ACKNOWLEDGED",
    "SCORE_CONFLICT",
    "SCORE_RECORDED",
    "SCORE_STALE",
    "SCORE_VOIDED",
    "SEATED",
    "SEAT_MISMATCH",
    "SEAT_STALE",
    "UNPAID_STATUSES",
    "VOID_CONFLICT",
    "WITHDRAWN",
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
ENTRY_UNSEATED: Final = "entry.unseated"
PROJECTED_TYPES: Final = frozenset({SCORE_RECORDED, SCORE_ACKNOWLEDGED, SCORE_VOIDED,
                                    HAND_SETTLED, HAND_VOIDED, ENTRY_SEATED, ENTRY_UNSEATED})
# Entry statuses (leaderboard.desk sets all but withdrawn): an entry that left its seat
# before its last hand is withdrawn; it records no score (rule 14) and is never seated again
# (D55). A refunded one's buy-in went back to the patron (D60).
SEATED: Final = "seated"
WITHDRAWN: Final = "withdrawn"
REFUNDED: Final = "refunded"
# Entry statuses whose buy-in is not (or no longer) in the pools; their scores never count.
UNPAID_STATUSES: Final = frozenset({REFUNDED, "cancelled", "void", "voided", "refused"})
SEAT_MISMATCH: Final = "entry.seat_mismatch"  # the audit action of a seat the desk did not give
SEAT_STALE: Final = "entry.seat_stale"  # ... of a seating the desk has since undone (D62)
RELEASED: Final = "entry.released"  # the desk's action freeing a place from a failed table (D60)
INGEST_ACTOR: Final = "ingest"

# Reasons a stored message's projection is refused (counted with the ingest's own reasons).
MALFORMED_BODY: Final = "malformed_body"
SCORE_CONFLICT: Final = "score_conflict"
SCORE_STALE: Final = "score_stale"
ACK_CONFLICT: Final = "ack_conflict"
ACK_MISMATCH: Final = "ack_mismatch"
VOID_CONFLICT: Final = "void_conflict"
HAND_CONFLICT: Final = "hand_conflict"
PROJECTION_REASONS: Final = (
    MALFORMED_BODY, SCORE_CONFLICT, SCORE_STALE, ACK_CONFLICT, ACK_MISMATCH, VOID_CONFLICT,
    HAND_CONFLICT,
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
    ENTRY_UNSEATED: {"entry_id": ("id40", True), "seat": ("count", True),
                     "hands_played": ("count", False)},
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
    return parse_ts(envelope.ts)  # what verify_envelope accepted, it reads


SCORES: Final = cast(Table, Score.__table__)
HANDS: Final = cast(Table, Hand.__table__)
ENTRIES: Final = cast(Table, Entry.__table__)
AUDIT: Final = cast(Table, AuditEntry.__table__)
MESSAGES: Final = cast(Table, Message.__table__)
PROGRESS: Final = cast(Table, TableProgress.__table__)
REJECTIONS: Final = cast(Table, Rejection.__table__)


class Statements:
    """The ingest's statements for one dialect, built once (SQLAlchemy then caches them)."""

    def __init__(self, connection: Connection) -> None:
        def insert(table: Table) -> postgresql.Insert | sqlite.Insert:
            return insert_ignoring_conflicts(connection, table)

        self.insert_progress = insert(PROGRESS)
        self.insert_score = insert(SCORES).returning(SCORES.c.entry_id)
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
        self.withdraw = (
            update(ENTRIES).where(ENTRIES.c.entry_id == bindparam("entry"),
                                  ENTRIES.c.table_id == bindparam("table"),
                                  ENTRIES.c.status == SEATED,
                                  ~select(SCORES.c.entry_id)
                                  .where(SCORES.c.entry_id == ENTRIES.c.entry_id).exists())
            .values(status=WITHDRAWN)
            .returning(ENTRIES.c.entry_id)
        )
        self.places_of = select(Entry.entry_id, Entry.table_id, Entry.seat, Entry.status,
                                Entry.stage).where(
            Entry.entry_id.in_(bindparam("entries", expanding=True)))
        self.insert_audit = AUDIT.insert()
        self.releases = select(AUDIT.c.detail).where(AUDIT.c.action == RELEASED)
        self.seat_many = (
            update(ENTRIES).where(ENTRIES.c.entry_id == bindparam("entry"))
            .values(table_id=bindparam("table"), seat=bindparam("seat"))
        )
        self.scores_of = select(
            Score.entry_id, Score.table_id, Score.seq, Score.score_cents, Score.acknowledged_at,
            Score.voided_at,
        ).where(Score.entry_id.in_(bindparam("entries", expanding=True)))
        self.later = (
            select(Message.seq, Message.type, Message.ts, Message.body)
            .where(Message.table_id == bindparam("table"), Message.seq > bindparam("seq"),
                   Message.type.in_(bindparam("types", expanding=True)))
            .order_by(Message.seq)
        )


_STATEMENTS: dict[str, Statements] = {}


def statements(connection: Connection) -> Statements:
    """The prebuilt statements for ``connection``'s dialect."""
    name = connection.dialect.name
    built = _STATEMENTS.get(name)
    if built is None:
        built = _STATEMENTS[name] = Statements(connection)
    return built


class UnexpectedConflict(SQLAlchemyError):
    """Rows that insert_new found new were not all inserted (the batch is retried)."""


def insert_new(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]], *,
               key: Sequence[str], json_text: Collection[str] = ()) -> set[tuple[Any, ...]]:
    """Insert the rows whose ``key`` is not stored yet; returns the keys of those inserted.

    What ``INSERT ... ON CONFLICT DO NOTHING RETURNING key`` does (the first of several rows
    with one key goes in), for tables whose only unique constraint is ``key``, in as few
    round trips as the database allows (this is most of the cost of storing a batch):

    - PostgreSQL with psycopg: ONE statement for all the rows, their values sent as arrays
      in binary (``INSERT ... SELECT ... FROM unnest(...)``): no SQL per row, no escaping,
      and the same text every time, so that psycopg prepares it once;
    - SQLite: which keys are stored (one SELECT per key prefix), then one executemany of
      the others. The caller's transaction holds SQLite's write lock (its first statement
      wrote), so nothing can be stored in between; the row count is checked all the same;
    - any other driver: SQLAlchemy's INSERT ... ON CONFLICT DO NOTHING RETURNING.

    ``rows`` have the same columns, name -> value; the columns in ``json_text`` hold JSON
    text, stored as it is (not serialized again).
    """
    firsts: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for row in rows:
        firsts.setdefault(tuple(row[k] for k in key), row)
    if not firsts:
        return set()
    columns = tuple(next(iter(firsts.values())))
    dialect = connection.dialect
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        sql = _unnest_insert(connection, table, columns, tuple(key), frozenset(json_text))
        arrays = {f"c{i}": [row[c] for row in firsts.values()] for i, c in enumerate(columns)}
        return {tuple(r) for r in connection.exec_driver_sql(sql, arrays)}
    if dialect.name == "sqlite":
        return _sqlite_insert_new(connection, table, columns, key=tuple(key),
                                  json_text=frozenset(json_text), firsts=firsts)
    statement = _returning_insert(connection, table, columns, tuple(key), frozenset(json_text))
    returned = connection.execute(statement, [{f"p_{c}": row[c] for c in columns}
                                              for row in firsts.values()])
    return {tuple(r) for r in returned}


_SQL: dict[tuple[Any, ...] | str, Any] = {}  # built statements, by dialect, table, ...


def _unnest_insert(connection: Connection, table: Table, columns: tuple[str, ...],
                   key: tuple[str, ...], json_text: frozenset[str]) -> str:
    cache = ("unnest", connection.dialect.name, table.name, columns, key, json_text)
    sql = _SQL.get(cache)
    if sql is None:
        dialect = connection.dialect
        quote = dialect.identifier_preparer.quote
        names = ", ".join(quote(c) for c in columns)
        types = {c: table.c[c].type.compile(dialect=dialect) for c in columns}
        arrays = ", ".join(f"%(c{i})b::{'TEXT' if c in json_text else types[c]}[]"
                           for i, c in enumerate(columns))
        picks = ", ".join(f"u.{quote(c)}::{types[c]}" if c in json_text else f"u.{quote(c)}"
                          for c in columns)
        keys = ", ".join(quote(k) for k in key)
        # Identifiers from the models, quoted; every value is a parameter.
        sql = _SQL[cache] = (
            f"INSERT INTO {dialect.identifier_preparer.format_table(table)} ({names}) "  # noqa: S608
            f"SELECT {picks} FROM unnest({arrays}) AS u({names}) "
            f"ON CONFLICT DO NOTHING RETURNING {keys}")
    return str(sql)


def _sqlite_insert_new(connection: Connection, table: Table, columns: tuple[str, ...], *,
                       key: tuple[str, ...], json_text: frozenset[str],
                       firsts: Mapping[tuple[Any, ...], Mapping[str, Any]]
                       ) -> set[tuple[Any, ...]]:
    # Identifiers from the models, quoted; every value is a parameter (hence the noqa S608).
    quote = connection.dialect.identifier_preparer.quote
    name = connection.dialect.identifier_preparer.format_table(table)
    stored: set[tuple[Any, ...]] = set()
    by_prefix: dict[tuple[Any, ...], list[Any]] = {}
    for values in firsts:
        by_prefix.setdefault(values[:-1], []).append(values[-1])
    where = "".join(f"{quote(k)} = ? AND " for k in key[:-1])
    for prefix, lasts in by_prefix.items():
        for start in range(0, len(lasts), _SQLITE_IN):
            chunk = lasts[start:start + _SQLITE_IN]
            stored.update(tuple(r) for r in connection.exec_driver_sql(
                f"SELECT {', '.join(quote(k) for k in key)} FROM {name} WHERE {where}"  # noqa: S608
                f"{quote(key[-1])} IN ({', '.join('?' * len(chunk))})", (*prefix, *chunk)))
    new = [values for values in firsts if values not in stored]
    if not new:
        return set()
    cache = ("sqlite", table.name, columns, json_text)
    built = _SQL.get(cache)
    if built is None:
        processors = [None if c in json_text
                      else table.c[c].type.bind_processor(connection.dialect) for c in columns]
        built = _SQL[cache] = (
            f"INSERT INTO {name} ({', '.join(quote(c) for c in columns)}) VALUES "  # noqa: S608
            f"({', '.join('?' * len(columns))}) ON CONFLICT DO NOTHING", processors)
    sql, processors = built
    rows = [tuple(row[c] if process is None else process(row[c])
                  for c, process in zip(columns, processors, strict=True))
            for row in (firsts[values] for values in new)]
    inserted = connection.exec_driver_sql(sql, rows).rowcount
    if inserted != len(rows):
        raise UnexpectedConflict(f"{len(rows)} new rows for {table.name}, {inserted} inserted")
    return set(new)


def _returning_insert(connection: Connection, table: Table, columns: tuple[str, ...],
                      key: tuple[str, ...], json_text: frozenset[str]) -> Any:
    cache = ("returning", connection.dialect.name, table.name, columns, key, json_text)
    statement = _SQL.get(cache)
    if statement is None:
        values: dict[str, Any] = {}
        for c in columns:
            value: Any = bindparam(f"p_{c}", type_=Text if c in json_text else table.c[c].type)
            values[c] = cast_(value, JSON) if c in json_text else value
        statement = _SQL[cache] = insert_ignoring_conflicts(connection, table).values(
            values).returning(*(table.c[k] for k in key))
    return statement


_SQLITE_IN: Final = 500  # values in one IN (...): within SQLite's oldest limit of 999


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
    elif envelope.type == ENTRY_SEATED:
        _entry_seated(connection, sql, envelope, later, result)
    else:
        _entry_unseated(connection, sql, envelope, result)
    return result.frozen()


def _score_recorded(connection: Connection, sql: Statements, envelope: Envelope,
                    later: LaterMessages | None, result: _Result) -> None:
    body = envelope.body
    entry_id = body["entry_id"]
    place = connection.execute(sql.places_of, {"entries": [entry_id]}).first()
    stale = _score_undone(connection, sql, place, envelope.table)
    if stale is not None:
        result.refuse(envelope, SCORE_STALE, _stale_score(envelope, stale))
        return
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


def _score_undone(connection: Connection, sql: Statements, held: Any,
                  table: str) -> str | None:
    """Why a score from `table` does not count: the desk released the place from that failed
    table or seated it at another (D64); else None. A refunded entry's score is stored and
    left out of the standings instead (D60)."""
    if held is None or held.status == REFUNDED:
        return None
    return _undone_because(connection, sql, held, table)


def _stale_score(envelope: Envelope, why: str) -> str:
    body = envelope.body
    return (f"entry {body['entry_id']}: this score of {body['score']} cents from"
            f" {envelope.table} seq {envelope.seq} is not counted: {why}")


def _score_acknowledged(connection: Connection, sql: Statements, envelope: Envelope,
                        result: _Result) -> bool:
    body = envelope.body
    held = connection.execute(sql.score_of, {"entry": body["entry_id"]}).first()
    if not _acknowledges(held, envelope, result):
        return False
    connection.execute(sql.acknowledge, {"entry": body["entry_id"], "at": wall_of(envelope),
                                         "method": body["method"]})
    result.changes.append(SCORE_ACKNOWLEDGED)
    return True


def _acknowledges(held: Any, envelope: Envelope, result: _Result) -> bool:
    """Whether an acknowledgement applies to the score row ``held`` (None: no score yet);
    if not, its note or refusal is added to ``result``."""
    body = envelope.body
    entry_id = body["entry_id"]
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
    if insert_new(connection, HANDS, [_hand_values(envelope, text)], key=_HAND_KEY,
                  json_text=_BODY):
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


_HAND_KEY: Final = ("hand_id",)
_BODY: Final = ("body",)  # given as JSON text (body_text())


def _hand_values(envelope: Envelope, text: str | None) -> dict[str, Any]:
    body = envelope.body
    return {"hand_id": body["hand_id"], "table_id": envelope.table, "seq": envelope.seq,
            "status": _HAND_STATUS[envelope.type], "heat_id": body.get("heat_id"),
            "body": text if text is not None else body_text(envelope),
            "at": wall_of(envelope)}


def project_hands(connection: Connection, envelopes: Sequence[tuple[Envelope, str | None]]
                  ) -> dict[tuple[str, int], Projected]:
    """Insert the Hand rows of several new hand messages at once (insert_new).

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
    inserted = insert_new(connection, HANDS, [values for _, values in rows.values()],
                          key=_HAND_KEY, json_text=_BODY)
    return {(e.table, e.seq): Projected(changes=(e.type,))
            for hand_id, (e, _) in rows.items() if (hand_id,) in inserted}


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
    held = connection.execute(sql.places_of, {"entries": [entry_id]}).first()
    if held is None:
        result.notes.append(f"entry {entry_id} seated at {envelope.table} is not registered here")
        return
    seating, audit = _seating(connection, sql, held, envelope)
    if seating is not None:
        connection.execute(sql.seat_many, [seating])
        result.changes.append(ENTRY_SEATED)
    if audit is not None:
        connection.execute(sql.insert_audit, [audit])
        result.notes.append(audit["detail"]["note"])


def _seating(connection: Connection, sql: Statements, held: Any, envelope: Envelope
             ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What a table's seating report writes: the entry's table and seat (None when the desk
    has since undone that seating, D62) and an audit row (a mismatch or a stale report)."""
    stale = _undone_because(connection, sql, held, envelope.table)
    if stale is None:
        seating = {"entry": held.entry_id, "table": envelope.table, "seat": envelope.body["seat"]}
        return seating, _seat_mismatch(held, envelope)
    note = (f"entry {held.entry_id}: {envelope.table} reports seat {envelope.body['seat']},"
            f" but {stale}; the report is stored, the entry stays as the desk has it")
    return None, {"at": wall_of(envelope), "actor": INGEST_ACTOR, "action": SEAT_STALE,
                  "detail": {"entry_id": held.entry_id, "desk_table": held.table_id,
                             "desk_seat": held.seat, "status": held.status,
                             "table": envelope.table, "seat": envelope.body["seat"],
                             "seq": envelope.seq, "note": note}}


def _undone_because(connection: Connection, sql: Statements, held: Any,
                    table: str) -> str | None:
    """Why the desk's record no longer has the entry at `table` (D62), or None. The desk
    commits a seating before it sends the command, so a table's report of it always finds
    the entry seated there, unless the desk has since refunded it, released it from a failed
    table (D60) or seated it at another table."""
    if held.status == REFUNDED:
        return "the desk has refunded it"
    if held.status == SEATED and held.table_id not in (None, table):
        return f"the desk has it seated at table {held.table_id}"
    if held.status == SEATED or held.table_id is not None or held.stage == Stage.QUALIFYING:
        return None
    released = any(isinstance(d, Mapping) and d.get("entry_id") == held.entry_id
                   and d.get("table") == table for (d,) in connection.execute(sql.releases))
    return f"the desk released it from table {table} (out of service)" if released else None


def _seat_mismatch(held: Any, envelope: Envelope) -> dict[str, Any] | None:
    """The audit row for a table's seating that differs from the desk's (D49: the table's
    report is recorded, and the difference kept for the supervisors), else None."""
    desk_table, desk_seat = held.table_id, held.seat
    seat = envelope.body["seat"]
    if desk_seat is None or (desk_table in (None, envelope.table) and desk_seat == seat):
        return None
    desk_place = f"table {desk_table} seat {desk_seat}" if desk_table else f"seat {desk_seat}"
    note = (f"entry {held.entry_id}: {envelope.table} reports seat {seat}, the desk gave "
            f"{desk_place}; the table's report is recorded")
    return {"at": wall_of(envelope), "actor": INGEST_ACTOR, "action": SEAT_MISMATCH,
            "detail": {"entry_id": held.entry_id, "desk_table": desk_table,
                       "desk_seat": desk_seat, "table": envelope.table, "seat": seat,
                       "seq": envelope.seq, "note": note}}


def _entry_unseated(connection: Connection, sql: Statements, envelope: Envelope,
                    result: _Result) -> None:
    body = envelope.body
    entry_id = body["entry_id"]
    withdrawn = connection.execute(sql.withdraw, {"entry": entry_id,
                                                  "table": envelope.table}).first()
    if withdrawn is None:
        result.notes.append(f"entry {entry_id} unseated at {envelope.table}: not seated there"
                            " without a score here; stored only")
        return
    result.changes.append(ENTRY_UNSEATED)
    result.notes.append(f"entry {entry_id} withdrawn at {envelope.table} seat {body['seat']}"
                        f" after {body.get('hands_played', '?')} hands: no score (rule 14)")



# --- several messages at once ------------------------------------------------------------------

_SCORE_KEY: Final = ("entry_id",)
_FOLLOWERS: Final = frozenset({SCORE_ACKNOWLEDGED, SCORE_VOIDED})


def project_bulk(connection: Connection,
                 items: Sequence[tuple[Envelope, str | None, bool]]) -> dict[int, Projected]:
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
    - a seating (in order) of an entry no other seating of the batch names.

    A hand or score that was stored already is left to project() (which tells how).
    """
    done: dict[int, Projected] = {}
    valid = [body_problem(envelope) is None for envelope, _, _ in items]
    named: dict[tuple[str, Any], list[int]] = {}  # (kind, id) -> indices naming it
    for index, (envelope, _, _) in enumerate(items):
        kind = envelope.type
        if kind in _HAND_STATUS:
            named.setdefault(("hand", envelope.body.get("hand_id")), []).append(index)
        elif kind == SCORE_RECORDED:
            named.setdefault(("score", envelope.body.get("entry_id")), []).append(index)
        elif kind in _FOLLOWERS:
            named.setdefault(("follower", envelope.body.get("entry_id")), []).append(index)
        elif kind == ENTRY_SEATED:
            named.setdefault(("seat", envelope.body.get("entry_id")), []).append(index)

    def alone(kind: str, name: Any) -> bool:
        return len(named.get((kind, name), ())) == 1

    hands = [i for i, (e, _, _) in enumerate(items)
             if e.type in _HAND_STATUS and valid[i] and alone("hand", e.body["hand_id"])]
    scores = [i for i, (e, _, late) in enumerate(items)
              if e.type == SCORE_RECORDED and valid[i] and not late
              and alone("score", e.body["entry_id"])
              and all(f > i for f in named.get(("follower", e.body["entry_id"]), ()))]
    done.update(_bulk_hands(connection, items, hands))
    done.update(_bulk_scores(connection, items, scores))
    scored = {items[i][0].body["entry_id"] for i in scores if i in done and done[i].changes}
    acks = [i for i, (e, _, _) in enumerate(items)
            if e.type == SCORE_ACKNOWLEDGED and valid[i]
            and alone("follower", e.body["entry_id"])
            and (("score", e.body["entry_id"]) not in named or e.body["entry_id"] in scored)]
    done.update(_bulk_acks(connection, items, acks))
    seats = [i for i, (e, _, late) in enumerate(items)
             if e.type == ENTRY_SEATED and valid[i] and not late
             and alone("seat", e.body["entry_id"])]
    done.update(_bulk_seats(connection, items, seats))
    return done


def _bulk_hands(connection: Connection, items: Sequence[tuple[Envelope, str | None, bool]],
                chosen: list[int]) -> dict[int, Projected]:
    if not chosen:
        return {}
    rows = [_hand_values(items[i][0], items[i][1]) for i in chosen]
    dialect = connection.dialect
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        inserted = _insert_hands_from_messages(connection, rows)
    else:
        inserted = insert_new(connection, HANDS, rows, key=_HAND_KEY, json_text=_BODY)
    return {i: Projected(changes=(items[i][0].type,)) for i in chosen
            if (items[i][0].body["hand_id"],) in inserted}


def _insert_hands_from_messages(connection: Connection, rows: list[dict[str, Any]]
                                ) -> set[tuple[Any, ...]]:
    """insert_new of hand rows on PostgreSQL, each body copied from its stored message.

    The record is the message's body, stored a moment ago in this transaction: copied as
    stored (already checked JSON, already compressed) it costs PostgreSQL a quarter of
    parsing and compressing the same 3 KB of text again. A hand whose message is not found
    is not inserted, and so left to project().
    """
    columns = ("hand_id", "table_id", "seq", "status", "heat_id", "at")
    sql = _SQL.get("hands-from-messages")
    if sql is None:
        dialect = connection.dialect
        prep = dialect.identifier_preparer
        types = [HANDS.c[c].type.compile(dialect=dialect) for c in columns]
        arrays = ", ".join(f"%(c{i})b::{t}[]" for i, t in enumerate(types))
        names = ", ".join(prep.quote(c) for c in columns)
        picks = ", ".join(f"u.{prep.quote(c)}" for c in columns)
        # Identifiers from the models, quoted; every value is a parameter.
        sql = _SQL["hands-from-messages"] = (
            f"INSERT INTO {prep.format_table(HANDS)} ({names}, body) "  # noqa: S608
            f"SELECT {picks}, m.body FROM unnest({arrays}) AS u({names}) "
            f"JOIN {prep.format_table(MESSAGES)} AS m "
            f"ON m.table_id = u.table_id AND m.seq = u.seq "
            f"ON CONFLICT DO NOTHING RETURNING hand_id")
    firsts: dict[Any, dict[str, Any]] = {}
    for row in rows:
        firsts.setdefault(row["hand_id"], row)
    arrays_of = {f"c{i}": [row[c] for row in firsts.values()] for i, c in enumerate(columns)}
    return {tuple(r) for r in connection.exec_driver_sql(str(sql), arrays_of)}


def _bulk_scores(connection: Connection, items: Sequence[tuple[Envelope, str | None, bool]],
                 chosen: list[int]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = _rows_by_entry(connection, sql.places_of, items, chosen)
    done: dict[int, Projected] = {}
    rows = []
    for i in chosen:
        envelope = items[i][0]
        body = envelope.body
        stale = _score_undone(connection, sql, held.get(body["entry_id"]), envelope.table)
        if stale is not None:
            done[i] = Projected(refused=(Refused(
                table=envelope.table, seq=envelope.seq, type=envelope.type, reason=SCORE_STALE,
                detail=_stale_score(envelope, stale)),))
            continue
        rows.append({"entry_id": body["entry_id"], "table_id": envelope.table,
                     "seq": envelope.seq, "stage": body["stage"], "heat_id": body["heat_id"],
                     "score_cents": body["score"], "hands": body["hands"],
                     "status": body["status"], "recorded_at": wall_of(envelope)})
    inserted = insert_new(connection, SCORES, rows, key=_SCORE_KEY) if rows else set()
    done.update({i: Projected(changes=(SCORE_RECORDED,)) for i in chosen
                 if i not in done and (items[i][0].body["entry_id"],) in inserted})
    return done


def _rows_by_entry(connection: Connection, query: Any,
                   items: Sequence[tuple[Envelope, str | None, bool]],
                   chosen: list[int]) -> dict[str, Any]:
    """The rows ``query`` (by ``entries``) reads for the chosen messages' entries, by entry."""
    entries = [items[i][0].body["entry_id"] for i in chosen]
    return {row.entry_id: row for row in connection.execute(query, {"entries": entries})}


def _bulk_acks(connection: Connection, items: Sequence[tuple[Envelope, str | None, bool]],
               chosen: list[int]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = _rows_by_entry(connection, sql.scores_of, items, chosen)
    done: dict[int, Projected] = {}
    updates = []
    for i in chosen:
        envelope = items[i][0]
        body = envelope.body
        result = _Result()
        if _acknowledges(held.get(body["entry_id"]), envelope, result):
            updates.append({"entry": body["entry_id"], "at": wall_of(envelope),
                            "method": body["method"]})
            result.changes.append(SCORE_ACKNOWLEDGED)
        done[i] = result.frozen()
    _update_each(connection, sql.acknowledge, updates)
    return done


def _bulk_seats(connection: Connection, items: Sequence[tuple[Envelope, str | None, bool]],
                chosen: list[int]) -> dict[int, Projected]:
    if not chosen:
        return {}
    sql = statements(connection)
    held = _rows_by_entry(connection, sql.places_of, items, chosen)
    done: dict[int, Projected] = {}
    updates, audits = [], []
    for i in chosen:
        envelope = items[i][0]
        entry_id = envelope.body["entry_id"]
        if entry_id in held:
            seating, audit = _seating(connection, sql, held[entry_id], envelope)
            changes = (ENTRY_SEATED,) if seating is not None else ()
            if seating is not None:
                updates.append(seating)
            if audit is None:
                done[i] = Projected(changes=changes)
            else:
                audits.append(audit)
                done[i] = Projected(changes=changes, notes=(audit["detail"]["note"],))
        else:
            done[i] = Projected(notes=(f"entry {entry_id} seated at {envelope.table} is not "
                                       "registered here",))
    _update_each(connection, sql.seat_many, updates)
    if audits:
        connection.execute(sql.insert_audit, audits)
    return done


def _update_each(connection: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
    """One UPDATE per row, sent as one executemany; each must change its row (else the batch
    is retried message by message: a row read a moment ago has gone)."""
    if not rows:
        return
    changed = connection.execute(statement, rows).rowcount
    if connection.dialect.supports_sane_multi_rowcount and changed != len(rows):
        raise UnexpectedConflict(f"{len(rows)} rows to update, {changed} updated")
