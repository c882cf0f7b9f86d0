"""The CPU of a hand's pure parts, each beside the way it was done before, in one run: what
the host's noise (±15% on a whole floor from one minute to the next) hides in bench/floor_rate.py.

    .venv/bin/python bench/hand_parts.py             # 20 hands of one simulated table
    .venv/bin/python bench/hand_parts.py --quick     # 10 hands (tests/bench/test_hand_parts.py)

A table plays `--hands` hands through `showdown simulate floor --tables 1 --keep DIR` (the
whole stack, once). Its journal's inputs and outbox messages are then put through each part
in this process, each timed as the best of `--repeat` runs of all of them (process CPU time):

- the table core (`TableService.apply` of every input, and a look at the spots after each,
  as the screens and the virtual dealer look): the seats' wagers kept between reports (D273)
  beside the same with the spot book's kept wagers dropped before every input and look;
- the journal (`Journal.append_batch` with the core's messages, synchronous=FULL, on this
  disk): batches of four inputs, the floor's mean (D274), beside one input a transaction;
- sealing the table's messages (`wire.envelope.seal`, the signature included): orjson's
  path (D272) beside the strict `json` path every body took before;
- verifying them at the central service (`verify_envelope`): the orjson fast path (D54).

It exits 1 when a part's result is wrong: an input the core refuses on replay, a sealed
message that differs from the strict way's bytes, or one that does not verify.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from support.timing import best_of

from controller.clock import system_clock
from controller.config import read_table_config
from controller.journal import Journal
from controller.journal.deciding import Entry
from controller.wiring import wire_table
from game.table.status import spots_view
from simulators.table_play import play_registry
from wire import envelope as envelope_module
from wire.envelope import Envelope, seal, verify_envelope
from wire.signing import KeyRing, Signer

Row = tuple[str, dict[str, Any], datetime]


def best_cpu(work: Callable[[], object], repeat: int) -> float:
    """The least process CPU seconds `work` took in `repeat` runs."""
    return best_of(work, repeat, time.process_time)


def play(directory: Path, hands: int, seed: int) -> Path:
    """One simulated table's hands through the whole stack; its directory."""
    kept = directory / "floor"
    done = subprocess.run(  # noqa: S603 (this interpreter, our own command)
        [sys.executable, "-m", "cli", "simulate", "floor", "--tables", "1",
         "--hands", str(hands), "--seed", str(seed), "--keep", str(kept)],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the simulated table failed (exit {done.returncode}):"
                         f" {done.stdout[-400:]}{done.stderr[-400:]}")
    return kept / "t01"


class Parts:
    """A played table's inputs and messages, and the parts timed on them."""

    def __init__(self, table: Path) -> None:
        self.config = read_table_config(table / "table.toml")
        self.daemon = wire_table(self.config, registry=play_registry()).daemon
        with sqlite3.connect(table / "journal.sqlite") as db:
            self.rows: list[Row] = [
                (kind, json.loads(payload), datetime.fromisoformat(wall))
                for kind, payload, wall in db.execute(
                    "SELECT kind, payload, wall FROM journal WHERE kind NOT LIKE 'journal.%'"
                    " ORDER BY seq")]
            self.messages = [(kind, json.loads(body), datetime.fromisoformat(wall), seq) for
                             kind, body, wall, seq in db.execute(
                                 "SELECT type, body, wall, seq FROM outbox ORDER BY seq")]
        self.signer = Signer.generate(self.config.table)
        self.refused = 0

    def core(self, *, forget: bool) -> None:
        """Every input through a fresh core, and a look at the spots after each, as the
        dealer's screen and the virtual dealer look (``forget``: the kept wagers dropped
        before each input and each look)."""
        service, _registry = self.daemon._load()
        core = service.core
        refused = 0
        for kind, payload, wall in self.rows:
            if forget:
                core.spots.forget_wagers()
            refused += not service.apply(kind, payload, wall).ok
            if forget:
                core.spots.forget_wagers()
            spots_view(core)
        self.refused = refused

    def journal(self, directory: Path, batch: int) -> None:
        """Every input appended with the core's messages, ``batch`` to a transaction."""
        service, _registry = self.daemon._load()
        items = [Entry(kind=kind, payload=payload, clock=system_clock(), given=None)
                 for kind, payload, _wall in self.rows]
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            journal = Journal.open(Path(tmp) / "journal.sqlite", clock=system_clock)
            try:
                for start in range(0, len(items), batch):
                    journal.append_batch(items[start:start + batch], service)
            finally:
                journal.close()

    def sealed(self) -> list[Envelope]:
        """The table's messages sealed as its link seals them."""
        return [seal(venue=self.config.venue, table=self.config.table, seq=seq, wall=wall,
                     type=kind, body=body, boot="bench", mono=seq, signer=self.signer)
                for kind, body, wall, seq in self.messages]

    def strict(self) -> list[Envelope]:
        """The same, every body the strict `json` way (as before D272)."""
        plain = envelope_module._plain_body
        envelope_module._plain_body = lambda _body: None  # type: ignore[assignment]
        try:
            return self.sealed()
        finally:
            envelope_module._plain_body = plain


