"""controller.journal: journal-first appends, replay, outbox, faults, integrity, crashes.

Tamper tests change the file the way a person with the sqlite3 shell would (dropping the
append-only triggers first and putting them back after, so only the checksums can tell).
Crash tests SIGKILL a real subprocess that is inside an append.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.clock import FakeClock
from controller.journal import (
    CREATED_KIND,
    FAULT_KIND,
    FAULTS_CLEARED_KIND,
    GENESIS,
    Journal,
    JournalBusy,
    JournalError,
    JournalRecord,
    JournalUnreadable,
    replace_journal,
    verify_file,
)
from controller.journal.models import APPLICATION_ID, TRIGGERS
from tests.controller.journal_support import Message

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 1, 18, 30, tzinfo=UTC)


@pytest.fixture
def fake() -> FakeClock:
    return FakeClock(start=T0, boot_id="boot-a", step_ns=1_000_000)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "table.journal"


@pytest.fixture
def journal(path: Path, fake: FakeClock) -> Iterator[Journal]:
    with Journal.open(path, clock=fake) as j:
        yield j


def events(*types: str) -> object:
    """An `outgoing` callback producing one "events" message per type, naming the record."""
    def outgoing(record: JournalRecord) -> list[Message]:
        return [Message(topic_suffix="events", type=t, body={"record": record.seq, "i": i})
                for i, t in enumerate(types)]
    return outgoing


def nothing(_record: JournalRecord) -> list[Message]:
    return []


def add(j: Journal, fake: FakeClock, n: int, *, per_record: int = 0) -> None:
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


# ------------------------------------------------------------------------------------------
# opening, settings, schema


def test_new_journal_settings_and_creation_record(journal: Journal, path: Path) -> None:
    with journal._engine.connect() as conn:  # every pooled connection is configured alike
        pragmas = {name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                   for name in ("journal_mode", "synchronous", "foreign_keys")}
    assert pragmas == {"journal_mode": "wal", "synchronous": 2, "foreign_keys": 1}  # 2 = FULL
    con = raw(path)
    assert con.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    con.close()
    [created] = list(journal.records())
    assert (created.seq, created.kind) == (1, CREATED_KIND)
    assert created.payload == {"schema": 1, "outbox_seq_base": 0}
    assert created.wall == T0 and created.boot_id == "boot-a"
    assert journal.last_seq() == 0 and journal.last_record_seq() == 1
    assert journal.verify() == []


def test_open_refuses_what_is_not_a_journal(tmp_path: Path) -> None:
    with pytest.raises(JournalUnreadable, match="no journal"):
        Journal.open(tmp_path / "missing", create=False)
    with pytest.raises(JournalUnreadable, match="no journal"):
        Journal.open(tmp_path / "missing", read_only=True)
    empty = tmp_path / "empty"
    empty.touch()  # an emptied journal is never silently re-created
    with pytest.raises(JournalUnreadable, match="not a showdown journal"):
        Journal.open(empty)
    other = tmp_path / "other.db"
    con = raw(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(JournalUnreadable, match="not a showdown journal"):
        Journal.open(other)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(bytes(random.Random(1).getrandbits(8) for _ in range(8192)))
    with pytest.raises(JournalUnreadable):
        Journal.open(garbage)
    assert not Path(f"{garbage}-wal").exists()


def test_open_refuses_a_log_without_its_main_file(path: Path, fake: FakeClock) -> None:
    Journal.open(path, clock=fake).close()
    Path(f"{path}-wal").write_bytes(b"")
    path.unlink()
    with pytest.raises(JournalUnreadable, match="was removed"):
        Journal.open(path)


def test_one_writer_many_readers(journal: Journal, path: Path, fake: FakeClock) -> None:
    with pytest.raises(JournalBusy, match="another process"):
        Journal.open(path)
    add(journal, fake, 2)
    with Journal.open(path, read_only=True) as reader:  # readers need no lock
        assert [r.seq for r in reader.records()] == [1, 2, 3]
        with pytest.raises(JournalError, match="read-only"):
            reader.append(kind="card", payload={}, clock=fake(), outgoing=nothing)
        with pytest.raises(JournalError, match="read-only"):
            reader.record_fault("x", "y")
    journal.close()
    Journal.open(path).close()  # the lock went with the writer


# ------------------------------------------------------------------------------------------
# appending and replay


def test_append_then_replay_in_order(journal: Journal, fake: FakeClock) -> None:
    payloads = [{"card": c, "seat": s} for c, s in [("Ah", 1), ("Kd", 2), ("5s", 1), ("Tc", 0)]]
    for p in payloads:
        journal.append(kind="card", payload=p, clock=fake(), outgoing=nothing)
    replayed = list(journal.records())
    assert [r.seq for r in replayed] == [1, 2, 3, 4, 5]
    assert [r.payload for r in replayed[1:]] == payloads
    assert [r.payload for r in journal.records(after=3)] == payloads[2:]
    assert [r.wall for r in replayed] == [T0 + timedelta(milliseconds=i) for i in range(5)]
    assert all(b.mono_ns - a.mono_ns == 1_000_000 for a, b in itertools.pairwise(replayed))


def test_records_stream_in_batches(journal: Journal, fake: FakeClock,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("controller.journal.store._BATCH", 3)
    add(journal, fake, 10)
    assert [r.seq for r in journal.records()] == list(range(1, 12))
    assert [r.seq for r in journal.records(after=9)] == [10, 11]


def test_outgoing_sees_the_record_and_messages_get_consecutive_seqs(
        journal: Journal, fake: FakeClock) -> None:
    seen: list[JournalRecord] = []

    def outgoing(record: JournalRecord) -> list[Message]:
        seen.append(record)
        return [Message(topic_suffix="events", type="hand.settled", body={"hand_id": "H1"}),
                Message(topic_suffix="scores", type="score.recorded", body={"net_cents": -2500}),
                Message(topic_suffix="status", type="status", body={"ok": True}, retain=True)]

    clock = fake()
    record, messages = journal.append(kind="settle", payload={"hand_id": "H1"}, clock=clock,
                                      outgoing=outgoing)
    assert seen == [record]
    assert record.seq == 2 and record.payload == {"hand_id": "H1"}
    assert [m.seq for m in messages] == [1, 2, 3]
    assert {m.record_seq for m in messages} == {2}
    assert [m.retain for m in messages] == [False, False, True]
    assert all((m.wall, m.mono_ns, m.boot_id) == (clock.wall, clock.mono_ns, clock.boot_id)
               for m in messages)
    assert journal.messages(1) == messages
    _, more = journal.append(kind="card", payload={}, clock=fake(), outgoing=events("x"))
    assert [m.seq for m in more] == [4]
    assert journal.last_seq() == 4


def test_failed_apply_rolls_everything_back(journal: Journal, path: Path,
                                            fake: FakeClock) -> None:
    add(journal, fake, 1, per_record=2)

    def explode(_record: JournalRecord) -> list[Message]:
        raise RuntimeError("apply failed")

    with pytest.raises(RuntimeError, match="apply failed"):
        journal.append(kind="card", payload={"n": 99}, clock=fake(), outgoing=explode)
    bad_results = [
        lambda _r: [Message(topic_suffix="elsewhere", type="x", body={})],  # type: ignore[arg-type]
        lambda _r: [Message(topic_suffix="events", type="", body={})],
        lambda _r: [Message(topic_suffix="events", type="x", body={"v": {1, 2}})],  # not JSON
        lambda _r: ["not a message"],
        lambda _r: None,
    ]
    for outgoing in bad_results:
        with pytest.raises(JournalError):
            journal.append(kind="card", payload={"n": 99}, clock=fake(), outgoing=outgoing)
    assert journal.counts() == {"records": 2, "messages": 2, "pending": 2}
    assert all(r.payload.get("n") != 99 for r in journal.records())
    record, messages = journal.append(kind="card", payload={}, clock=fake(),
                                      outgoing=events("x"))
    assert (record.seq, [m.seq for m in messages]) == (3, [3])  # no seq was used up
    assert journal.verify() == []


def test_any_message_shaped_object_is_accepted(journal: Journal, fake: FakeClock) -> None:
    """The table service has its own outgoing type; the journal reads the attributes."""

    @dataclass(frozen=True)
    class Theirs:
        topic_suffix: str
        type: str
        body: dict[str, object]
        retain: bool = False

    _, [message] = journal.append(
        kind="dealer", payload={}, clock=fake(),
        outgoing=lambda _r: [Theirs("scores", "score.recorded", {"score": 200_000})])
    assert (message.topic_suffix, message.type, message.body) == (
        "scores", "score.recorded", {"score": 200_000})
    with pytest.raises(JournalError, match="retain"):
        journal.append(kind="dealer", payload={}, clock=fake(),
                       outgoing=lambda _r: [Theirs("events", "x", {}, retain=1)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "payload", "message"),
    [
        ("journal.fault", {}, "reserved"),
        ("", {}, "kind"),
        (" card", {}, "kind"),
        ("card", {"x": float("nan")}, "JSON"),
        ("card", {"x": object()}, "JSON"),
        ("card", ["not", "a", "mapping"], "mapping"),
    ],
)
def test_append_refuses_bad_input(journal: Journal, fake: FakeClock, kind: str, payload: object,
                                  message: str) -> None:
    with pytest.raises(JournalError, match=message):
        journal.append(kind=kind, payload=payload, clock=fake(), outgoing=nothing)  # type: ignore[arg-type]
    assert journal.counts()["records"] == 1


def test_append_from_inside_outgoing_is_refused(journal: Journal, fake: FakeClock) -> None:
    def reenter(_record: JournalRecord) -> list[Message]:
        journal.append(kind="card", payload={}, clock=fake(), outgoing=nothing)
        return []

    with pytest.raises(JournalError, match="inside its own append"):
        journal.append(kind="card", payload={}, clock=fake(), outgoing=reenter)
    assert journal.counts()["records"] == 1


def test_appends_from_several_threads_are_serialised(journal: Journal, fake: FakeClock) -> None:
    readings = [fake() for _ in range(40)]  # taken up front: FakeClock is not thread-safe

    def worker(w: int) -> None:
        for i in range(10):
            journal.append(kind="card", payload={"w": w, "i": i}, clock=readings[w * 10 + i],
                           outgoing=events("a", "b"))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = list(journal.records())
    assert [r.seq for r in records] == list(range(1, 42))
    assert sorted((r.payload["w"], r.payload["i"]) for r in records[1:]) == [
        (w, i) for w in range(4) for i in range(10)]
    assert journal.verify() == []
    assert_consistent_pairs(journal)


def assert_consistent_pairs(journal: Journal) -> None:
    """Each record's two messages are consecutive: no other append got in between."""
    messages = journal.messages(1)
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    for a, b in zip(messages[::2], messages[1::2], strict=True):
        assert (a.record_seq, a.type, b.type) == (b.record_seq, "a", "b")


