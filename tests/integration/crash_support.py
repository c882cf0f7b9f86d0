"""Helpers for the crash test (tests/integration/test_crash_recovery.py, docs/testing-crash.md).

- `BrokerProcess`: the embedded amqtt broker in a process of its own, so it outlives every
  SIGKILL of the daemon (the daemon's own embedded broker would die with it).
- `CrashTable`: one simulated table in a temporary directory: its config file (written here,
  pointing at an outside broker), its pre-made table key, and a desk key enrolled for resends.
- `DaemonProcess`: `showdown table run` as a subprocess in a session of its own, killed with
  SIGKILL (the whole process group: a power cut) or stopped with SIGTERM.
- `Leaderboard`: the leaderboard side: a persistent QoS 1 subscriber on the table's events and
  scores topics that verifies every envelope, keeps one message per (table, seq), counts
  duplicates, and asks the table for a resend from the lowest missing seq when it sees a gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import tomli_w

from controller.local_api import call
from wire.envelope import Envelope, EnvelopeError, seal, verify_envelope
from wire.signing import KeyRing, Signer, save_private_key
from wire.topics import TableTopics

__all__ = [
    "REPO",
    "BrokerProcess",
    "CrashTable",
    "DaemonProcess",
    "Leaderboard",
    "clear_broker_state",
    "daemon_status",
]

REPO = Path(__file__).resolve().parents[2]
DESK_KEY_ID = "crash-leaderboard"

# The embedded broker (controller.embedded_broker) alone in a process; prints its port.
_BROKER_SCRIPT = """
import asyncio, signal
from controller.embedded_broker import EmbeddedBroker

async def main():
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with EmbeddedBroker(port=0) as broker:
        print(broker.port, flush=True)
        await stop.wait()

asyncio.run(main())
"""


class BrokerProcess:
    """The embedded amqtt broker in its own process on a free port of 127.0.0.1."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.host = "127.0.0.1"
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> int:
        """Start it; returns the port it chose."""
        with self.log.open("a") as err:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BROKER_SCRIPT], cwd=REPO, stdout=subprocess.PIPE,
                stderr=err, text=True, start_new_session=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"the broker process did not start: {self.log.read_text()[-2000:]}")
        self.port = int(line)
        return self.port

    def stop(self) -> None:
        """SIGTERM it and wait (SIGKILL if it does not stop in 10 s)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@dataclass(slots=True, kw_only=True)
class CrashTable:
    """A simulated table in `root`: ids unique to this run, its keys and its config file."""

    root: Path
    host: str
    port: int
    players: int = 3
    venue: str = field(default_factory=lambda: f"crash-{secrets.token_hex(4)}")
    table: str = field(default_factory=lambda: f"ct-{secrets.token_hex(4)}")
    table_signer: Signer = field(init=False)
    desk_signer: Signer = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "var").mkdir(exist_ok=True)
        # The table's key is made here (as a commissioning would), so the leaderboard side
        # holds its public key before the first message.
        self.table_signer = Signer.generate(self.table)
        save_private_key(self.table_signer, self.table_key)
        self.desk_signer = Signer.generate(DESK_KEY_ID)  # the virtual desk's, named below
        save_private_key(self.desk_signer, self.root / "var" / "desk.key")

    @property
    def config(self) -> Path:
        """The daemon's config file."""
        return self.root / "table.toml"

    @property
    def journal(self) -> Path:
        """The journal file."""
        return self.root / "var" / "journal.sqlite"

    @property
    def table_key(self) -> Path:
        """The table's private key file."""
        return self.root / "var" / "table.key"

    @property
    def socket(self) -> Path:
        """The daemon's local API socket."""
        return self.root / "var" / "console.sock"

    @property
    def topics(self) -> TableTopics:
        """The table's topics (default root)."""
        return TableTopics(self.venue, self.table)

    def write_config(self, *, heats: int, seed: int) -> Path:
        """Write the config: simulated devices, the outside broker, `heats` heats per start,
        `seed` for the simulated shoe and the virtual players of the next start."""
        doc: dict[str, Any] = {
            "table": {"venue": self.venue, "id": self.table, "journal": str(self.journal)},
            "files": {"tournament": str(REPO / "config" / "tournament.toml"),
                      "paytables": str(REPO / "config" / "paytables.toml")},
            "keys": {"table_key": str(self.table_key),
                     "desk": {DESK_KEY_ID: self.desk_signer.public_key.base64}},
            "shoe": {"kind": "sim"},
            "rfid": {"kind": "sim"},
            "mqtt": {"broker": f"{self.host}:{self.port}"},
            "api": {"socket": str(self.socket)},
            # No ID reader: participants acknowledge by PIN; the console on any free port.
            "console": {"acknowledge_with": ["pin"], "port": 0},
            "sim": {"seed": seed, "players": self.players, "stage": "qualifying",
                    "heats": heats, "virtual_desk": True, "virtual_dealer": True,
                    "desk_key": str(self.root / "var" / "desk.key")},
            "log": {"format": "json", "level": "info"},
        }
        self.config.write_text(tomli_w.dumps(doc), encoding="utf-8")
        return self.config


