"""A power cut between the broker's PUBACK and the batched delivery mark: the messages are
published again after the restart, byte for byte the same, and a receiver that keeps one
message per (table, seq) holds each once (the leaderboard's rule: leaderboard/ingest/storing.py).

The publishing half runs in a subprocess (tests/integration/delivery_marks_child.py) with a
real journal file, the journal's outbox feed and writer thread, and a real MqttLink on a real
broker; the first run's writer thread is held, so every message is acknowledged by the broker
and none is marked, and the process is killed with SIGKILL. No assertion about time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.clock import system_clock
from controller.journal import Journal
from tests.controller.journal.support import events
from tests.controller.mqtt_link_support import VENUE, Env, peer, subscribed, table_env
from tests.fixtures.services import MqttBroker
from wire.envelope import verify_envelope
from wire.signing import save_private_key

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 12  # 6 appends of 2 messages


@pytest.fixture
async def env(mqtt_broker: MqttBroker, unique_topic: str) -> AsyncIterator[Env]:
    async with table_env(mqtt_broker, unique_topic) as e:
        yield e
        async with peer(mqtt_broker, client_id=f"{VENUE}-{e.table}", clean_session=True):
            pass  # the link's persistent session


async def start_child(env: Env, journal: Path, key: Path, mode: str
                      ) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.integration.delivery_marks_child", str(journal), str(key),
        env.broker.host, str(env.broker.port), env.root, VENUE, str(MESSAGES), mode,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)


async def line_of(child: asyncio.subprocess.Process) -> str:
    assert child.stdout is not None
    async with asyncio.timeout(60):
        line = (await child.stdout.readline()).decode().strip()
    if not line:
        assert child.stderr is not None
        raise AssertionError(f"the child ended: {(await child.stderr.read()).decode()[-2000:]}")
    return line


async def test_a_kill_before_the_batched_mark_resends_and_the_receiver_keeps_one_each(
        env: Env, tmp_path: Path) -> None:
    journal_path, key = tmp_path / "table.journal", tmp_path / "table.key"
    save_private_key(env.table_key, key)
    with Journal.open(journal_path) as journal:
        for _ in range(MESSAGES // 2):
            journal.append(kind="card", payload={"n": 1}, clock=system_clock(),
                           outgoing=events("card.read", "card.read"))  # type: ignore[arg-type]

    async with subscribed(env, f"{env.topics.base}/events") as inbox:
        first = await start_child(env, journal_path, key, "hold")
        try:
            assert await line_of(first) == f"acknowledged {MESSAGES}"
            with Journal.open(journal_path, read_only=True) as seen:
                assert seen.pending_count() == MESSAGES  # acknowledged, not one marked
        finally:
            os.killpg(first.pid, signal.SIGKILL)  # the power cut
            await first.wait()

        second = await start_child(env, journal_path, key, "finish")
        assert await line_of(second) == f"acknowledged {MESSAGES}"
        assert await line_of(second) == "closed"
        assert await second.wait() == 0
        await inbox.until(lambda i: len([e for e in i.envelopes() if e.seq]) >= 2 * MESSAGES)

    copies: dict[int, list[bytes]] = defaultdict(list)
    for message in inbox.messages:
        copies[verify_envelope(message.payload, env.table_keys).seq].append(message.payload)
    assert sorted(copies) == list(range(1, MESSAGES + 1))  # kept once per (table, seq): all
    assert all(len(c) == 2 and c[0] == c[1] for c in copies.values())  # re-sent, identical
    with Journal.open(journal_path, read_only=True) as journal:
        assert journal.pending_count() == 0
        assert journal.verify() == []
