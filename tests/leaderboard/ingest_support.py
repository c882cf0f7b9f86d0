"""What the ingest tests share: fake tables that seal real messages, enrolment, and readers
of what the ingest stored (also used by the projections, audit, backup and MQTT tests)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from leaderboard.ingest import (
    Ingestor,
)
from leaderboard.models import (
    Entry,
    Message,
    Patron,
    Rejection,
    Score,
    TableProgress,
    TableRecord,
)
from tests.fixtures.clock import EPOCH, FakeClock
from wire.envelope import seal
from wire.signing import Signer
from wire.topics import TableTopics

VENUE = "casino-1"
ROOT = "showdown-test/ingest"
T0 = EPOCH  # the shared fake clock's start




def key_of(key_id: str, salt: str = "") -> Signer:
    """A fixed key per id (another ``salt`` gives another key under the same id)."""
    return Signer.from_seed(key_id, hashlib.sha256(f"{key_id}/{salt}".encode()).digest())


class FakeTable:
    """Seals one table's messages with rising seqs and keeps them, as a table's journal does."""

    def __init__(self, table: str, *, venue: str = VENUE, root: str = ROOT,
                 key: Signer | None = None) -> None:
        self.table = table
        self.venue = venue
        self.key = key or key_of(table)
        self.topics = TableTopics(venue, table, root)
        self.seq = 0
        self.sent: dict[int, tuple[str, bytes]] = {}

    def message(self, kind: str, body: dict[str, Any], *, seq: int | None = None,
                key: Signer | None = None, venue: str | None = None) -> tuple[str, bytes]:
        """Seal the next message (or one at ``seq``); returns (topic, payload)."""
        if seq is None:
            self.seq += 1
            seq = self.seq
        envelope = seal(venue=venue or self.venue, table=self.table, seq=seq,
                        wall=T0 + timedelta(seconds=seq), type=kind, body=body,
                        boot="boot-1", mono=seq * 1_000, signer=key or self.key)
        topic = self.topics.scores if kind.startswith("score.") else self.topics.events
        payload = envelope.encode()
        if seq and key is None and venue is None:
            self.sent.setdefault(seq, (topic, payload))
        return topic, payload

    def score(self, entry: str, cents: int, *, seq: int | None = None,
              key: Signer | None = None, **extra: Any) -> tuple[str, bytes]:
        body = {"entry_id": entry, "stage": "qualifying", "heat_id": "heat-1",
                "table": self.table, "seat": 1, "score": cents, "hands": 30,
                "status": "finished", "markers_forfeited": 0, "last_hand_id": "h",
                "at": "2026-07-03T13:00:00Z", **extra}
        return self.message("score.recorded", body, seq=seq, key=key)

    def ack(self, entry: str, cents: int, method: str = "card_tap") -> tuple[str, bytes]:
        return self.message("score.acknowledged", {
            "entry_id": entry, "score": cents, "stage": "qualifying", "method": method,
            "by": None, "at": "2026-07-03T13:01:00Z"})

    def seated(self, entry: str, seat: int) -> tuple[str, bytes]:
        return self.message("entry.seated", {"entry_id": entry, "seat": seat,
                                             "heat_id": "heat-1", "at": "2026-07-03T12:00:00Z"})

    def unseated(self, entry: str, seat: int, hands_played: int = 4) -> tuple[str, bytes]:
        return self.message("entry.unseated", {
            "entry_id": entry, "seat": seat, "hands_played": hands_played,
            "reason": "patron left", "at": "2026-07-03T12:30:00Z"})

    def hand(self, hand_id: str, kind: str = "hand.settled", **extra: Any) -> tuple[str, bytes]:
        status = "settled" if kind == "hand.settled" else "void"
        return self.message(kind, {"v": 1, "table": self.table, "hand_id": hand_id,
                                   "status": status, "heat_id": "heat-1",
                                   "stage": "qualifying", "nets": {"1": 500}, **extra})

    def alert(self, text: str = "shoe jam") -> tuple[str, bytes]:
        return self.message("alert", {"kind": "device_jam", "message": text, "source": "shoe",
                                      "at": "2026-07-03T13:00:00Z"})


def enroll(engine: sa.Engine, *tables: FakeTable, active: bool = True) -> None:
    """Enrol tables (their public keys) as the desk would."""
    with engine.begin() as connection:
        for table in tables:
            connection.execute(sa.insert(TableRecord).values(
                table_id=table.table, venue=table.venue, public_key=table.key.public_key.base64,
                enrolled_at=T0, active=active))


def register_entry(engine: sa.Engine, entry_id: str, patron_id: str = "P1",
                   **columns: Any) -> None:
    """A registered entry (and its patron), as the desk creates them; ``columns`` override
    (``status="seated", table_id="t01", seat=3``: as the desk seats it)."""
    with engine.begin() as connection:
        if connection.scalar(sa.select(Patron.patron_id).where(Patron.patron_id == patron_id)) \
                is None:
            connection.execute(sa.insert(Patron).values(
                patron_id=patron_id, name="A. Patron", id_kind="id_document",
                id_number=f"id-{patron_id}", birth_date=datetime(1980, 1, 1).date(),
                created_at=T0))
        connection.execute(sa.insert(Entry).values(
            entry_id=entry_id, patron_id=patron_id, buy_in_cents=10_000, bought_at=T0,
            **{"stage": "qualifying", "status": "registered", **columns}))


class Resends:
    """An injected resend(table, from_seq) that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, table: str, from_seq: int) -> None:
        self.calls.append((table, from_seq))


def stored(engine: sa.Engine, table: str | None = None) -> list[tuple[str, int, str]]:
    """(table, seq, type) of every stored message, in key order."""
    query = sa.select(Message.table_id, Message.seq, Message.type)
    if table is not None:
        query = query.where(Message.table_id == table)
    with engine.connect() as connection:
        return [(r.table_id, int(r.seq), r.type)
                for r in connection.execute(query.order_by(Message.table_id, Message.seq))]


def rejection_reasons(engine: sa.Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(Rejection.reason).order_by(Rejection.id)))


def progress(engine: sa.Engine, table: str) -> tuple[int, int, list[list[int]]]:
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(TableProgress.contiguous_seq, TableProgress.highest_seq, TableProgress.gaps)
            .where(TableProgress.table_id == table)).one()
    return int(row.contiguous_seq), int(row.highest_seq), [list(g) for g in row.gaps]


def scores(engine: sa.Engine) -> dict[str, tuple[Any, ...]]:
    """entry -> (table, seq, cents, acknowledged?, method, voided?)."""
    with engine.connect() as connection:
        return {r.entry_id: (r.table_id, int(r.seq), int(r.score_cents),
                             r.acknowledged_at is not None, r.ack_method,
                             r.voided_at is not None)
                for r in connection.execute(sa.select(Score))}



def make_ingestor(engine: sa.Engine, clock: FakeClock, resends: Resends | None = None,
                  **options: Any) -> Ingestor:
    options.setdefault("resend_after_s", 0.0)
    return Ingestor(engine, venue=VENUE, resend=resends, clock=clock, topic_root=ROOT,
                    **options)

