"""What the journal tests share: a plain outgoing message (the journal reads only its
attributes; the table service has its own type), appending helpers, tampering with the file
as a person with the sqlite3 shell would, and the consistency check after a crash."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord, verify_file
from controller.journal.models import TRIGGERS

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 3, 1, 18, 30, tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """An outgoing message as `Journal.append`'s `outgoing` returns it."""

    topic_suffix: str
    type: str
    body: Mapping[str, Any]
    retain: bool = False


def events(*types: str) -> object:
    """An `outgoing` callback producing one "events" message per type, naming the record."""
    def outgoing(record: JournalRecord) -> list[Message]:
        return [Message(topic_suffix="events", type=t, body={"record": record.seq, "i": i})
                for i, t in enumerate(types)]
    return outgoing


def nothing(_record: JournalRecord) -> list[Message]:
    return []


def add(j: Journal, fake: FakeClockSource, n: int, *, per_record: int = 0) -> None:
    """Append n inputs ("card" with payload {"n": i}), each causing `per_record` messages."""
    for i in range(n):
        j.append(kind="card", payload={"n": i}, clock=fake(),
                 outgoing=events(*["card.read"] * per_record))  # type: ignore[arg-type]


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def tamper(path: Path, *statements: str) -> None:
    """Run SQL on the file as a determined person would: triggers off, change, triggers back."""
    con = raw(path)
    try:
        for name in TRIGGERS:
            con.execute(f"DROP TRIGGER {name}")
        for sql in statements:
            con.execute(sql)
        for sql in TRIGGERS.values():
            con.execute(sql)
    finally:
        con.close()


def found(problems: list) -> set[tuple[str, str, int | None]]:  # type: ignore[type-arg]
    return {(p.area, p.code, p.seq) for p in problems}


def assert_consistent(path: Path) -> list[JournalRecord]:
    """Intact chains, and every record has exactly the messages its payload says it caused."""
    assert verify_file(path) == []
    with Journal.open(path, read_only=True) as j:
        records = list(j.records())
        messages = j.messages(1)
    per_record: dict[int, int] = {}
    for m in messages:
        per_record[m.record_seq] = per_record.get(m.record_seq, 0) + 1
    for r in records[1:]:
        assert per_record.pop(r.seq, 0) == r.payload["messages"], f"record {r.seq}"
    assert per_record == {}  # no message without its record
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    return records
