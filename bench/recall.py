"""Time `showdown recall` (the full integrity check included) on a journal of many hands.

Run: `.venv/bin/python bench/recall.py [--hands 300] [--reads 30]`. Builds a journal in a
temporary directory through the real append path (each hand: `--reads` card inputs, then its
hand.settled message), then times the default recall, `--compact --heat`, `--hand`, `--no-check`
and the check alone, and prints the journal's size and the time per 1,000 journal records.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord, verify_file


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """An outgoing message as `Journal.append`'s `outgoing` returns it."""

    topic_suffix: str
    type: str
    body: Mapping[str, Any]
    retain: bool = False


def hand_body(n: int) -> dict[str, Any]:
    """Hand n, shaped (and about as large) as a game.hand.record record of a two-seat hand."""
    seat = {"hole": ["Ah", "Kd"], "wagers": {"ante": 2500, "odds": 2500, "play": 7500,
                                             "trips_plus": 1000},
            "decision": {"play": 3, "street": "preflop", "amount": 7500},
            "wager_source": "rfid"}
    result = {"result": "win", "stake": 2500, "net": 2500, "reason": "beats the dealer",
              "line": None, "marker": None}
    return {
        "v": 1, "table": "T07", "hand_id": f"T07-{n:05d}", "status": "settled",
        "heat_id": f"H{n // 10}", "stage": "qualifying",
        "opened_at": "2026-03-14T10:00:05Z", "settled_at": "2026-03-14T10:02:41Z",
        "reads": [{"card": "Ah", "source": "shoe", "at": "2026-03-14T10:00:06Z"}] * 13,
        "cards": [{"target": "seat 1 hole card 1", "card": "Ah"}] * 13,
        "dealer": ["5s", "5c"], "board": ["2c", "7d", "9h", "Jc", "Qs"], "burns": ["3d"] * 2,
        "seats": [{"seat": s, "entry_id": f"E-{n + s}", **seat} for s in (1, 2)],
        "corrections": [], "alerts": [], "resolutions": [], "nets": {"1": 12500, "2": 12500},
        "manual": False,
        "settlement": {"dealer": {"hand": "pair of fives", "opens": True}, "seats": [
            {"seat": s, "hand": "straight", "category": "straight", "outcome": "win",
             "net": 12500, "markers_used": [], "wagers": dict.fromkeys(seat["wagers"], result)}
            for s in (1, 2)]},
    }


def build(path: Path, hands: int, reads: int) -> None:
    """`hands` hands of `reads` card inputs each, then the hand's message."""
    fake = FakeClockSource()
    with Journal.open(path, clock=fake) as j:
        for n in range(1, hands + 1):
            for _ in range(reads):
                j.append(kind="card", payload={"card": "Ah"}, clock=fake(),
                         outgoing=lambda _r: [])
            body = hand_body(n)

            def publish(_r: JournalRecord, b: dict[str, Any] = body) -> list[Message]:
                return [Message(topic_suffix="events", type="hand.settled", body=b)]

            j.append(kind="dealer", payload={"action": "settle"}, clock=fake(),
                     outgoing=publish)


def timed(args: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return time.perf_counter() - start, code


def run() -> None:
    """Build, time, print."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--hands", type=int, default=300)
    p.add_argument("--reads", type=int, default=30)
    args = p.parse_args()
    print(f"machine: {platform.machine()} {platform.processor() or ''} python "
          f"{platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t07.journal"
        start = time.perf_counter()
        build(path, args.hands, args.reads)
        records = args.hands * (args.reads + 1)
        print(f"built {args.hands} hands, {records} records, "
              f"{path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s")
        j = ["recall", "--journal", str(path)]
        timed([*j, "--last", "1"])  # warm: imports and the first connection
        for name, cmd in [("default (last 10)", j), ("--compact --heat H5", [*j, "--compact",
                          "--heat", "H5"]), ("--hand (one)", [*j, "--hand", "T07-00007"]),
                          ("--no-check (last 10)", [*j, "--no-check"])]:
            seconds, code = timed(cmd)
            print(f"{name:22} {seconds:6.3f} s  exit {code}  "
                  f"({seconds / records * 1000 * 1000:.1f} ms per 1,000 records)")
        start = time.perf_counter()
        problems = verify_file(path)
        seconds = time.perf_counter() - start
        print(f"{'check alone':22} {seconds:6.3f} s  problems {len(problems)}")
        if problems:
            raise SystemExit(1)


if __name__ == "__main__":
    run()
