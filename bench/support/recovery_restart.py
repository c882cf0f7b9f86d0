"""Row 1 of bench/recovery.py: the table daemon's restart after a crash, on a long journal.

The journal is bench/startup.py's (support/startup_journals.py: recorded heats of the
simulated table appended again and again through the real append path, checkpoints written
as the daemon writes them; cached under /tmp/showdown-bench-startup/). On a fresh copy:

1. a first start (untimed: the copy has no verified head of this run yet, so the whole
   journal is checked once, as after an upgrade) until READY=1, then SIGKILL, as a crash;
2. the restart, timed from exec to READY=1 (`python -m cli table run`, a NOTIFY_SOCKET
   made here, as systemd starts it), then SIGTERM.

Before the crash and after the restart the journal's records and messages are read: every
record and message there before the crash must still be there with the same checksum (else
lost), and none twice (doubled). The baseline is the same on a small journal in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from support.latency_service import NotifySocket, spawn_table
from support.recovery_table import Goal, Options, Outcome
from support.startup_journals import CACHE, REPO, Built, build_journal, table_config

__all__ = ["restart_rows"]

GOAL = Goal(2.0, "s")
_GUARD_S = 300.0


@dataclass(frozen=True, slots=True)
class Heads:
    """What a journal holds: its last record and message, their checksums, their counts."""

    records: int
    last_record: int
    record_checksum: str
    messages: int
    last_message: int
    message_checksum: str


def _heads(path: Path, upto: Heads | None = None) -> Heads:
    """The journal's heads (or, with ``upto``, what it holds up to those heads)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        last_r = upto.last_record if upto else con.execute(
            "SELECT max(seq) FROM journal").fetchone()[0]
        last_m = upto.last_message if upto else (con.execute(
            "SELECT max(seq) FROM outbox").fetchone()[0] or 0)
        records = con.execute("SELECT count(*) FROM journal WHERE seq <= ?",
                              (last_r,)).fetchone()[0]
        messages = con.execute("SELECT count(*) FROM outbox WHERE seq <= ?",
                               (last_m,)).fetchone()[0]
        rc = con.execute("SELECT checksum FROM journal WHERE seq = ?", (last_r,)).fetchone()
        mc = con.execute("SELECT checksum FROM outbox WHERE seq = ?", (last_m,)).fetchone()
    finally:
        con.close()
    return Heads(records, last_r, rc[0] if rc else "", messages, last_m, mc[0] if mc else "")


@dataclass(slots=True)
class Restart:
    """One size's figures."""

    built: Built
    ready_s: float
    first_s: float
    replayed: int | None
    verify: str
    lost: int
    doubled: int


def _log_figures(log: Path) -> tuple[int | None, str]:
    """(records replayed, how the journal was checked and the start's parts in ms) at the
    last start in the JSON log."""
    replayed, verify, parts = None, "", ""
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "journal verified":
            verify = str(entry.get("how", "")).split(":")[0]
            replayed = None
        elif entry.get("event") == "journal replayed":
            replayed = int(entry.get("records", 0))
        elif entry.get("event") == "journal loaded":
            parts = ", ".join(f"{k.removesuffix('_ms')} {v:.0f}" for k, v in entry.items()
                              if k.endswith("_ms") and isinstance(v, int | float))
    return replayed, f"{verify} (ms: {parts})" if parts else verify


async def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    process.send_signal(sig)
    try:
        await asyncio.to_thread(process.wait, 60)
    except subprocess.TimeoutExpired:
        process.kill()
        await asyncio.to_thread(process.wait)


