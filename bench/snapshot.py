"""The table core's snapshot (`game.table.snapshot`): its size and the time to take and load
it, beside the replay it replaces.

A seeded day (`simulators.core_day`: qualifying, semi-final and Final heats with the usual
mishaps, payouts checked by the readers) is played into a table core. At two safe points,
after a typical morning (``--heats``, default 3) and after a long day (``--long-heats``,
default 50, about 11 hours of play at 60 hands an hour), it measures:

* the snapshot's size as canonical JSON (``json.dumps(sort_keys=True)``) and its largest
  parts;
* ``take``: `take_snapshot` plus ``json.dumps`` (best of ``--repeat``);
* ``load``: ``json.loads`` plus `restore_snapshot` into a freshly constructed core (best of
  ``--repeat``; the core's construction is included, as at start-up);
* the baseline, ``replay``: a fresh core applying every input the snapshot stands for (the
  pure core's part of today's start-up, without reading or verifying the journal), best of
  3 (or of ``--repeat`` when fewer).

The restored core's snapshot must equal the original's; the run exits 1 when it does not.

Run: ``.venv/bin/python bench/snapshot.py [--heats 3] [--long-heats 50] [--seed N]``;
``--quick`` plays 1 and 2 heats (tests/bench/test_snapshot.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

from support.timing import best_of

from game.table.inputs import TableInput
from game.table.snapshot import restore_snapshot, take_snapshot
from simulators.core_day import Floor, day, new_core

DEFAULT_SEED = 20261201


def best_ms(work: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in milliseconds."""
    return best_of(work, repeat) * 1000


def replay_ms(inputs: list[tuple[TableInput, datetime]], repeat: int) -> float:
    """A fresh core applying every input, in milliseconds (best of ``repeat``)."""
    def replay() -> None:
        core = new_core()
        for given, at in inputs:
            core.apply(given, at)

    return best_ms(replay, repeat)


def measure(label: str, floor: Floor, repeat: int) -> dict[str, Any]:
    """The figures at the floor's current safe point; exits 1 if a restore differs."""
    state = take_snapshot(floor.core)
    text = json.dumps(state, sort_keys=True)

    def load() -> None:
        restore_snapshot(new_core(), json.loads(text))

    restored = new_core()
    restore_snapshot(restored, json.loads(text))
    if take_snapshot(restored) != json.loads(text):
        print(f"result: WRONG ({label}: the restored core's snapshot differs)")
        sys.exit(1)
    parts = sorted(((len(json.dumps(v, sort_keys=True)), k) for k, v in state.items()),
                   reverse=True)
    return {
        "label": label, "inputs": len(floor.inputs), "hands": floor.core.hands_opened,
        "bytes": len(text), "take": best_ms(lambda: json.dumps(take_snapshot(floor.core),
                                                               sort_keys=True), repeat),
        "load": best_ms(load, repeat), "replay": replay_ms(floor.inputs, min(repeat, 3)),
        "parts": ", ".join(f"{k} {n:,}" for n, k in parts[:4]),
        "grows": (f"commands seen {sum(len(v) for v in state['commands_seen'].values())},"
                  f" last hands {len(state['last_hand_at'])},"
                  f" reconciled {len(state['chips']['reconciled'])}"),
    }


def main(argv: list[str] | None = None) -> int:
    """Play the day, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heats", type=int, default=3)
    parser.add_argument("--long-heats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 and 2 heats")
    args = parser.parse_args(argv)
    heats, long_heats = (1, 2) if args.quick else (args.heats, args.long_heats)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    print(f"machine: {platform.machine()} {platform.python_implementation()}"
          f" {platform.python_version()}, {os.cpu_count()} cores, load average"
          f" {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; seed {args.seed}")
    floor = day(seed=args.seed, heats=heats)
    rows = [measure(f"after {heats} heats", floor, args.repeat)]
    more = day(seed=args.seed, heats=long_heats)
    rows.append(measure(f"after {long_heats} heats", more, args.repeat))
    print(f"{'safe point':<18} {'inputs':>7} {'hands':>6} {'bytes':>9} {'take_ms':>8}"
          f" {'load_ms':>8} {'replay_ms':>10} {'replay/load':>11}")
    for r in rows:
        print(f"{r['label']:<18} {r['inputs']:>7} {r['hands']:>6} {r['bytes']:>9}"
              f" {r['take']:>8.2f} {r['load']:>8.2f} {r['replay']:>10.1f}"
              f" {r['replay'] / r['load']:>10.0f}x")
    for r in rows:
        print(f"largest parts {r['label']}: {r['parts']}; growing: {r['grows']}")
    print("result: OK (every restored snapshot equals the original's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
