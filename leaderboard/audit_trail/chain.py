"""The audit trail's hash chain: `append_audit` is the ONE writer of audit rows.

Each row carries ``prev_hash`` (the previous row's ``row_hash``; the first row's is GENESIS)
and ``row_hash``, the SHA-256 of a canonical encoding of (id, at, actor, action, detail,
prev_hash), so changing, removing or slipping in a row breaks the chain from there on
(docs/audit-trail.md). Writers are serialised on the chain's tip row (``audit_tip``): on
PostgreSQL ``SELECT ... FOR UPDATE``, held until the transaction ends; on SQLite the
database's one write lock (taken at once, ``BEGIN IMMEDIATE``, when the transaction has not
begun). Ids are given under that lock, the tip's id + 1, so a missing id is a removed row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, cast

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from leaderboard.audit_trail.hashing import (
    DOMAIN,
    GENESIS,
    canonical_at,
    detail_text,
    row_hash,
)
from leaderboard.models import AuditEntry, AuditTip

__all__ = [
    "DOMAIN",
    "GENESIS",
    "TIP_ROW",
    "AuditValues",
    "amend_tip",
    "append_audit",
    "audit_row",
    "audit_values",
    "canonical_at",
    "detail_text",
    "lock_tip",
    "row_hash",
    "stored_row_hash",
]

TIP_ROW: Final = 1
_AUDIT: Final = cast(Table, AuditEntry.__table__)
_TIP: Final = cast(Table, AuditTip.__table__)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditValues:
    """One audit row to write: when (aware), who, what, and its detail (plain JSON data)."""

    at: datetime
    actor: str
    action: str
    detail: Mapping[str, Any]


def stored_row_hash(row: Any, prev_hash: str) -> str:
    """The hash a stored audit row (id, at, actor, action, detail) should carry after
    ``prev_hash``; a value no writer could store hashes to something else (a mismatch)."""
    try:
        detail = detail_text(row.detail)
    except (TypeError, ValueError):
        detail = repr(row.detail)
    at = canonical_at(row.at) if isinstance(row.at, datetime) else repr(row.at)
    return row_hash(id=int(row.id), at=at, actor=str(row.actor), action=str(row.action),
                    detail=detail, prev_hash=prev_hash)


def lock_tip(connection: Connection) -> tuple[int, str]:
    """Lock the chain's tip for the rest of the transaction; its last id and hash. A tip row
    removed by hand is put back from the chain's last row (the removal stays recorded)."""
    if connection.dialect.name == "sqlite":
        dbapi = connection.connection.dbapi_connection
        if dbapi is not None and not dbapi.in_transaction:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
    tip = connection.execute(select(_TIP.c.last_id, _TIP.c.last_hash)
                             .where(_TIP.c.id == TIP_ROW).with_for_update()).first()
    if tip is not None:
        return int(tip.last_id), str(tip.last_hash)
    last = connection.execute(select(_AUDIT.c.id, _AUDIT.c.row_hash)
                              .order_by(_AUDIT.c.id.desc()).limit(1)).first()
    last_id = 0 if last is None else int(last.id)
    last_hash = GENESIS if last is None or last.row_hash is None else str(last.row_hash)
    values = {"id": TIP_ROW, "last_id": last_id, "last_hash": last_hash, "legacy_until": 0}
    if connection.dialect.name == "postgresql":
        # Two first writers at once: the second waits on the first's row, inserts nothing
        # and locks the tip the first left (SQLite's BEGIN IMMEDIATE already serialises them).
        connection.execute(pg_insert(_TIP).values(values).on_conflict_do_nothing())
        tip = connection.execute(select(_TIP.c.last_id, _TIP.c.last_hash)
                                 .where(_TIP.c.id == TIP_ROW).with_for_update()).one()
        return int(tip.last_id), str(tip.last_hash)
    connection.execute(insert(_TIP).values(values))
    return last_id, last_hash


def append_audit(connection: Connection, rows: Sequence[AuditValues]) -> list[int]:
    """Write ``rows`` at the end of the audit chain in the connection's transaction (the tip
    stays locked until it ends); their ids."""
    if not rows:
        return []
    last_id, last_hash = lock_tip(connection)
    values = []
    for row in rows:
        if row.at.utcoffset() is None:
            raise ValueError(f"audit time {row.at!r} has no time zone")
        at = row.at.astimezone(UTC)
        text = detail_text(dict(row.detail))
        last_id += 1
        digest = row_hash(id=last_id, at=canonical_at(at), actor=row.actor,
                          action=row.action, detail=text, prev_hash=last_hash)
        values.append({"id": last_id, "at": at, "actor": row.actor, "action": row.action,
                       "detail": json.loads(text), "prev_hash": last_hash,
                       "row_hash": digest})
        last_hash = digest
    connection.execute(insert(_AUDIT), values)
    connection.execute(update(_TIP).where(_TIP.c.id == TIP_ROW)
                       .values(last_id=last_id, last_hash=last_hash))
    return [v["id"] for v in values]


def audit_values(rows: Iterable[Mapping[str, Any]]) -> list[AuditValues]:
    """Rows given as mappings of at, actor, action and detail, as `AuditValues`."""
    return [AuditValues(at=r["at"], actor=r["actor"], action=r["action"], detail=r["detail"])
            for r in rows]


def audit_row(session: Session, at: datetime, actor: str, action: str,
              detail: Mapping[str, Any]) -> AuditEntry:
    """`append_audit` of one row in the session's transaction (pending changes flushed
    first); the stored row."""
    session.flush()
    [row_id] = append_audit(session.connection(),
                            [AuditValues(at=at, actor=actor, action=action, detail=detail)])
    row = session.get(AuditEntry, row_id)
    assert row is not None  # just written in this transaction
    return row


def amend_tip(session: Session, row: AuditEntry, detail: Mapping[str, Any]) -> None:
    """Give ``row``, the chain's last row and written in this same transaction, a new detail
    (a desk command's seq, known only once its audit row exists): its hash and the tip follow.
    ValueError for any other row: a row already followed by another never changes."""
    session.flush()
    connection = session.connection()
    last_id, _ = lock_tip(connection)
    if row.id != last_id or row.prev_hash is None:
        raise ValueError(f"audit row {row.id} is not the chain's last row ({last_id}): it"
                         " cannot change")
    text = detail_text(dict(detail))
    digest = row_hash(id=row.id, at=canonical_at(row.at), actor=row.actor, action=row.action,
                      detail=text, prev_hash=row.prev_hash)
    row.detail, row.row_hash = json.loads(text), digest
    session.flush()
    connection.execute(update(_TIP).where(_TIP.c.id == TIP_ROW).values(last_hash=digest))
