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
import multiprocessing
import os
import platform
import queue
import random
import resource
import secrets
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from controller.broker_config import BrokerSettings
from controller.embedded_broker import EmbeddedBroker
from game.cards import DECK
from leaderboard.db import make_engine, upgrade
from leaderboard.ingest import Ingestor, MqttResender
from leaderboard.models import Message, Rejection, Score, TableProgress, TableRecord
from runtime.logs import configure_logging
from runtime.net import answers
from wire.envelope import EnvelopeError, seal, verify_envelope
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics

VENUE = "bench"
GOAL = 2_000  # messages per second (issue 6)
HANDS_PER_HEAT = 30
SEATS = 6
POSTGRES_URL = os.environ.get(
    "SHOWDOWN_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MQTT_HOST = "127.0.0.1"
MQTT_PORT = int(os.environ.get("SHOWDOWN_BENCH_MQTT_PORT", "1883"))
T0 = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)
GUARD_S = 300.0  # a scenario that has not finished by then is reported incomplete


# --- messages ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FakeTable:
    """One table's key and its pre-sealed messages, in seq order: (topic, payload)."""

    table: str
    key: Signer
    messages: tuple[tuple[str, bytes], ...]
    scores: int


def _hand_body(rng: random.Random, table: str, hand_id: str, entries: Sequence[str],
               at: str) -> dict[str, Any]:
    """A hand.settled body shaped like game.codec.hand_record (about 3 KB)."""
    cards = [str(c) for c in rng.sample(DECK, 2 * SEATS + 2 + 5 + 3)]
    seats = []
    for seat, entry in enumerate(entries, 1):
        hole = cards[2 * seat - 2: 2 * seat]
        wagers = {"ante": 500, "blind": 500, "trips": 500, "pocket_bonus": 200}
        seats.append({"seat": seat, "entry_id": entry, "hole": hole, "wagers": wagers,
                      "decision": {"play": 3, "street": "preflop", "amount": 1500}})
    dealer, board = cards[2 * SEATS: 2 * SEATS + 2], cards[2 * SEATS + 2: 2 * SEATS + 7]
    settlement = [{"seat": s["seat"], "hand": "Two pair, kings and fours", "category": "two_pair",
                   "outcome": rng.choice(["win", "lose", "push"]), "net": rng.randrange(-3000,
                                                                                        3000),
                   "markers_used": [],
                   "wagers": {w: {"result": "win", "stake": 500, "net": 500, "reason": "beats",
                                  "line": None, "marker": False}
                              for w in ("ante", "blind", "trips", "pocket_bonus")}}
                  for s in seats]
    return {
        "v": 1, "table": table, "hand_id": hand_id, "status": "settled", "heat_id": "heat",
        "stage": "qualifying", "opened_at": at, "settled_at": at,
        "deal": {"seats": list(range(1, SEATS + 1))},
        "reads": [{"card": c, "source": "shoe", "at": at} for c in cards],
        "cards": [{"target": f"seat{i % SEATS + 1}", "card": c} for i, c in enumerate(cards)],
        "dealer": dealer, "board": board, "burns": cards[-3:], "seats": seats,
        "corrections": [], "alerts": [], "resolutions": [],
        "nets": {str(s["seat"]): s["net"] for s in settlement},
        "settlement": {"dealer": {"hand": "Pair of nines", "opens": True}, "seats": settlement},
    }


