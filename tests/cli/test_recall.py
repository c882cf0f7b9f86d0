"""`showdown recall`: the last hands from the journal, oldest first, also in the error state (R1).

Hand bodies here are shaped like game.hand.record's hand records; amounts are integer cents, so
"ante": 2500 must read "R25.00" (rules.md: the unit is R25).
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_ERROR
from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord
from controller.journal.models import TRIGGERS
from game.hand.deal import DEFAULT_DEAL
from game.hand.record import hand_record
from game.money import format_rand
from game.table.session import TableSession
from game.tournament.entries import Entry, Stage
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import VirtualPlayer
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
    assert code == 1  # docs/exit-codes.md: a check ran and found problems
    banner, hands = out.split("=== hand T07-0001")
    assert "JOURNAL DAMAGED: " in banner and "1 shown hand(s) fail their own check" in banner
    assert "checksum" in banner.split("JOURNAL DAMAGED")[1]  # the full check's own finding
    block = hands.split("=== hand T07-0002")[1].split("=== hand")[0]
    assert "!! checksum mismatch: the stored message was changed" in block
    assert "nets: 1 R975.02" in block  # shown as stored, flagged
    assert "!!" not in hands.split("=== hand T07-0002")[0]


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


# ---------------------------------------------------------------------------------------------
# Selectors, the compact format for disputes, a damaged journal (issue 14, point 3)

def full_hand(n: int, *, heat: str, entries: tuple[str, str]) -> dict[str, Any]:
    """Hand n shaped like game.hand.record's record as the table publishes it (heat, stage, end)."""
    return {
        "v": 1, "table": "T07", "hand_id": f"T07-{n:04d}", "status": "settled",
        "heat_id": heat, "stage": "qualifying",
        "opened_at": "2026-03-14T10:00:05.250Z", "settled_at": "2026-03-14T10:02:41.000Z",
        "reads": [{"card": "Ah", "source": "shoe", "at": "2026-03-14T10:00:06Z"},
                  {"card": "Kd", "source": "manual", "at": "2026-03-14T10:00:07Z"}],
        "cards": [{"target": "seat 1 hole card 1", "card": "Ah"}],
        "dealer": ["5s", "5c"], "board": ["2c", "7d", "9h", "Jc", "Qs"], "burns": [],
        "seats": [
            {"seat": 1, "entry_id": entries[0], "hole": ["Ah", "Kd"],
             "wagers": {"ante": 2500, "odds": 2500, "play": 7500, "trips_plus": 1000,
                        "pocket_bonus": 500},
             "decision": {"play": 3, "street": "preflop", "amount": 7500},
             "wager_source": "manual"},
            {"seat": 2, "entry_id": entries[1], "hole": ["3h", "8c"],
             "wagers": {"ante": 2500, "odds": 2500}, "decision": {"fold": True},
             "wager_source": "rfid"},
        ],
        "corrections": [{"position": 2, "target": "seat 1 hole card 2", "card": "Kd",
                         "replaced": "Kc", "reason": "misread", "by": "D1",
                         "at": "2026-03-14T10:00:09Z"}],
        "alerts": [{"id": "A-9", "kind": "wager_late", "message": "chips moved after no more bets",
                    "seat": 2, "field": "odds"}],
        "resolutions": [{"id": "A-9", "reason": "video checked", "by": "pit boss 3",
                         "at": "2026-03-14T10:02:30Z"}],
        "nets": {"1": 12500, "2": -5000},
        "manual": True,
        "settlement": {
            "dealer": {"hand": "pair of fives", "opens": True},
            "seats": [
                {"seat": 1, "hand": "ace high straight", "category": "straight",
                 "outcome": "win", "net": 12500, "markers_used": [],
                 "wagers": {
                     "ante": {"result": "win", "stake": 2500, "net": 2500, "reason": "beats"},
                     "trips_plus": {"result": "win", "stake": 1000, "net": 4000,
                                    "reason": "straight pays 4 to 1"},
                     "pocket_bonus": {"result": "lose", "stake": 500, "net": -500,
                                      "reason": "no pair"}}},
                {"seat": 2, "hand": "eight high", "category": "high_card", "outcome": "fold",
                 "net": -5000, "markers_used": [],
                 "wagers": {"ante": {"result": "lose", "stake": 2500, "net": -2500,
                                     "reason": "folded"}}},
            ],
        },
    }


