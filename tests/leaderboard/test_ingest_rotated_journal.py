"""D412 end to end without a broker (D414): a real table journal, rotated, answers
the ingest's resend requests as `controller.app` does (`journal.messages(from_seq)`, sealed
as the link seals them), for a central database rebuilt empty: what lies in the rotated-away
file is alerted once and never asked for, the current file is resent and stored once."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord
from controller.journal.rotation import rotate_journal
from leaderboard.audit_trail.verify import verify_chain
from leaderboard.ingest import Ingestor
from leaderboard.models import AuditEntry
from tests.controller.journal.support import T0, Message
from tests.fixtures.clock import FakeClock
from tests.leaderboard.ingest_support import (
    ROOT,
    VENUE,
    FakeTable,
    enroll,
    progress,
    stored,
)
from wire.envelope import envelope_for
from wire.messages import Alert, Availability
from wire.signing import Signer
from wire.topics import TableTopics


def _alert(record: JournalRecord) -> list[Message]:
    return [Message(topic_suffix="events", type=Alert.TYPE,
                    body={"kind": "device_jam", "message": f"record {record.seq}",
                          "source": "shoe", "at": "2026-07-03T13:00:00Z"})]


def _play(path: Path, clock: FakeClockSource, records: int) -> None:
    with Journal.open(path, clock=clock) as journal:
        for n in range(records):
            journal.append(kind="card", payload={"n": n}, clock=clock(),
                           outgoing=_alert)
        for message in journal.pending(1000):
            journal.mark_delivered(message.seq)


class JournalTable:
    """The table's side: its journal answers a resend from what its current file holds."""

    def __init__(self, table: FakeTable, path: Path) -> None:
        self.table, self.path = table, path
        self.topics = TableTopics(VENUE, table.table, ROOT)
        self.asked: list[int] = []
        self.outbox: list[tuple[str, bytes]] = []

    async def __call__(self, table: str, from_seq: int) -> None:
        assert table == self.table.table
        self.asked.append(from_seq)
        with Journal.open(self.path, read_only=True) as journal:
            for message in journal.messages(from_seq):
                envelope = envelope_for(message, venue=VENUE, table=table,
                                        signer=self.table.key)
                self.outbox.append((self.topics.for_suffix(message.topic_suffix),
                                    envelope.encode()))

    def online(self) -> tuple[str, bytes]:
        """Its retained ``online`` notice, with what its current file can resend."""
        with Journal.open(self.path, read_only=True) as journal:
            last, first = journal.last_seq(), journal.first_seq()
        return self.table.message(Availability.TYPE, {
            "state": "online", "link": {"last_published_seq": last},
            "status": {"state": "online", Availability.FIRST_RESENDABLE: first}}, seq=0)


async def test_a_centre_rebuilt_after_a_rotation_stops_asking_for_the_rotated_file(
        engine: sa.Engine, tmp_path: Path) -> None:
    t01 = FakeTable("t01")
    enroll(engine, t01)
    path = tmp_path / "t01.journal"
    clock = FakeClockSource(start=T0, boot_id="boot-a", step_ns=1_000_000)
    _play(path, clock, 6)  # seqs 1-6, then the month ends
    rotate_journal(path, state={"n": 1}, snapshot_version=1, signer=t01.key,
                   reason="a new month", clock=clock)
    _play(path, clock, 4)  # seqs 7-10 in the current file
    table = JournalTable(t01, path)
    now = FakeClock()
    ingest = Ingestor(engine, venue=VENUE, resend=table, clock=now, topic_root=ROOT,
                      resend_after_s=0.0, resend_interval_s=5.0)
    status, birth = table.online()
    assert (await ingest.handle(status, birth)).outcome == "notice"
    assert table.asked == [7]  # never from 1: the table said it starts at 7
    while table.outbox:
        await ingest.handle(*table.outbox.pop(0))
    for _ in range(5):  # a reconnect's notice again, gap checks long after
        now.advance(10)
        await ingest.handle(status, birth)
        assert await ingest.check_gaps() == []
    assert table.asked == [7]
    assert progress(engine, "t01") == (10, 10, [])
    assert [seq for _, seq, _ in stored(engine, "t01")] == [7, 8, 9, 10]
    with engine.connect() as connection:
        alerts = connection.execute(
            sa.select(AuditEntry.detail)
            .where(AuditEntry.action == "alert.messages_unresendable")).scalars().all()
    assert [(a["table"], a["ranges"]) for a in alerts] == [("t01", [[1, 6]])]
    with engine.connect() as connection:  # what `showdown leaderboard audit` shows
        report = verify_chain(connection, Signer.from_seed("leaderboard", b"c" * 32).public_key)
    shown = [f.message for f in report.findings if f.severity == "alert"]
    assert len(shown) == 1 and "alert.messages_unresendable" in shown[0]
    assert "t01 can no longer resend seq 1-6" in shown[0]
    assert "restore a backup of the central database taken before" in shown[0].lower()
