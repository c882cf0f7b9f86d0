"""The table daemon in-process, with the simulators and a real MQTT broker (issue 5 §4).

Each test builds a table config in tmp_path (a table key made with wire.signing, 0600,
and a desk key enrolled for the test), runs `TableDaemon.run()` in the test's event loop with
the simulated shoe and chip reader behind the real drivers, and watches the broker with a
subscriber that verifies every envelope against the table's public key.

- A whole qualifying heat on the embedded broker and on the machine's Mosquitto: the scores
  published equal the scores recomputed here from the published hand records with the game
  core (`game.settle.settle_hand` and the shipped paytables) plus the starting chips.
- Broker outage: the broker is stopped mid-heat and restarted some hands later (an embedded
  broker on a fixed port, and a private `mosquitto` process started by the test); every
  message arrives, in order, and the scores are still right.
- The error state: a journal damaged while the daemon was stopped (an edited record, or a
  file cut short that SQLite cannot read at all) makes it publish only its availability with
  the fault (none of the journal's undelivered messages), take no device input, answer
  `status` on its local API, still serve `showdown recall` (or say in one line that the file
  cannot be read), and stay in the error state until the explicit operator command.

Only unique venue and table ids are used, and what a test leaves on the machine's Mosquitto
(the daemon's persistent session, its retained status) is cleared afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.app import TableDaemon
from controller.config import TableConfig, read_table_config
from controller.embedded_broker import EmbeddedBroker
from controller.journal import Journal
from controller.journal.models import TRIGGERS
from controller.local_api import call
from controller.wiring import wire_table
from game.cards import parse_card
from game.settle import WAGERS, SeatHand, SeatWagers, settle_hand
from runtime.sd_notify import Notifier
from runtime.settings_files import read_paytables
from simulators.desk import VirtualDesk
from simulators.players import PlayerStyle, VirtualPlayer
from simulators.table_toml import simulated_table_toml
from tests.fixtures.services import MqttBroker, require_service
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


def make_table(tmp_path: Path, sock_dir: Path, broker: str, *, seed: int = 2026) -> Table:
    """Write and read a table config: simulated devices, `broker` ("host:port"), fresh ids."""
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
        virtual_dealer=False))  # the tests play through VirtualTable themselves
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


def desk_sender(table: Table, host: str, port: int) -> Callable[..., Awaitable[None]]:
    """Signed desk commands over MQTT, as the VirtualTable's `desk`."""
    desk = VirtualDesk(host=host, port=port, venue=table.config.venue, signer=table.desk)

    async def send(command: str, **body: Any) -> None:
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


# ---- 1. a whole qualifying heat ---------------------------------------------------------------

async def test_a_whole_qualifying_heat_publishes_the_game_cores_scores(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    table = make_table(tmp_path, short_dir, f"{host}:{port}")
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    played = asyncio.get_running_loop().create_future()

    async def play(d: TableDaemon) -> None:
        vt = wired.virtual_table(desk=desk_sender(table, host, port), seed=7, players=3,
                                 heats=1)
        try:
            await vt.run()
        except BaseException as exc:
            played.set_exception(exc)
            raise
        played.set_result(vt.hands_played)

    try:
        async with Subscriber(host, port, table) as sub:
            async with running(daemon, play) as stop:
                async with asyncio.timeout(GUARD_S * 2):
                    hands_played = await played
                assert daemon.journal is not None
                await sub.wait_all(daemon.journal.last_seq)
                assert await stop() == 0
            # What the stop itself recorded (the devices' "disconnected" alerts) is
            # published before the clean disconnect too.
            last_seq = max(stored_bodies(table.config.journal))
            await sub.wait_all(lambda: last_seq)
            # The clean stop said so: the retained status is the clean "offline".
            await sub.wait_for("the clean offline", lambda: any(
                a.body["state"] == "offline" for a in sub.availability))
        assert pending_in(table.config.journal) == 0
        expected = check_heat(sub, last_seq)
        assert sum(1 for m in sub.by_seq.values() if m.type == "hand.settled") == hands_played
        assert len(expected) == 3
        # What arrived is exactly what the journal stored, seq by seq.
        assert {s: dict(m.body) for s, m in sub.by_seq.items()} == {
            s: dict(b) for s, b in stored_bodies(table.config.journal).items()}
        # READY after the self-test and before the first card; STOPPING at the end.
        assert notify.calls[0] == "READY=1" and notify.calls[-1] == "STOPPING=1"
        assert notify.calls.count("READY=1") == 1
        with Journal.open(table.config.journal, read_only=True) as journal:
            cards = [r.seq for r in journal.records() if r.kind == "card"]
        assert cards and notify.ready_after_record is not None
        assert min(cards) > notify.ready_after_record
        online = [a for a in sub.availability if a.body["state"] == "online"]
        assert online and online[0].body["status"]["state"] == "online"
        offline = [a for a in sub.availability if a.body["state"] == "offline"]
        assert offline[-1].body["clean"] is True
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)