async def _one(built: Built, scratch: Path) -> Restart:
    d = scratch / f"restart-{built.records}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    journal = d / "journal.sqlite"
    shutil.copy(built.path, journal)
    shutil.copy(CACHE / "record" / "table.key", d / "table.key")
    (d / "table.key").chmod(0o600)
    config = table_config(d, checkpoints=True, heats=0)
    notify = NotifySocket(d)
    notify.start()
    log = d / "daemon.log"
    try:
        process, first = await spawn_table(config, notify, log, watchdog_usec=None,
                                           timeout=_GUARD_S)
        await asyncio.sleep(0.5)  # its first checkpoint work after READY, as in a day
        before = _heads(journal)
        await _stop(process, signal.SIGKILL)  # the crash
        process, took = await spawn_table(config, notify, log, watchdog_usec=None,
                                          timeout=_GUARD_S)
        await _stop(process, signal.SIGTERM)
    finally:
        await notify.close()
    after = _heads(journal, upto=before)
    lost = (before.records - after.records) + (before.messages - after.messages) + (
        after.record_checksum != before.record_checksum) + (
        after.message_checksum != before.message_checksum)
    whole = _heads(journal)
    doubled = (whole.records - whole.last_record) + (whole.messages - whole.last_message)
    replayed, verify = _log_figures(log)
    shutil.rmtree(d, ignore_errors=True)
    return Restart(built, took / 1e9, first / 1e9, replayed, verify, max(lost, 0),
                   max(doubled, 0))


def _journal(records: int) -> Built:
    """The cached journal of ``records`` records: as bench/startup.py builds it, or, when its
    repeated heats are refused more often than recorded, the lenient build (D410)."""
    try:
        return build_journal(records)
    except RuntimeError as exc:
        print(f"{exc}; building it leniently")
        return build_journal(records, lenient=True)


async def _spawned(code: str) -> float:
    """Seconds from exec to exit of `python -c code` (the interpreter, or the imports)."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    await process.wait()
    return time.perf_counter() - started


# The daemon's packages, compiled before any start is timed: an installed daemon has its
# bytecode (pip writes it), but a checkout run with PYTHONDONTWRITEBYTECODE set would compile
# every stale module again at each start (D417).
_PACKAGES = ("cli", "controller", "drivers", "game", "runtime", "simulators", "wire")


def _compile_bytecode() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", *_PACKAGES], cwd=REPO,  # noqa: S603
                   check=True, stdout=subprocess.DEVNULL)


async def restart_rows(options: Options) -> list[Outcome]:
    """The daemon's restart at ``--records`` (1,000,000) beside a small journal's."""
    await asyncio.to_thread(_compile_bytecode)
    size = options.args.records
    small = options.args.baseline_records
    built_small = await asyncio.to_thread(_journal, small)
    built = await asyncio.to_thread(_journal, size)
    extra = json.loads(built.path.with_suffix(".json").read_text()).get("extra_refused", 0)
    base = await _one(built_small, options.scratch)
    big = await _one(built, options.scratch)
    python_s = await _spawned("pass")
    imports_s = await _spawned("import controller.app, controller.wiring")
    mb = built.path.stat().st_size / 1e6
    outcome = Outcome(
        failure=f"table daemon restart, {big.built.records:,} records",
        measure=("exec -> READY=1 of `showdown table run` after a SIGKILL (checkpoints on, "
                 "the journal checked after its verified head, the newest checkpoint loaded)"),
        value=big.ready_s, goal=GOAL, lost=big.lost, doubled=big.doubled,
        baseline=f"{base.ready_s:.2f} s at {base.built.records:,} records",
        details=[f"journal {mb:,.0f} MB, {built.checkpoints} checkpoints, {extra} inputs refused "
                 "beyond the recorded heats' (D410); at the restart "
                 f"replayed {big.replayed} records, checked: {big.verify}; the first start "
                 f"on the copy (whole journal checked once) {big.first_s:.2f} s",
                 f"baseline: replayed {base.replayed} records, checked: {base.verify}, "
                 f"lost {base.lost}, doubled {base.doubled}",
                 f"the fixed part, same run: python -c pass {python_s:.2f} s, the daemon's "
                 f"imports alone {imports_s:.2f} s"])
    if big.lost or big.doubled or base.lost or base.doubled:
        outcome.wrong = (f"records or messages lost ({big.lost}, baseline {base.lost}) or "
                         f"doubled ({big.doubled}, baseline {base.doubled}) by the restart")
    return [outcome]