def test_seq_is_contiguous_across_reopening(path: Path, fake: FakeClock) -> None:
    for _ in range(3):
        with Journal.open(path, clock=fake) as j:
            add(j, fake, 2, per_record=1)
    with Journal.open(path, clock=fake) as j:
        assert [r.seq for r in j.records()] == list(range(1, 8))
        assert [m.seq for m in j.messages(1)] == list(range(1, 7))
        assert j.last_seq() == 6
        assert j.verify() == []


def test_payload_is_stored_as_canonical_json(journal: Journal, path: Path,
                                             fake: FakeClock) -> None:
    journal.append(kind="card", payload={"b": [1, 2], "a": "é", "c": {"z": None, "y": True}},
                   clock=fake(), outgoing=nothing)
    con = raw(path)
    stored = con.execute("SELECT payload FROM journal WHERE seq = 2").fetchone()[0]
    con.close()
    assert stored == '{"a":"é","b":[1,2],"c":{"y":true,"z":null}}'


def test_checksums_follow_the_documented_encoding(journal: Journal, path: Path,
                                                  fake: FakeClock) -> None:
    """Recomputed here from docs/journal.md alone, so a technician's script can do the same."""
    add(journal, fake, 2, per_record=1)
    con = raw(path)
    con.row_factory = sqlite3.Row
    prev = "0" * 64
    for row in con.execute("SELECT * FROM journal ORDER BY seq"):
        material = ["showdown.journal.v1", row["seq"], row["kind"], row["payload"], row["wall"],
                    row["mono_ns"], row["boot_id"],
                    None if row["synced"] is None else bool(row["synced"]), prev]
        text = json.dumps(material, separators=(",", ":"), ensure_ascii=False)
        assert row["prev_checksum"] == prev
        assert row["checksum"] == hashlib.sha256(text.encode()).hexdigest()
        prev = row["checksum"]
    prev = "0" * 64
    for row in con.execute("SELECT * FROM outbox ORDER BY seq"):
        material = ["showdown.outbox.v1", row["seq"], row["record_seq"], row["topic_suffix"],
                    row["type"], row["body"], bool(row["retain"]), row["wall"], row["mono_ns"],
                    row["boot_id"], None if row["synced"] is None else bool(row["synced"]), prev]
        text = json.dumps(material, separators=(",", ":"), ensure_ascii=False)
        assert row["checksum"] == hashlib.sha256(text.encode()).hexdigest()
        prev = row["checksum"]
    head = con.execute("SELECT journal_seq, outbox_seq FROM head").fetchone()
    con.close()
    assert tuple(head) == (3, 2)
    assert GENESIS == "0" * 64