def build_tables(count: int, heats: int, seed: int, root: str) -> list[FakeTable]:
    """Seal every message of ``count`` tables playing ``heats`` heats each."""
    rng = random.Random(seed)
    tables = []
    for number in range(1, count + 1):
        table = f"t{number:02d}"
        key = Signer.from_seed(table, rng.randbytes(32))
        topics = TableTopics(VENUE, table, root)
        out: list[tuple[str, bytes]] = []
        scores = 0

        def add(kind: str, body: dict[str, Any], *, table: str = table, key: Signer = key,
                topics: TableTopics = topics, out: list[tuple[str, bytes]] = out) -> None:
            seq = len(out) + 1
            wall = T0 + timedelta(seconds=seq)
            envelope = seal(venue=VENUE, table=table, seq=seq, wall=wall, type=kind, body=body,
                            boot="bench", mono=seq * 1_000_000, signer=key)
            topic = topics.scores if kind.startswith("score.") else topics.events
            out.append((topic, envelope.encode()))

        for heat in range(1, heats + 1):
            at = (T0 + timedelta(hours=heat)).isoformat().replace("+00:00", "Z")
            heat_id = f"{table}-h{heat}"
            entries = [f"{table}-{heat}-{seat}" for seat in range(1, SEATS + 1)]
            add("heat.opened", {"heat_id": heat_id, "stage": "qualifying", "at": at})
            for seat, entry in enumerate(entries, 1):
                add("entry.seated", {"entry_id": entry, "seat": seat, "heat_id": heat_id,
                                     "at": at})
            for hand in range(1, HANDS_PER_HEAT + 1):
                hand_id = f"{table}-{(heat - 1) * HANDS_PER_HEAT + hand:06d}"
                add("hand.settled", _hand_body(rng, table, hand_id, entries, at))
            for seat, entry in enumerate(entries, 1):
                score = rng.randrange(0, 60_000)
                add("score.recorded", {
                    "entry_id": entry, "stage": "qualifying", "heat_id": heat_id,
                    "table": table, "seat": seat, "score": score, "hands": HANDS_PER_HEAT,
                    "status": "finished", "markers_forfeited": 0, "last_hand_id": "x",
                    "at": at})
                add("score.acknowledged", {"entry_id": entry, "score": score,
                                           "stage": "qualifying", "method": "card_tap",
                                           "by": None, "at": at})
                scores += 1
            for seat, entry in enumerate(entries, 1):
                add("entry.unseated", {"entry_id": entry, "seat": seat,
                                       "hands_played": HANDS_PER_HEAT, "reason": "", "at": at})
            add("heat.closed", {"heat_id": heat_id, "at": at})
        tables.append(FakeTable(table=table, key=key, messages=tuple(out), scores=scores))
    return tables


# --- services ------------------------------------------------------------------------------------



class Database:
    """A fresh database per scenario: a SQLite file, or a PostgreSQL schema dropped after."""

    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self._schema: str | None = None
        if kind == "sqlite":
            self.url = f"sqlite:///{workdir / f'ingest-{secrets.token_hex(4)}.sqlite3'}"
        else:
            self._schema = f"bench_{secrets.token_hex(6)}"
            admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
            with admin.begin() as connection:
                connection.execute(sa.text(f'CREATE SCHEMA "{self._schema}"'))
            admin.dispose()
            self.url = sa.make_url(POSTGRES_URL).update_query_dict(
                {"options": f"-csearch_path={self._schema}"}).render_as_string(
                    hide_password=False)
        self.engine = make_engine(self.url)
        upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()
        if self._schema is not None:
            admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
            with admin.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{self._schema}" CASCADE'))
            admin.dispose()


def enroll(engine: sa.Engine, tables: Sequence[FakeTable]) -> None:
    with engine.begin() as connection:
        connection.execute(sa.insert(TableRecord), [
            {"table_id": t.table, "venue": VENUE, "public_key": t.key.public_key.base64,
             "enrolled_at": T0, "active": True} for t in tables])


# --- one scenario ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One line of the result table."""

    scenario: str
    broker: str
    database: str
    messages: int
    workers: int = 0
    seconds: float | None = None
    stored: int = 0
    duplicates_received: int = 0
    stored_twice: int = 0
    rejected: int = 0
    resends: int = 0
    verify_us: float | None = None  # verify_envelope alone, just before (core rows)
    problem: str | None = None
    note: str = ""
    cpu: dict[str, float] | None = None  # CpuMeter.read() and "ingest" (MQTT rows)

    @property
    def rate(self) -> float | None:
        return None if not self.seconds else self.stored / self.seconds


def check_database(engine: sa.Engine, tables: Sequence[FakeTable]) -> tuple[int, int, str | None]:
    """(stored rows, (table, seq) stored more than once, a problem or None)."""
    with engine.connect() as connection:
        count = connection.scalar(sa.select(sa.func.count(Message.id))) or 0
        twice = len(connection.execute(
            sa.select(Message.table_id, Message.seq).group_by(Message.table_id, Message.seq)
            .having(sa.func.count() > 1)).all())
        rejections = connection.scalar(sa.select(sa.func.count(Rejection.id))) or 0
        acknowledged = connection.scalar(
            sa.select(sa.func.count()).select_from(Score)
            .where(Score.acknowledged_at.is_not(None))) or 0
    expected = sum(len(t.messages) for t in tables)
    scores = sum(t.scores for t in tables)
    problem = None
    if count != expected:
        problem = f"{count:,} messages stored, expected {expected:,}"
    elif twice:
        problem = f"{twice} (table, seq) stored more than once"
    elif rejections:
        problem = f"{rejections} rejections"
    elif acknowledged != scores:
        problem = f"{acknowledged} acknowledged scores, expected {scores}"
    return count, twice, problem


