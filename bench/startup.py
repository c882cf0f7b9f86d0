"""Time the table daemon's start-up (spawn -> READY=1) against the journal's length, with
checkpoints off (the old start-up: verify everything, replay everything) and on, in one run.

Run: `.venv/bin/python bench/startup.py [--sizes 10000,100000,750000]`.

The journals are built through the real append path from a recorded heat of the simulated
table (bench/support/startup_journals.py) and cached under /tmp/showdown-bench-startup/.
Each start is `python -m cli table run` as a subprocess with a `NOTIFY_SOCKET` (a
real datagram socket made here), as systemd starts it, on a fresh copy of the cached journal:

- ``off``: ``[journal] checkpoints = false``: the start-up before checkpoints;
- ``on, 1st``: checkpoints on, the first start on that journal (no signed verified head yet,
  so the whole journal is checked once, then the newest checkpoint is loaded);
- ``on``: the next start (checked after the verified head, newest checkpoint, short replay).

For ``on`` it also waits for the background whole-file check (SQLite's `integrity_check`,
after READY) and prints how long it took. Beside them: `python -c pass` and the imports
alone, spawned the same way, and what a checkpoint costs (taken in the build).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from support.latency_service import NotifySocket, spawn_table
from support.startup_journals import CACHE, REPO, Built, build_journal, table_config

_GUARD_S = 300.0


@dataclass(slots=True)
class Start:
    """One start: READY time, and the figures its log gave."""

    ready_s: float
    replayed: int | None = None
    verify: str = ""
    whole_file_s: float | None = None


async def _spawn(config: Path, notify: NotifySocket, log: Path, *, whole_file: bool) -> Start:
    process, took = await spawn_table(config, notify, log, watchdog_usec=None, timeout=_GUARD_S)
    try:
        result = Start(ready_s=took / 1e9)
        deadline = time.monotonic() + _GUARD_S
        while whole_file and time.monotonic() < deadline and result.whole_file_s is None:
            await asyncio.sleep(0.2)
            _read_log(log, result)
        _read_log(log, result)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, 60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return result


def _read_log(log: Path, result: Start) -> None:
    """The figures of the last start in its JSON log (replayed records, check, whole file)."""
    lines = log.read_text(errors="replace").splitlines()
    last: list[dict[str, object]] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "journal verified":
            last = []
        last.append(entry)
    for entry in last:
        if entry.get("event") == "journal verified":
            result.verify = str(entry.get("how", "")).split(":")[0]
        elif entry.get("event") == "journal replayed":
            result.replayed = int(entry.get("records", 0))  # type: ignore[call-overload]
        elif entry.get("event") in ("journal whole-file check passed",
                                    "journal whole-file check failed; entering the error state"):
            stamp = str(entry.get("timestamp"))
            ready_entry = next((e for e in last if e.get("event") == "ready"), None)
            if ready_entry is not None:
                result.whole_file_s = _seconds(stamp) - _seconds(str(ready_entry["timestamp"]))


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def _baseline(code: str) -> float:
    """Spawn -> exit of `python -c code` (the interpreter, or the daemon's imports)."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=REPO,
                                                   env={**os.environ, "PYTHONPATH": str(REPO)})
    await process.wait()
    return time.perf_counter() - started


async def _one_size(built: Built, scratch: Path) -> dict[str, Start]:
    starts: dict[str, Start] = {}
    for mode in ("off", "on"):
        d = scratch / f"{built.records}-{mode}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        shutil.copy(built.path, d / "journal.sqlite")
        shutil.copy(CACHE / "record" / "table.key", d / "table.key")
        (d / "table.key").chmod(0o600)
        config = table_config(d, checkpoints=mode == "on", heats=0)
        notify = NotifySocket(d)
        notify.start()
        try:
            log = d / "daemon.log"
            if mode == "off":
                starts["off"] = await _spawn(config, notify, log, whole_file=False)
            else:
                starts["on, 1st"] = await _spawn(config, notify, log, whole_file=False)
                starts["on"] = await _spawn(config, notify, log, whole_file=True)
        finally:
            await notify.close()
        shutil.rmtree(d, ignore_errors=True)
    return starts


async def main_async(sizes: list[int], scratch: Path) -> int:
    """Build (or reuse) the journals, time the starts, print the table."""
    builts = [build_journal(n) for n in sizes]
    python_s = await _baseline("pass")
    imports_s = await _baseline("import controller.app, controller.wiring")
    rows = []
    for built in builts:
        rows.append((built, await _one_size(built, scratch)))
    print(f"\nbench/startup.py: spawn -> READY=1 of `python -m cli table run` "
          f"(subprocess, NOTIFY_SOCKET); load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print(f"baseline: python -c pass {python_s:.2f} s; the daemon's imports alone "
          f"{imports_s:.2f} s\n")
    head = (f"{'records':>9} {'file MB':>8} {'off':>8} {'on, 1st':>8} {'on':>8} "
            f"{'replayed (on)':>14} {'whole-file check after READY':>29}")
    print(head)
    print("-" * len(head))
    for built, s in rows:
        mb = built.path.stat().st_size / 1e6
        on = s["on"]
        whole = f"{on.whole_file_s:.1f} s" if on.whole_file_s is not None else "n/a"
        print(f"{built.records:>9,} {mb:>8.0f} {s['off'].ready_s:>7.2f}s "
              f"{s['on, 1st'].ready_s:>7.2f}s {on.ready_s:>7.2f}s "
              f"{on.replayed if on.replayed is not None else '?':>14} {whole:>29}")
    print("\noff: checkpoints off (full check, full replay); on, 1st: the first start with "
          "checkpoints (full check once, then the newest checkpoint); on: every later start "
          f"(check after the signed verified head).\n"
          f"checks: off {rows[-1][1]['off'].verify}, on 1st {rows[-1][1]['on, 1st'].verify}, "
          f"on {rows[-1][1]['on'].verify}")
    for built, _ in rows:
        info = json.loads((built.path.with_suffix(".json")).read_text())
        if "snapshot_ms" in info:
            print(f"checkpoint at {built.records:,} records: snapshot {info['snapshot_ms']:.1f} "
                  f"ms (inputs wait), written {info['write_ms']:.1f} ms (worker thread), state "
                  f"{info['body_kb']:.0f} KB; {built.checkpoints} checkpoints in the journal; "
                  f"built in {built.build_s:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,750000",
                        help="journal sizes in records, comma-separated")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        return asyncio.run(main_async(sizes, Path(scratch)))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