def test_clock_fields_are_stored_including_sync_state(journal: Journal, fake: FakeClock) -> None:
    fake.synced = False
    record, [message] = journal.append(kind="card", payload={}, clock=fake(),
                                       outgoing=events("x"))
    fake.synced = None
    journal.append(kind="card", payload={}, clock=fake(), outgoing=nothing)
    stored = list(journal.records())
    assert [r.synced for r in stored] == [True, False, None]
    assert stored[1] == record
    assert journal.messages(1)[0].synced is False and message.synced is False


# ------------------------------------------------------------------------------------------
# outbox delivery


def test_pending_delivered_and_resend_ranges(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        j.append(kind="card", payload={}, clock=fake(), outgoing=events("a", "b", "c"))
        j.append(kind="card", payload={}, clock=fake(), outgoing=events("d", "e"))
        assert [m.seq for m in j.pending()] == [1, 2, 3, 4, 5]
        j.mark_delivered(1)
        j.mark_delivered(2)
        j.mark_delivered(2)  # a second PUBACK changes nothing
        j.mark_delivered(4)  # out of order is allowed; pending stays in seq order
        assert [m.seq for m in j.pending()] == [3, 5]
        assert [m.seq for m in j.pending(limit=1)] == [3]
        with pytest.raises(JournalError, match="no outbox message with seq 9"):
            j.mark_delivered(9)
    with Journal.open(path, clock=fake) as j:  # delivery state survives a restart
        assert [m.seq for m in j.pending()] == [3, 5]
        resend = j.messages(2, 4)
        assert [(m.seq, m.type, m.delivered) for m in resend] == [
            (2, "b", True), (3, "c", False), (4, "d", True)]
        assert [m.seq for m in j.messages(4)] == [4, 5]
        assert j.messages(6) == []
        assert j.verify() == []  # delivery is not content: the checksums still hold


# ------------------------------------------------------------------------------------------
# faults


def test_faults_persist_until_an_operator_clears_them(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        first = j.record_fault("integrity", "journal seq 7: checksum mismatch")
        second = j.record_fault("device", "shoe   silent\nfor 30 s")
        assert second.detail == "shoe silent for 30 s"  # one line in logs and displays
    for _ in range(3):  # restarts and ordinary work never clear a fault
        with Journal.open(path, clock=fake) as j:
            add(j, fake, 1)
            assert [f.seq for f in j.open_faults()] == [first.seq, second.seq]
    with Journal.open(path, clock=fake) as j:
        with pytest.raises(JournalError, match="operator"):
            j.clear_faults(" ", "fixed")
        with pytest.raises(JournalError, match="reason"):
            j.clear_faults("T. Nkosi", "")
        cleared = j.clear_faults("T. Nkosi (tech 114)", "shoe cable replaced; journal verified")
        assert cleared is not None and cleared.kind == FAULTS_CLEARED_KIND
        assert cleared.payload == {
            "operator": "T. Nkosi (tech 114)",
            "reason": "shoe cable replaced; journal verified",
            "faults": [{"seq": first.seq, "kind": "integrity", "detail": first.detail},
                       {"seq": second.seq, "kind": "device", "detail": second.detail}],
        }
        assert j.open_faults() == []
        assert j.clear_faults("T. Nkosi", "again") is None  # nothing open: nothing recorded
        later = j.record_fault("device", "rfid reader 2 lost")
    with Journal.open(path, clock=fake) as j:
        assert [f.seq for f in j.open_faults()] == [later.seq]
        kinds = [r.kind for r in j.records()]
        assert kinds.count(FAULT_KIND) == 3 and kinds.count(FAULTS_CLEARED_KIND) == 1
        assert j.verify() == []


def test_faults_are_not_cleared_on_a_damaged_journal(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 3)
        j.record_fault("integrity", "found at start")
    tamper(path, "UPDATE journal SET payload = '{\"n\":7}' WHERE seq = 2")
    with Journal.open(path, clock=fake) as j:
        with pytest.raises(JournalError, match="fails verification"):
            j.clear_faults("T. Nkosi", "try")
        assert len(j.open_faults()) == 1


# ------------------------------------------------------------------------------------------
# integrity: tampering is detected


@pytest.fixture
def built(path: Path, fake: FakeClock) -> Path:
    """A closed journal: records 2-7 each caused one message (outbox 1-6); 8 caused none."""
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 6, per_record=1)
        add(j, fake, 1)
        assert j.verify() == []
    return path


def test_triggers_refuse_plain_changes(built: Path) -> None:
    con = raw(built)
    for sql in ("UPDATE journal SET payload = '{}' WHERE seq = 3",
                "DELETE FROM journal WHERE seq = 8",
                "UPDATE outbox SET body = '{}' WHERE seq = 1",
                "DELETE FROM outbox WHERE seq = 6",
                "DELETE FROM head"):
        with pytest.raises(sqlite3.IntegrityError, match=r"append-only|required"):
            con.execute(sql)
    con.execute("UPDATE outbox SET delivered = 1 WHERE seq = 1")  # delivery may change
    con.close()
    assert verify_file(built) == []


def test_edited_payload(built: Path) -> None:
    tamper(built, "UPDATE journal SET payload = '{\"n\":5}' WHERE seq = 4")
    assert found(verify_file(built)) == {("journal", "checksum_mismatch", 4)}


def test_corrupt_json_payload(built: Path) -> None:
    tamper(built, "UPDATE journal SET payload = '{\"n\":' WHERE seq = 4")
    problems = verify_file(built)
    assert found(problems) == {("journal", "checksum_mismatch", 4), ("journal", "not_json", 4)}
    with Journal.open(built, read_only=True) as j, pytest.raises(JournalError, match="seq 4"):
        list(j.records())


def test_edited_wall_time_and_wrong_types(built: Path) -> None:
    tamper(built, "UPDATE journal SET wall = '2020-01-01T00:00:00.000000+00:00' WHERE seq = 3",
           "UPDATE journal SET mono_ns = 'soon' WHERE seq = 5",
           "UPDATE journal SET payload = X'00ff' WHERE seq = 6")
    problems = verify_file(built)
    assert {("journal", "checksum_mismatch", 3), ("journal", "checksum_mismatch", 5),
            ("journal", "checksum_mismatch", 6)} <= found(problems)


def test_deleted_last_record(built: Path) -> None:
    tamper(built, "DELETE FROM journal WHERE seq = 8")  # the last: only the head can tell
    assert found(verify_file(built)) == {("head", "head_mismatch", 7)}


def test_deleted_record_and_its_message(built: Path) -> None:
    tamper(built, "DELETE FROM outbox WHERE record_seq = 4", "DELETE FROM journal WHERE seq = 4")
    assert found(verify_file(built)) == {
        ("journal", "seq_gap", 4), ("journal", "chain_broken", 5),
        ("outbox", "seq_gap", 3), ("outbox", "chain_broken", 4)}


def test_deleted_record_leaving_an_orphan_message(built: Path) -> None:
    tamper(built, "DELETE FROM journal WHERE seq = 4")  # foreign keys are off in the shell
    assert found(verify_file(built)) == {
        ("journal", "seq_gap", 4), ("journal", "chain_broken", 5), ("outbox", "orphan", 3)}


def test_swapped_records(built: Path) -> None:
    tamper(built, "UPDATE journal SET seq = 1000 WHERE seq = 4",
           "UPDATE journal SET seq = 4 WHERE seq = 5",
           "UPDATE journal SET seq = 5 WHERE seq = 1000")
    got = found(verify_file(built))
    assert {("journal", "checksum_mismatch", 4), ("journal", "checksum_mismatch", 5)} <= got
    assert {("journal", "chain_broken", 4), ("journal", "chain_broken", 6)} <= got


def test_swapped_contents_with_checksums(built: Path) -> None:
    """Swapping whole rows (checksums too) keeping seq still breaks the seq and the chain."""
    tamper(built,
           "CREATE TEMP TABLE a AS SELECT * FROM journal WHERE seq = 3",
           "CREATE TEMP TABLE b AS SELECT * FROM journal WHERE seq = 5",
           "UPDATE journal SET (kind, payload, wall, mono_ns, boot_id, synced, prev_checksum, "
           "checksum) = (SELECT kind, payload, wall, mono_ns, boot_id, synced, prev_checksum, "
           "checksum FROM b) WHERE seq = 3",
           "UPDATE journal SET (kind, payload, wall, mono_ns, boot_id, synced, prev_checksum, "
           "checksum) = (SELECT kind, payload, wall, mono_ns, boot_id, synced, prev_checksum, "
           "checksum FROM a) WHERE seq = 5")
    got = found(verify_file(built))
    assert {("journal", "checksum_mismatch", 3), ("journal", "checksum_mismatch", 5)} <= got


def test_edited_and_deleted_messages(built: Path) -> None:
    tamper(built, "UPDATE outbox SET body = '{\"i\":0,\"record\":99}' WHERE seq = 2")
    assert found(verify_file(built)) == {("outbox", "checksum_mismatch", 2)}
    with Journal.open(built, read_only=True) as j:
        assert j.verify_message(2) == ["checksum mismatch: the stored message was changed"]
        assert j.verify_message(3) == []
        [checked] = j.latest_messages(["card.read"], 5)[:1]
        assert checked.seq == 2 and checked.problems


def test_deleted_last_message(built: Path) -> None:
    tamper(built, "DELETE FROM outbox WHERE seq = 6")
    assert found(verify_file(built)) == {("head", "head_mismatch", 5)}


def test_edited_head(built: Path) -> None:
    tamper(built, "UPDATE head SET journal_seq = 20")
    assert found(verify_file(built)) == {("head", "head_mismatch", 8)}


def test_forged_clearing_record_is_caught(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        j.record_fault("integrity", "x")
        j.clear_faults("T. Nkosi", "fixed")
    tamper(path, "UPDATE journal SET kind = 'card' WHERE kind = 'journal.fault'")
    got = found(verify_file(path))
    assert ("journal", "checksum_mismatch", 2) in got
    assert ("faults", "bad_clearing", 3) in got


def test_removed_trigger(built: Path) -> None:
    con = raw(built)
    con.execute("DROP TRIGGER journal_no_delete")
    con.close()
    assert found(verify_file(built)) == {("database", "trigger_missing", None)}


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.1, 0.0])
def test_truncated_file(path: Path, fake: FakeClock, keep: float) -> None:
    with Journal.open(path, clock=fake) as j:
        for i in range(40):  # enough rows for a few dozen pages
            j.append(kind="card", payload={"n": i, "pad": "x" * 3000}, clock=fake(),
                     outgoing=events("card.read"))
    assert not Path(f"{path}-wal").exists()  # checkpointed into the main file on close
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(int(size * keep))
    problems = verify_file(path)  # never raises
    assert problems
    assert all(p.area in {"database", "journal", "outbox", "head"} for p in problems)


