"""controller.journal: tampering is detected, a SIGKILL inside an append leaves no trace, and
a damaged journal is replaced (kept, its seq continued).

Tamper tests change the file the way a person with the sqlite3 shell would (dropping the
append-only triggers first and putting them back after, so only the checksums can tell).
Crash tests SIGKILL a real subprocess that is inside an append.
"""

from __future__ import annotations

import hashlib
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.clock import FakeClockSource
from controller.journal import (
    Journal,
    JournalBusy,
    JournalError,
    replace_journal,
    verify_file,
)
from tests.controller.journal.support import (
    ROOT,
    add,
    assert_consistent,
    events,
    found,
    nothing,
    raw,
    tamper,
)

# ------------------------------------------------------------------------------------------
# integrity: tampering is detected


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


def test_forged_clearing_record_is_caught(path: Path, fake: FakeClockSource) -> None:
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
def test_truncated_file(path: Path, fake: FakeClockSource, keep: float) -> None:
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


def test_bit_rot_in_a_stored_value_is_detected(path: Path, fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        for i in range(50):
            j.append(kind="card", payload={"n": i, "card": "Qh"}, clock=fake(), outgoing=nothing)
    data = bytearray(path.read_bytes())
    at = data.index(b'{"card":"Qh","n":17}')
    data[at + 10] = ord("s")  # Qh -> Qs, as a failing disk might
    path.write_bytes(bytes(data))
    assert found(verify_file(path)) == {("journal", "checksum_mismatch", 19)}


def test_overwritten_page_is_detected(path: Path, fake: FakeClockSource) -> None:
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
        record, [message] = j.append(kind="card", payload={"messages": 1},
                                     clock=FakeClockSource()(),
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


def test_replace_keeps_the_damaged_file_and_continues_the_seq(built: Path, fake: FakeClockSource
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


def test_replace_an_unreadable_file_needs_the_last_seq(path: Path, fake: FakeClockSource) -> None:
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
