"""Large table journals for bench/startup.py, built through the real append path and cached.

1. **A recorded heat.** The simulated table (`python -m cli table run`, virtual dealer
   and desk, simulated shoe and chip reader) plays two qualifying heats; its journal's inputs
   are kept: the first heat with everything before it (the prefix), and the second heat (the
   template).
2. **A journal of N records.** A fresh journal gets the prefix, then the template again and
   again, each time with its identifiers moved on (heat and entry ids, desk command seqs and
   ids, shoe read indexes, chip report seqs), until it holds at least N records. Every input
   goes through `Journal.append` with the table's own `TableService.apply` as its apply step,
   as the daemon's `ingest` does, and checkpoints are written as the daemon writes them (at
   the first safe point after `every` inputs). Each repetition must be refused exactly as
   often as the recorded heat was (else the journal would not be realistic: it stops).

It is built on /dev/shm (no fsync cost; the file is the same) and kept under
``/tmp/showdown-bench-startup/<version>/`` with the table key and config it was made with.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from controller.clock import FakeClockSource
from controller.config import read_table_config
from controller.journal import Journal, is_own_kind
from controller.journal.checkpoints import read_heads, write_checkpoint
from controller.startup import ShoeReads, checkpoint_body, fold_shoe_reads
from controller.wiring import wire_table
from game.table.snapshot import SNAPSHOT_VERSION, is_safe_point, take_snapshot
from simulators.table_toml import desk_key_file, simulated_table_toml, table_key_file
from wire.signing import load_private_key

__all__ = ["CACHE", "VERSION", "Built", "build_journal", "table_config"]

VERSION: Final = f"v3-snapshot{SNAPSHOT_VERSION}"  # a new one when the inputs or format change
# The cache (SHOWDOWN_BENCH_STARTUP_CACHE moves it: the smoke test uses its own).
CACHE: Final = Path(os.environ.get("SHOWDOWN_BENCH_STARTUP_CACHE",
                                   "/tmp/showdown-bench-startup")) / VERSION  # noqa: S108
REPO: Final = Path(__file__).resolve().parents[2]
_SEQ_STEP: Final = 1_000_000
# Recorded: the first, then ten whose 100 shuffles are a chi-square window (fewer for the
# smoke test's small journal: SHOWDOWN_BENCH_STARTUP_HEATS).
_HEATS: Final = int(os.environ.get("SHOWDOWN_BENCH_STARTUP_HEATS", "11"))
Input = tuple[str, Any]  # (kind, payload)
_RECORD_S: Final = 1.46  # a hand of ~41 records a minute: 60 hands an hour


@dataclass(frozen=True, slots=True)
class Built:
    """A cached journal: where, how many records, how long it took to build."""

    path: Path
    records: int
    build_s: float
    checkpoints: int


def table_config(directory: Path, *, checkpoints: bool, heats: int, every: int = 500) -> Path:
    """A simulated table's config in `directory` (journal, key, socket there)."""
    path = directory / f"table-{'on' if checkpoints else 'off'}-{heats}.toml"
    table_key_file(directory, "t01")  # the table's key (never made by the daemon)
    desk_key, desk_keys = desk_key_file(directory)  # the virtual desk and dealer, named
    text = simulated_table_toml(
        venue="bench", table="t01", broker="embedded", tournament=REPO / "config" /
        "tournament.toml", paytables=REPO / "config" / "paytables.toml",
        socket=directory / "console.sock", heats=heats, desk_keys=desk_keys,
        desk_key=desk_key.name, virtual_dealer=True, log_format="json", log_level="info")
    path.write_text(text + f"""
[journal]
checkpoints = {str(checkpoints).lower()}
checkpoint_every = {every}
rotate = "never"
""")
    return path


