"""Each table's progress, its gaps, and asking a table to resend what is missing.

A table's row of ``table_progress`` holds its contiguous seq, the highest seen and the gaps
between. A gap that stays open for ``resend_after`` (or an ``availability`` notice, or a
message too far ahead, showing the table has published beyond what arrived) makes the ingest
ask the table to publish again from the first missing seq, at most once per
``resend_interval`` per table (across instances: the time of the last request is in the
database). ``MqttResender`` is the signed ``resend`` command such a request sends.

A table whose journal was rotated can resend only from its current file's first seq, which
its ``online`` availability names (``status.first_resendable_seq``): what the centre still
lacks below it is given up (`Progress.give_up_below`), recorded once as an alert by the
caller, and never asked for again (D414).
"""

from __future__ import annotations

import bisect
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, TypeGuard

from sqlalchemy import Connection, Engine, bindparam, select, update

from leaderboard.models import TableProgress
from leaderboard.projections import PROGRESS, as_utc, statements
from wire.envelope import Envelope, seal
from wire.messages import Availability, DeskOrder, Resend
from wire.mqtt import MqttSettings, publish_once
from wire.signing import Signer
from wire.topics import TableTopics

__all__ = ["GapTracker", "MqttResender", "Progress", "lock_progress", "save_progress"]