def _contiguous(engine: sa.Engine) -> int:
    """Messages stored without a hole, all tables together (a cheap poll: one row a table)."""
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.sum(TableProgress.contiguous_seq)))
                   or 0)


def _ticks(path: str, fields: slice) -> int:
    try:
        return sum(int(x) for x in Path(path).read_text().split()[fields])
    except (OSError, ValueError):
        return 0


class CpuMeter:
    """CPU seconds used while a scenario runs: the whole machine, this process (the fake
    tables and the poll), the private broker and PostgreSQL's processes (read from /proc).
    What the ingest instances used, they report themselves."""

    def __init__(self, broker_pid: int | None) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.broker_pid = broker_pid
        self.wall = time.perf_counter()
        self.start = self._sample()

    def _sample(self) -> dict[str, float]:
        cpu_line = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = [int(x) for x in cpu_line]
        own = resource.getrusage(resource.RUSAGE_SELF)
        postgres = 0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _comm(entry) == "postgres":
                postgres += _ticks(f"{entry}/stat", slice(13, 15))
        broker = _ticks(f"/proc/{self.broker_pid}/stat", slice(13, 15)) \
            if self.broker_pid else 0
        return {"busy": (sum(ticks) - ticks[3] - ticks[4]) / self.hz,
                "tables": own.ru_utime + own.ru_stime, "broker": broker / self.hz,
                "postgres": postgres / self.hz}

    def read(self) -> dict[str, float]:
        """CPU seconds per part since the meter started, and ``wall`` seconds."""
        end = self._sample()
        out = {key: end[key] - value for key, value in self.start.items()}
        out["wall"] = time.perf_counter() - self.wall
        return out


def _children_cpu() -> float:
    """CPU seconds used so far by this process's live children (verification workers)."""
    ticks = sum(_ticks(f"/proc/{child.pid}/stat", slice(13, 15))
                for child in multiprocessing.active_children())
    return ticks / os.sysconf("SC_CLK_TCK")


def _comm(entry: Path) -> str:
    try:
        return (entry / "comm").read_text().strip()
    except OSError:
        return ""


async def run_core(tables: Sequence[FakeTable], db: Database, root: str) -> Row:
    """The ingest alone, in this process: handle_batch in batches of 500 (tables interleaved).

    Only the handle_batch calls are timed; before each, verify_envelope alone runs over the
    same batch, so that the cost per message can be split under the same conditions.
    """
    enroll(db.engine, tables)
    ingest = Ingestor(db.engine, venue=VENUE, topic_root=root)
    interleaved = _interleave(tables)
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


def _calibrate(count: int = 600) -> float:
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


def _interleave(tables: Sequence[FakeTable]) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    longest = max(len(t.messages) for t in tables)
    for index in range(longest):
        out.extend(t.messages[index] for t in tables if index < len(t.messages))
    return out


def _remaining(length: int) -> bytes:
    """MQTT's variable-length encoding of a packet's remaining length."""
    out = bytearray()
    while True:
        length, digit = divmod(length, 128)
        out.append(digit | (0x80 if length else 0))
        if not length:
            return bytes(out)


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    return len(data).to_bytes(2, "big") + data


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + _remaining(len(body)) + body


