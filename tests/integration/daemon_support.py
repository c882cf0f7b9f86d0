"""What the table daemon's integration tests share: a table config of the test's own (keys,
simulated devices, fresh ids), a recording systemd stand-in, a subscriber that verifies every
envelope, a signed desk over MQTT, the daemon run as a context, and the game core's own
account of the published hands."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.app import TableDaemon
from controller.config import TableConfig, read_table_config
from controller.journal import Journal
from game.poker.cards import parse_card
from game.wagers.settle import WAGERS, SeatHand, SeatWagers, settle_hand
from runtime.sd_notify import Notifier
from runtime.settings_files import read_paytables
from simulators.desk import VirtualDesk
from simulators.table_toml import simulated_table_toml
from wire.envelope import Envelope, EnvelopeError, verify_envelope
from wire.signing import KeyRing, Signer, save_private_key
from wire.topics import TableTopics

REPO = Path(__file__).resolve().parents[2]
TOURNAMENT = REPO / "config" / "tournament.toml"
PAYTABLES = REPO / "config" / "paytables.toml"
# tournament.md / config/tournament.toml [qualifying]: every entry starts with R2,000.
STARTING_CHIPS_CENTS = 200_000
DESK = "test-desk"
GUARD_S = 120.0  # against hangs only; nothing here asserts a duration


# ---- a table of the test's own --------------------------------------------------------------

@dataclass(slots=True)
class Table:
    """A table config in tmp_path with its keys, and where it publishes."""

    config: TableConfig
    path: Path
    signer: Signer
    desk: Signer
    keyring: KeyRing
    topics: TableTopics = field(init=False)

    def __post_init__(self) -> None:
        self.topics = TableTopics(self.config.venue, self.config.table)

    def with_broker(self, broker: str) -> Table:
        """The same table (journal, keys, socket) pointed at another broker."""
        text = self.path.read_text().replace(f'broker = "{self.config.mqtt.broker}"',
                                             f'broker = "{broker}"')
        path = self.path.with_name(f"table-{secrets.token_hex(2)}.toml")
        path.write_text(text)
        return Table(config=read_table_config(path), path=path, signer=self.signer,
                     desk=self.desk, keyring=self.keyring)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory for the local API socket (a Unix socket path has ~107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="sd-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_table(tmp_path: Path, sock_dir: Path, broker: str, *, seed: int = 2026,
               **toml: Any) -> Table:
    """Write and read a table config: simulated devices, `broker` ("host:port"), fresh ids;
    `toml` are more of `simulated_table_toml`'s options (id_reader, acknowledge_with)."""
    token = secrets.token_hex(3)
    venue, table = f"test-{token}", f"t-{token}"
    signer = Signer.generate(table)
    key = tmp_path / "table.key"
    save_private_key(signer, key)
    assert key.stat().st_mode & 0o777 == 0o600
    desk = Signer.generate(DESK)
    path = tmp_path / "table.toml"
    path.write_text(simulated_table_toml(
        venue=venue, table=table, broker=broker, tournament=TOURNAMENT, paytables=PAYTABLES,
        desk_keys={DESK: desk.public_key.base64}, socket=sock_dir / "console.sock", seed=seed,
        virtual_dealer=False, **toml))  # the tests play through VirtualTable themselves
    return Table(config=read_table_config(path), path=path, signer=signer, desk=desk,
                 keyring=KeyRing([signer.public_key]))


