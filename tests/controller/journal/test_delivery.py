"""The outbox feed (controller.journal.delivery): messages handed over in memory after their
commit, the journal read at start, after a gap and through a backlog, and the delivery marks
written in batches on the writer thread, on a real journal file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from controller.clock import FakeClockSource
from controller.journal import Journal, StoredMessage, sqlite
from controller.journal.delivery import OutboxFeed
from controller.journal.writer import JournalWriter
from tests.controller.journal.support import events


@pytest.fixture
def writer() -> Iterator[JournalWriter]:
    w = JournalWriter()
    yield w
    w.close()


def append(journal: Journal, fake: FakeClockSource, per_record: int) -> list[StoredMessage]:
    """One append causing `per_record` messages; the messages it committed."""
    _, messages = journal.append(kind="card", payload={"n": 1}, clock=fake(),
                                 outgoing=events(*["card.read"] * per_record))  # type: ignore[arg-type]
    return messages


def delivered(path: Path) -> dict[int, str | None]:
    """seq -> delivered_wall of every message marked delivered, read with plain sqlite3."""
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT seq, delivered_wall FROM outbox WHERE delivered = 1"))
    finally:
        con.close()


class Blocked:
    """Holds the writer thread until released (the writer busy with a long append)."""

    def __init__(self, writer: JournalWriter) -> None:
        self.release = threading.Event()
        self.done = writer.submit(self.release.wait)

    def __enter__(self) -> Blocked:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.done.result()


def test_the_first_read_comes_from_the_journal_then_offers_follow_in_memory(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter, path: Path) -> None:
    before = append(journal, fake, 2)  # committed before the daemon (re)started: seqs 1-2
    feed = OutboxFeed(journal, writer, clock=fake)
    assert [m.seq for m in feed.pending()] == [1, 2]
    feed.offer(append(journal, fake, 3))  # seqs 3-5
    assert [m.seq for m in feed.pending()] == [1, 2, 3, 4, 5]
    assert feed.pending()[0] == before[0]
    assert [m.seq for m in feed.pending(2)] == [1, 2]
    for seq in (1, 2, 3):
        feed.mark_delivered(seq)
    assert [m.seq for m in feed.pending()] == [4, 5]
    feed.close()
    assert sorted(delivered(path)) == [1, 2, 3]
    assert [m.seq for m in journal.pending()] == [4, 5]


def test_marks_waiting_for_the_writer_are_written_in_one_transaction(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter, path: Path) -> None:
    feed = OutboxFeed(journal, writer, clock=fake)
    assert feed.pending() == []
    feed.offer(append(journal, fake, 6))
    with Blocked(writer):
        for seq in (1, 2, 3, 5, 6):  # 4 not acknowledged: two runs of seqs
            feed.mark_delivered(seq)
        assert delivered(path) == {}  # nothing written while the writer is busy
        assert [m.seq for m in feed.pending()] == [4]
    feed.close()
    walls = delivered(path)
    assert sorted(walls) == [1, 2, 3, 5, 6]
    assert len(set(walls.values())) == 1  # one batch, one time stamp
    assert feed.marks_written == 5
    assert [m.seq for m in journal.pending()] == [4]


def test_a_gap_makes_the_feed_read_the_journal_again_without_repeating_acknowledged_ones(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter) -> None:
    feed = OutboxFeed(journal, writer, clock=fake)
    feed.offer(append(journal, fake, 0))
    assert feed.pending() == []
    feed.offer(append(journal, fake, 2))  # 1-2
    with Blocked(writer):
        feed.mark_delivered(1)
        feed.mark_delivered(2)  # acknowledged, marks not written yet
        append(journal, fake, 2)  # 3-4: committed but never offered (a cancelled ingest)
        feed.offer(append(journal, fake, 1))  # 5: after a gap
        assert [m.seq for m in feed.pending()] == [3, 4, 5]
        feed.offer(append(journal, fake, 1))  # 6: follows what was read, back in memory
        assert [m.seq for m in feed.pending()] == [3, 4, 5, 6]
    feed.close()


def test_an_offer_of_messages_already_read_is_not_queued_twice(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter) -> None:
    # An append commits between the feed's read of the last seq and of the pending rows.
    feed = OutboxFeed(journal, writer, clock=fake)
    later = append(journal, fake, 2)
    feed.pending()
    feed.offer(later)
    assert [m.seq for m in feed.pending()] == [1, 2]
    feed.offer(append(journal, fake, 1))
    assert [m.seq for m in feed.pending()] == [1, 2, 3]


def test_a_backlog_larger_than_one_read_is_drained_in_order(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter) -> None:
    for _ in range(25):
        append(journal, fake, 10)  # 250 messages undelivered at start
    feed = OutboxFeed(journal, writer, clock=fake)
    sent: list[int] = []
    extra = 0
    while batch := feed.pending(100):
        for message in batch:
            sent.append(message.seq)
            feed.mark_delivered(message.seq)
        if extra < 3:  # new messages arrive while the backlog drains
            feed.offer(append(journal, fake, 5))
            extra += 1
    assert sent == list(range(1, 266))
    feed.close()
    assert journal.pending() == []


def test_marks_that_cannot_be_written_are_tried_again(
        journal: Journal, fake: FakeClockSource, writer: JournalWriter, path: Path,
        mocker: MockerFixture) -> None:
    feed = OutboxFeed(journal, writer, clock=fake)
    feed.pending()
    feed.offer(append(journal, fake, 2))
    real = sqlite.marks_connection
    failing = mocker.patch("controller.journal.sqlite.marks_connection",
                           side_effect=sqlite3.OperationalError("disk I/O error"))
    feed.mark_delivered(1)
    writer.submit(lambda: None).result()  # the batch ran (and failed)
    assert feed.mark_failures == 1
    assert delivered(path) == {}
    failing.side_effect = real
    feed.mark_delivered(2)
    feed.close()
    assert sorted(delivered(path)) == [1, 2]
    assert journal.pending() == []