def test_garbage_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    [problem] = verify_file(garbage)
    assert (problem.area, problem.code) == ("database", "unreadable")
    assert str(garbage) in problem.detail
    [missing] = verify_file(tmp_path / "nothing")
    assert "no journal" in missing.detail


def test_bit_rot_in_a_stored_value_is_detected(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        for i in range(50):
            j.append(kind="card", payload={"n": i, "card": "Qh"}, clock=fake(), outgoing=nothing)
    data = bytearray(path.read_bytes())
    at = data.index(b'{"card":"Qh","n":17}')
    data[at + 10] = ord("s")  # Qh -> Qs, as a failing disk might
    path.write_bytes(bytes(data))
    assert found(verify_file(path)) == {("journal", "checksum_mismatch", 19)}


def test_overwritten_page_is_detected(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        for i in range(200):
            j.append(kind="card", payload={"n": i, "pad": "y" * 300}, clock=fake(),
                     outgoing=nothing)
    page = 4096
    with path.open("r+b") as f:
        f.seek(page * 5)
        f.write(b"\xa5" * page)
    problems = verify_file(path)
    assert problems
    assert any(p.area == "database" for p in problems)


# ------------------------------------------------------------------------------------------
# crashes: a real subprocess killed inside an append

CHILD = r"""
import random, sys, time
from controller.clock import system_clock
from dataclasses import dataclass
from controller.journal import Journal

@dataclass(frozen=True)
class Outgoing:
    topic_suffix: str
    type: str
    body: dict
    retain: bool = False

path, mode, arg = sys.argv[1], sys.argv[2], int(sys.argv[3])

def messages(record, k):
    return [Outgoing(topic_suffix="events", type="card.read", body={"record": record.seq, "i": i})
            for i in range(k)]

j = Journal.open(path)
if mode == "inside":
    for i in range(arg):
        j.append(kind="card", payload={"n": i, "messages": 1}, clock=system_clock(),
                 outgoing=lambda r: messages(r, 1))

    def doomed(record):
        print("inside", record.seq, flush=True)
        time.sleep(120)
        return messages(record, 3)

    # a payload larger than SQLite's page cache, so uncommitted pages reach the WAL file
    j.append(kind="card", payload={"doomed": True, "pad": "z" * 6_000_000, "messages": 3},
             clock=system_clock(), outgoing=doomed)
    print("committed", flush=True)
else:
    rng = random.Random(arg)
    print("ready", flush=True)
    i = 0
    while True:
        k = rng.randrange(4)
        j.append(kind="card", payload={"n": i, "messages": k}, clock=system_clock(),
                 outgoing=lambda r, k=k: messages(r, k))
        i += 1
"""


def start_child(path: Path, mode: str, arg: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), mode, str(arg)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


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


def test_sigkill_inside_an_append_leaves_no_trace(path: Path) -> None:
    proc = start_child(path, "inside", 3)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.split() == ["inside", "5"], proc.stderr.read() if proc.stderr else ""
        # the uncommitted record's pages spilled into the log (committed ones take a few KB)
        assert Path(f"{path}-wal").stat().st_size > 1_000_000
    finally:
        kill(proc)
    # read-only first, as `showdown recall` would after the crash, with the daemon down
    with Journal.open(path, read_only=True) as j:
        assert [r.seq for r in j.records()] == [1, 2, 3, 4]
    records = assert_consistent(path)
    assert all("doomed" not in r.payload for r in records)
    with Journal.open(path) as j:  # the killed writer's lock is gone; seqs carry on
        record, [message] = j.append(kind="card", payload={"messages": 1}, clock=FakeClock()(),
                                     outgoing=events("after"))
        assert (record.seq, message.seq) == (5, 4)
    assert_consistent(path)


def test_sigkill_at_random_points(path: Path) -> None:
    rng = random.Random(20260301)
    total = 0
    for round_ in range(6):
        proc = start_child(path, "loop", round_)
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.02, 0.25))
        finally:
            kill(proc)
        records = assert_consistent(path)
        assert len(records) > total or round_ == 0
        total = len(records)
    assert total > 6  # the children did get work done between kills


