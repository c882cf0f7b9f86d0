"""controller.journal rotation: the new file continues both chains and starts with a checkpoint,
the old one is kept read-only and named; a SIGKILL at each step of a rotation (a real
subprocess stopped there by the test hook) leaves one usable current journal; recall reaches
hands across a rotation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalError, verify_file
from controller.journal.checkpoints import find_checkpoints
from controller.journal.rotation import (
    HOOK_ENV,
    journal_files,
    previous_file,
    recover_rotation,
    rotate_journal,
)
from controller.journal.verified_head import verify
from tests.controller.journal.support import ROOT, Message, add, events
from wire.signing import Signer

KEY = Signer.from_seed("t01", b"k" * 32)
GUARD_S = 60.0  # against a hang only


def delivered(path: Path) -> None:
    with Journal.open(path) as j:
        for m in j.pending(1000):
            j.mark_delivered(m.seq)


def test_the_new_file_continues_both_chains_and_starts_with_a_checkpoint(
        path: Path, fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 4, per_record=2)
        old_records, old_last = j.last_record_seq(), j.last_seq()
    with pytest.raises(JournalError, match="not yet delivered"):
        rotate_journal(path, state={"n": 1}, snapshot_version=1, signer=KEY, reason="test",
                       clock=fake)
    delivered(path)
    done = rotate_journal(path, state={"n": 1}, snapshot_version=1, signer=KEY,
                          reason="a new month", clock=fake)
    assert done.archived.exists() and done.archived.stat().st_mode & 0o222 == 0
    assert verify_file(done.archived) == [] and verify_file(path) == []
    assert (done.heads.journal_seq, done.heads.outbox_seq) == (old_records, old_last)
    with Journal.open(path, clock=fake) as j:
        first = next(j.records())
        assert first.payload["continues"]["file"] == done.archived.name
        assert first.payload["continues"]["sha256"] == done.sha256
        assert first.payload["continues"]["outbox"]["seq"] == old_last
        assert previous_file(j) == done.archived
        (checkpoint,) = list(find_checkpoints(j, KEY.public_key))
        assert checkpoint.body == {"n": 1} and checkpoint.covers.journal_seq == 1
        assert verify(j, KEY.public_key).scope == "incremental"  # it starts verified
        _, messages = j.append(kind="card", payload={"n": 9}, clock=fake(),
                               outgoing=events("card.read"))  # type: ignore[arg-type]
    assert messages[0].seq == old_last + 1  # the table's message seq goes on
    assert list(journal_files(path)) == [path, done.archived]


def test_first_seq_is_the_lowest_a_resend_can_reach(path: Path, fake: FakeClockSource) -> None:
    """What the table announces as its first resendable seq (D414)."""
    with Journal.open(path, clock=fake) as j:
        assert j.first_seq() == 1  # nothing yet: the next one
        add(j, fake, 4, per_record=2)
        assert j.first_seq() == 1
        old_last = j.last_seq()
    delivered(path)
    rotate_journal(path, state={"n": 1}, snapshot_version=1, signer=KEY, reason="a new month",
                   clock=fake)
    with Journal.open(path, clock=fake) as j:
        assert j.first_seq() == old_last + 1  # before its first message, too
        j.append(kind="card", payload={"n": 9}, clock=fake(),
                 outgoing=events("card.read"))  # type: ignore[arg-type]
        assert j.first_seq() == old_last + 1
        assert [m.seq for m in j.messages(1)] == [old_last + 1]  # all a resend can send


def test_a_rotation_refuses_a_journal_open_for_writing(path: Path,
                                                      fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake), pytest.raises(JournalError, match="another process"):
        rotate_journal(path, state={}, snapshot_version=1, signer=KEY, reason="x", clock=fake)


_ROTATE = """
import sys
from pathlib import Path
from controller.journal.rotation import rotate_journal
from wire.signing import Signer
rotate_journal(Path(sys.argv[1]), state={"n": 1}, snapshot_version=1,
               signer=Signer.from_seed("t01", b"k" * 32), reason="crash test")
"""


@pytest.mark.parametrize("step", ["next_written", "archived"])
def test_a_kill_at_each_step_of_a_rotation_leaves_one_usable_journal(
        path: Path, fake: FakeClockSource, step: str) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 3, per_record=1)
        last = j.last_seq()
    delivered(path)
    marker = path.with_name("paused")
    process = subprocess.Popen(  # a real process, stopped by the hook, then killed
        [sys.executable, "-c", _ROTATE, str(path)], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), HOOK_ENV: step,
             f"{HOOK_ENV}_MARKER": str(marker)})
    deadline = time.monotonic() + GUARD_S
    while not marker.exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = recover_rotation(path)
    assert done is not None
    assert not path.with_name(path.name + ".next").exists()
    assert verify_file(path) == []
    with Journal.open(path, clock=fake) as j:
        rotated = previous_file(j) is not None
        _, messages = j.append(kind="card", payload={"n": 9}, clock=fake(),
                               outgoing=events("card.read"))  # type: ignore[arg-type]
    assert rotated == (step == "archived")  # before the first rename: not rotated
    assert messages[0].seq == last + 1  # no seq lost or reused either way
    assert recover_rotation(path) is None
    archives = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.2")]
    assert len(archives) == (1 if rotated else 0)


def test_recall_reaches_hands_across_a_rotation(path: Path, fake: FakeClockSource,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def hand(n: int) -> list[Message]:
        return [Message(topic_suffix="events", type="hand.settled",
                        body={"hand_id": f"t01-{n:06d}", "status": "settled"})]

    with Journal.open(path, clock=fake) as j:
        for n in range(1, 9):
            j.append(kind="dealer", payload={"n": n}, clock=fake(),
                     outgoing=lambda _r, n=n: hand(n))
    delivered(path)
    rotate_journal(path, state={}, snapshot_version=1, signer=KEY, reason="x", clock=fake)
    with Journal.open(path, clock=fake) as j:
        for n in range(9, 12):
            j.append(kind="dealer", payload={"n": n}, clock=fake(),
                     outgoing=lambda _r, n=n: hand(n))
    assert main(["recall", "--journal", str(path), "--json"]) == 0
    shown = [h["body"]["hand_id"] for h in json.loads(capsys.readouterr().out)["hands"]]
    assert shown == [f"t01-{n:06d}" for n in range(2, 12)]  # the last 10, over both files
    assert main(["recall", "--journal", str(path), "--hand", "t01-000003", "--json"]) == 0
    assert [h["body"]["hand_id"] for h in json.loads(capsys.readouterr().out)["hands"]] == [
        "t01-000003"]
