"""Row of bench/recovery.py: the whole central database rebuilt from the tables' journals.

The central database is lost and made again empty, with the tables still enrolled (their
keys are the venue's configuration, D408). Every table holds its month of signed
messages (bench/ingest.py's fake tables: heats of seatings, 30 settled hands with full
records, scores, acknowledgements, sealed with each table's own key before any timing) and
has left its retained ``online`` availability on the broker, naming its last published seq,
as a table daemon does at every connection. Then the ingest starts on the empty database
(``Ingestor.run``, the service's receive loop, in a process of its own): the retained
notices show every table's missing month, the ingest asks each table to resend from seq 1
(the ``resend`` command; no new command or step: D408), and each fake table answers
by publishing its month again, as `controller.app` does from `journal.messages(from_seq)`.

Timed: from the ingest subscribed to the last message stored (and the first resend request
within it). Beside it, in the same run: the ingest core alone (``handle_batch`` in this
process, no broker) on one table's month on an empty database: the ingest's own ceiling.
Checked: every (table, seq) stored once, no rejection, every score acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import os
import queue
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deploy.broker_config import BrokerSettings
from runtime.net import answers
from support.ingest_results import CpuMeter, check_database, contiguous
from support.ingest_runs import Instance, _instance, run_core
from support.ingest_tables import (
    GUARD_S,
    POSTGRES_URL,
    T0,
    VENUE,
    Database,
    FakeTable,
    build_tables,
    enroll,
)
from support.raw_publisher import Publisher, _packet, _text
from support.recovery_table import Goal, Options, Outcome
from wire.envelope import EnvelopeError, seal, verify_envelope
from wire.signing import Signer
from wire.topics import TableTopics

__all__ = ["rebuild_rows"]

GOAL = Goal(10_000, "msg/s")
MESSAGES_PER_HEAT = 56  # bench/ingest.py's heat
_WINDOW = 50  # QoS 1 messages a fake table has in flight (bench/ingest.py's)


class MonthTable(Publisher):
    """A fake table that has published its month already: it connects, leaves its retained
    ``online`` notice (last published seq: its month), and answers resend requests through
    its window of QoS 1 messages in flight (a table publishes its resend in order, as fast as
    the broker acknowledges); a request from below where its resend has got to starts it
    again from there, a request above it is already on its way."""

    def __init__(self, table: FakeTable, host: str, port: int, root: str,
                 leaderboard: Signer) -> None:
        super().__init__(table, host, port, root, leaderboard)
        self.published = len(table.messages)
        self.requests = 0
        self._next = self.published  # the index of the next message to resend
        self._asked = asyncio.Event()
        status = TableTopics(VENUE, table.table, root).status
        birth = seal(venue=VENUE, table=table.table, seq=0, wall=T0, type="availability",
                     body={"state": "online", "link": {"last_published_seq": len(
                         table.messages)}}, boot="bench", mono=0, signer=table.key).encode()
        # PUBLISH, QoS 1, retained (0x33), packet id 1
        self._birth = _packet(0x33, _text(status) + (1).to_bytes(2, "big") + birth)

    async def run(self, window: int, ready: asyncio.Event, go: asyncio.Event) -> None:
        del go
        reader, writer = await asyncio.open_connection(self.host, self.port)
        reading: asyncio.Task[None] | None = None
        resending: asyncio.Task[None] | None = None
        try:
            reading = await self._connect(reader, writer, window)
            self._in_flight[1] = False
            writer.write(self._birth)
            resending = asyncio.create_task(self._resending(writer, reading))
            ready.set()
            await reading  # answers resend requests until cancelled at the end
        finally:
            for task in (resending, reading):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                        await task
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _resending(self, writer: asyncio.StreamWriter,
                         reading: asyncio.Task[None]) -> None:
        assert self._window is not None
        while True:
            await self._asked.wait()
            self._asked.clear()
            while self._next < self.published:
                await self._window.acquire()  # given back by the PUBACK
                if reading.done():
                    reading.result()
                self._send(writer, self._next, in_window=True)
                self._next += 1
                self.resent += 1
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()

    def _answer(self, writer: asyncio.StreamWriter, payload: bytes) -> None:
        del writer
        try:
            command = verify_envelope(payload, self.commands)
        except EnvelopeError:
            return
        from_seq = command.body.get("from_seq")
        if command.body.get("table") != self.table.table or not isinstance(from_seq, int):
            return
        self.requests += 1
        self._next = min(self._next, max(from_seq, 1) - 1)
        self._asked.set()


@contextlib.contextmanager
def _mosquitto(workdir: Path, messages: int) -> Iterator[tuple[int, int, int]]:
    """A private Mosquitto with production's settings, but queueing at least ``messages``
    for a subscriber (bench/ingest.py's reason: see note in the row); (port, pid, queue)."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    production = next(int(str(f.default)) for f in dataclasses.fields(BrokerSettings)
                      if f.name == "max_queued_messages")
    queued = max(production, messages)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"max_queued_messages {queued}\n"
                    + ("user root\n" if os.getuid() == 0 else ""))
    process = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL,  # noqa: S603
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not answers("127.0.0.1", port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the private mosquitto did not start")
            time.sleep(0.05)
        yield port, process.pid, queued
    finally:
        process.terminate()
        process.wait(10)


@dataclass(slots=True)
class Rebuilt:
    """What the rebuild gave: seconds from the ingest subscribed to all stored, the first
    resend answered, counters, the database check and the CPU each part used."""

    seconds: float = 0.0
    first_resend_s: float | None = None
    stored: int = 0
    twice: int = 0
    problem: str | None = None
    resent: int = 0
    requests: int = 0
    duplicates: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # CpuMeter.read() and "ingest"

    def rate(self) -> float:
        """Messages stored a second once the tables resend (the wait for the first request,
        the ingest's resend_after_s, is in ``seconds``)."""
        resending = self.seconds - (self.first_resend_s or 0.0)
        return self.stored / resending if resending > 0 else 0.0


async def _rebuild(tables: Sequence[FakeTable], db: Database, broker: tuple[int, int], *,
                   root: str, workers: int) -> Rebuilt:
    """The empty database rebuilt over MQTT (``broker``: port, pid); the figures."""
    port, pid = broker
    enroll(db.engine, tables)
    total = sum(len(t.messages) for t in tables)
    seed = secrets.token_bytes(32)
    leaderboard = Signer.from_seed("leaderboard", seed)
    month = [MonthTable(t, "127.0.0.1", port, root, leaderboard) for t in tables]
    table_ready = [asyncio.Event() for _ in month]
    go = asyncio.Event()
    tasks = [asyncio.create_task(m.run(_WINDOW, r, go)) for m, r in zip(month, table_ready,
                                                                  strict=True)]
    context = multiprocessing.get_context("spawn")
    stop, results, ready = context.Event(), context.Queue(), context.Event()
    config = Instance(url=db.url, root=root, host="127.0.0.1", port=port, shared_group=None,
                      verify_workers=workers, leaderboard_seed=seed)
    process = context.Process(target=_instance, args=(config, ready, stop, results))
    counters: dict[str, float] = {}
    got = Rebuilt()
    try:
        async with asyncio.timeout(60):
            for event in table_ready:
                await event.wait()
        await asyncio.sleep(0.2)  # the retained notices are on the broker
        process.start()
        if not await asyncio.to_thread(ready.wait, 120):
            raise RuntimeError("the ingest instance did not start within 120 s")
        meter = CpuMeter(pid)
        started = time.perf_counter()
        deadline = started + GUARD_S * max(1, total // 50_000)
        while await asyncio.to_thread(contiguous, db.engine) < total:
            if got.first_resend_s is None and any(m.resent for m in month):
                got.first_resend_s = time.perf_counter() - started
            if time.perf_counter() > deadline:
                break
            await asyncio.sleep(0.05)
        got.seconds = time.perf_counter() - started
        got.cpu = meter.read()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=30)
        stop.set()
        with contextlib.suppress(queue.Empty):
            counters = await asyncio.to_thread(results.get, True, 60)
        await asyncio.to_thread(process.join, 30)
        if process.is_alive():
            process.kill()
    got.stored, got.twice, got.problem = check_database(db.engine, tables)
    got.resent = sum(m.resent for m in month)
    got.requests = int(counters.get("resend_requests", 0))
    got.duplicates = int(counters.get("duplicates", 0))
    got.cpu["ingest"] = float(counters.get("cpu_s", 0.0))
    return got


def _database_kind(choice: str) -> str:
    if choice != "auto":
        return choice
    parsed = POSTGRES_URL.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = parsed.partition(":")
    return "postgresql" if answers(host or "127.0.0.1", int(port or 5432)) else "sqlite"


async def rebuild_rows(options: Options) -> list[Outcome]:
    """The centre rebuilt from ``--tables`` tables' months of ``--heats`` heats each."""
    args = options.args
    root = f"showdown-bench/{secrets.token_hex(4)}"
    started = time.perf_counter()
    tables = await asyncio.to_thread(build_tables, args.tables, args.heats, args.seed, root)
    sealed_s = time.perf_counter() - started
    total = sum(len(t.messages) for t in tables)
    kind = _database_kind(args.database)
    core_db = Database(kind, options.scratch)
    try:  # the peer: the ingest core alone on one table's month, an empty database
        core = await run_core(tables[:1], core_db, root)
    finally:
        core_db.close()
    db = Database(kind, options.scratch)
    try:
        with _mosquitto(options.scratch, total) as (port, pid, queued):
            got = await _rebuild(tables, db, (port, pid), root=root, workers=args.workers)
    finally:
        db.close()
    stored = max(got.stored, 1)
    per = {k: v / stored * 1e6 for k, v in got.cpu.items() if k != "wall"}
    cores = os.cpu_count() or 1
    busy = got.cpu.get("busy", 0.0) / max(got.cpu.get("wall", 1.0), 1e-9) / cores
    first = "-" if got.first_resend_s is None else f"{got.first_resend_s:.2f}"
    outcome = Outcome(
        failure=f"centre rebuilt from {len(tables)} tables' journals ({kind})",
        measure=("messages stored a second from the first resend request answered to every "
                 f"table's month stored ({total:,} messages, {len(tables)} tables x "
                 f"{args.heats} heats) on an empty database; the retained availability "
                 "notices trigger the resend requests"),
        value=got.rate(), goal=GOAL, lost=max(total - got.stored, 0), doubled=got.twice,
        baseline=(f"ingest core alone {core.rate or 0:,.0f} msg/s (handle_batch, "
                  f"{core.messages:,} msgs, verify {core.verify_us or 0:,.0f} us/msg)"),
        details=[
            f"{total:,} messages sealed in {sealed_s:.0f} s before timing; time to serve "
            f"again (ingest subscribed -> all stored) {got.seconds:.1f} s; first resend "
            f"answered {first} s after the ingest subscribed; {got.requests} resend requests, "
            f"{got.resent:,} messages resent, {got.duplicates:,} copies dropped",
            f"CPU per message: {per.get('busy', 0):,.0f} us machine-wide = ingest "
            f"{per.get('ingest', 0):,.0f} (verification workers: {args.workers}), fake tables "
            f"{per.get('tables', 0):,.0f}, broker {per.get('broker', 0):,.0f}, postgresql "
            f"{per.get('postgres', 0):,.0f}; the {cores} CPUs {busy:.0%} busy",
            f"broker: a private Mosquitto queueing up to {queued:,} messages a subscriber "
            "(production's max_queued_messages is 10,000; see D409)",
        ])
    if got.problem:
        outcome.wrong = got.problem
    return [outcome]
