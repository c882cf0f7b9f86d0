"""Signed heads of the audit chain: the central service signs the chain's last row (its id and
hash) and the time with its Ed25519 key (``[keys] signing_key``) into ``audit_heads``, at
start, every ``[audit] head_every_rows`` rows or ``head_every_s`` seconds, and at shutdown
(docs/audit-trail.md). A row covered by a head cannot be changed, removed or slipped in
before it without the key, which is not in the database."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from leaderboard.audit_trail.chain import lock_tip
from leaderboard.audit_trail.hashing import head_signature_verifies, head_text
from leaderboard.audit_trail.settings import AuditSettings
from leaderboard.models import AuditEntry, AuditHead
from runtime.clocks import WallClock
from runtime.errors import one_line
from runtime.logs import get_logger
from wire.signing import PublicKey, Signer

__all__ = ["HeadState", "head_due", "head_state", "head_text", "head_verifies", "keep_heads",
           "sign_head"]

_POLL_S: Final = 10.0  # how often the service looks whether a head is due
_log = get_logger("leaderboard.audit_trail")


def head_verifies(head: AuditHead, key: PublicKey) -> bool:
    """True if ``head`` carries ``key``'s signature of what it names."""
    return head_signature_verifies(row_id=int(head.row_id), row_hash=head.row_hash,
                                   signed_at=head.signed_at, key_id=head.key_id,
                                   signature=head.signature, key=key)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadState:
    """How far the chain is ahead of its last signed head: rows since, and that head's time
    (None: no head yet)."""

    rows_since: int
    last_signed_at: datetime | None


def head_state(engine: Engine) -> HeadState:
    """The chain's rows after its newest signed head, and when that head was signed."""
    with Session(engine) as session:
        last = session.scalars(select(AuditHead).order_by(AuditHead.id.desc()).limit(1)).first()
        after = 0 if last is None else int(last.row_id)
        rows = session.scalar(select(func.count()).select_from(AuditEntry)
                              .where(AuditEntry.id > after)) or 0
        return HeadState(rows_since=int(rows),
                         last_signed_at=None if last is None else last.signed_at)


def head_due(state: HeadState, now: datetime, *, every_rows: int, every_s: float) -> bool:
    """True when a new head should be signed: rows are waiting, and either ``every_rows`` of
    them or ``every_s`` seconds since the last head (or there is none)."""
    if state.rows_since == 0:
        return False
    if state.rows_since >= every_rows or state.last_signed_at is None:
        return True
    last = state.last_signed_at
    elapsed = now - (last if last.utcoffset() is not None else last.replace(tzinfo=UTC))
    return elapsed.total_seconds() >= every_s


def sign_head(engine: Engine, signer: Signer, now: datetime) -> AuditHead | None:
    """Sign the chain's tip into ``audit_heads`` (under the tip's lock, so no row slips in
    between); None when the newest head already names it or the chain is empty."""
    if now.utcoffset() is None:
        raise ValueError(f"head time {now!r} has no time zone")
    now = now.astimezone(UTC)  # SQLite keeps the wall time without its zone
    with Session(engine, expire_on_commit=False) as session:
        last_id, last_hash = lock_tip(session.connection())
        newest = session.scalar(select(func.max(AuditHead.row_id)))
        if last_id in (0, newest):
            session.rollback()
            return None
        head = AuditHead(row_id=last_id, row_hash=last_hash, signed_at=now,
                         key_id=signer.key_id)
        head.signature = base64.b64encode(signer.sign(head_text(
            row_id=last_id, row_hash=last_hash, signed_at=now, key_id=signer.key_id))).decode()
        session.add(head)
        session.commit()
        return head


async def keep_heads(engine: Engine, signer: Signer, clock: WallClock, settings: AuditSettings,
                     stop: asyncio.Event) -> None:
    """Sign a head whenever `head_due` says so, looking every few seconds, until ``stop``; a
    database that does not answer is logged and tried again at the next look."""
    poll = min(float(settings.head_every_s), _POLL_S)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), poll)
        if stop.is_set():
            return
        try:
            state = await asyncio.to_thread(head_state, engine)
            if head_due(state, clock(), every_rows=settings.head_every_rows,
                        every_s=settings.head_every_s):
                head = await asyncio.to_thread(sign_head, engine, signer, clock())
                if head is not None:
                    _log.info("audit_head_signed", row=head.row_id, head=head.id)
        except SQLAlchemyError as exc:
            _log.warning("audit_head_not_signed", error=one_line(exc)[:200])