# ---- 2. broker outage -------------------------------------------------------------------------

def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedOutage:
    """An embedded broker on a fixed port that the test stops and restarts."""

    kind = "embedded"

    def __init__(self, tmp_path: Path) -> None:
        del tmp_path
        self.port = free_port()
        self._broker = EmbeddedBroker(port=self.port)

    async def start(self) -> None:
        """Start (again) on the same port."""
        await self._broker.start()
        assert self._broker.port == self.port

    async def stop(self) -> None:
        """Stop: every client is cut off."""
        await self._broker.stop()


class MosquittoOutage:
    """A private `mosquitto` process on a free port (persistence on), stopped with SIGTERM."""

    kind = "mosquitto"

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.dir = tmp_path / "mosquitto"
        self.dir.mkdir()
        self.conf = self.dir / "mosquitto.conf"
        self.conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                             f"persistence true\npersistence_location {self.dir}/\n"
                             f"log_dest file {self.dir / 'mosquitto.log'}\n")
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        """Start the process and wait until it accepts connections."""
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.process = subprocess.Popen([binary, "-c", str(self.conf)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        async with asyncio.timeout(30):
            while True:
                assert self.process.poll() is None, (self.dir / "mosquitto.log").read_text()
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                    return
                await asyncio.sleep(0.02)

    async def stop(self) -> None:
        """SIGTERM (Mosquitto saves its persistence file) and wait for the process to end."""
        if self.process is None:
            return
        process, self.process = self.process, None
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _mosquitto_binary() -> str | None:
    return shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if os.access("/usr/sbin/mosquitto", os.X_OK) else None)


@pytest.fixture(params=["embedded", "mosquitto"])
async def outage_broker(request: pytest.FixtureRequest, tmp_path: Path
                        ) -> AsyncIterator[EmbeddedOutage | MosquittoOutage]:
    """A broker of the test's own that it may stop and restart on the same port."""
    if request.param == "mosquitto":
        require_service("a mosquitto binary (for a private broker)",
                        _mosquitto_binary() is not None, "PATH or /usr/sbin")
    broker = (EmbeddedOutage if request.param == "embedded" else MosquittoOutage)(tmp_path)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


async def test_a_broker_outage_mid_heat_loses_nothing(
        outage_broker: EmbeddedOutage | MosquittoOutage, tmp_path: Path,
        short_dir: Path) -> None:
    host, port = "127.0.0.1", outage_broker.port
    table = make_table(tmp_path, short_dir, f"{host}:{port}", seed=11)
    wired = wire_table(table.config, notify=RecordingNotify())
    daemon = wired.daemon
    daemon.notify.daemon = daemon  # type: ignore[attr-defined]
    # Mosquitto keeps the subscriber's persistent session across its restart (persistence on);
    # amqtt keeps nothing, so there the subscriber may have to ask for a resend (below).
    persistent = outage_broker.kind == "mosquitto"
    send = desk_sender(table, host, port)
    log: list[str] = []
    stored: list[int] = []

    async def outage(d: TableDaemon) -> None:
        """Stop the broker in the middle of hand 3, start it again in the middle of hand 6."""
        for hand, action in ((3, outage_broker.stop), (6, outage_broker.start)):
            while not ((h := d.status().get("hand")) and d.status()["hands_opened"] == hand
                       and h["cards_read"] >= 4):
                await asyncio.sleep(0.005)
            if action == outage_broker.start:  # what the table resolved meanwhile waits
                stored.append(d.status()["journal"]["pending"])
            await action()
            log.append(f"{action.__name__} in hand {hand} after "
                       f"{h['cards_read']} cards, outbox seq {d.journal.last_seq()}")  # type: ignore[union-attr]

    async with Subscriber(host, port, table, persistent=persistent) as sub, \
            running(daemon) as stop:
        vt = wired.virtual_table(desk=send, seed=11, players=3)
        entries = {seat: f"{table.config.table.upper()}-E{seat}" for seat in (1, 2, 3)}
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-outage")
        for seat, entry in entries.items():
            await vt.send_desk("seat", entry_id=entry, seat=seat)
        await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == 3)
        players = {seat: VirtualPlayer(name=f"player {seat}", rng=random.Random(seat),
                                       style=PlayerStyle(bold=seat == 2))
                   for seat in entries}
        breaker = asyncio.create_task(outage(daemon))
        async with asyncio.timeout(GUARD_S * 2):
            while daemon.status().get("seats"):
                await vt.play_hand(players)
            await breaker
        assert len(log) == 2, log
        assert stored[0] > 0  # hands 3 to 6 were resolved and stored while the broker was down
        assert daemon.link is not None
        # Hands went on while the broker was down; the link came back by itself.
        await sub.wait_for("the daemon back online", lambda: daemon.link.connected)  # type: ignore[union-attr]
        for entry in daemon.status()["unacknowledged_scores"]:
            await vt.console("acknowledge", entry_id=entry, method="card_tap")
        await vt.send_desk("close_heat")
        await vt.until("the heat to close", lambda s: s.get("heat") is None)
        assert daemon.journal is not None
        journal = daemon.journal
        # The heat's last message (the close command's result) is the barrier: the link
        # publishes in seq order, so whatever the subscriber lacks now, it missed.
        await sub.wait_for("the close command's result", lambda: any(
            m.type == "command.result" and m.body["command"] == "close_heat"
            for m in sub.arrivals))
        missing = sorted(set(range(1, journal.last_seq() + 1)) - set(sub.by_seq))
        resend_mark = None
        if persistent:
            assert missing == [], "Mosquitto kept the session, yet messages are missing"
        elif missing:
            # The fresh amqtt had no session for the subscriber while it was away: ask
            # for a resend of what it missed (signed, on the cmd topic), as the leaderboard
            # does (ARCHITECTURE.md: gap detection plus resend).
            resend_mark = len(sub.arrivals)
            await send("resend", from_seq=missing[0])
            await sub.wait_for("the resend's result", lambda: any(
                m.type == "command.result" and m.body["command"] == "resend"
                for m in sub.arrivals))
        await sub.wait_all(journal.last_seq)
        last_seq = journal.last_seq()
        counters = daemon.link.counters()
        assert await stop() == 0
    assert pending_in(table.config.journal) == 0
    assert counters.reconnects >= 1, counters
    assert sub.connections >= 2
    check_heat_after_outage(sub, last_seq, resend_mark)