# ------------------------------------------------------------------------------------------
# replacing a damaged journal


def test_replace_refuses_a_clean_journal(built: Path) -> None:
    with pytest.raises(JournalError, match="verifies clean"):
        replace_journal(built, operator="T. Nkosi", reason="test")


def test_replace_keeps_the_damaged_file_and_continues_the_seq(built: Path, fake: FakeClock
                                                              ) -> None:
    with Journal.open(built, clock=fake) as j:
        j.record_fault("integrity", "checksum mismatch at start")
    tamper(built, "UPDATE journal SET payload = '{\"n\":9}' WHERE seq = 3")
    before = hashlib.sha256(built.read_bytes()).hexdigest()
    done = replace_journal(built, operator="T. Nkosi", reason="journal damaged", clock=fake)
    assert done.retired.exists() and done.retired.name.startswith("table.journal.retired-")
    assert hashlib.sha256(done.retired.read_bytes()).hexdigest() == before == done.sha256
    assert done.last_seq == 6
    assert verify_file(done.retired)  # still damaged, kept as it was
    with Journal.open(built, clock=fake) as j:
        assert j.verify() == []
        assert j.open_faults() == []
        [created] = list(j.records())
        replaces = created.payload["replaces"]
        assert created.payload["outbox_seq_base"] == 6
        assert (replaces["operator"], replaces["reason"], replaces["last_seq"]) == (
            "T. Nkosi", "journal damaged", 6)
        assert replaces["file"] == done.retired.name and replaces["sha256"] == before
        assert replaces["open_faults"] == [
            "fault seq 9 (integrity): checksum mismatch at start"]
        assert any("seq 3" in p for p in replaces["problems"])
        assert j.last_seq() == 6
        _, [message] = j.append(kind="card", payload={}, clock=fake(), outgoing=events("x"))
        assert message.seq == 7
        assert j.verify() == []


