"""The ingest benchmark's scenarios: the ingest core alone, and ingest instances over MQTT."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import multiprocessing
import queue
import secrets
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.db import make_engine
from leaderboard.ingest import Ingestor, MqttResender
from runtime.logs import configure_logging
from support.ingest_results import CpuMeter, Row, check_database, children_cpu, contiguous
from support.ingest_tables import GUARD_S, VENUE, Database, FakeTable, enroll
from support.raw_publisher import Publisher
from wire.envelope import verify_envelope
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, Signer


async def run_core(tables: Sequence[FakeTable], db: Database, root: str) -> Row:
    """The ingest alone, in this process: handle_batch in batches of 500 (tables interleaved).

    Only the handle_batch calls are timed; before each, verify_envelope alone runs over the
    same batch, so that the cost per message can be split under the same conditions.
    """
    enroll(db.engine, tables)
    ingest = Ingestor(db.engine, venue=VENUE, topic_root=root)
    interleaved = interleave(tables)
    ring = KeyRing([t.key.public_key for t in tables])
    seconds = verifying = 0.0
    for start in range(0, len(interleaved), 500):
        batch = interleaved[start:start + 500]
        # verify_envelope alone on the same batch just before, for the cost breakdown
        started = time.perf_counter()
        for _, payload in batch:
            verify_envelope(payload, ring)
        verifying += time.perf_counter() - started
        started = time.perf_counter()
        await ingest.handle_batch(batch)
        seconds += time.perf_counter() - started
    verify_us = verifying / len(interleaved) * 1e6
    count, twice, problem = check_database(db.engine, tables)
    counts = ingest.counters()
    return Row(scenario="ingest core (handle_batch)", broker="-", database=db.kind,
               messages=len(interleaved), seconds=seconds, stored=count,
               duplicates_received=counts.duplicates, stored_twice=twice,
               rejected=counts.rejected, verify_us=verify_us, problem=problem)


def calibrate(count: int = 600) -> float:
    """Microseconds of CPU per Ed25519 verification of a 3,750-byte message (PyNaCl, so not
    changed by this project's code): the machine's speed, through which figures from runs on
    different machines, or at different moments of a shared one, compare."""
    signer = Signer.from_seed("speed", bytes(32))
    message = bytes(3_750)
    signature = signer.sign(message)
    started = time.process_time()
    for _ in range(count):
        signer.public_key.verify(message, signature)
    return (time.process_time() - started) / count * 1e6


def interleave(tables: Sequence[FakeTable]) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    longest = max(len(t.messages) for t in tables)
    for index in range(longest):
        out.extend(t.messages[index] for t in tables if index < len(t.messages))
    return out




@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """What an ingest process needs (picklable: it is spawned)."""

    url: str
    root: str
    host: str
    port: int
    shared_group: str | None
    verify_workers: int
    leaderboard_seed: bytes


def _instance(config: Instance, ready: Any, stop: Any, results: Any) -> None:
    """One ingest instance in a process of its own (spawned): runs until ``stop`` is set."""
    configure_logging(fmt="console", level="error")
    faulthandler.register(signal.SIGUSR1)

    async def main() -> None:
        engine = make_engine(config.url)
        settings = MqttSettings(host=config.host, port=config.port, topic_root=config.root,
                                backoff_initial_s=0.1, backoff_max_s=1.0)
        key = Signer.from_seed("leaderboard", config.leaderboard_seed)
        ingest = Ingestor(engine, venue=VENUE, topic_root=config.root,
                          resend=MqttResender(settings, key, venue=VENUE),
                          verify_workers=config.verify_workers)
        halt, subscribed = asyncio.Event(), asyncio.Event()
        runner = asyncio.create_task(ingest.run(settings, shared_group=config.shared_group,
                                                stop=halt, ready=subscribed))
        await subscribed.wait()
        # This process and its verification workers (started already), from now on.
        cpu = time.process_time() + children_cpu()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        used = time.process_time() + children_cpu() - cpu
        halt.set()
        await runner
        engine.dispose()
        results.put({**ingest.counters().as_dict(), "cpu_s": used})

    asyncio.run(main())


async def run_mqtt(tables: Sequence[FakeTable], db: Database, *, host: str, port: int,
                   broker: str, instances: int, verify_workers: int, root: str,
                   broker_pid: int | None = None) -> Row:
    """``instances`` ingest processes (on a shared subscription if more than one) fed over MQTT
    by one client per fake table; timed from the first publish to the last message stored."""
    enroll(db.engine, tables)
    total = sum(len(t.messages) for t in tables)
    context = multiprocessing.get_context("spawn")
    stop, results = context.Event(), context.Queue()
    readies = [context.Event() for _ in range(instances)]
    seed = secrets.token_bytes(32)
    leaderboard = Signer.from_seed("leaderboard", seed)
    group = "bench" if instances > 1 else None
    config = Instance(url=db.url, root=root, host=host, port=port, shared_group=group,
                      verify_workers=verify_workers, leaderboard_seed=seed)
    processes = [context.Process(target=_instance, args=(config, ready, stop, results))
                 for ready in readies]
    for process in processes:
        process.start()
    publishers = [Publisher(t, host, port, root, leaderboard) for t in tables]
    go = asyncio.Event()
    table_ready = [asyncio.Event() for _ in publishers]
    tasks = [asyncio.create_task(p.run(50, r, go)) for p, r in zip(publishers, table_ready,
                                                                   strict=True)]
    scenario = "1 instance" if instances == 1 else f"{instances} instances, shared subscription"
    counters: list[dict[str, Any]] = []
    try:
        for ready in readies:
            if not await asyncio.to_thread(ready.wait, 60):
                raise RuntimeError("an ingest instance did not start within 60 s")
        async with asyncio.timeout(30):
            for event in table_ready:
                await event.wait()
        meter = CpuMeter(broker_pid)
        started = time.perf_counter()
        go.set()
        deadline = started + GUARD_S
        while await asyncio.to_thread(contiguous, db.engine) < total:
            if time.perf_counter() > deadline:
                break
            await asyncio.sleep(0.02)
        seconds = time.perf_counter() - started
        use = meter.read()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=30)
        stop.set()
        for _ in processes:
            with contextlib.suppress(queue.Empty):
                counters.append(await asyncio.to_thread(results.get, True, 60))
        for process in processes:
            await asyncio.to_thread(process.join, 30)
            if process.is_alive():  # it did not stop: it cannot hold up the next scenario
                process.kill()
    count, twice, problem = check_database(db.engine, tables)
    note = "received " + " + ".join(f"{c['received']:,}" for c in counters) if instances > 1 \
        else ""
    use["ingest"] = sum(c["cpu_s"] for c in counters)
    return Row(scenario=scenario, broker=broker, database=db.kind, messages=total,
               workers=verify_workers, seconds=seconds, stored=count,
               duplicates_received=sum(c["duplicates"] for c in counters),
               stored_twice=twice, rejected=sum(c["rejected"] for c in counters),
               resends=sum(c["resend_requests"] for c in counters), problem=problem,
               note=note, cpu=use)




async def run_scenario(rows: list[Row], kind: str, workdir: Path,
                    body: Callable[[Database], Awaitable[Row]]) -> None:
    db = Database(kind, workdir)
    try:
        rows.append(await body(db))
    finally:
        db.close()