def check_heat_after_outage(sub: Subscriber, last_seq: int, resend_mark: int | None) -> None:
    """Every seq present (repeats allowed, identical), fresh ones in order, scores right.

    Up to `resend_mark` (the arrival index when a resend was asked for, if one was) every
    message is either a repeat of a seq already received (a message whose PUBACK was lost
    with the connection) or a new seq above all received so far. After it, the seqs that
    had been missing arrive in increasing order.
    """
    assert sub.bad == []
    assert sorted(sub.by_seq) == list(range(1, last_seq + 1))
    cut = len(sub.arrivals) if resend_mark is None else resend_mark
    seen: set[int] = set()
    highest = 0
    for env in sub.arrivals[:cut]:
        if env.seq in seen:
            continue
        assert env.seq > highest, f"seq {env.seq} arrived after {highest}"
        seen.add(env.seq)
        highest = env.seq
    late: list[int] = []
    for env in sub.arrivals[cut:]:
        if env.seq not in seen and env.seq not in late:
            late.append(env.seq)
    assert late == sorted(late)
    check_heat_scores(sub)


def check_heat_scores(sub: Subscriber) -> None:
    """Scores published equal the game core's recomputation, once per entry."""
    messages = [sub.by_seq[s] for s in sorted(sub.by_seq)]
    hands = [dict(m.body) for m in messages if m.type == "hand.settled"]
    scores = {m.body["entry_id"]: m.body["score"] for m in messages
              if m.type == "score.recorded"}
    expected, _ = recomputed_scores(hands)
    assert scores == expected
    assert len(scores) == 3