class DaemonProcess:
    """One run of `showdown table run --config FILE`; its output is appended to `log`."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config = config
        self.log = log
        self.started = time.monotonic()
        self.log_start = log.stat().st_size if log.exists() else 0
        with log.open("a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cli", "table", "run", "--config", str(config)],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    @property
    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.proc.poll() is None

    def output(self) -> str:
        """What this run wrote to the log."""
        with self.log.open("rb") as f:
            f.seek(self.log_start)
            return f.read().decode("utf-8", "replace")

    def kill(self) -> int | None:
        """SIGKILL the daemon's whole process group; returns its exit code if it had already
        exited by itself (None when the kill is what ended it)."""
        early = self.proc.poll()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        return early

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM (a clean stop, as systemd does) and wait; SIGKILL after `timeout`."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise


async def daemon_status(socket: Path, timeout: float = 2.0) -> dict[str, Any] | None:
    """The daemon's status over its local API, or None while it does not answer."""
    try:
        answer = await call(socket, {"action": "status"}, timeout=timeout)
    except (OSError, ConnectionError, TimeoutError, ValueError, asyncio.IncompleteReadError):
        return None
    detail = answer.get("detail")
    return detail if answer.get("ok") and isinstance(detail, dict) else None


@dataclass(slots=True)
class Stored:
    """One message kept by the leaderboard side."""

    envelope: Envelope
    raw: bytes


