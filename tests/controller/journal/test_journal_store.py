"""controller.journal: journal-first appends, replay, the outbox, faults, and a property:
any mix of appends that succeed and fail keeps both seqs contiguous."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import sqlite3
import tempfile
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.clock import FakeClockSource
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
    canonical_json,
)
from controller.journal.models import APPLICATION_ID
from tests.controller.journal.support import (
    T0,
    Message,
    add,
    assert_consistent,
    events,
    nothing,
    raw,
    tamper,
)

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



def test_a_creation_cut_short_leaves_only_its_staging_file(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    staging = tmp_path / "journal.sqlite.creating"
    staging.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)  # a kill mid-creation
    Path(f"{staging}-wal").write_bytes(b"torn")
    with Journal.open(path) as journal:
        assert [r.kind for r in journal.records()] == ["journal.created"]
        assert journal.verify() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.sqlite", "journal.sqlite.lock"]

def test_open_refuses_a_log_without_its_main_file(path: Path, fake: FakeClockSource) -> None:
    Journal.open(path, clock=fake).close()
    Path(f"{path}-wal").write_bytes(b"")
    path.unlink()
    with pytest.raises(JournalUnreadable, match="was removed"):
        Journal.open(path)


def test_one_writer_many_readers(journal: Journal, path: Path, fake: FakeClockSource) -> None:
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


def test_append_then_replay_in_order(journal: Journal, fake: FakeClockSource) -> None:
    payloads = [{"card": c, "seat": s} for c, s in [("Ah", 1), ("Kd", 2), ("5s", 1), ("Tc", 0)]]
    for p in payloads:
        journal.append(kind="card", payload=p, clock=fake(), outgoing=nothing)
    replayed = list(journal.records())
    assert [r.seq for r in replayed] == [1, 2, 3, 4, 5]
    assert [r.payload for r in replayed[1:]] == payloads
    assert [r.payload for r in journal.records(after=3)] == payloads[2:]
    assert [r.wall for r in replayed] == [T0 + timedelta(milliseconds=i) for i in range(5)]
    assert all(b.mono_ns - a.mono_ns == 1_000_000 for a, b in itertools.pairwise(replayed))


def test_records_stream_in_batches(journal: Journal, fake: FakeClockSource,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("controller.journal.store._BATCH", 3)
    add(journal, fake, 10)
    assert [r.seq for r in journal.records()] == list(range(1, 12))
    assert [r.seq for r in journal.records(after=9)] == [10, 11]


def test_outgoing_sees_the_record_and_messages_get_consecutive_seqs(
        journal: Journal, fake: FakeClockSource) -> None:
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
                                            fake: FakeClockSource) -> None:
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


def test_any_message_shaped_object_is_accepted(journal: Journal, fake: FakeClockSource) -> None:
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
def test_append_refuses_bad_input(journal: Journal, fake: FakeClockSource, kind: str,
                                  payload: object,
                                  message: str) -> None:
    with pytest.raises(JournalError, match=message):
        journal.append(kind=kind, payload=payload, clock=fake(), outgoing=nothing)  # type: ignore[arg-type]
    assert journal.counts()["records"] == 1


def test_append_from_inside_outgoing_is_refused(journal: Journal, fake: FakeClockSource) -> None:
    def reenter(_record: JournalRecord) -> list[Message]:
        journal.append(kind="card", payload={}, clock=fake(), outgoing=nothing)
        return []

    with pytest.raises(JournalError, match="inside its own append"):
        journal.append(kind="card", payload={}, clock=fake(), outgoing=reenter)
    assert journal.counts()["records"] == 1


def test_appends_from_several_threads_are_serialised(journal: Journal,
                                                     fake: FakeClockSource) -> None:
    readings = [fake() for _ in range(40)]  # taken up front: FakeClockSource is not thread-safe

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


def test_seq_is_contiguous_across_reopening(path: Path, fake: FakeClockSource) -> None:
    for _ in range(3):
        with Journal.open(path, clock=fake) as j:
            add(j, fake, 2, per_record=1)
    with Journal.open(path, clock=fake) as j:
        assert [r.seq for r in j.records()] == list(range(1, 8))
        assert [m.seq for m in j.messages(1)] == list(range(1, 7))
        assert j.last_seq() == 6
        assert j.verify() == []


def test_payload_is_stored_as_canonical_json(journal: Journal, path: Path,
                                             fake: FakeClockSource) -> None:
    journal.append(kind="card", payload={"b": [1, 2], "a": "é", "c": {"z": None, "y": True}},
                   clock=fake(), outgoing=nothing)
    con = raw(path)
    stored = con.execute("SELECT payload FROM journal WHERE seq = 2").fetchone()[0]
    con.close()
    assert stored == '{"a":"é","b":[1,2],"c":{"y":true,"z":null}}'


def test_checksums_follow_the_documented_encoding(journal: Journal, path: Path,
                                                  fake: FakeClockSource) -> None:
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


def test_clock_fields_are_stored_including_sync_state(journal: Journal,
                                                      fake: FakeClockSource) -> None:
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


def test_pending_delivered_and_resend_ranges(path: Path, fake: FakeClockSource) -> None:
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


def test_faults_persist_until_an_operator_clears_them(path: Path, fake: FakeClockSource) -> None:
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


def test_faults_are_not_cleared_on_a_damaged_journal(path: Path, fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 3)
        j.record_fault("integrity", "found at start")
    tamper(path, "UPDATE journal SET payload = '{\"n\":7}' WHERE seq = 2")
    with Journal.open(path, clock=fake) as j:
        with pytest.raises(JournalError, match="fails verification"):
            j.clear_faults("T. Nkosi", "try")
        assert len(j.open_faults()) == 1


# ------------------------------------------------------------------------------------------
# properties: any mix of successful and failed appends keeps both seqs contiguous

step = st.tuples(st.integers(min_value=0, max_value=3), st.booleans())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=8))
def test_any_mix_of_appends_keeps_a_whole_record(steps: list[tuple[int, bool]]) -> None:
    fake = FakeClockSource(start=T0)
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


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [1.5, None, True, "é€ ü"], "c": {"z": -0.0, "y": 1e16}},
    {"card": "Ah", "quality": 99, "seat": 3, "uids": ["e05e0101", "e05e0102"]},
    [], {}, "text", 0,
])
def test_the_stored_text_is_the_one_the_journal_always_wrote(value: object) -> None:
    """The journal's canonical text is the envelope's canonical JSON as text, and the same
    characters the journal wrote before it reused it: existing checksums still match."""
    before = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                        allow_nan=False)
    assert canonical_json(value) == before
