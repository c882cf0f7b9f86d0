"""Benchmark the leaderboard ingest: messages per second stored, with 0 duplicates (issue 6).

Several fake tables' messages (heats of seatings, settled hands with full records, scores and
acknowledgements) are sealed with Ed25519 before any timing starts. Each scenario then gets a
fresh database with the tables enrolled, starts the ingest (``Ingestor.run``: the service's
receive loop), publishes every message at QoS 1 (one minimal MQTT client per table, in
parallel, see Publisher) and measures from the first publish until the last message is
stored. Afterwards it checks the database: every (table, seq) stored exactly once, every
score projected, no rejection. It also prints where the machine's CPU went (CpuMeter) and the
machine's speed at the start and the end (shared machines vary).

Scenarios: the ingest core alone (``handle_batch``, no broker), one instance over MQTT on
SQLite and on PostgreSQL, and two instances on a shared subscription (``$share/...``; needs
Mosquitto: amqtt cannot deliver to shared subscriptions, so the embedded broker refuses them) on
SQLite and PostgreSQL. PostgreSQL is used when reachable at SHOWDOWN_BENCH_POSTGRES_URL
(default: the tests' postgresql+psycopg://postgres@127.0.0.1:5432/test), in a schema of its
own that is dropped afterwards. The broker (``--broker``): a private Mosquitto if installed
(broker_for), else the machine's at 127.0.0.1:1883 (SHOWDOWN_BENCH_MQTT_PORT), else the
embedded one.

The goal (issue 6) is at least 2,000 messages per second; it is reported as PASS/MISS and
never fails a run, since machines vary. Exit status: 0, or 1 when a result is wrong
(a message missing or stored twice, a rejection, a score not projected).

Run: ``.venv/bin/python bench/ingest.py [--quick] [--tables N] [--heats N] [--seed N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import faulthandler
import logging
import os
import platform
import secrets
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import sqlalchemy as sa
from support.ingest_results import Row, cpu_line, print_table
from support.ingest_runs import calibrate, run_core, run_mqtt, run_scenario
from support.ingest_tables import GOAL, MQTT_HOST, MQTT_PORT, POSTGRES_URL, build_tables

from controller.embedded_broker import EmbeddedBroker
from deploy.broker_config import BrokerSettings
from runtime.logs import configure_logging
from runtime.net import answers


async def main_async(args: argparse.Namespace) -> int:
    root = f"showdown-bench/{secrets.token_hex(4)}"
    started = time.perf_counter()
    tables = build_tables(args.tables, args.heats, args.seed, root)
    total = sum(len(t.messages) for t in tables)
    mean_bytes = sum(len(p) for t in tables for _, p in t.messages) / total
    print(f"machine: {platform.machine()} {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, SQLAlchemy {sa.__version__}, SQLite {sqlite3.sqlite_version}")
    print(f"{len(tables)} tables x {args.heats} heats: {total:,} messages sealed in "
          f"{time.perf_counter() - started:.1f} s before timing (mean {mean_bytes:,.0f} bytes; "
          f"{sum(t.scores for t in tables):,} scores), seed {args.seed}")
    print(f"CPU speed: an Ed25519 verification of 3.75 KB takes {calibrate():,.0f} us here, "
          "now (shared machines vary; measured again at the end)")
    postgres = answers(*_host_port(POSTGRES_URL))
    databases = [kind for kind in ("sqlite", "postgresql")
                 if kind in args.databases and (postgres or kind == "sqlite")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="showdown-bench-ingest-") as tmp:
        workdir = Path(tmp)
        async with broker_for(args.broker, workdir, messages=total) as (
                host, port, broker, about, pid):
            print(f"services: broker {about}; PostgreSQL "
                  f"{'used' if postgres else 'absent (skipped)'}; verification workers: "
                  f"{args.workers} (1 instance), 0 (each of 2 instances)")
            for kind in databases if "core" in args.scenarios else []:
                await run_scenario(rows, kind, workdir, lambda db: run_core(tables, db, root))
            for kind in databases if "single" in args.scenarios else []:
                await run_scenario(rows, kind, workdir, lambda db: run_mqtt(
                    tables, db, host=host, port=port, broker=broker, instances=1,
                    verify_workers=args.workers, root=root, broker_pid=pid))
            for kind in databases if "shared" in args.scenarios else []:
                if broker == "embedded":
                    rows.append(Row(scenario="2 instances, shared subscription",
                                    broker="-", database=kind, messages=total,
                                    note="skipped: needs Mosquitto (amqtt has no $share)"))
                    continue
                await run_scenario(rows, kind, workdir, lambda db: run_mqtt(
                    tables, db, host=host, port=port, broker=broker, instances=2,
                    verify_workers=0, root=root, broker_pid=pid))
    print()
    print_table(rows)
    print()
    for row in rows:
        if row.broker == "-" and row.rate and row.verify_us is not None:
            verify_us, total_us = row.verify_us, 1e6 / row.rate
            print(f"cost per message in one process, {row.database}: {total_us:,.0f} us = "
                  f"verify_envelope {verify_us:,.0f} us + store and project "
                  f"{max(total_us - verify_us, 0):,.0f} us (one core: at most "
                  f"{row.rate:,.0f} msg/s)")
    for row in rows:
        if row.cpu is not None and row.stored:
            print(cpu_line(row))
    print()
    wrong = [r for r in rows if r.problem]
    for row in rows:
        if row.rate is None or row.broker == "-":
            continue
        verdict = "PASS" if row.rate >= GOAL else "MISS"
        print(f"goal {GOAL:,} msg/s, {row.scenario} on {row.database}: {verdict} "
              f"({row.rate:,.0f} msg/s)")
    print(f"CPU speed at the end: an Ed25519 verification of 3.75 KB takes {calibrate():,.0f} us")
    print(f"result: {'WRONG' if wrong else 'OK'} ({len(wrong)} scenarios with a wrong result; "
          "every message stored once, none twice)")
    return 1 if wrong else 0


@contextlib.asynccontextmanager
async def broker_for(choice: str, workdir: Path, *, messages: int = 0
                     ) -> AsyncIterator[tuple[str, int, str, str, int | None]]:
    """(host, port, kind, description, pid if ours) of the broker to use, for the block.

    ``private``: a Mosquitto of our own, configured as production's (max_queued_messages
    from deploy/broker_config.py; a stock Mosquitto drops a slow subscriber's QoS 1
    messages beyond 1,000), but queueing at least ``messages``: the fake tables publish a
    whole run in about a second, a burst no venue makes, and what the broker dropped would
    only be recovered by resend requests after ``resend_after_s``, measuring those instead
    of the ingest. ``system``: the machine's on 127.0.0.1:1883 (drops beyond 1,000 queued:
    the resend path at work). ``embedded``: amqtt. ``auto``: the first of these available.
    """
    binary = shutil.which("mosquitto") or ("/usr/sbin/mosquitto"
                                            if Path("/usr/sbin/mosquitto").exists() else None)
    if choice == "private" or (choice == "auto" and binary):
        if binary is None:
            raise SystemExit("--broker private: mosquitto is not installed")
        production = next(f.default for f in dataclasses.fields(BrokerSettings)
                          if f.name == "max_queued_messages")
        queued = max(int(production), messages)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                        f"max_queued_messages {queued}\n"
                        + ("user root\n" if os.getuid() == 0 else ""))
        process = await asyncio.create_subprocess_exec(
            binary, "-c", str(conf), stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        try:
            async with asyncio.timeout(30):
                while not await asyncio.to_thread(answers, "127.0.0.1", port):
                    await asyncio.sleep(0.05)
            yield ("127.0.0.1", port, "mosquitto",
                   f"a private Mosquitto on 127.0.0.1:{port} (max_queued_messages {queued:,}; "
                   f"production's is {production:,})", process.pid)
        finally:
            process.terminate()
            await process.wait()
    elif choice == "system" or (choice == "auto" and answers(MQTT_HOST, MQTT_PORT)):
        yield (MQTT_HOST, MQTT_PORT, "mosquitto",
               f"the machine's Mosquitto on {MQTT_HOST}:{MQTT_PORT}", None)
    else:
        async with EmbeddedBroker() as embedded:
            yield (embedded.host, embedded.port, "embedded",
                   f"the embedded amqtt broker on {embedded.host}:{embedded.port}", None)


def _host_port(url: str) -> tuple[str, int]:
    parsed = sa.make_url(url)
    return parsed.host or "127.0.0.1", parsed.port or 5432


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 tables x 1 heat (112 messages)")
    parser.add_argument("--tables", type=int, default=8, help="fake tables (default 8)")
    parser.add_argument("--heats", type=int, default=25,
                        help="heats per table, 56 messages each (default 25)")
    parser.add_argument("--workers", type=int, default=0,
                        help="verification worker processes of the single instance "
                             "(default 0, as the service's verify_workers)")
    parser.add_argument("--seed", type=int, default=20260703)
    parser.add_argument("--broker", choices=["auto", "private", "system", "embedded"],
                        default="auto", help="auto: a private Mosquitto if installed, else the "
                        "machine's on 127.0.0.1:1883, else the embedded broker")
    parser.add_argument("--scenarios", default="core,single,shared",
                        help="which to run, of core, single, shared (default: all)")
    parser.add_argument("--databases", default="sqlite,postgresql",
                        help="which to use, of sqlite, postgresql (default: both)")
    args = parser.parse_args(argv)
    args.scenarios = set(args.scenarios.split(","))
    args.databases = set(args.databases.split(","))
    if not args.scenarios <= {"core", "single", "shared"} \
            or not args.databases <= {"sqlite", "postgresql"}:
        parser.error("--scenarios takes core, single, shared; --databases sqlite, postgresql")
    if args.quick:
        args.tables, args.heats = 2, 1
    if args.tables < 1 or args.heats < 1 or args.workers < 0:
        parser.error("--tables and --heats must be at least 1, --workers at least 0")
    configure_logging(fmt="console", level="error")
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` shows where a run is waiting
    # aiomqtt warns at every publish beyond 10 in flight: that is the point here.
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
