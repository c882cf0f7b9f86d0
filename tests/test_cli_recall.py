"""`showdown recall`: the last hands from the journal, oldest first, also in the error state (R1).

Hand bodies here are shaped like game.codec's hand records; amounts are integer cents, so
"ante": 2500 must read "R25.00" (rules.md: the unit is R25).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.cli import EXIT_ERROR, main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord
from controller.journal.models import TRIGGERS
from tests.controller.journal.support import Message


def hand_body(n: int) -> dict[str, Any]:
    """Hand n: seat 1 bets R25 Ante/Odds, plays 1x; seat 2 folds (a hand-made example)."""
    return {
        "hand_id": f"T07-{n:04d}",
        "status": "settled",
        "table": "T07",
        "cards": [{"card": "Ah", "target": "seat 1 hole card 1"},
                  {"card": "Kd", "target": "seat 2 hole card 1"},
                  {"card": "5s", "target": "dealer hole card 1"}],
        "board": ["2c", "7d", "9h", "Jc", "Qs"],
        "seats": [{"seat": 1, "entry_id": "E-101", "wagers": {"ante": 2500, "odds": 2500}},
                  {"seat": 2, "entry_id": "E-102", "wagers": {"ante": 5000}}],
        "corrections": ([{"position": 3, "card": "5s", "replaced": "5c",
                          "reason": "misread", "by": "D1"}] if n == 7 else []),
        "nets": {"1": 7500 + n, "2": -5000},
    }


def build(path: Path, hands: int, *, faults: int = 0) -> list[dict[str, Any]]:
    """A journal where every hand is settled after two card reads; returns the hand bodies."""
    fake = FakeClockSource()
    bodies = []
    with Journal.open(path, clock=fake) as j:
        for n in range(1, hands + 1):
            for card in ("Ah", "Kd"):
                j.append(kind="card", payload={"card": card}, clock=fake(),
                         outgoing=lambda _r, c=card: [Message(
                             topic_suffix="events", type="card.read", body={"card": c})])
            body = hand_body(n)
            kind = "hand.voided" if n == 5 else "hand.settled"
            if n == 5:
                body["status"] = "void"
                body["void"] = {"reason": "shoe jammed", "by": "pit boss 3"}

            def settle(_r: JournalRecord, body: dict[str, Any] = body,
                       kind: str = kind) -> list[Message]:
                return [Message(topic_suffix="events", type=kind, body=body),
                        Message(topic_suffix="scores", type="score.recorded",
                                 body={"entry_id": "E-101", "score": 200_000})]

            j.append(kind="dealer", payload={"action": "settle"}, clock=fake(), outgoing=settle)
            bodies.append(body)
        for i in range(faults):
            j.record_fault("integrity", f"problem {i}")
        for m in j.pending(limit=1000)[:-6]:
            j.mark_delivered(m.seq)
    return bodies


def recall(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["recall", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_last_ten_of_twelve_in_original_order_identical_to_what_was_published(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    bodies = build(path, 12)
    code, out, err = recall(capsys, "--journal", str(path), "--json")
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert got["requested"] == 10
    assert [h["body"] for h in got["hands"]] == bodies[2:]
    assert [h["type"] for h in got["hands"]][2] == "hand.voided"  # hand 5
    assert all(h["intact"] and h["problems"] == [] for h in got["hands"])
    assert got["open_faults"] == []
    with Journal.open(path, read_only=True) as j:  # the very messages the outbox publishes
        published = [m.body for m in j.messages(1) if m.type.startswith("hand.")]
    assert [h["body"] for h in got["hands"]] == published[2:]


def test_text_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    build(path, 12)
    code, out, _ = recall(capsys, "--journal", str(path), "--last", "6")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"GAME RECALL (read-only) - journal {path}"
    assert "ERROR STATE" not in out
    headers = [line for line in lines if line.startswith("=== hand ")]
    assert [h.split()[2] for h in headers] == [f"T07-{n:04d}" for n in range(7, 13)]
    assert "message seq 27, " in headers[0]  # hand 7: four messages per hand, its third
    assert headers[-1].endswith("NOT YET DELIVERED]")  # the last six messages are pending
    assert headers[0].endswith(", delivered]")
    first = lines[lines.index(headers[0]):lines.index(headers[1])]
    assert "  cards:" in first
    assert "    - card Ah, target seat 1 hole card 1" in first
    assert "  board: 2c 7d 9h Jc Qs" in first
    assert "    - seat: 1" in first
    assert "      wagers: ante R25.00, odds R25.00" in first
    assert "  nets: 1 R75.07, 2 -R50.00" in first
    assert "    - position 3, card 5s, replaced 5c, reason misread, by D1" in first


def test_voided_hand_shows_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    build(path, 5)
    _, out, _ = recall(capsys, "--journal", str(path), "--last", "1")
    assert "=== hand T07-0005  [hand.voided" in out
    assert "  void: reason shoe jammed, by pit boss 3" in out


def test_works_in_the_error_state_while_the_daemon_holds_the_journal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    build(path, 3, faults=2)
    with Journal.open(path):  # the daemon, in its error state, has the journal open
        code, out, err = recall(capsys, "--journal", str(path))
    assert (code, err) == (0, "")
    assert "ERROR STATE: 2 open fault(s)" in out
    assert "integrity: problem 0" in out and "integrity: problem 1" in out
    assert out.count("=== hand ") == 3
    code, out, _ = recall(capsys, "--journal", str(path), "--json")
    assert [f["detail"] for f in json.loads(out)["open_faults"]] == ["problem 0", "problem 1"]


def test_a_changed_hand_is_flagged_not_hidden(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    build(path, 3)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER outbox_no_update")
    con.execute("UPDATE outbox SET body = replace(body, '7502', '97502') WHERE type = "
                "'hand.settled' AND body LIKE '%T07-0002%'")
    con.execute(TRIGGERS["outbox_no_update"])
    con.close()
    code, out, _ = recall(capsys, "--journal", str(path))
    assert code == 0
    block = out.split("=== hand T07-0002")[1].split("=== hand")[0]
    assert "!! checksum mismatch: the stored message was changed" in block
    assert "nets: 1 R975.02" in block  # shown as stored, flagged
    assert "!!" not in out.split("=== hand T07-0002")[0]


def test_fewer_hands_than_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    build(path, 0)
    code, out, _ = recall(capsys, "--journal", str(path))
    assert code == 0
    assert "0 hand(s), last 10 requested" in out


def test_missing_or_broken_journal_is_one_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = recall(capsys, "--journal", str(tmp_path / "nope"))
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith("showdown recall: error: no journal at ") and err.count("\n") == 1
    broken = tmp_path / "broken"
    broken.write_bytes(b"\x01" * 5000)
    code, _, err = recall(capsys, "--journal", str(broken))
    assert code == EXIT_ERROR and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("bad", ["0", "-3", "ten"])
def test_last_must_be_a_positive_number(tmp_path: Path, bad: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["recall", "--journal", str(tmp_path / "j"), "--last", bad])
    assert stop.value.code == 2
    assert "--last" in capsys.readouterr().err
