"""Helpers for the leaderboard service tests: a tiny HTTP/SSE client, seeding, a fake table.

The HTTP client speaks HTTP/1.1 over asyncio streams (no extra dependency): enough for GET
requests, chunked bodies and a server-sent event stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiomqtt
import uvicorn
from sqlalchemy import Engine
from sqlalchemy.orm import Session
from starlette.applications import Starlette

from leaderboard.app import LeaderboardService
from leaderboard.config import read_leaderboard_config
from leaderboard.db import make_engine, upgrade
from leaderboard.models import Entry, Patron, Score
from runtime.sd_notify import Notifier
from tests.fixtures.services import MqttBroker
from wire.envelope import seal
from wire.signing import Signer, load_private_key, save_private_key
from wire.topics import TableTopics, standings_topic

SAST = ZoneInfo("Africa/Johannesburg")
REPO = Path(__file__).resolve().parents[2]


@dataclass(slots=True)
class HttpResponse:
    """Status, lower-cased headers and the (de-chunked) body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size = int((await reader.readline()).strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data


async def http_get(port: int, path: str, headers: Mapping[str, str] | None = None,
                   method: str = "GET") -> HttpResponse:
    """One request to 127.0.0.1:port (Connection: close)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     f"{extra}\r\n".encode("latin-1"))
        await writer.drain()
        status, head = await _head(reader)
        if method == "HEAD":
            body = b""
        elif head.get("transfer-encoding") == "chunked":
            body = b"".join([c async for c in _chunks(reader)])
        elif "content-length" in head:
            body = await reader.readexactly(int(head["content-length"]))
        else:
            body = await reader.read()
        return HttpResponse(status, head, body)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def http_post(port: int, path: str, body: Mapping[str, Any], *,
                    token: str | None = None) -> HttpResponse:
    """POST a JSON body (with a bearer token when given)."""
    data = json.dumps(body).encode("utf-8")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     f"{auth}Content-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode("latin-1") + data)
        await writer.drain()
        status, head = await _head(reader)
        if head.get("transfer-encoding") == "chunked":
            payload = b"".join([c async for c in _chunks(reader)])
        else:
            payload = await reader.readexactly(int(head.get("content-length", "0")))
        return HttpResponse(status, head, payload)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def desk_sign_in(port: int, staff_id: str, passphrase: str) -> str:
    """Sign in to the desk API over HTTP (POST /api/desk/session); the session token."""
    answer = await http_post(port, "/api/desk/session",
                             {"staff_id": staff_id, "passphrase": passphrase})
    assert answer.status == 201, answer.body
    token = answer.json()["token"]
    assert isinstance(token, str)
    return token


@dataclass(slots=True)
class SseEvent:
    """One server-sent event (or a comment, with ``comment`` set)."""

    event: str | None = None
    data: str = ""
    id: str | None = None
    comment: str | None = None
    retry: int | None = None


class SseClient:
    """Reads server-sent events from GET /events."""

    def __init__(self, port: int, path: str = "/events") -> None:
        self.port, self.path = port, path
        self.status = 0
        self.headers: dict[str, str] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._buffer = b""

    async def __aenter__(self) -> SseClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._writer = writer
        writer.write(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode("latin-1"))
        await writer.drain()
        self.status, self.headers = await _head(reader)
        self._chunks = _chunks(reader)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()

    async def next(self) -> SseEvent:
        """The next event or comment (blocks until one arrives)."""
        assert self._chunks is not None
        while b"\n\n" not in self._buffer:
            self._buffer += await anext(self._chunks)
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        out = SseEvent()
        for line in block.decode("utf-8").split("\n"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "":
                out.comment = value
            elif name == "event":
                out.event = value
            elif name == "data":
                out.data += value
            elif name == "id":
                out.id = value
            elif name == "retry":
                out.retry = int(value)
        return out

    async def next_standings(self) -> dict[str, Any]:
        """The next ``standings`` event's document (skipping comments and retry hints)."""
        while True:
            event = await self.next()
            if event.event == "standings":
                return dict(json.loads(event.data))


class InLoopServer:
    """uvicorn serving an app on a free port of 127.0.0.1, inside the test's event loop."""

    def __init__(self, app: Starlette) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]

        class _Quiet(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[no-untyped-def]
                yield

        self.server = _Quiet(uvicorn.Config(app, log_config=None, access_log=False,
                                            lifespan="off", timeout_graceful_shutdown=2))
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> InLoopServer:
        self._task = asyncio.create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        if self._task is not None:
            await self._task


# ---- seeding the database ------------------------------------------------------------------


def local(day: int, hour: int, minute: int = 0, month: int = 7) -> datetime:
    """A venue-local moment in 2026."""
    return datetime(2026, month, day, hour, minute, tzinfo=SAST)


def add_patron(s: Session, patron_id: str, name: str, n: int) -> None:
    """A patron with a made-up ID number."""
    s.add(Patron(patron_id=patron_id, name=name, id_kind="id_document",
                 id_number=f"90010150{n:05d}", birth_date=date(1990, 1, 1),
                 created_at=local(3, 13).astimezone(UTC)))


def add_entry(s: Session, entry_id: str, patron_id: str, heat_day: date) -> None:
    """A paid qualifying entry (R100)."""
    s.add(Entry(entry_id=entry_id, patron_id=patron_id, stage="qualifying",
                heat_id=f"h-{heat_day:%m%d}", heat_day=heat_day, buy_in_cents=10_000,
                bought_at=local(heat_day.day, 13, month=heat_day.month).astimezone(UTC),
                status="registered"))


_seq = count(1_000)


def add_score(s: Session, entry_id: str, cents: int, recorded: datetime, *,
              acknowledged: bool = True, table: str = "t09") -> None:
    """A finished qualifying score of 10 hands, acknowledged a minute later unless not."""
    s.add(Score(entry_id=entry_id, table_id=table, seq=next(_seq), stage="qualifying",
                heat_id="h", score_cents=cents, hands=10, status="finished",
                recorded_at=recorded.astimezone(UTC),
                acknowledged_at=(recorded + timedelta(minutes=1)).astimezone(UTC)
                if acknowledged else None, ack_method="tap" if acknowledged else None))


FIELD = [  # (entry, patron, name, heat day (July), score cents, acknowledged)
    ("E-1a07c2", "P-01", "Thandiwe Mokoena", 4, 512_500, True),
    ("E-33b9f0", "P-02", "Pieter van der Merwe", 5, 468_750, True),
    ("E-0c41d8", "P-03", "Sipho Dlamini", 3, 437_500, True),
    ("E-7e2a15", "P-04", "Ayesha Patel", 6, 401_250, True),
    ("E-5f6b3c", "P-01", "Thandiwe Mokoena", 7, 387_500, True),
    ("E-92d0ae", "P-05", "Lerato Nkosi", 7, 362_500, True),
    ("E-b84f21", "P-06", "James O'Connor", 8, 350_000, True),
    ("E-2c9e77", "P-07", "Zanele Khumalo", 4, 343_750, True),
    ("E-41a6d3", "P-08", "Ruan Botha", 5, 325_000, True),
    ("E-d7c05b", "P-09", "Nomvula Zulu", 6, 312_500, True),
    ("E-6a1f94", "P-10", "Kagiso Molefe", 8, 300_000, True),
    ("E-c35e08", "P-11", "Fatima Essop", 3, 287_500, True),
    ("E-8b27da", "P-12", "Willem Steyn", 8, 262_500, True),
    ("E-e410c6", "P-13", "Precious Ndlovu", 7, 237_500, True),
    ("E-f1d2e3", "P-14", "Bongani Mthembu", 8, 225_000, False),
]


def seed_field(engine: Engine) -> None:
    """Fourteen acknowledged qualifying scores in prize week 1 and one awaiting acknowledgement."""
    with Session(engine) as s:
        seen: set[str] = set()
        for n, (entry, patron, name, day, _, _) in enumerate(FIELD):
            if patron not in seen:
                add_patron(s, patron, name, n)
                seen.add(patron)
            add_entry(s, entry, patron, date(2026, 7, day))
        s.flush()
        for entry, _, _, day, cents, acked in FIELD:
            add_score(s, entry, cents, local(day, 21, 30), acknowledged=acked)
        s.commit()


# ---- a fake enrolled table -----------------------------------------------------------------


@dataclass
class FakeTable:
    """Publishes signed messages as an enrolled table would (wire.envelope.seal)."""

    venue: str
    signer: Signer
    host: str
    port: int
    root: str
    seq: int = 0
    boot: str = "fake-table-boot"
    sent: list[bytes] = field(default_factory=list)

    def envelope(self, kind: str, body: Mapping[str, Any], wall: datetime) -> bytes:
        """The next sequenced, signed message."""
        self.seq += 1
        return seal(venue=self.venue, table=self.signer.key_id, seq=self.seq, wall=wall,
                    type=kind, body=body, boot=self.boot, mono=self.seq * 1_000,
                    signer=self.signer).encode()

    async def publish(self, messages: list[tuple[str, bytes]]) -> None:
        """Publish (suffix, payload) pairs at QoS 1 on the table's topics."""
        topics = TableTopics(self.venue, self.signer.key_id, self.root)
        # A client id of its own: concurrent runs on one Mosquitto must not take it over.
        identifier = f"fake-{self.signer.key_id}-{secrets.token_hex(6)}"
        async with aiomqtt.Client(self.host, self.port, identifier=identifier) as client:
            for suffix, payload in messages:
                await client.publish(topics.for_suffix(suffix), payload, qos=1)
                self.sent.append(payload)

    async def score(self, entry_id: str, cents: int, wall: datetime, *,
                    acknowledge: bool = True, heat_id: str = "h-0708") -> None:
        """score.recorded (10 hands, finished), then score.acknowledged by a card tap."""
        recorded = {"entry_id": entry_id, "stage": "qualifying", "heat_id": heat_id,
                    "table": self.signer.key_id, "seat": 2, "score": cents, "hands": 10,
                    "status": "finished", "markers_forfeited": 0, "last_hand_id": "x",
                    "at": wall.astimezone(UTC).isoformat()}
        messages = [("scores", self.envelope("score.recorded", recorded, wall))]
        if acknowledge:
            ack = {"entry_id": entry_id, "score": cents, "stage": "qualifying",
                   "method": "card_tap", "by": "patron",
                   "at": (wall + timedelta(seconds=20)).astimezone(UTC).isoformat()}
            messages.append(("scores", self.envelope("score.acknowledged", ack,
                                                     wall + timedelta(seconds=20))))
        await self.publish(messages)


# ---- the whole service --------------------------------------------------------------------

VENUE = "goldreef"
START = local(8, 22)  # the service's clock starts at Wednesday 8 July 2026, 22:00


class Recorder(Notifier):
    """Records systemd notifications instead of sending them."""

    def __init__(self, watchdog_s: float | None = None) -> None:
        self.calls: list[str] = []
        self.pinged = asyncio.Event()
        self._interval = watchdog_s

    def ready(self, text: str) -> None:
        self.calls.append(f"READY {text}".split()[0])

    def watchdog(self) -> None:
        self.calls.append("WATCHDOG")
        self.pinged.set()

    def stopping(self) -> None:
        self.calls.append("STOPPING")

    def status(self, text: str) -> None:
        self.calls.append(f"STATUS {text}".split()[0])

    def watchdog_interval(self) -> float | None:
        return self._interval


@dataclass
class Running:
    service: LeaderboardService
    table: FakeTable
    leaderboard_key: Signer
    broker: MqttBroker
    root: str
    notify: Recorder
    stop: asyncio.Event
    task: asyncio.Task[int]
    port: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def shifted_clock() -> Callable[[], datetime]:
    """The real clock, moved to START: the service runs as if mid-qualifying."""
    began = datetime.now(UTC)
    return lambda: START + (datetime.now(UTC) - began)


def write_config(tmp: Path, broker: MqttBroker, root: str, table: Signer,
                 *, names: str = "entry_code", http_extra: str = "", page: str = "") -> Path:
    key = Signer.generate("leaderboard")
    save_private_key(key, tmp / "leaderboard.key")
    (tmp / "tables.pub").write_text(f"# enrolled tables\n{table.public_key.enrolment_line()}\n")
    path = tmp / "leaderboard.toml"
    path.write_text(f"""
[service]
venue = "{VENUE}"
database = "sqlite:///{tmp / 'leaderboard.sqlite3'}"
tournament = "{REPO / 'config' / 'tournament.toml'}"
topic_root = "{root}"
debounce_seconds = 0.05

[mqtt]
broker = "{broker.host}:{broker.port}"
client_id = "lb-{secrets.token_hex(4)}"

[keys]
signing_key = "leaderboard.key"
tables_file = "tables.pub"

[http]
port = 0
desk_api = true
{http_extra}

[page]
rows = 20
names = "{names}"
{page}
""")
    return path


async def start(tmp: Path, broker: MqttBroker, root: str, *, watchdog_s: float | None = None,
                names: str = "entry_code", http_extra: str = "", page: str = "",
                seed: Callable[[Engine], None] | None = None,
                broker_address: tuple[str, int] | None = None) -> Running:
    """The whole service on a seeded database; ``http_extra`` and ``page`` add [http] and
    [page] lines, ``seed`` more rows, ``broker_address`` is where the service connects (a
    relay) if not the broker."""
    table = Signer.generate("t01")
    via = broker if broker_address is None else MqttBroker(
        kind=broker.kind, host=broker_address[0], port=broker_address[1])
    path = write_config(tmp, via, root, table, names=names, http_extra=http_extra, page=page)
    config = read_leaderboard_config(path)
    engine = make_engine(config.database)
    upgrade(engine)
    seed_field(engine)
    with Session(engine) as s:
        add_patron(s, "P-LIVE", "Live Player", 77)
        add_entry(s, "E-LIVE01", "P-LIVE", local(8, 13).date())
        s.commit()
    if seed is not None:
        seed(engine)
    engine.dispose()
    notify = Recorder(watchdog_s)
    service = LeaderboardService(config, notify=notify, clock=shifted_clock())
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    ready = asyncio.ensure_future(service.ready.wait())
    await asyncio.wait({ready, task}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # start-up failed: show why
    assert service.ready.is_set(), "the service did not become ready within 60 s"
    assert service.port is not None
    return Running(service=service, table=FakeTable(VENUE, table, broker.host, broker.port, root),
                   leaderboard_key=load_private_key(tmp / "leaderboard.key"), broker=broker,
                   root=root, notify=notify, stop=stop, task=task, port=service.port)


async def finish(run: Running) -> int:
    run.stop.set()
    code = await asyncio.wait_for(run.task, 30)
    # Leave no retained standings behind on a shared broker.
    async with aiomqtt.Client(run.broker.host, run.broker.port) as client:
        await client.publish(standings_topic(VENUE, run.root), b"", qos=1, retain=True)
    return code