def test_replace_an_unreadable_file_needs_the_last_seq(path: Path, fake: FakeClock) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 3, per_record=2)
    path.write_bytes(b"\x00" * 8192)
    with pytest.raises(JournalError, match="cannot be read"):
        replace_journal(path, operator="T. Nkosi", reason="disk fault")
    done = replace_journal(path, operator="T. Nkosi", reason="disk fault", last_seq=6,
                           clock=fake)
    assert done.last_seq == 6
    with Journal.open(path) as j:
        assert j.last_seq() == 6 and j.verify() == []


def test_replace_refuses_to_reuse_seqs(built: Path) -> None:
    tamper(built, "UPDATE outbox SET body = '{}' WHERE seq = 1")
    with pytest.raises(JournalError, match="reuse"):
        replace_journal(built, operator="T. Nkosi", reason="x", last_seq=3)


def test_replace_refuses_while_the_daemon_writes(built: Path) -> None:
    tamper(built, "UPDATE outbox SET body = '{}' WHERE seq = 1")
    with Journal.open(built), pytest.raises(JournalBusy):
        replace_journal(built, operator="T. Nkosi", reason="x")
    assert built.exists()


# ------------------------------------------------------------------------------------------
# properties: any mix of successful and failed appends keeps both seqs contiguous

step = st.tuples(st.integers(min_value=0, max_value=3), st.booleans())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=8))
def test_any_mix_of_appends_keeps_a_whole_record(steps: list[tuple[int, bool]]) -> None:
    fake = FakeClock(start=T0)
    expected: list[tuple[int, int]] = []  # (record seq, messages) of committed appends
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "j"
        with Journal.open(where, clock=fake) as j:
            for k, fails in steps:
                def outgoing(record: JournalRecord, k: int = k, fails: bool = fails
                             ) -> list[Message]:
                    if fails:
                        raise ValueError("refused")
                    return [Message(topic_suffix="events", type="t", body={"i": i})
                            for i in range(k)]
                try:
                    record, _ = j.append(kind="card", payload={"messages": k}, clock=fake(),
                                         outgoing=outgoing)
                except ValueError:
                    assert fails
                else:
                    expected.append((record.seq, k))
            assert [seq for seq, _ in expected] == list(range(2, 2 + len(expected)))
            assert [m.record_seq for m in j.messages(1)] == [
                seq for seq, k in expected for _ in range(k)]
        assert_consistent(where)