class RecordingNotify(Notifier):
    """Records what the daemon tells systemd, and the journal's last record at READY."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.daemon: TableDaemon | None = None
        self.ready_after_record: int | None = None

    def ready(self) -> None:
        """Remember READY=1 and how far the journal was then."""
        assert self.daemon is not None
        journal = self.daemon.journal  # None when the journal could not be read (error state)
        self.ready_after_record = None if journal is None else journal.last_record_seq()
        self.calls.append("READY=1")

    def watchdog(self) -> None:
        """WATCHDOG=1."""
        self.calls.append("WATCHDOG=1")

    def stopping(self) -> None:
        """STOPPING=1."""
        self.calls.append("STOPPING=1")

    def status(self, text: str) -> None:
        """STATUS=..."""
        self.calls.append(f"STATUS={text}")

    def watchdog_interval(self) -> float | None:
        """No watchdog in the tests."""
        return None


# ---- a subscriber that verifies everything ----------------------------------------------------

class Subscriber:
    """Subscribes to one table's topics, reconnecting at once after any failure.

    Keeps every verified sequenced message in arrival order (`arrivals`) and the unsequenced
    availability notices apart; anything that fails verification is kept in `bad`.
    """

    def __init__(self, host: str, port: int, table: Table, *, persistent: bool = False) -> None:
        self.host, self.port, self.table = host, port, table
        self.persistent = persistent
        self.client_id = f"sub-{secrets.token_hex(4)}"
        self.arrivals: list[Envelope] = []
        self.unsequenced: list[Envelope] = []  # availability and command rejections (seq 0)
        self.bad: list[str] = []
        self.connections = 0
        self.subscribed = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Subscriber:
        self._task = asyncio.create_task(self._run(), name="test subscriber")
        async with asyncio.timeout(GUARD_S):
            await self.subscribed.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        topics = self.table.topics
        wanted = {topics.status, topics.events, topics.scores}
        while True:
            try:
                async with aiomqtt.Client(self.host, self.port, identifier=self.client_id,
                                          clean_session=not self.persistent) as client:
                    await client.subscribe(f"{topics.base}/+", qos=1)
                    self.connections += 1
                    self.subscribed.set()
                    async for message in client.messages:
                        if message.topic.value in wanted and message.payload:
                            self._take(bytes(message.payload))  # type: ignore[arg-type]
            except aiomqtt.MqttError:
                self.subscribed.clear()
                await asyncio.sleep(0.02)

    def _take(self, raw: bytes) -> None:
        try:
            envelope = verify_envelope(raw, self.table.keyring)
        except EnvelopeError as exc:
            self.bad.append(f"{exc.reason}: {exc.detail}")
            return
        if envelope.seq == 0:
            self.unsequenced.append(envelope)
        else:
            self.arrivals.append(envelope)
        self._changed.set()

    @property
    def availability(self) -> list[Envelope]:
        """The availability notices received (birth, will, clean offline)."""
        return [e for e in self.unsequenced if e.type == "availability"]

    @property
    def by_seq(self) -> dict[int, Envelope]:
        """Every sequenced message received, deduplicated by seq (duplicates must be equal)."""
        out: dict[int, Envelope] = {}
        for env in self.arrivals:
            if env.seq in out:
                assert out[env.seq].encode() == env.encode(), f"seq {env.seq} differs on repeat"
            out[env.seq] = env
        return out

    async def wait_for(self, what: str, check: Callable[[], bool]) -> None:
        """Wait until `check()` holds (checked after every message and every 50 ms)."""
        try:
            async with asyncio.timeout(GUARD_S):
                while not check():
                    self._changed.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), 0.05)
        except TimeoutError:
            raise AssertionError(f"the subscriber never saw {what}") from None

    async def wait_all(self, last_seq: Callable[[], int]) -> None:
        """Wait for every seq from 1 to the daemon's last."""
        await self.wait_for("every seq", lambda: set(self.by_seq) >= set(
            range(1, last_seq() + 1)))


async def forget_on_broker(host: str, port: int, table: Table) -> None:
    """Clear the daemon's retained status and its persistent session (a shared Mosquitto)."""
    with contextlib.suppress(aiomqtt.MqttError):
        async with aiomqtt.Client(host, port, identifier=f"clear-{secrets.token_hex(4)}") as c:
            await c.publish(table.topics.status, b"", qos=1, retain=True)
        async with aiomqtt.Client(host, port, identifier=table.config.table, clean_session=True):
            pass


def desk_sender(table: Table, host: str, port: int, *, daemon: TableDaemon
                ) -> Callable[..., Awaitable[None]]:
    """Signed desk commands over MQTT, as the VirtualTable's `desk`. Each waits until the
    daemon's link has subscribed to its command topic: a command published before that is
    dropped by the broker (no session holds it yet), as a real desk's would be."""
    desk = VirtualDesk(host=host, port=port, venue=table.config.venue, signer=table.desk)

    async def send(command: str, **body: Any) -> None:
        link = daemon.link
        assert link is not None, "the daemon has no MQTT link yet"
        async with asyncio.timeout(GUARD_S):
            await link.wait_subscribed()
        await desk.send(table.config.table, command, **body)

    return send