# ---- 3. the error state -----------------------------------------------------------------------

def tamper(path: Path, *statements: str) -> None:
    """Change the stopped daemon's journal with raw SQL: triggers off, change, triggers back."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for name in TRIGGERS:
            con.execute(f"DROP TRIGGER {name}")
        for sql in statements:
            con.execute(sql)
        for sql in TRIGGERS.values():
            con.execute(sql)
    finally:
        con.close()


def showdown(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the `showdown` command line as an operator would."""
    return subprocess.run([sys.executable, "-m", "controller", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=REPO)


async def play_offline(table: Table, hands: int) -> list[str]:
    """Play `hands` hands while the broker is unreachable; returns the hand ids (all pending)."""
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:
        vt = wired.virtual_table(seed=5, players=2)  # desk commands straight in: no broker
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-damaged")
        for seat in (1, 2):
            await vt.send_desk("seat", entry_id=f"E{seat}", seat=seat)
        await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == 2)
        players = {seat: VirtualPlayer(name=f"player {seat}", rng=random.Random(seat))
                   for seat in (1, 2)}
        for _ in range(hands):
            await vt.play_hand(players)
        assert await stop() == 0
    with Journal.open(table.config.journal, read_only=True) as journal:
        return [m.body["hand_id"] for m in journal.latest_messages(("hand.settled",), 100)]