def _record_heats(directory: Path) -> tuple[list[Input], list[list[Input]]]:
    """Run the simulated table for `_HEATS` heats; its inputs: (the first heat and all before
    it, each later heat)."""
    config = table_config(directory, checkpoints=True, heats=_HEATS)
    journal = directory / "journal.sqlite"
    with (directory / "record.log").open("ab") as log:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and files)
            [sys.executable, "-m", "cli", "table", "run", "--config", str(config)],
            stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 600
        while _closed_heats(journal) < _HEATS:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the simulated table did not play {_HEATS} heats: "
                                   f"{directory / 'record.log'}")
            time.sleep(1.0)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    with Journal.open(journal, read_only=True) as j:
        inputs = [(r.kind, dict(r.payload)) for r in j.records() if not is_own_kind(r.kind)]
    closes = [i for i, (kind, p) in enumerate(inputs)
              if kind == "desk" and p.get("command") == "close_heat"]
    return inputs[:closes[0] + 1], [inputs[a + 1:b + 1] for a, b in itertools.pairwise(closes)]


def _closed_heats(journal: Path) -> int:
    if not journal.exists():
        return 0
    con = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM journal WHERE kind = 'desk' AND "
                               "json_extract(payload, '$.command') = 'close_heat'").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def _moved(value: Any, k: int, heat: str, entry_prefix: str) -> Any:
    """An input of a recorded heat with its identifiers moved on to repetition k."""
    if isinstance(value, list):
        return [_moved(v, k, heat, entry_prefix) for v in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for key, given in value.items():
        if key == "heat_id" and given == heat:
            out[key] = f"{heat}-r{k}"
        elif key == "entry_id" and isinstance(given, str) and given.startswith(entry_prefix):
            out[key] = f"{entry_prefix}R{k}-{given[len(entry_prefix):]}"
        elif key in ("command_seq", "read_index", "report_seq") and isinstance(given, int):
            out[key] = given + k * _SEQ_STEP
        elif key == "command_id" and isinstance(given, str):
            out[key] = f"{given}-r{k}"
        else:
            out[key] = _moved(given, k, heat, entry_prefix)
    return out


def _template_ids(template: list[Input]) -> tuple[str, str]:
    heat = next(p["heat_id"] for kind, p in template
                if kind == "desk" and p.get("command") == "open_heat")
    entry = next(p["entry_id"] for kind, p in template
                 if kind == "desk" and p.get("command") == "seat")
    return heat, entry.rsplit("-", 1)[0] + "-"


def _inputs(prefix: list[Input], heats: list[list[Input]]) -> Iterator[tuple[int, str, Any]]:
    """(repetition, kind, payload): the prefix (repetition 0), then the recorded heats in
    turn. A heat comes again 100 shuffles later: beyond the repeated-deck check's 50, and
    every chi-square window of 100 holds the same ten heats."""
    for kind, payload in prefix:
        yield 0, kind, payload
    ids = [_template_ids(h) for h in heats]
    k = 1
    while True:
        index = (k - 1) % len(heats)
        heat, entry_prefix = ids[index]
        for kind, payload in heats[index]:
            yield k, kind, _moved(payload, k, heat, entry_prefix)
        k += 1


def build_journal(records: int, *, log: Any = print, lenient: bool = False) -> Built:
    """The cached journal of at least `records` records (built now if missing). `lenient`:
    a repeated heat may have more inputs refused than the recorded one (they are counted in
    the journal's `.json` as `extra_refused`; bench/recovery.py, D410)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    name = f"journal-{records}{'-lenient' if lenient else ''}"
    target = CACHE / f"{name}.sqlite"
    meta = CACHE / f"{name}.json"
    if target.exists() and meta.exists():
        info = json.loads(meta.read_text())
        return Built(target, info["records"], info["build_s"], info["checkpoints"])
    recorded = CACHE / "recorded.json"
    if not recorded.exists():
        log(f"recording two heats of the simulated table in {CACHE / 'record'} ...")
        shutil.rmtree(CACHE / "record", ignore_errors=True)
        (CACHE / "record").mkdir()
        prefix, heats = _record_heats(CACHE / "record")
        recorded.write_text(json.dumps({"prefix": prefix, "heats": heats}))
    data = json.loads(recorded.read_text())
    log(f"building a journal of {records:,} records ({len(data['heats'])} recorded heats of "
        f"{min(map(len, data['heats']))}-{max(map(len, data['heats']))} inputs) ...")
    started = time.perf_counter()
    work = Path("/dev/shm") / f"showdown-bench-{os.getpid()}"  # noqa: S108 (our own dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        shutil.copy(CACHE / "record" / "table.key", work / "table.key")
        (work / "table.key").chmod(0o600)
        made, count = _append_all(work, records, data["prefix"], data["heats"],
                                  lenient=lenient)
        shutil.copy(made, target)
        cost = json.loads((work / "cost.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    build_s = time.perf_counter() - started
    meta.write_text(json.dumps({"records": made_records(target), "build_s": build_s,
                                "checkpoints": count, **cost}))
    return Built(target, made_records(target), build_s, count)


def made_records(path: Path) -> int:
    """How many records a journal holds (its head)."""
    with Journal.open(path, read_only=True) as j:
        return j.last_record_seq()


def _append_all(work: Path, records: int, prefix: list[Input], heats: list[list[Input]], *,
                lenient: bool = False) -> tuple[Path, int]:
    config = read_table_config(table_config(work, checkpoints=True, heats=0))
    signer = load_private_key(config.table_key)
    service = wire_table(config).daemon._load()[0]
    fake = FakeClockSource(start=datetime(2026, 11, 2, 9, 0, tzinfo=UTC), boot_id="bench",
                           step_ns=int(_RECORD_S * 1e9))
    refused: dict[int, int] = {}  # repetition -> inputs refused
    cost: dict[str, float] = {}  # what the last checkpoint cost
    reads: ShoeReads = {}
    since, checkpoints, every = 0, 0, config.journal_settings.checkpoint_every
    with Journal.open(config.journal, clock=fake) as journal:
        for k, kind, payload in _inputs(prefix, heats):
            if kind == "desk" and payload.get("command") == "open_heat" \
                    and journal.last_record_seq() >= records:
                break
            box: list[bool] = []

            def outgoing(record: Any, box: list[bool] = box, k: int = k) -> Any:
                applied = service.apply(record.kind, record.payload, record.wall)
                box.append(applied.ok)
                if not applied.ok and os.environ.get("BENCH_DEBUG"):
                    print(k, record.kind, dict(record.payload), applied.error)
                return applied.messages

            record, _ = journal.append(kind=kind, payload=payload, clock=fake(),
                                       outgoing=outgoing)
            fold_shoe_reads(reads, (record,))
            refused[k] = refused.get(k, 0) + (not box[0])
            since += 1
            if since >= every and is_safe_point(service.core):
                t0 = time.perf_counter()
                state = take_snapshot(service.core)
                t1 = time.perf_counter()
                body = checkpoint_body(state, reads)
                write_checkpoint(journal, body, covers=read_heads(journal),
                                 snapshot_version=SNAPSHOT_VERSION, signer=signer)
                cost.update(snapshot_ms=(t1 - t0) * 1000,
                            write_ms=(time.perf_counter() - t1) * 1000,
                            body_kb=len(json.dumps(body, separators=(",", ":"))) / 1000)
                since, checkpoints = 0, checkpoints + 1
    extra = 0
    for k, count in refused.items():
        first = (k - 1) % len(heats) + 1
        if k > first and count != refused[first] and lenient:
            extra += count - refused[first]
        elif k > first and count != refused[first]:
            raise RuntimeError(f"heat {first} played again as repetition {k} had "
                               f"{count} inputs refused, not {refused[first]}: the "
                               "journal would not be realistic")
    con = sqlite3.connect(config.journal)
    con.execute("UPDATE outbox SET delivered = 1, delivered_wall = wall")  # all published
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    (work / "cost.json").write_text(json.dumps({**cost, "extra_refused": extra}))
    return config.journal, checkpoints
