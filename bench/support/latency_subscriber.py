"""The latency benchmark's subscriber process: verifies each message and stamps its arrival."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from support.latency_figures import GUARD_S, BenchError
from support.latency_tables import BenchTable

SCRIPT = Path(__file__).resolve().parents[1] / "latency.py"  # runs subscriber_main


async def subscriber_main(host: str, port: int, venue: str, table: str, key: str) -> int:
    """Subscribe to one table; one JSON line per message: arrival time, seq, type, hand id."""
    from wire.envelope import EnvelopeError, verify_envelope  # noqa: PLC0415
    from wire.mqtt import MqttSettings, connect  # noqa: PLC0415
    from wire.signing import KeyRing  # noqa: PLC0415
    from wire.topics import TableTopics  # noqa: PLC0415

    keyring = KeyRing.from_mapping({table: key})
    topics = TableTopics(venue, table)
    wanted = {topics.events, topics.scores, topics.status}
    out = sys.stdout
    async with connect(MqttSettings(host=host, port=port),
                       client_id=f"bench-sub-{secrets.token_hex(4)}") as c:
        await c.subscribe(f"{topics.base}/+", qos=1)
        out.write("SUBSCRIBED\n")
        out.flush()
        async for message in c.messages():
            arrived = time.monotonic_ns()
            if message.topic not in wanted or not message.payload:
                continue
            try:
                env = verify_envelope(message.payload, keyring)
            except EnvelopeError as exc:
                line: dict[str, Any] = {"t": arrived, "bad": exc.reason}
            else:
                line = {"t": arrived, "seq": env.seq, "type": env.type,
                        "hand_id": env.body.get("hand_id")}
            out.write(json.dumps(line) + "\n")
            out.flush()
    return 0


class SubscriberProcess:
    """Runs `subscriber_main` in a child process and collects its lines."""

    def __init__(self, host: str, port: int, table: BenchTable) -> None:
        self.args = [sys.executable, str(SCRIPT), "--subscriber", host,
                     str(port), table.venue, table.table, table.public_key]
        self.lines: list[dict[str, Any]] = []
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()

    async def __aenter__(self) -> SubscriberProcess:
        self.process = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self._reader = asyncio.create_task(self._read())
        async with asyncio.timeout(30):
            await self._subscribed.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await self.process.wait()
            if self.process.returncode is None:
                self.process.kill()
                await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            text = raw.decode().strip()
            if text == "SUBSCRIBED":
                self._subscribed.set()
            elif text:
                self.lines.append(json.loads(text))

    def settled(self) -> dict[str, int]:
        """hand id -> first arrival of its hand.settled."""
        out: dict[str, int] = {}
        for line in self.lines:
            if line.get("type") == "hand.settled" and line["hand_id"] not in out:
                out[line["hand_id"]] = line["t"]
        return out

    async def wait_for(self, what: str, check: Any) -> None:
        """Poll `check()` until it holds; BenchError if it never does."""
        try:
            async with asyncio.timeout(GUARD_S):
                while not check():
                    await asyncio.sleep(0.01)
        except TimeoutError:
            raise BenchError(f"the subscriber never received {what}") from None