def damage(path: Path, how: str) -> None:
    """Damage a stopped daemon's journal: edit a card read, or cut the file short."""
    if how == "edited_card":
        tamper(path, "UPDATE journal SET payload = replace(payload, '\"card\":\"', "
                     "'\"card\":\"A') WHERE seq = (SELECT min(seq) FROM journal "
                     "WHERE kind = 'card')")
    else:
        size = path.stat().st_size
        with path.open("r+b") as f:
            f.truncate(size // 2)


async def error_state_run(table: Table, host: str, port: int) -> tuple[Subscriber, dict[str, Any],
                                                                       RecordingNotify]:
    """Start the daemon on a damaged journal; what it published, its status, its notices.

    The barrier: once the error availability is seen, an unsigned command is sent to the
    table's cmd topic. The link answers it with a `command_rejected` notice on the events
    topic, on the same connection and after anything it had begun to publish; when that
    notice has arrived, whatever the daemon published before it has arrived too.
    """
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with Subscriber(host, port, table) as sub:
        async with running(daemon) as stop:
            status = await call(table.config.api.socket, {"action": "status"})
            # No device input: nothing was connected, and a console press is refused.
            assert daemon.devices is None
            pressed = await call(table.config.api.socket,
                                 {"action": "no_more_bets", "by": "test dealer"})
            assert pressed["ok"] is False and "error state" in pressed["error"], pressed
            await sub.wait_for("the availability with the error", lambda: any(
                a.body["state"] == "online" and a.body["status"]["state"] == "error"
                for a in sub.availability))
            async with aiomqtt.Client(host, port,
                                      identifier=f"barrier-{secrets.token_hex(4)}") as client:
                await client.publish(table.topics.cmd, b"barrier: not an envelope", qos=1)
            await sub.wait_for("the barrier's rejection", lambda: any(
                e.type == "command_rejected" for e in sub.unsequenced))
            assert await stop() == 0
        await sub.wait_for("the clean offline", lambda: any(
            a.body["state"] == "offline" and a.body.get("clean") for a in sub.availability))
    return sub, status, notify


@pytest.mark.parametrize("how", ["edited_card", "truncated"])
async def test_a_damaged_journal_puts_the_table_in_the_error_state(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path, how: str) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    offline = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", seed=5)
    hand_ids = await play_offline(offline, hands=2)
    journal_path = offline.config.journal
    assert len(hand_ids) == 2 and pending_in(journal_path) > 0
    with Journal.open(journal_path, read_only=True) as journal:
        last_seq = journal.last_seq()  # what the leaderboard would know from the table
    damage(journal_path, how)
    readable = how != "truncated"  # SQLite can still read the edited file, not the cut one
    table = offline.with_broker(f"{host}:{port}")
    try:
        sub, status, notify = await error_state_run(table, host, port)
        # The local API answers status, in the error state, naming the fault.
        assert status["ok"] is True
        detail = status["detail"]
        assert detail["state"] == "error" and detail["faults"], detail
        # READY=1 still comes (the service is up and answering), with the error as STATUS.
        assert notify.calls[0] == "READY=1"
        assert any(c.startswith("STATUS=error state") for c in notify.calls), notify.calls
        # Its availability carries the error and the fault.
        assert sub.bad == []
        errors = [a for a in sub.availability if a.body["state"] == "online"]
        assert errors and all(a.body["status"]["state"] == "error" for a in errors)
        assert errors[-1].body["status"]["faults"] == detail["faults"]
        # (That it publishes nothing else: test_the_error_state_publishes_no_stored_message.)

        # Game recall still prints the last hands, under the error state's faults; from a
        # file SQLite cannot read it says so in one line.
        recall = showdown("recall", "--journal", str(journal_path), "--last", "10")
        if readable:
            assert recall.returncode == 0, recall.stderr
            assert "ERROR STATE: 1 open fault(s)" in recall.stdout, recall.stdout
            for hand_id in hand_ids:
                assert hand_id in recall.stdout
        else:
            assert recall.returncode != 0
            assert "Traceback" not in recall.stderr and "malformed" in recall.stderr

        # It never clears itself: started again, it is in the error state again.
        again, status, _ = await error_state_run(table, host, port)
        assert status["detail"]["state"] == "error"
        assert status["detail"]["faults"] == detail["faults"]
        assert again.bad == []

        # Clearing needs the explicit, logged operator command. A damaged journal cannot have
        # its faults cleared (docs/journal.md): it is replaced (kept aside, never deleted),
        # and the table starts afresh with its message seq continuing.
        refused = showdown("journal", "clear-faults", "--journal", str(journal_path),
                           "--operator", "T. Technician (4711)", "--reason", "test")
        assert refused.returncode != 0
        assert "Traceback" not in refused.stderr and refused.stderr.strip(), refused.stderr
        replaced = showdown("journal", "replace", "--journal", str(journal_path),
                            "--operator", "T. Technician (4711)",
                            "--reason", "journal failed verification in a test",
                            *(() if readable else ("--last-seq", str(last_seq))))
        assert replaced.returncode == 0, replaced.stdout + replaced.stderr
        assert list(journal_path.parent.glob(f"{journal_path.name}.retired-*"))
        notify = RecordingNotify()
        wired = wire_table(table.config, notify=notify)
        daemon = wired.daemon
        notify.daemon = daemon
        async with Subscriber(host, port, table) as sub, running(daemon) as stop:
            status = await call(table.config.api.socket, {"action": "status"})
            assert status["detail"]["state"] == "running" and status["detail"]["faults"] == []
            assert daemon.devices is not None
            vt = wired.virtual_table(desk=desk_sender(table, host, port))
            await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-afresh")
            await sub.wait_for("the new heat", lambda: any(
                m.type == "heat.opened" for m in sub.arrivals))
            assert await stop() == 0
        assert sub.bad == []
        assert min(sub.by_seq) == last_seq + 1  # the new journal continues the table's seq
        opened = next(m for m in sub.arrivals if m.type == "heat.opened")
        assert opened.body["heat_id"] == "qualifying-afresh"
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)