_LOCK_PROGRESS: Final = (
    select(TableProgress.table_id, TableProgress.contiguous_seq, TableProgress.highest_seq,
           TableProgress.gaps, TableProgress.resend_requested_at)
    .where(TableProgress.table_id.in_(bindparam("tables", expanding=True)))
    .order_by(TableProgress.table_id)
    .with_for_update()
)
_SAVE_PROGRESS: Final = (
    update(PROGRESS).where(PROGRESS.c.table_id == bindparam("table"))
    .values(contiguous_seq=bindparam("contiguous"), highest_seq=bindparam("highest"),
            gaps=bindparam("gaps"), resend_requested_at=bindparam("requested_at"))
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(slots=True)
class Progress:
    """One table's row of table_progress while a transaction holds it."""

    table: str
    contiguous: int
    highest: int
    gaps: list[list[int]]  # [first, last] missing, inclusive, ascending, all above contiguous
    requested_at: datetime | None
    dirty: bool = False

    def add(self, seq: int) -> bool:
        """Record a newly stored seq; False if it was neither new nor in a gap (inconsistent)."""
        self.dirty = True
        consistent = True
        if seq > self.highest:
            if seq > self.highest + 1:
                self.gaps.append([self.highest + 1, seq - 1])
            self.highest = seq
        else:
            index = bisect.bisect_right([first for first, _ in self.gaps], seq) - 1
            if index < 0 or self.gaps[index][1] < seq:
                consistent = False
            else:
                first, last = self.gaps.pop(index)
                pieces = [[a, b] for a, b in ((first, seq - 1), (seq + 1, last)) if a <= b]
                self.gaps[index:index] = pieces
        self.contiguous = self.gaps[0][0] - 1 if self.gaps else self.highest
        return consistent

    def give_up_below(self, first: int) -> list[list[int]]:
        """Stop waiting for seqs below ``first`` (the table can no longer resend them): the
        missing ranges given up, each [low, high] inclusive (none if nothing was missing)."""
        lost = [[a, min(b, first - 1)] for a, b in self.gaps if a < first]
        self.gaps = [[max(a, first), b] for a, b in self.gaps if b >= first]
        if self.highest < first - 1:  # a missing tail the table announced but cannot resend
            lost.append([self.highest + 1, first - 1])
            self.highest = first - 1
        if lost:
            self.dirty = True
            self.contiguous = self.gaps[0][0] - 1 if self.gaps else self.highest
        return lost


def lock_progress(connection: Connection, tables: list[str]) -> dict[str, Progress]:
    """The tables' progress rows (made if new), locked for this transaction."""
    if not tables:
        return {}
    # A write first: on SQLite it takes the database's write lock for the whole
    # transaction; on PostgreSQL the rows are then locked in table order (no deadlock).
    connection.execute(
        statements(connection).insert_progress,
        [{"table_id": t, "contiguous_seq": 0, "highest_seq": 0, "gaps": [],
          "resend_requested_at": None} for t in tables],
    )
    rows = connection.execute(_LOCK_PROGRESS, {"tables": tables}).all()
    return {
        r.table_id: Progress(
            table=r.table_id, contiguous=int(r.contiguous_seq), highest=int(r.highest_seq),
            gaps=[[int(a), int(b)] for a, b in (r.gaps or [])],
            requested_at=None if r.resend_requested_at is None
            else as_utc(r.resend_requested_at),
        )
        for r in rows
    }


def save_progress(connection: Connection, progress: dict[str, Progress]) -> None:
    """Write back the rows that changed."""
    rows = [{"table": state.table, "contiguous": state.contiguous, "highest": state.highest,
             "gaps": state.gaps, "requested_at": state.requested_at}
            for state in progress.values() if state.dirty]
    if rows:  # one executemany (psycopg pipelines it: one round trip)
        connection.execute(_SAVE_PROGRESS, rows)


class GapTracker:
    """When to ask a table to resend: how long its gap has been open, what it is behind."""

    def __init__(self, *, resend_after: timedelta, resend_interval: timedelta) -> None:
        self.resend_after = resend_after
        self.resend_interval = resend_interval
        self._gap_since: dict[str, tuple[int, datetime]] = {}  # table -> (contiguous, since)
        self._behind: dict[str, int] = {}  # table -> a seq it has published beyond highest

    def published_beyond(self, table: str, seq: int) -> None:
        """The table has published ``seq`` (seen, or claimed), whatever has arrived."""
        self._behind[table] = max(seq, self._behind.get(table, 0))

    def notice(self, envelope: Envelope, state: Progress) -> list[list[int]]:
        """An availability notice: its ``last_published_seq`` may show a missing tail, its
        ``first_resendable_seq`` ranges the table cannot resend (given up: returned)."""
        if envelope.type != Availability.TYPE:
            return []
        link = envelope.body.get("link")
        last = link.get("last_published_seq") if isinstance(link, Mapping) else None
        if _whole(last) and last > state.highest:
            self.published_beyond(state.table, last)
        status = envelope.body.get("status")
        first = status.get(Availability.FIRST_RESENDABLE) if isinstance(status, Mapping) else None
        if not _whole(first) or first < 2:
            return []
        return state.give_up_below(first)

    def want_resend(self, state: Progress, now: datetime) -> int | None:
        """The seq to ask the table to resend from, if a gap has waited long enough."""
        behind = self._behind.get(state.table, 0)
        if behind <= state.highest:
            self._behind.pop(state.table, None)
            behind = 0
        if state.contiguous >= max(state.highest, behind):
            self._gap_since.pop(state.table, None)
            return None
        since = self._gap_since.get(state.table)
        if since is None or since[0] != state.contiguous:
            since = (state.contiguous, now)
            self._gap_since[state.table] = since
        if now - since[1] < self.resend_after:
            return None
        if state.requested_at is not None and now - state.requested_at < self.resend_interval:
            return None
        state.requested_at = now
        state.dirty = True
        return state.contiguous + 1

    def resends(self, progress: dict[str, Progress], now: datetime) -> list[tuple[str, int]]:
        """(table, from_seq) for each table of ``progress`` to ask now."""
        wanted = []
        for state in progress.values():
            resend = self.want_resend(state, now)
            if resend is not None:
                wanted.append((state.table, resend))
        return wanted

    def check(self, engine: Engine, now: datetime) -> list[tuple[str, int]]:
        """One transaction over every table with a gap or a missing tail (blocking)."""
        with engine.begin() as connection:
            open_gaps = connection.execute(
                select(TableProgress.table_id)
                .where(TableProgress.contiguous_seq < TableProgress.highest_seq)
            ).scalars().all()
            tables = sorted({*open_gaps, *self._behind})
            if not tables:
                self._gap_since.clear()
                return []
            progress = lock_progress(connection, tables)
            wanted = self.resends(progress, now)
            save_progress(connection, progress)
        return wanted


class MqttResender:
    """Sends a signed ``resend`` command to a table's ``cmd`` topic (a desk-style command).

    The leaderboard's key (``signer``) must be enrolled among the table's command keys. Each
    command has its own rising ``seq`` (microseconds since the epoch, at least the last + 1),
    so the table, which ignores a command ``(signer, seq)`` it has applied, never mistakes a
    new request for an old one, across restarts too.
    """

    def __init__(self, settings: MqttSettings, signer: Signer, *, venue: str,
                 clock: Callable[[], datetime] = _utc_now, boot_id: str | None = None) -> None:
        TableTopics(venue, "x", settings.topic_root)  # validates venue and root
        self.settings = settings
        self.signer = signer
        self.venue = venue
        self._clock = clock
        self._boot = boot_id or f"leaderboard-{random.getrandbits(48):012x}"
        self._seq = 0
        self.sent: list[tuple[str, int, int]] = []  # (table, from_seq, command seq)

    def command(self, table: str, from_seq: int) -> tuple[str, bytes]:
        """The topic and signed payload of one resend request (a new seq each call)."""
        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 1:
            raise ValueError(f"from_seq must be a whole number >= 1, got {from_seq!r}")
        wall = self._clock()
        self._seq = max(self._seq + 1, time.time_ns() // 1_000)
        envelope = seal(
            venue=self.venue, table=self.signer.key_id, seq=self._seq, wall=wall,
            type=Resend.NAME,
            body=DeskOrder(command=Resend(from_seq=from_seq), table=table,
                           command_id=f"{self.signer.key_id}-{self._seq}").encode(),
            boot=self._boot, mono=time.monotonic_ns(), signer=self.signer,
        )
        return TableTopics(self.venue, table, self.settings.topic_root).cmd, envelope.encode()

    async def __call__(self, table: str, from_seq: int) -> None:
        """Publish the request at QoS 1 (a short connection of its own; requests are rare)."""
        topic, payload = self.command(table, from_seq)
        await publish_once(self.settings, topic, payload, qos=1,
                           client_id=f"{self.signer.key_id}-resend-{self._seq}")
        self.sent.append((table, from_seq, self._seq))