class Publisher:
    """A fake table on the broker: publishes its messages (QoS 1, ``window`` in flight) and
    answers the ingest's signed resend requests from what it has published so far.

    A minimal MQTT 3.1.1 client on asyncio streams, whose PUBLISH packets are encoded before
    the clock starts: the fake tables share the machine with the ingest under test, and an
    aiomqtt or paho client costs about as much CPU per message as verifying it. The broker
    sees an ordinary client (clean session, QoS 1 publishes acknowledged one by one).
    """

    def __init__(self, table: FakeTable, host: str, port: int, root: str,
                 leaderboard: Signer) -> None:
        self.table = table
        self.host, self.port = host, port
        self.cmd = TableTopics(VENUE, table.table, root).cmd
        self.commands = KeyRing([leaderboard.public_key])
        self.published = 0  # messages 1..published have left
        self.resent = 0
        # Each message's PUBLISH (QoS 1): the part before the packet id, and the payload.
        self._heads = [_packet(0x32, _text(topic) + bytes(2 + len(payload)))[:-(2 + len(payload))]
                       for topic, payload in table.messages]
        # What a table says when its link comes up: the last seq it has published, so that
        # a lost tail (a broker that dropped messages) is noticed and asked for.
        status = TableTopics(VENUE, table.table, root).status
        birth = seal(venue=VENUE, table=table.table, seq=0, wall=T0, type="availability",
                     body={"state": "online", "link": {"last_published_seq": len(
                         table.messages)}}, boot="bench", mono=0, signer=table.key).encode()
        self._birth = _packet(0x32, _text(status) + (1).to_bytes(2, "big") + birth)
        self._in_flight: dict[int, bool] = {}  # packet id -> counts in the window
        self._last_id = 0
        self._window: asyncio.Semaphore | None = None
        self._subscribed = asyncio.Event()

    async def run(self, window: int, ready: asyncio.Event, go: asyncio.Event) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        reading: asyncio.Task[None] | None = None
        try:
            client_id = f"bench-{self.table.table}-{secrets.token_hex(3)}"
            # CONNECT: MQTT 3.1.1, clean session, no keep-alive (a run is short).
            writer.write(_packet(0x10, _text("MQTT") + bytes([4, 0x02, 0, 0])
                                 + _text(client_id)))
            connack = await reader.readexactly(4)
            if connack[0] != 0x20 or connack[3] != 0:
                raise RuntimeError(f"{client_id}: the broker refused the connection {connack!r}")
            self._window = asyncio.Semaphore(window)
            reading = asyncio.create_task(self._read(reader, writer))
            writer.write(_packet(0x82, (1).to_bytes(2, "big") + _text(self.cmd) + bytes([1])))
            await self._subscribed.wait()
            ready.set()
            await go.wait()
            for index in range(len(self.table.messages)):
                await self._window.acquire()  # given back by the PUBACK
                if reading.done():  # the connection is lost: say why
                    reading.result()
                self._send(writer, index, in_window=True)
                self.published = index + 1
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()
            self._in_flight[1] = False  # its packet id is reserved at start: see _send
            writer.write(self._birth)
            await reading  # answers resend requests until cancelled at the end
        finally:
            if reading is not None:
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await reading
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _send(self, writer: asyncio.StreamWriter, index: int, *, in_window: bool) -> None:
        packet_id = self._last_id
        while True:  # the next id not in flight (2..65535; 1 is the availability's)
            packet_id = 2 if packet_id >= 65_535 else max(packet_id + 1, 2)
            if packet_id not in self._in_flight:
                break
        self._last_id = packet_id
        self._in_flight[packet_id] = in_window
        writer.writelines((self._heads[index], packet_id.to_bytes(2, "big"),
                           self.table.messages[index][1]))

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._window is not None
        try:
            await self._read_packets(reader, writer, self._window)
        finally:
            self._window.release()  # wakes run() if it waits: it then finds this task done

    async def _read_packets(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            window: asyncio.Semaphore) -> None:
        while True:
            first = (await reader.readexactly(1))[0]
            length, shift = 0, 0
            while True:
                digit = (await reader.readexactly(1))[0]
                length |= (digit & 0x7F) << shift
                shift += 7
                if not digit & 0x80:
                    break
            body = await reader.readexactly(length)
            kind = first & 0xF0
            if kind == 0x40:  # PUBACK
                if self._in_flight.pop(int.from_bytes(body[:2], "big"), False):
                    window.release()
            elif kind == 0x90:  # SUBACK
                if body[2:3] != b"\x01":
                    raise RuntimeError(f"{self.cmd}: subscription refused ({body[2:]!r})")
                self._subscribed.set()
            elif kind == 0x30:  # PUBLISH (a command for this table)
                size = int.from_bytes(body[:2], "big")
                topic, rest = body[2:2 + size].decode("utf-8"), body[2 + size:]
                if (first >> 1) & 3:  # QoS 1 or 2: acknowledge it (QoS 1 subscription)
                    writer.write(b"\x40\x02" + rest[:2])
                    rest = rest[2:]
                if topic == self.cmd:
                    self._answer(writer, rest)

    def _answer(self, writer: asyncio.StreamWriter, payload: bytes) -> None:
        try:
            command = verify_envelope(payload, self.commands)
        except EnvelopeError:
            return
        from_seq = command.body.get("from_seq")
        if command.body.get("table") != self.table.table or not isinstance(from_seq, int):
            return
        for index in range(max(from_seq, 1) - 1, self.published):
            self._send(writer, index, in_window=False)
            self.resent += 1


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
        cpu = time.process_time() + _children_cpu()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        used = time.process_time() + _children_cpu() - cpu
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
        while await asyncio.to_thread(_contiguous, db.engine) < total:
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