async def test_the_error_state_publishes_no_stored_message(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    offline = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", seed=5)
    notify = RecordingNotify()
    wired = wire_table(offline.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:  # the broker is unreachable: everything stays pending
        vt = wired.virtual_table(seed=5, players=1)
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-pending")
        await vt.send_desk("seat", entry_id="E1", seat=1)
        assert await stop() == 0
    pending = pending_in(offline.config.journal)
    assert pending >= 4
    tamper(offline.config.journal, "UPDATE journal SET payload = replace(payload, "
                                   "'qualifying-pending', 'qualifying-changed') "
                                   "WHERE kind = 'desk'")
    table = offline.with_broker(f"{host}:{port}")
    try:
        sub, status, _ = await error_state_run(table, host, port)
        assert status["detail"]["state"] == "error"
        assert [f"{e.seq} {e.type}" for e in sub.arrivals] == []
        assert pending_in(table.config.journal) == pending
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)


# ---- chips that stay on a spot when its seat changes hands -------------------------------------

async def test_chips_left_on_a_spot_are_still_seen_when_the_seat_changes_entry(
        tmp_path: Path, short_dir: Path) -> None:
    # No broker is needed: the link keeps trying in the background; desk commands go straight in.
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:
        assert daemon.devices is not None
        chips = wired.devices.rfid_sim
        vt = wired.virtual_table()
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-spots")
        await vt.send_desk("seat", entry_id="E1", seat=1)
        await vt.send_desk("seat", entry_id="E2", seat=2)
        chips.place(1, "ante", 2500)
        chips.place(1, "odds", 2500)
        await vt.until("seat 1's chips", lambda s: s["spots"].get("1") == {
            "ante": 2500, "odds": 2500})
        # Seat 1's entry leaves and another sits down; the chips stay where they are.
        await vt.send_desk("unseat", seat=1, reason="test: the entry leaves")
        await vt.send_desk("seat", entry_id="E3", seat=1)
        # Barrier: chips put on seat 2 are seen only after the reader has swept every antenna
        # again since the change of entry, seat 1's included.
        chips.place(2, "ante", 5000)
        chips.place(2, "odds", 5000)
        await vt.until("seat 2's chips", lambda s: s["spots"].get("2") == {
            "ante": 5000, "odds": 5000})
        spots = daemon.status()["spots"]
        assert await stop() == 0
    assert spots["1"] == {"ante": 2500, "odds": 2500}, spots


# ---- systemd's notification socket --------------------------------------------------------------

async def test_a_full_notification_socket_does_not_stop_the_daemon(
        tmp_path: Path, short_dir: Path) -> None:
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    path = short_dir / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    env = {k: v for k, v in os.environ.items() if k != "WATCHDOG_PID"}
    env.update(NOTIFY_SOCKET=str(path), WATCHDOG_USEC="100000")  # a ping every 50 ms
    log = (tmp_path / "daemon.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "controller", "table", "run", "--config",
                                str(table.path)], stdout=log, stderr=subprocess.STDOUT,
                               env=env, cwd=REPO)
    try:
        receiver.settimeout(GUARD_S)
        while b"READY=1" not in receiver.recv(4096):
            pass
        # Stop reading, like a supervisor that is busy; fill what is left of the queue.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as filler:
            while True:
                try:
                    filler.sendto(b"FILLER=1", socket.MSG_DONTWAIT, str(path))
                except BlockingIOError:
                    break
        # The daemon pings every 50 ms: over 40 status requests, 50 ms apart, it pings about
        # 40 times into the full queue; each request must still be answered.
        for _ in range(40):
            try:
                answer = await call(table.config.api.socket, {"action": "status"}, timeout=5.0)
            except TimeoutError:
                answer = None
            assert answer is not None, "the daemon stopped answering once the queue was full"
            assert answer["ok"] is True
            await asyncio.sleep(0.05)
    finally:
        receiver.close()  # a blocked send then fails, and the daemon can stop
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