class Leaderboard:
    """The leaderboard side (see the module docstring). Use as an async context manager.

    `loss_rate` simulates a lossy consumer: that fraction of seqs is dropped on first arrival
    (seeded by `rng`), so gap detection and the resend path are exercised on every run.
    """

    def __init__(self, table: CrashTable, *, client_id: str, rng: random.Random,
                 loss_rate: float = 0.0, resend_interval: float = 1.5) -> None:
        self.table = table
        self.client_id = client_id
        self.rng = rng
        self.loss_rate = loss_rate
        self.resend_interval = resend_interval
        self.keyring = KeyRing([table.table_signer.public_key])
        topics = table.topics
        self.subscribed = {topics.events, topics.scores}
        self.cmd_topic = topics.cmd
        self.store: dict[tuple[str, int], Stored] = {}
        self.received = 0  # sequenced messages received, duplicates included
        self.duplicates = 0
        self.mismatched: list[int] = []  # a seq received twice with different bytes
        self.invalid: Counter[str] = Counter()  # envelope rejection reasons
        self.foreign = 0  # messages on topics not subscribed to (amqtt, D12)
        self.unsequenced: Counter[str] = Counter()  # seq 0 notices by type
        self.simulated_losses = 0
        self.resends: list[int] = []  # from_seq of every resend sent
        self.expected_last = 0  # the table's last seq, once the test knows it
        self.types: Counter[str] = Counter()  # stored (deduplicated) messages by type
        self.arrived = asyncio.Condition()
        self._decided: set[int] = set()
        self._contiguous = 0
        self._last_request: float | None = None
        self._command_seq = time.time_ns() // 1_000_000
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._gap_wake = asyncio.Event()

    async def __aenter__(self) -> Leaderboard:
        self._task = asyncio.create_task(self._run(), name="leaderboard")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({self._task, ready}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._task.done():
            self._task.result()  # raises what stopped it
        if not self._ready.is_set():
            raise RuntimeError("the leaderboard subscriber did not connect in 30 s")
        return self

    async def __aexit__(self, *exc: object) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def check(self) -> None:
        """Raise what stopped the subscriber, if it stopped."""
        if self._task is not None and self._task.done():
            self._task.result()
            raise RuntimeError("the leaderboard subscriber stopped")

    # ---- views -----------------------------------------------------------------------

    @property
    def contiguous(self) -> int:
        """The highest n such that seqs 1..n are all stored."""
        return self._contiguous

    def seqs(self) -> list[int]:
        """Every stored seq, in order."""
        return sorted(seq for _, seq in self.store)

    def messages(self, *types: str) -> list[Envelope]:
        """Stored envelopes of these types (all when none given), in seq order."""
        return [s.envelope for _, s in sorted(self.store.items())
                if not types or s.envelope.type in types]

    def stored_count(self, *types: str) -> int:
        """How many stored messages have one of these types."""
        return sum(self.types[t] for t in types)

    def expect_through(self, last_seq: int) -> None:
        """Tell the leaderboard the table's last seq (so a lost tail counts as a gap)."""
        self.expected_last = max(self.expected_last, last_seq)
        self._gap_wake.set()

    async def wait_for(self, predicate: Any, timeout: float) -> bool:
        """Wait until `predicate()` holds after some arrival; False after `timeout` (a guard)."""
        try:
            async with asyncio.timeout(timeout), self.arrived:
                await self.arrived.wait_for(predicate)
        except TimeoutError:
            return False
        return True

    # ---- the subscriber ----------------------------------------------------------------

    async def _run(self) -> None:
        async with aiomqtt.Client("127.0.0.1", self.table.port, identifier=self.client_id,
                                  clean_session=False, timeout=10) as client:
            self._client = client
            for topic in sorted(self.subscribed):
                await client.subscribe(topic, qos=1)
            self._ready.set()
            gaps = asyncio.create_task(self._gap_watch(), name="leaderboard.gaps")
            try:
                async for message in client.messages:
                    topic = message.topic.value
                    if topic not in self.subscribed:
                        self.foreign += 1
                        continue
                    payload = message.payload
                    raw = bytes(payload) if isinstance(payload, bytes | bytearray) else b""
                    await self._take(raw)
            finally:
                gaps.cancel()
                self._client = None

    async def _take(self, raw: bytes) -> None:
        try:
            envelope = verify_envelope(raw, self.keyring)
        except EnvelopeError as exc:
            self.invalid[exc.reason] += 1
            return
        if envelope.seq == 0:
            self.unsequenced[envelope.type] += 1
            return
        self.received += 1
        key = (envelope.table, envelope.seq)
        if key in self.store:
            self.duplicates += 1
            if self.store[key].raw != raw:
                self.mismatched.append(envelope.seq)
            return
        if envelope.seq not in self._decided:
            self._decided.add(envelope.seq)
            if self.loss_rate and self.rng.random() < self.loss_rate:
                self.simulated_losses += 1
                return
        self.store[key] = Stored(envelope=envelope, raw=raw)
        self.types[envelope.type] += 1
        while (self.table.table, self._contiguous + 1) in self.store:
            self._contiguous += 1
        async with self.arrived:
            self.arrived.notify_all()
        self._gap_wake.set()

    async def _gap_watch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._gap_wake.wait(), 0.5)
            self._gap_wake.clear()
            await self._maybe_resend()

    async def _maybe_resend(self) -> None:
        highest = max([self.expected_last, *(seq for _, seq in self.store)], default=0)
        if highest <= self._contiguous:
            return
        # One request at a time: a resend from N republishes N to the end, which fills every
        # later gap too; ask again only if the gap is still there `resend_interval` later.
        now = time.monotonic()
        if self._last_request is not None and now - self._last_request < self.resend_interval:
            return
        self._last_request = now
        await self.send_resend(self._contiguous + 1)

    async def send_resend(self, from_seq: int) -> None:
        """Publish a signed `resend` desk command on the table's cmd topic (QoS 1)."""
        client = self._client
        if client is None:
            return
        self._command_seq += 1
        desk = self.table.desk_signer
        envelope = seal(
            venue=self.table.venue, table=desk.key_id, seq=self._command_seq,
            wall=datetime.now(UTC), type="resend",
            body={"table": self.table.table, "command": "resend", "from_seq": from_seq,
                  "command_id": f"{desk.key_id}-{self._command_seq}"},
            boot="crash-test-leaderboard", mono=time.monotonic_ns(), signer=desk)
        await client.publish(self.cmd_topic, envelope.encode(), qos=1)
        self.resends.append(from_seq)


async def clear_broker_state(host: str, port: int, *, client_ids: list[str],
                             retained: list[str]) -> None:
    """Leave a shared broker as found: drop persistent sessions, clear retained topics."""
    for client_id in client_ids:
        with contextlib.suppress(aiomqtt.MqttError):
            async with aiomqtt.Client(host, port, identifier=client_id, clean_session=True,
                                      timeout=10):
                pass
    with contextlib.suppress(aiomqtt.MqttError):
        async with aiomqtt.Client(host, port, timeout=10) as client:
            for topic in retained:
                await client.publish(topic, b"", qos=1, retain=True)