def void_hand(n: int, *, heat: str) -> dict[str, Any]:
    """A hand voided by the pit boss before settlement."""
    return {"v": 1, "table": "T07", "hand_id": f"T07-{n:04d}", "status": "void",
            "heat_id": heat, "stage": "qualifying", "opened_at": "2026-03-14T10:10:00Z",
            "voided_at": "2026-03-14T10:11:00Z", "dealer": [], "board": [],
            "seats": [{"seat": 1, "entry_id": "E-101", "hole": ["Ah"],
                       "wagers": {"ante": 2500}, "decision": None, "wager_source": "rfid"}],
            "corrections": [], "alerts": [], "nets": {"1": 0}, "manual": False,
            "void": {"reason": "shoe jammed", "by": "pit boss 3", "at": "2026-03-14T10:11:00Z"}}


def write_hands(path: Path, bodies: list[dict[str, Any]]) -> None:
    """Each body published as its hand message through the real append path."""
    fake = FakeClockSource()
    with Journal.open(path, clock=fake) as j:
        for body in bodies:
            kind = "hand.voided" if body["status"] == "void" else "hand.settled"

            def publish(_r: JournalRecord, b: dict[str, Any] = body,
                        k: str = kind) -> list[Message]:
                return [Message(topic_suffix="events", type=k, body=b)]

            j.append(kind="dealer", payload={"action": "settle"}, clock=fake(), outgoing=publish)


def dispute_journal(path: Path) -> None:
    write_hands(path, [
        full_hand(1, heat="H1", entries=("E-101", "E-102")),
        full_hand(2, heat="H1", entries=("E-103", "E-104")),
        void_hand(3, heat="H1"),
        full_hand(4, heat="H2", entries=("E-201", "E-1011")),  # E-1011 is not E-101
    ])


def hand_ids(out: str) -> list[str]:
    return [json.loads(out)["hands"][i]["body"]["hand_id"]
            for i in range(len(json.loads(out)["hands"]))]


def test_selectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    dispute_journal(path)
    j = ("--journal", str(path), "--json")
    for args, want in [
        (("--hand", "T07-0002"), ["T07-0002"]),
        (("--entry", "E-101"), ["T07-0001", "T07-0003"]),
        (("--entry", "E-1011"), ["T07-0004"]),
        (("--heat", "H1"), ["T07-0001", "T07-0002", "T07-0003"]),
        (("--heat", "H1", "--last", "1"), ["T07-0003"]),
        (("--heat", "H2", "--entry", "E-101"), []),
        (("--hand", "T07-9999"), []),
        ((), ["T07-0001", "T07-0002", "T07-0003", "T07-0004"]),
    ]:
        code, out, err = recall(capsys, *j, *args)
        assert (code, err) == (0, ""), args
        assert hand_ids(out) == want, args
    _, out, _ = recall(capsys, *j, "--hand", "T07-0002")
    assert json.loads(out)["selected"] == {"hand_id": "T07-0002"}
    assert json.loads(out)["damaged"] is False


def test_compact_settled_hand_with_side_bets(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    dispute_journal(path)
    code, out, err = recall(capsys, "--journal", str(path), "--hand", "T07-0001", "--compact",
                            "--tz", "Africa/Johannesburg")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].endswith("- hand_id T07-0001") and "compact" in lines[0]
    assert lines[1] == "times in Africa/Johannesburg"
    assert "=== HAND T07-0001  table T07  heat H1 (Qualifying)  SETTLED  [message seq" in out
    assert "  opened 2026-03-14 12:00:05  settled 2026-03-14 12:02:41" in lines  # UTC+2
    assert ("  MARKED: MANUAL (keyed by hand: cards Kd); 1 correction(s); 1 alert(s)"
            in lines)
    assert "  dealer 5s 5c (pair of fives, opens)   board 2c 7d 9h Jc Qs" in lines
    assert ("  seat 1  entry E-101  hole Ah Kd  played 3x preflop R75.00 MANUAL wagers"
            in lines)
    assert ("    wagers: ante R25.00, odds R25.00, play R75.00, trips_plus R10.00, "
            "pocket_bonus R5.00") in lines
    assert ("    ace high straight, win: ante win +R25.00 (beats), trips_plus win +R40.00 "
            "(straight pays 4 to 1), pocket_bonus lose -R5.00 (no pair)") in lines
    assert "    net +R125.00" in lines
    assert "  seat 2  entry E-102  hole 3h 8c  FOLDED" in lines
    assert "    net -R50.00" in lines
    assert ("  CORRECTION card 2 (seat 1 hole card 2): Kc -> Kd, misread, by D1 "
            "2026-03-14 12:00:09") in lines
    assert ("  ALERT wager_late seat 2: chips moved after no more bets; resolved by pit boss 3 "
            "2026-03-14 12:02:30: video checked") in lines
    assert "VOID" not in out and "DAMAGED" not in out
    assert len(lines) <= 25  # one screen a hand


