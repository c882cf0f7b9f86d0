"""The SQL the projections and the ingest share: the tables, prebuilt statements, inserting
only what is new in as few round trips as the database allows, and reading stored messages.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, cast

from sqlalchemy import JSON, Connection, Table, Text, bindparam, select, update
from sqlalchemy import cast as cast_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from leaderboard.models import (
    AuditEntry,
    ChipCountRecord,
    ChipReconciliation,
    DeckEventRecord,
    Dispute,
    Entry,
    Hand,
    HandCorrection,
    Message,
    PayoutCheck,
    Rejection,
    Score,
    TableProgress,
)
from leaderboard.projections.results import RELEASED, SEATED, WITHDRAWN
from wire.envelope import Envelope, canonical_json, parse_ts

__all__ = [
    "AUDIT",
    "CHIP_COUNTS",
    "CHIP_RECONCILIATIONS",
    "DECK_EVENTS",
    "DISPUTES",
    "ENTRIES",
    "HANDS",
    "HAND_CORRECTIONS",
    "MESSAGES",
    "PAYOUT_CHECKS",
    "PROGRESS",
    "REJECTIONS",
    "SCORES",
    "LaterMessages",
    "Statements",
    "UnexpectedConflict",
    "as_utc",
    "body_text",
    "insert_hands_from_messages",
    "insert_ignoring_conflicts",
    "insert_new",
    "later_messages_query",
    "rows_by_entry",
    "statements",
    "update_each",
    "wall_of",
]


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
DISPUTES: Final = cast(Table, Dispute.__table__)
PAYOUT_CHECKS: Final = cast(Table, PayoutCheck.__table__)
CHIP_RECONCILIATIONS: Final = cast(Table, ChipReconciliation.__table__)
CHIP_COUNTS: Final = cast(Table, ChipCountRecord.__table__)
DECK_EVENTS: Final = cast(Table, DeckEventRecord.__table__)
HAND_CORRECTIONS: Final = cast(Table, HandCorrection.__table__)


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
            .values(acknowledged_at=bindparam("at"), ack_method=bindparam("method"),
                    ack_evidence=bindparam("evidence"))
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



def rows_by_entry(connection: Connection, query: Any, entries: Sequence[str]
                  ) -> dict[str, Any]:
    """The rows ``query`` (by ``entries``) reads for these entries, by entry id."""
    return {row.entry_id: row for row in connection.execute(query, {"entries": entries})}



def insert_hands_from_messages(connection: Connection, rows: list[dict[str, Any]]
                                ) -> set[tuple[Any, ...]]:
    """insert_new of hand rows on PostgreSQL, each body copied from its stored message.

    The record is the message's body, stored a moment ago in this transaction: copied as
    stored (already checked JSON, already compressed) it costs PostgreSQL a quarter of
    parsing and compressing the same 3 KB of text again. A hand whose message is not found
    is not inserted, and so left to project().
    """
    columns = ("hand_id", "table_id", "seq", "status", "heat_id", "at", "manual")
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



def update_each(connection: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
    """One UPDATE per row, sent as one executemany; each must change its row (else the batch
    is retried message by message: a row read a moment ago has gone)."""
    if not rows:
        return
    changed = connection.execute(statement, rows).rowcount
    if connection.dialect.supports_sane_multi_rowcount and changed != len(rows):
        raise UnexpectedConflict(f"{len(rows)} rows to update, {changed} updated")

