"""Screening a received message before any storage: its topic, its envelope, its sender.

A message is verified against the keys of the tables enrolled in the database
(``TableRecord``; reloaded by ``load_keys()`` and, at most every ``key_refresh``, when an
unknown sender appears); then its table must be the topic's, its venue ours, and seq 0 is
allowed only for the unsequenced notices. A message that passes has ``item.envelope`` and
``item.body_text`` set and no result yet; one that does not has its result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

import structlog
from sqlalchemy import Engine, select

from leaderboard.ingest.results import (
    INGEST_SUFFIXES,
    MAX_DETAIL,
    NOTICE_TYPES,
    OUT_OF_WINDOW,
    TABLE_INACTIVE,
    WRONG_TOPIC,
    WRONG_VENUE,
    IngestResult,
    Item,
    clean,
)
from leaderboard.ingest.verifying import Refusal, Verified
from leaderboard.models import TableRecord
from leaderboard.projections import body_text
from wire.envelope import Envelope, EnvelopeError, UnknownSigner, verify_envelope
from wire.messages import CommandRejected
from wire.signing import KeyFormatError, KeyRing, parse_public_key
from wire.topics import ID_PATTERN, parse_table_topic

__all__ = ["Screener"]

_MAX_TOPICS: Final = 4_096  # topics whose parse is remembered (3 per table)
_UNPARSED: Final = object()
_log = structlog.get_logger("leaderboard.ingest")


def _claimed_sender(payload: bytes) -> str | None:
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    table = value.get("table") if isinstance(value, dict) else None
    return table if isinstance(table, str) and ID_PATTERN.fullmatch(table) else None


def _notice_detail(envelope: Envelope) -> str:
    body = envelope.body
    if envelope.type == CommandRejected.TYPE:
        return (f"reason {body.get('reason')!r}: {body.get('detail')!r} "
                f"(claimed sender {body.get('claimed_sender')!r}, "
                f"seq {body.get('claimed_seq')!r})")
    return f"state {body.get('state')!r}"


class Screener:
    """The enrolled keys and the checks that need no database transaction."""

    def __init__(self, engine: Engine, keyring: KeyRing | None, *, venue: str,
                 topic_root: str, clock: Callable[[], datetime],
                 key_refresh: timedelta) -> None:
        self.engine = engine
        self.venue = venue
        self.topic_root = topic_root
        self.key_refresh = key_refresh
        self._clock = clock
        self._fixed_keys = keyring is not None
        self.keys = keyring if keyring is not None else KeyRing()
        self.keys_version = 0  # rises at each load (the worker processes' cache key)
        self.inactive: frozenset[str] = frozenset()
        self.keys_loaded_at: datetime | None = None
        self._topics: dict[str, Any] = {}  # topic -> parse_table_topic(topic), a few dozen

    def load_keys(self) -> int:
        """Reload the enrolled tables' keys (blocking); returns how many."""
        self.keys_loaded_at = self._clock()
        self.keys_version += 1
        if self._fixed_keys:
            return len(self.keys)
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(TableRecord.table_id, TableRecord.public_key, TableRecord.active)
                .where(TableRecord.venue == self.venue)
            ).all()
        ring, inactive = KeyRing(), set()
        for row in rows:
            if not row.active:
                inactive.add(row.table_id)
                continue
            try:
                ring.add(parse_public_key(row.table_id, row.public_key))
            except KeyFormatError as exc:
                _log.error("ingest_enrolled_key_invalid", table=row.table_id, error=str(exc))
        self.keys, self.inactive = ring, frozenset(inactive)
        return len(ring)

    def _verify(self, payload: bytes) -> Envelope:
        try:
            return verify_envelope(payload, self.keys)
        except UnknownSigner:
            loaded = self.keys_loaded_at
            if loaded is not None and self._clock() - loaded < self.key_refresh:
                raise
        self.load_keys()  # someone new: perhaps enrolled since the keys were loaded
        return verify_envelope(payload, self.keys)

    def screen(self, item: Item, checked: Verified = None) -> None:
        """Topic, envelope, venue, seq 0 (``checked``: a worker process's verification)."""
        where = self._topics.get(item.topic, _UNPARSED)
        if where is _UNPARSED:
            where = parse_table_topic(item.topic, self.topic_root)
            if len(self._topics) >= _MAX_TOPICS:
                self._topics.clear()
            self._topics[item.topic] = where
        if where is None or where.venue != self.venue or where.suffix not in INGEST_SUFFIXES:
            item.result = IngestResult(outcome="ignored", detail=clean(item.topic, 200))
            return
        item.claimed = where.table
        try:
            if isinstance(checked, Envelope):
                envelope = checked
            elif checked is None or checked[0] == UnknownSigner.reason:
                envelope = self._verify(item.payload)  # here: the keys may need a reload
            else:
                raise Refusal(*checked)
        except EnvelopeError as exc:
            reason = exc.reason
            if isinstance(exc, UnknownSigner):
                item.claimed = _claimed_sender(item.payload) or item.claimed
                if item.claimed in self.inactive:
                    reason = TABLE_INACTIVE
            item.result = IngestResult(outcome="rejected", table=item.claimed, reason=reason,
                                       detail=clean(exc.detail, MAX_DETAIL))
            return
        item.claimed = envelope.table
        if envelope.table != where.table:
            item.result = IngestResult.about(
                envelope, "rejected", reason=WRONG_TOPIC,
                detail=f"{envelope.table}'s message seq {envelope.seq} arrived on "
                       f"{where.table}'s topic {clean(item.topic, 200)}")
        elif envelope.venue != self.venue:
            item.result = IngestResult.about(
                envelope, "rejected", reason=WRONG_VENUE,
                detail=f"venue {envelope.venue!r}, this ingest is {self.venue!r}")
        elif envelope.seq == 0:
            if envelope.type in NOTICE_TYPES:
                item.envelope = envelope
                item.result = IngestResult.about(envelope, "notice",
                                                 detail=clean(_notice_detail(envelope), 500))
            else:
                item.result = IngestResult.about(
                    envelope, "rejected", reason=OUT_OF_WINDOW,
                    detail=f"seq 0 is for unsequenced notices, not {envelope.type}")
        else:
            item.envelope = envelope
            item.body_text = body_text(envelope, item.payload)
