"""The rehearsal venue's broker and supervisor (floor.venue_run): the private Mosquitto the
venue starts from its own files, with TLS and the per-table ACL, enforced for real; a child
killed with SIGKILL is started again, one that exits 0 is not; a stop leaves nothing running.

Nothing waits for something not to happen: after a message that must NOT arrive, the table
publishes a barrier on its own topic, which must be the first thing the subscriber gets.
"""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import pytest

from cli.venue_broker import mosquitto_files
from floor.venue_layout import BrokerFiles, VenuePorts, choose_ports
from floor.venue_run import ChildSpec, VenueProcesses, port_ready
from tests import services
from wire.mqtt_section import read_credentials

BASE = "showdown/v1/rehearsal"
GUARD_S = 10.0  # guards against a hang only



@dataclass
class Venue:
    ports: VenuePorts
    files: BrokerFiles
    processes: VenueProcesses
    said: list[str]

    def password(self, client: str) -> str:
        creds = read_credentials(self.files.credentials[client], source="test")
        return str(creds["password"])

    def client(self, username: str, password: str | None = None, *,
               tls: bool = True, timeout: float = GUARD_S) -> aiomqtt.Client:
        context = ssl.create_default_context(cafile=str(self.files.ca_file)) if tls else None
        return aiomqtt.Client("127.0.0.1", self.ports.broker, username=username,
                              password=self.password(username) if password is None else password,
                              identifier=username, tls_context=context, timeout=timeout)


@pytest.fixture
async def venue(tmp_path: Path) -> AsyncIterator[Venue]:
    binary = services.mosquitto_binary()
    ports = choose_ports(tmp_path, 2)
    files = mosquitto_files(tmp_path, venue="rehearsal", tables=("t01", "t02"),
                            port=ports.broker)
    said: list[str] = []
    processes = VenueProcesses(said.append)
    assert files.config is not None
    problem = await processes.start([ChildSpec(
        "broker", [binary, "-c", str(files.config)], tmp_path / "logs/broker.log",
        ready=lambda: port_ready(ports.broker))])
    try:
        assert problem is None, problem
        yield Venue(ports, files, processes, said)
    finally:
        assert await processes.stop() == []


async def _first(client: aiomqtt.Client) -> aiomqtt.Message:
    async with asyncio.timeout(GUARD_S):
        async for message in client.messages:
            return message
    raise AssertionError("the message stream ended")


async def test_a_table_connects_through_tls_with_its_own_password(venue: Venue) -> None:
    async with venue.client("leaderboard") as board, venue.client("t01") as t01:
        await board.subscribe(f"{BASE}/tables/+/status", qos=1)
        await t01.publish(f"{BASE}/tables/t01/status", b"online", qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/status", b"online")


async def test_another_tables_password_and_clear_text_are_refused(venue: Venue) -> None:
    with pytest.raises(aiomqtt.MqttError):
        async with venue.client("t01", venue.password("t02")):
            pass
    with pytest.raises(aiomqtt.MqttError):  # no TLS: the listener speaks only TLS (the
        async with venue.client("t01", tls=False, timeout=1.0):  # broker drops it: no CONNACK
            pass


async def test_the_acl_refuses_a_table_publishing_on_another_tables_topic(venue: Venue) -> None:
    async with venue.client("leaderboard") as board, venue.client("t01") as t01:
        await board.subscribe(f"{BASE}/tables/+/#", qos=1)
        for suffix in ("status", "events", "scores"):
            await t01.publish(f"{BASE}/tables/t02/{suffix}", b"forged", qos=1)
        await t01.publish(f"{BASE}/tables/t01/status", b"barrier", qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/status", b"barrier")


async def test_a_child_killed_with_sigkill_is_restarted(venue: Venue) -> None:
    broker = venue.processes.child("broker")
    first = broker.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    async with asyncio.timeout(GUARD_S + 5):
        while not any("restarted" in line for line in venue.said):
            await asyncio.sleep(0.1)
    assert venue.said[0] == "venue: broker was killed by SIGKILL; restarting in 2 s"
    assert broker.pid not in (None, first) and broker.restarts == 1
    async with venue.client("t02") as t02:  # serving again, same files
        await t02.publish(f"{BASE}/tables/t02/status", b"online", qos=1)


async def test_a_clean_exit_is_not_restarted_and_a_stop_leaves_nothing(tmp_path: Path) -> None:
    said: list[str] = []
    processes = VenueProcesses(said.append)
    script = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); "
    problem = await processes.start([
        ChildSpec("quick", [sys.executable, "-c", "pass"], tmp_path / "quick.log"),
        ChildSpec("long", [sys.executable, "-c", script + "time.sleep(600)"],
                  tmp_path / "long.log")])
    assert problem is None
    quick, long = processes.child("quick"), processes.child("long")
    async with asyncio.timeout(GUARD_S):
        while not said:
            await asyncio.sleep(0.05)
    assert said == ["venue: quick exited with code 0; not restarted (it stopped by itself)"]
    assert quick.restarts == 0
    pid = long.pid
    assert pid is not None
    assert await processes.stop() == []
    assert long.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_child_that_fails_as_it_starts_is_a_problem_naming_its_log(
        tmp_path: Path) -> None:
    processes = VenueProcesses(lambda _line: None)
    problem = await processes.start([ChildSpec(
        "bad", [sys.executable, "-c", "import sys; print('no such key'); sys.exit(2)"],
        tmp_path / "bad.log", ready=lambda: port_ready(1))])
    assert problem is not None
    assert problem.startswith("bad exited (code 2) as it started:")
    assert "no such key" in problem and str(tmp_path / "bad.log") in problem
    assert await processes.stop() == []