@contextlib.asynccontextmanager
async def running(daemon: TableDaemon,
                  extra: Callable[[TableDaemon], Awaitable[None]] | None = None
                  ) -> AsyncIterator[Callable[[], Awaitable[int]]]:
    """Run the daemon in this loop; yields `stop()` (the SIGTERM path) returning the exit code."""
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop, extra=extra), name="daemon")  # type: ignore[arg-type]
    ready = asyncio.create_task(daemon.ready.wait())
    done, _ = await asyncio.wait({task, ready}, timeout=GUARD_S,
                                 return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        ready.cancel()
        task.result()  # raises what stopped it
        raise AssertionError("the daemon stopped before it was ready")
    assert ready in done, "the daemon did not become ready"

    async def stop_it() -> int:
        stop.set()
        async with asyncio.timeout(GUARD_S):
            return await task

    try:
        yield stop_it
    finally:
        if not task.done():
            stop.set()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(GUARD_S):
                    await task


# ---- the game core's own account of the published hands --------------------------------------

def recomputed_scores(hands: list[Mapping[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """Scores and hand counts per entry, re-settling each published "settle" block here."""
    paytables = read_paytables(PAYTABLES)
    nets: dict[str, int] = {}
    counts: dict[str, int] = {}
    for record in hands:
        block = record["settle"]
        seats = [SeatHand(seat=s["seat"], hole=(parse_card(s["hole"][0]),
                                                parse_card(s["hole"][1])),
                          wagers=SeatWagers(**{w: s["wagers"].get(w, 0) for w in WAGERS},
                                            markers=frozenset(s.get("markers", ()))))
                 for s in block["seats"]]
        dealer = tuple(parse_card(c) for c in block["dealer"])
        board = tuple(parse_card(c) for c in block["board"])
        settlement = settle_hand(dealer=dealer, board=board, seats=seats,  # type: ignore[arg-type]
                                 paytables=paytables)
        entry_of = {s["seat"]: s["entry_id"] for s in record["seats"]}
        mine = {str(s.seat): s.net_cents for s in settlement.seats}
        assert mine == record["nets"], f"hand {record['hand_id']}: published nets differ"
        for s in settlement.seats:
            entry = entry_of[s.seat]
            nets[entry] = nets.get(entry, 0) + s.net_cents
            counts[entry] = counts.get(entry, 0) + 1
    return {e: STARTING_CHIPS_CENTS + n for e, n in nets.items()}, counts


def check_heat(sub: Subscriber, journal_last_seq: int) -> dict[str, int]:
    """Gap-free seqs, every message as stored, and the published scores equal the game core's."""
    assert sub.bad == []
    by_seq = sub.by_seq
    assert sorted(by_seq) == list(range(1, journal_last_seq + 1))
    first_seen: list[int] = []
    for env in sub.arrivals:
        if env.seq not in first_seen:
            first_seen.append(env.seq)
    assert first_seen == sorted(first_seen), "messages first arrived out of seq order"
    messages = [by_seq[s] for s in sorted(by_seq)]
    hands = [dict(m.body) for m in messages if m.type == "hand.settled"]
    scores = {m.body["entry_id"]: dict(m.body) for m in messages if m.type == "score.recorded"}
    assert hands, "no hand was settled"
    assert [m.type for m in messages].count("score.recorded") == len(scores) == 3
    expected, counts = recomputed_scores(hands)
    assert {e: s["score"] for e, s in scores.items()} == expected
    assert {e: s["hands"] for e, s in scores.items()} == counts
    for entry, body in scores.items():  # an entry ends after its 10 hands or when it is broke
        assert body["status"] in ("finished", "ended_early"), body
        assert (counts[entry] == 10) == (body["status"] == "finished"), body
    acked = {m.body["entry_id"]: m.body["score"] for m in messages
             if m.type == "score.acknowledged"}
    assert acked == expected
    assert [m.type for m in messages if m.type not in ("alert", "command.result")][-1] \
        == "heat.closed"
    return expected


def stored_bodies(path: Path) -> dict[int, Mapping[str, Any]]:
    """The outbox as stored in the journal (read-only), by seq."""
    with Journal.open(path, read_only=True) as journal:
        return {m.seq: m.body for m in journal.messages(1)}


def pending_in(path: Path) -> int:
    """Undelivered outbox messages in a journal file."""
    with Journal.open(path, read_only=True) as journal:
        return len(journal.pending(10_000))


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