def test_compact_voided_hand_and_utc_when_no_zone(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    dispute_journal(path)
    code, out, _ = recall(capsys, "--journal", str(path), "--hand", "T07-0003", "--compact")
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "times in UTC (no --tz given)"
    assert "=== HAND T07-0003  table T07  heat H1 (Qualifying)  VOID  [message seq" in out
    assert "  opened 2026-03-14 10:10:00  voided 2026-03-14 10:11:00" in lines
    assert "  MARKED: VOID" in lines
    assert "  VOID: shoe jammed (by pit boss 3, 2026-03-14 10:11:00)" in lines
    assert "  seat 1  entry E-101  hole Ah  no decision" in lines
    assert "    net R0.00" in lines


def test_unknown_zone_is_a_usage_error(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["recall", "--journal", str(tmp_path / "j"), "--compact", "--tz", "Mars/Base"])
    assert stop.value.code == 2
    assert "unknown time zone 'Mars/Base'" in capsys.readouterr().err


def test_a_chain_break_is_reported_as_damage(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    dispute_journal(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER outbox_no_delete")
    con.execute("DELETE FROM outbox WHERE body LIKE '%T07-0002%'")  # a hand removed
    con.execute(TRIGGERS["outbox_no_delete"])
    con.close()
    code, out, err = recall(capsys, "--journal", str(path), "--heat", "H1", "--compact")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[2].startswith("JOURNAL DAMAGED: ")
    assert "0 shown hand(s) fail their own check" in lines[2]  # each left is intact itself
    assert any(line.startswith("  !! outbox") for line in lines[3:])
    assert out.count("=== HAND ") == 2  # the hands still there are shown
    code, out, _ = recall(capsys, "--journal", str(path), "--json")
    assert code == 1
    got = json.loads(out)
    assert got["damaged"] is True and got["integrity_problems"]
    assert all(h["intact"] for h in got["hands"])


def test_compact_reads_real_codec_records(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Hands played by the game core and recorded by game.hand.record: nothing shown as "?"."""
    rules = read_tournament(None).stage(Stage.FINAL).rules
    t = TableSession(table_id="T2", rules=rules, paytables=read_paytables(None),
                     deal=DEFAULT_DEAL)
    for seat in (1, 4):
        t.seat_entry(Entry.start(entry_id=f"E{seat}", rules=rules), seat)
    players = {s: VirtualPlayer(name=str(s), rng=random.Random(s)) for s in (1, 4)}
    records = []
    for n in range(4):
        hand = VirtualDealer(rng=random.Random(n)).play_hand(t, players, f"H{n}")
        record = hand_record(hand, entries={1: "E1", 4: "E4"}, table="T2")
        record.update(heat_id="F1", stage="final", settled_at="2026-03-14T11:00:00Z")
        record["opened_at"] = record["opened_at"] or "2026-03-14T10:59:00Z"  # untimed here
        records.append(record)
        t.close_hand()
    path = tmp_path / "t2.journal"
    write_hands(path, records)
    code, out, _ = recall(capsys, "--journal", str(path), "--heat", "F1", "--compact")
    assert code == 0 and out.count("=== HAND ") == 4
    assert "?" not in out
    for record, block in zip(records, out.split("=== HAND ")[1:], strict=True):
        assert block.startswith(f"{record['hand_id']}  table T2  heat F1 (Final)  SETTLED")
        assert f"  dealer {' '.join(record['dealer'])} (" in block
        for seat in record["settlement"]["seats"]:
            net = seat["net"]
            assert f"    net {'+' if net > 0 else ''}{format_rand(net)}" in block
            for wager, result in seat["wagers"].items():
                assert f"{wager} {result['result']} " in block


def test_no_check_says_so_and_still_flags_a_changed_hand(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t07.journal"
    dispute_journal(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER outbox_no_delete")
    con.execute("DELETE FROM outbox WHERE body LIKE '%T07-0002%'")  # only the chain sees this
    con.execute(TRIGGERS["outbox_no_delete"])
    con.close()
    code, out, _ = recall(capsys, "--journal", str(path), "--compact", "--no-check")
    assert code == 0 and "DAMAGED" not in out
    assert out.splitlines()[2].startswith("journal integrity NOT CHECKED (--no-check)")
    _, out, _ = recall(capsys, "--journal", str(path), "--json", "--no-check")
    assert json.loads(out)["checked"] is False
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER outbox_no_update")
    con.execute("UPDATE outbox SET body = replace(body, '12500', '99500') WHERE body LIKE "
                "'%T07-0001%'")
    con.execute(TRIGGERS["outbox_no_update"])
    con.close()
    code, out, _ = recall(capsys, "--journal", str(path), "--no-check", "--hand", "T07-0001")
    assert code == 1
    assert "JOURNAL DAMAGED: 0 integrity problem(s) found by the check; 1 shown hand(s)" in out
    assert "!! checksum mismatch: the stored message was changed" in out
