"""The leaderboard service as bench/standings.py runs it: in this process, on the bench's
database and the machine's Mosquitto, a fake enrolled table t01 publishing signed scores and
an HTTP client reading the page's event stream (GET /events).

`Service.score(n)` publishes entry n's ``score.recorded`` (QoS 1, the table's own client) and
returns the time from the publish to the SSE event whose document shows the score (it
waits for the score among those awaiting acknowledgement, ``pending``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt
from sqlalchemy import func, select

from leaderboard.app import LeaderboardService
from leaderboard.config import read_leaderboard_config
from leaderboard.db import make_engine
from leaderboard.models import Message
from support.standings_rows import LIVE_DAY, SAST, live_id
from wire.envelope import seal
from wire.signing import Signer, save_private_key
from wire.topics import TableTopics

__all__ = ["START", "VENUE", "Service", "running"]

VENUE = "benchvenue"
START = datetime(LIVE_DAY.year, LIVE_DAY.month, LIVE_DAY.day, 20, 0, tzinfo=SAST)
REPO = Path(__file__).resolve().parents[2]
_WAIT_S = 300.0  # a score the page never shows ends the run


def _config(workdir: Path, url: str, table: Signer, root: str, port: int) -> Path:
    key = Signer.generate("leaderboard")
    save_private_key(key, workdir / "leaderboard.key")
    (workdir / "tables.pub").write_text(f"{table.public_key.enrolment_line()}\n")
    path = workdir / "leaderboard.toml"
    path.write_text(f"""
[service]
venue = "{VENUE}"
database = "{url}"
tournament = "{REPO / 'config' / 'tournament.toml'}"
topic_root = "{root}"

[mqtt]
broker = "127.0.0.1:{port}"
client_id = "bench-lb-{secrets.token_hex(4)}"

[keys]
signing_key = "leaderboard.key"
tables_file = "tables.pub"

[http]
port = 0
""")
    return path


class _Events:
    """GET /events read as it arrives: each ``standings`` event's document, parsed."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self._buffer = b""

    async def next_document(self) -> dict[str, Any]:
        """The next standings document (chunked transfer: the chunk sizes are skipped)."""
        while True:
            while b"\n\n" not in self._buffer:
                line = await self.reader.readline()  # a chunk's size
                size = int(line.strip() or b"0", 16)
                data = await self.reader.readexactly(size + 2)
                self._buffer += data[:-2]
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            fields = dict(line.split(": ", 1) for line in block.decode().split("\n")
                          if ": " in line)
            if fields.get("event") == "standings":
                return dict(json.loads(fields["data"]))


class Service:
    """The running service, its table and a page's event stream."""

    def __init__(self, service: LeaderboardService, *, table: Signer, root: str, port: int,
                 events: _Events, client: aiomqtt.Client) -> None:
        self.service, self.table, self.root, self.port = service, table, root, port
        self.events, self.client = events, client
        self.seq = 0
        self.last: dict[str, Any] = {}

    def _envelope(self, n: int, wall: datetime) -> bytes:
        self.seq += 1
        body = {"entry_id": live_id(n), "stage": "qualifying", "heat_id": f"t01-{LIVE_DAY:%m%d}",
                "table": "t01", "seat": n % 6 + 1, "score": 2_500 * (n % 300), "hands": 10,
                "status": "finished", "markers_forfeited": 0, "last_hand_id": f"t01-{n:06d}",
                "at": wall.astimezone(UTC).isoformat()}
        return seal(venue=VENUE, table="t01", seq=self.seq, wall=wall, type="score.recorded",
                    body=body, boot="bench-boot", mono=self.seq * 1_000,
                    signer=self.table).encode()

    @property
    def computations(self) -> int:
        """How many times the service computed the standings."""
        feed = self.service.feed
        return feed.computations if feed is not None else 0

    async def score(self, n: int) -> float:
        """Publish entry n's score; seconds until the page's event stream shows it."""
        wall = START + timedelta(minutes=5, seconds=self.seq)
        payload = self._envelope(n, wall)
        topic = TableTopics(VENUE, "t01", self.root).for_suffix("scores")
        began = time.perf_counter()
        await self.client.publish(topic, payload, qos=1)
        async with asyncio.timeout(_WAIT_S):
            while True:
                doc = await self.events.next_document()
                self.last = doc
                if any(p["entry_id"] == live_id(n) for p in doc["pending"]):
                    return time.perf_counter() - began

    async def burst(self, first: int, count: int) -> tuple[float, int]:
        """Publish `count` scores at once; seconds until the page shows all of them, and how
        many computations the service made meanwhile."""
        topic = TableTopics(VENUE, "t01", self.root).for_suffix("scores")
        waiting = self.last["board"]["awaiting_acknowledgement"] + count
        payloads = [self._envelope(n, START + timedelta(minutes=5, seconds=self.seq + 1))
                    for n in range(first, first + count)]
        before = self.computations
        began = time.perf_counter()
        for payload in payloads:
            await self.client.publish(topic, payload, qos=1)
        async with asyncio.timeout(_WAIT_S):
            while True:
                doc = await self.events.next_document()
                self.last = doc
                if doc["board"]["awaiting_acknowledgement"] >= waiting:
                    return time.perf_counter() - began, self.computations - before


def _stored_seq(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return connection.scalar(select(func.max(Message.seq))
                                     .where(Message.table_id == "t01")) or 0
    finally:
        engine.dispose()


@contextlib.asynccontextmanager
async def running(workdir: Path, url: str, *, port: int, full: bool,
                  timeout: float = 600.0) -> AsyncIterator[tuple[Service, float]]:
    """The service on `url` (full: the old full recomputation), and seconds to READY."""
    table = Signer.generate("t01")
    root = f"showdown-bench/{secrets.token_hex(4)}"
    workdir = workdir / f"service-{secrets.token_hex(4)}"
    workdir.mkdir()
    config = read_leaderboard_config(_config(workdir, url, table, root, port))
    began = datetime.now(UTC)

    def clock() -> datetime:
        return START + (datetime.now(UTC) - began)

    service = LeaderboardService(config, clock=clock, full_recompute=full)
    stop = asyncio.Event()
    started = time.perf_counter()
    task = asyncio.create_task(service.run(stop))
    ready = asyncio.ensure_future(service.ready.wait())
    await asyncio.wait({ready, task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    if not service.ready.is_set() or service.port is None:
        raise RuntimeError(f"the service was not ready within {timeout:.0f} s")
    to_ready = time.perf_counter() - started
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    writer.write(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    await writer.drain()
    while (await reader.readline()).strip():  # the response head
        pass
    events = _Events(reader, writer)
    try:
        async with aiomqtt.Client("127.0.0.1", port,
                                  identifier=f"bench-t01-{secrets.token_hex(4)}") as client:
            bench = Service(service, table=table, root=root, port=port, events=events,
                            client=client)
            bench.seq = _stored_seq(url)  # t01 of an earlier run on this database
            bench.last = await events.next_document()
            yield bench, to_ready
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)