def main() -> int:
    """Run the parts; 1 when a result is wrong."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 hands, 3 repeats")
    parser.add_argument("--hands", type=int, default=None, help="hands the table plays")
    parser.add_argument("--repeat", type=int, default=None, help="runs of each part")
    parser.add_argument("--seed", type=int, default=2026, help="the table's seed")
    args = parser.parse_args()
    hands = args.hands or (10 if args.quick else 20)
    repeat = args.repeat or (3 if args.quick else 7)
    print(f"bench/hand_parts.py: python {platform.python_version()}, {os.cpu_count()} cores,"
          f" {platform.machine()}, load average {os.getloadavg()[0]:.1f}; seed {args.seed};"
          f" best of {repeat} runs")
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as tmp:
        directory = Path(tmp)
        parts = Parts(play(directory, hands, args.seed))
        played = hands
        inputs = len(parts.rows)
        print(f"one table, {hands} hands: {inputs} inputs ({inputs / hands:.1f} a hand),"
              f" {len(parts.messages)} messages ({len(parts.messages) / hands:.1f} a hand)")
        wrong: list[str] = []
        sealed, strict = parts.sealed(), parts.strict()
        if [e.encode() for e in sealed] != [e.encode() for e in strict]:
            wrong.append("a message sealed through orjson differs from the strict way's")
        keys = KeyRing.from_mapping({parts.config.table: parts.signer.public_key.base64})
        wires = [e.encode() for e in sealed]
        rows = [
            ("the core, a look after each", "wagers kept (D273)", "wagers read again",
             best_cpu(lambda: parts.core(forget=False), repeat),
             best_cpu(lambda: parts.core(forget=True), repeat)),
            ("the journal (FULL, this disk)", "4 inputs a transaction", "1 a transaction",
             best_cpu(lambda: parts.journal(directory, 4), repeat),
             best_cpu(lambda: parts.journal(directory, 1), repeat)),
            ("sealing the messages", "orjson (D272)", "strict json",
             best_cpu(parts.sealed, repeat), best_cpu(parts.strict, repeat)),
            ("verifying them centrally", "fast path (D54)", "-",
             best_cpu(lambda: [verify_envelope(w, keys) for w in wires], repeat), None),
        ]
        if parts.refused:
            wrong.append(f"the core refused {parts.refused} journaled input(s) on replay")
        print(f"{'part':<30} {'now':<24} {'ms a hand':>9}   {'before / peer':<18} {'ms a hand':>9}")
        for name, how, peer, now, before in rows:
            then = f"{before * 1000 / played:9.2f}" if before is not None else f"{'-':>9}"
            print(f"{name:<30} {how:<24} {now * 1000 / played:9.2f}   {peer:<18} {then}")
        total = sum(r[3] for r in rows)
        print(f"{'these parts in all':<30} {'':<24} {total * 1000 / played:9.2f}"
              "   (bench/floor_rate.py: a whole hand, every process, about 35-45 ms)")
    for problem in wrong:
        print(f"problem: {problem}")
    print("result: " + ("OK" if not wrong else "WRONG"))
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