# --- main ---------------------------------------------------------------------------------------


def _cpu_line(row: Row) -> str:
    """Where the machine's CPU went during a scenario, in microseconds per stored message."""
    cpu = row.cpu or {}
    per = {key: value / row.stored * 1e6 for key, value in cpu.items() if key != "wall"}
    known = sum(per.get(k, 0.0) for k in ("ingest", "tables", "broker", "postgres"))
    cores = os.cpu_count() or 1
    busy = cpu.get("busy", 0.0) / (cpu.get("wall") or 1.0) / cores
    parts = ", ".join(f"{label} {per[key]:,.0f}" for key, label in (
        ("ingest", "ingest"), ("tables", "fake tables"), ("broker", "broker"),
        ("postgres", "postgresql")) if key in per and (key != "postgres" or per[key] > 0))
    return (f"CPU per message, {row.scenario} on {row.database}: {per.get('busy', 0):,.0f} us "
            f"machine-wide = {parts}, other {max(per.get('busy', 0) - known, 0):,.0f} "
            f"(the {cores} CPUs {busy:.0%} busy)")


def _print_table(rows: Sequence[Row]) -> None:
    header = (f"{'scenario':<34} {'broker':<10} {'database':<10} {'workers':>7} "
              f"{'messages':>9} {'seconds':>8} {'msg/s':>7} {'stored':>8} {'dup recv':>8} "
              f"{'stored 2x':>9} {'rejected':>8} {'resends':>7}  note")
    print(header)
    print("-" * len(header))
    for row in rows:
        seconds = "-" if row.seconds is None else f"{row.seconds:.2f}"
        rate = "-" if row.rate is None else f"{row.rate:,.0f}"
        note = f"WRONG: {row.problem}" if row.problem else row.note
        print(f"{row.scenario:<34} {row.broker:<10} {row.database:<10} {row.workers:>7} "
              f"{row.messages:>9,} {seconds:>8} {rate:>7} {row.stored:>8,} "
              f"{row.duplicates_received:>8,} {row.stored_twice:>9,} {row.rejected:>8,} "
              f"{row.resends:>7,}  {note}", flush=True)


async def _scenario(rows: list[Row], kind: str, workdir: Path,
                    body: Callable[[Database], Awaitable[Row]]) -> None:
    db = Database(kind, workdir)
    try:
        rows.append(await body(db))
    finally:
        db.close()


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
    print(f"CPU speed: an Ed25519 verification of 3.75 KB takes {_calibrate():,.0f} us here, "
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
                await _scenario(rows, kind, workdir, lambda db: run_core(tables, db, root))
            for kind in databases if "single" in args.scenarios else []:
                await _scenario(rows, kind, workdir, lambda db: run_mqtt(
                    tables, db, host=host, port=port, broker=broker, instances=1,
                    verify_workers=args.workers, root=root, broker_pid=pid))
            for kind in databases if "shared" in args.scenarios else []:
                if broker == "embedded":
                    rows.append(Row(scenario="2 instances, shared subscription",
                                    broker="-", database=kind, messages=total,
                                    note="skipped: needs Mosquitto (amqtt has no $share)"))
                    continue
                await _scenario(rows, kind, workdir, lambda db: run_mqtt(
                    tables, db, host=host, port=port, broker=broker, instances=2,
                    verify_workers=0, root=root, broker_pid=pid))
    print()
    _print_table(rows)
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
            print(_cpu_line(row))
    print()
    wrong = [r for r in rows if r.problem]
    for row in rows:
        if row.rate is None or row.broker == "-":
            continue
        verdict = "PASS" if row.rate >= GOAL else "MISS"
        print(f"goal {GOAL:,} msg/s, {row.scenario} on {row.database}: {verdict} "
              f"({row.rate:,.0f} msg/s)")
    print(f"CPU speed at the end: an Ed25519 verification of 3.75 KB takes {_calibrate():,.0f} us")
    print(f"result: {'WRONG' if wrong else 'OK'} ({len(wrong)} scenarios with a wrong result; "
          "every message stored once, none twice)")
    return 1 if wrong else 0


@contextlib.asynccontextmanager
async def broker_for(choice: str, workdir: Path, *, messages: int = 0
                     ) -> AsyncIterator[tuple[str, int, str, str, int | None]]:
    """(host, port, kind, description, pid if ours) of the broker to use, for the block.

    ``private``: a Mosquitto of our own, configured as production's (max_queued_messages
    from controller/broker_config.py; a stock Mosquitto drops a slow subscriber's QoS 1
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
