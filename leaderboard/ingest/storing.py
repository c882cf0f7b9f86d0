"""Storing a screened batch: messages, rejections and projections in ONE transaction.

A message is stored in ``messages`` with ``INSERT ... ON CONFLICT DO NOTHING`` on its
``(table, seq)`` key and applied to the scores, hands and entries (leaderboard.projections)
in the same transaction. A copy of a stored message is a harmless duplicate; a different
message under a stored ``(table, seq)`` is a replay and is refused; a seq more than
``window`` ahead of the table's highest is refused too. Every refusal is kept as a
``rejections`` row. If the batch's transaction fails, each message is tried on its own;
if it failed because the database connection was lost, the batch is handed back as it was
screened (`DatabaseLost`) for the Ingestor to store again once the database answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, select, tuple_
from sqlalchemy.exc import SQLAlchemyError

from leaderboard.audit_trail.chain import AuditValues, append_audit, lock_tip
from leaderboard.central_lease import LeaseLost
from leaderboard.db import connection_lost
from leaderboard.ingest.gaps import GapTracker, Progress, lock_progress, save_progress
from leaderboard.ingest.results import (
    MAX_DETAIL,
    OUT_OF_WINDOW,
    REPLAYED_SEQ,
    STORE_ERROR,
    Batch,
    IngestResult,
    Item,
    Tally,
    clean,
    rejection_row,
)
from leaderboard.models import Message
from leaderboard.projections import (
    MESSAGES,
    REJECTIONS,
    insert_new,
    later_messages_query,
    project,
    project_bulk,
)
from leaderboard.projections.decoding import read
from wire.envelope import canonical_json

__all__ = ["DatabaseLost", "Store"]

_log = structlog.get_logger("leaderboard.ingest")


class DatabaseLost(Exception):
    """A batch's transaction failed because the database was not reached or the connection
    was lost (a failover, say): nothing of it is known to be stored, and its items are as
    screened again, to be stored again (a copy already committed is then a duplicate)."""


class _Vanished(SQLAlchemyError):
    """A conflicting row that cannot be read back (the batch is retried one by one)."""


def _content(kind: str, ts: str, body: Any) -> bytes:
    """What must match for a copy to be a duplicate: type, time and body."""
    return canonical_json({"type": kind, "ts": ts, "body": body})


def _record_unresendable(connection: Connection, table: str, lost: list[list[int]],
                         now: datetime) -> None:
    """The alert, once (the ranges leave the table's gaps in the same transaction), that the
    table can no longer resend these ranges: its journal was rotated (D414)."""
    ranges = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in lost)
    problem = (f"table {table} can no longer resend seq {ranges}: they lie in a journal file"
               " it has rotated away, and the central database lacks them. Restore a backup"
               " of the central database taken before the table's journal rotation"
               " (docs/operations/deployment.md); they are not asked for again")
    _log.warning("ingest_messages_unresendable", table=table, ranges=lost)
    append_audit(connection, [AuditValues(
        at=now, actor="(ingest)", action="alert.messages_unresendable",
        detail={"severity": "high", "table": table, "ranges": lost, "problem": problem})])


class Store:
    """Writes screened batches (blocking: run it in a thread, one batch at a time)."""

    def __init__(self, engine: Engine, *, window: int, clock: Callable[[], datetime],
                 gaps: GapTracker, tally: Tally) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.engine = engine
        self.window = window
        self._clock = clock
        self._gaps = gaps
        self._tally = tally

    def store_screened(self, items: list[Item]) -> Batch:
        """Store a screened batch in one transaction, or, if that fails, message by message."""
        screened = [(i.result, i.envelope, i.claimed) for i in items]
        try:
            return self._store(items)
        except LeaseLost:
            raise  # this instance is no longer the active one: nothing of it may be stored
        except Exception as exc:  # deadlock, busy database, a bug: retry each on its own
            if connection_lost(exc):
                for item, (result, _envelope, _claimed) in zip(items, screened, strict=True):
                    item.result, item.projected = result, None
                raise DatabaseLost(str(exc)) from exc
            _log.warning("ingest_batch_retry_one_by_one", error=repr(exc), size=len(items))
        results: list[IngestResult] = []
        merged = Batch(results=results)
        for item, (result, envelope, claimed) in zip(items, screened, strict=True):
            single = Item(index=0, topic=item.topic, payload=item.payload, sha256=item.sha256,
                          envelope=envelope, body_text=item.body_text, claimed=claimed,
                          result=result)
            try:
                batch = self._store([single])
            except Exception as exc:
                _log.exception("ingest_store_error", table=claimed, topic=item.topic)
                results.append(self._store_failed(single, exc))
                continue
            results.extend(batch.results)
            merged.resends.extend(batch.resends)
            merged.changes.extend(c for c in batch.changes if c not in merged.changes)
            merged.refused.extend(batch.refused)
            merged.notes.extend(batch.notes)
        return merged

    def _store(self, items: list[Item]) -> Batch:
        """One transaction: progress rows, messages, projections, rejections."""
        now = self._clock()
        batch = Batch(results=[])
        candidates = [i for i in items if i.result is None and i.envelope is not None]
        notices = [i for i in items if i.result is not None and i.result.outcome == "notice"]
        if not candidates and not notices and not any(
            i.result is not None and i.result.outcome == "rejected" for i in items
        ):
            batch.results = [i.result or IngestResult(outcome="failed") for i in items]
            return batch
        with self.engine.begin() as connection:
            lock_tip(connection)  # the audit chain's, before any row, as a desk action (D361)
            tables = sorted({i.claimed for i in (*candidates, *notices) if i.claimed})
            progress = lock_progress(connection, tables)
            for item in notices:
                if item.envelope is not None:
                    lost = self._gaps.notice(item.envelope, progress[item.claimed or ""])
                    if lost:
                        _record_unresendable(connection, item.envelope.table, lost, now)
            fresh = self._window(candidates, progress)
            inserted = self._insert_messages(connection, fresh, now)
            self._compare_existing(connection, fresh, inserted)
            self._apply(connection, fresh, progress, batch)
            batch.resends.extend(self._gaps.resends(progress, now))
            save_progress(connection, progress)
            self._save_rejections(connection, items, batch, now)
        batch.results = [i.result or IngestResult(outcome="failed") for i in items]
        return batch

    def _window(self, candidates: list[Item], progress: dict[str, Progress]) -> list[Item]:
        highest = {t: p.highest for t, p in progress.items()}
        fresh: list[Item] = []
        for item in candidates:
            envelope = item.envelope
            assert envelope is not None
            table = envelope.table
            if envelope.seq > highest[table] + self.window:
                item.result = IngestResult.about(
                    envelope, "rejected", reason=OUT_OF_WINDOW,
                    detail=f"seq {envelope.seq} is more than {self.window} ahead of the "
                           f"highest seen ({highest[table]})")
                self._gaps.published_beyond(table, envelope.seq)
                continue
            highest[table] = max(highest[table], envelope.seq)
            fresh.append(item)
        return fresh

    def _insert_messages(self, connection: Connection, fresh: list[Item],
                         now: datetime) -> set[tuple[str, int]]:
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        for item in fresh:
            envelope = item.envelope
            assert envelope is not None
            rows.setdefault((envelope.table, envelope.seq), {
                "table_id": envelope.table, "seq": envelope.seq, "type": envelope.type,
                "ts": envelope.ts, "body": item.body_text, "received_at": now,
                # The evidence (revision 0002). The verified payload is canonical UTF-8 JSON.
                "payload_sha256": item.sha256, "envelope": item.payload.decode("utf-8"),
            })
        inserted = insert_new(connection, MESSAGES, list(rows.values()),
                              key=("table_id", "seq"), json_text=("body",))
        return {(table, int(seq)) for table, seq in inserted}

    def _compare_existing(self, connection: Connection, fresh: list[Item],
                          inserted: set[tuple[str, int]]) -> None:
        """Copies of a stored (table, seq): duplicates if identical, else replays."""
        stored: dict[tuple[str, int], bytes] = {}
        first_of: dict[tuple[str, int], Item] = {}
        for item in fresh:
            key = item.key()
            if key in inserted and key not in first_of:
                first_of[key] = item
            elif key in first_of and key not in stored:  # a copy within this batch
                first = first_of[key].envelope
                assert first is not None
                stored[key] = _content(first.type, first.ts, first.body)
        missing = {i.key() for i in fresh if i.envelope is not None} - inserted
        if missing:
            for row in connection.execute(
                select(Message.table_id, Message.seq, Message.type, Message.ts, Message.body)
                .where(tuple_(Message.table_id, Message.seq).in_(sorted(missing)))
            ):
                stored[(row.table_id, int(row.seq))] = _content(row.type, row.ts, row.body)
        for item in fresh:
            envelope = item.envelope
            assert envelope is not None
            key = item.key()
            if first_of.get(key) is item:
                continue
            held = stored.get(key)
            if held == _content(envelope.type, envelope.ts, envelope.body):
                item.result = IngestResult.about(envelope, "duplicate")
            elif held is None:  # cannot happen: the insert conflicted, so a row exists
                raise _Vanished(f"{key} conflicted but is not stored")
            else:
                item.result = IngestResult.about(
                    envelope, "rejected", reason=REPLAYED_SEQ,
                    detail=f"{envelope.table} seq {envelope.seq} is stored with other "
                           f"content; this {envelope.type} is not")

    def _apply(self, connection: Connection, fresh: list[Item],
               progress: dict[str, Progress], batch: Batch) -> None:
        new = [i for i in fresh if i.result is None]
        pending = {i.key() for i in new}
        later = later_messages_query(connection, pending)
        highest = {table: state.highest for table, state in progress.items()}
        late = []  # in arrival order: below its table's highest seq so far (out of order)
        for item in new:
            envelope = item.envelope
            assert envelope is not None
            late.append(envelope.seq < highest[envelope.table])
            highest[envelope.table] = max(highest[envelope.table], envelope.seq)
        # What does not depend on the order goes in a few statements first; the rest one by
        # one, in arrival order (projections.project_bulk says why the result is the same).
        decoded = [read(i.envelope) for i in new if i.envelope is not None]  # each body once
        done = project_bulk(connection, [(i.envelope, i.body_text, out_of_order)
                                         for i, out_of_order in zip(new, late, strict=True)
                                         if i.envelope is not None], decoded)
        for index, item in enumerate(new):
            envelope = item.envelope
            assert envelope is not None
            state = progress[envelope.table]
            if not state.add(envelope.seq):
                batch.notes.append((item, f"progress of {envelope.table} did not expect seq "
                                          f"{envelope.seq} (stored anew)"))
            pending.discard(item.key())
            projected = done.get(index)
            if projected is None:
                projected = project(connection, envelope, text=item.body_text,
                                    later=later if late[index] else None,
                                    decoded=decoded[index])
            item.projected = projected
        for item in new:
            envelope, projected = item.envelope, item.projected
            assert envelope is not None
            assert projected is not None
            for change in (envelope.type, *projected.changes):
                if change not in batch.changes:
                    batch.changes.append(change)
            batch.refused.extend((item, refused) for refused in projected.refused)
            batch.notes.extend((item, note) for note in projected.notes)
            own = next((r for r in projected.refused if r.seq == envelope.seq), None)
            item.result = IngestResult.about(
                envelope, "stored", reason=own.reason if own else None,
                detail=own.detail if own else "", changes=projected.changes)

    def _save_rejections(self, connection: Connection, items: list[Item], batch: Batch,
                         now: datetime) -> None:
        rows = [
            rejection_row(i.result.reason or "", i.result.table, i.topic,
                          i.result.detail, sha256=i.sha256, now=now)
            for i in items if i.result is not None and i.result.outcome == "rejected"
        ]
        rows.extend(
            rejection_row(r.reason, r.table, item.topic,
                          f"{r.type} seq {r.seq} stored, not applied: {r.detail}",
                          sha256=item.sha256, now=now)
            for item, r in batch.refused
        )
        if rows:
            connection.execute(REJECTIONS.insert(), rows)

    def _store_failed(self, item: Item, exc: Exception) -> IngestResult:
        envelope = item.envelope
        table = envelope.table if envelope else item.claimed
        detail = clean(f"database error: {exc}", MAX_DETAIL)
        with contextlib.suppress(SQLAlchemyError), self.engine.begin() as connection:
            connection.execute(REJECTIONS.insert(), [
                rejection_row(STORE_ERROR, table, item.topic, detail, sha256=item.sha256,
                              now=self._clock())])
        self._tally.reasons[STORE_ERROR] += 1  # counted here: no batch result carries it
        return IngestResult(outcome="failed", table=table,
                            seq=envelope.seq if envelope else None,
                            type=envelope.type if envelope else None, reason=STORE_ERROR,
                            detail=detail)
