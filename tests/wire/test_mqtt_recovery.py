"""The MQTT session recovers at once (issue 34 §4): its back-off starts again after every
connection, so each reconnect comes within one back-off step of the broker's return; a
broker that stops answering (no PINGRESP) or never answers a CONNECT is noticed within about
twice the keepalive, not at a timeout; and an outage is one warning line, with no traceback
and no error-level line (no uvloop ``add_writer`` EBADF, no unretrieved future).

A private Mosquitto the test starts (and stops, several times) on a free loopback port, and a
silent "broker" of the test's own: a socket that takes the CONNECT (and answers it with a
CONNACK, or not) and then says nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.embedded_broker import EmbeddedBroker
from tests.fixtures.private_mosquitto import PrivateMosquitto
from wire.mqtt import ConnectFailed, MqttClient, MqttSession, MqttSettings, connect

GUARD_S = 30.0  # against hangs only
CONNACK = b"\x20\x02\x00\x00"


@dataclass
class Said:
    """One event the session logged."""

    level: str
    event: str
    fields: dict[str, Any]
    at: float  # time.monotonic()


@dataclass
class Recorder:
    """A structlog-like logger that keeps what the session says."""

    said: list[Said] = field(default_factory=list)

    def _say(self, level: str) -> Callable[..., None]:
        def say(event: str, **fields: Any) -> None:
            self.said.append(Said(level, event, fields, time.monotonic()))
        return say

    def __getattr__(self, level: str) -> Callable[..., None]:
        if level in ("debug", "info", "warning", "error", "exception", "critical"):
            return self._say(level)
        raise AttributeError(level)

    def events(self, *names: str) -> list[Said]:
        """What was said, of these names."""
        return [s for s in self.said if s.event in names]


@pytest.fixture
async def loop_reports() -> AsyncIterator[list[dict[str, Any]]]:
    """What the event loop's exception handler is given (a callback's traceback, a future's
    exception never retrieved), kept instead of logged while the test runs."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        yield reported
    finally:
        gc.collect()  # an unretrieved future reports itself when it is collected
        await asyncio.sleep(0)
        loop.set_exception_handler(None)


@contextlib.asynccontextmanager
async def running(session: MqttSession, on_connected: Callable[[MqttClient], Any],
                  stop: asyncio.Event) -> AsyncIterator[None]:
    task = asyncio.create_task(session.run(on_connected, stop))
    try:
        yield
    finally:
        stop.set()
        async with asyncio.timeout(GUARD_S):
            await task


async def until(what: str, check: Callable[[], bool]) -> None:
    async with asyncio.timeout(GUARD_S):
        while not check():
            await asyncio.sleep(0.005)
    del what


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_every_outage_starts_the_backoff_again_and_is_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        loop_reports: list[dict[str, Any]]) -> None:
    caplog.set_level(logging.DEBUG)
    broker = PrivateMosquitto(tmp_path / "mosquitto")
    broker.start()
    settings = MqttSettings(host=broker.host, port=broker.port, keepalive_s=2, timeout_s=GUARD_S,
                            backoff_initial_s=0.05, backoff_max_s=0.8)
    log = Recorder()
    session = MqttSession(settings, client_id="recovery-backoff", clean_session=True,
                          rng=random.Random(7), log=log)
    connected: list[float] = []
    stop = asyncio.Event()

    async def on_connected(client: MqttClient) -> None:
        connected.append(time.monotonic())
        await client.publish("showdown-test/recovery", b"hello", qos=1)
        await stop.wait()  # or until the watchdog sees the connection go

    outages = 3
    returns: list[float] = []
    try:
        async with running(session, on_connected, stop):
            await until("connected", lambda: len(connected) == 1)
            for n in range(1, outages + 1):
                await asyncio.to_thread(broker.stop)
                await asyncio.sleep(1.0)  # attempts at 0.05, 0.1, 0.2, 0.4 s ... refused
                returns.append(await asyncio.to_thread(broker.start))
                await until(f"reconnect {n}", lambda n=n: len(connected) == n + 1)  # type: ignore[misc]
    finally:
        broker.close()

    lags = [round(c - r, 3) for c, r in zip(connected[1:], returns, strict=True)]
    print(f"reconnect after the broker's return: {lags} s")
    waits = log.events("mqtt_reconnect_wait")
    for n, back in enumerate(returns):
        lost = log.events("mqtt_disconnected")[n].at
        during = [w for w in waits if lost <= w.at <= connected[n + 1]]
        # The counter starts again at every outage: its first wait is attempt 1.
        assert during[0].fields["attempt"] == 1, [w.fields for w in during]
        assert [w.fields["attempt"] for w in during] == list(range(1, len(during) + 1))
        # The reconnect comes within the step that was under way when the broker came back
        # (plus the connect itself: a generous margin).
        step = max(w.fields["delay_s"] for w in during if w.at <= back)
        assert connected[n + 1] - back <= step + 1.0, (lags, step)
    assert session.connections == outages + 1
    # One warning per lost connection, none else; no error and no traceback anywhere.
    warned = [s for s in log.said if s.level != "info"]
    assert [s.event for s in warned] == ["mqtt_disconnected"] * outages, warned
    assert all(s.level == "info" for s in log.events("mqtt_connect_failed"))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    gc.collect()
    await asyncio.sleep(0)
    assert loop_reports == []


@contextlib.asynccontextmanager
async def silent_broker(*, connack: bool) -> AsyncIterator[tuple[int, list[str]]]:
    """A "broker" that reads the CONNECT, answers it with a CONNACK (or not), and then
    answers nothing (no PINGRESP, no PUBACK); yields its port and what happened to each
    connection ("closed" once the client closed it)."""
    seen: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)  # the CONNECT
        if connack:
            writer.write(CONNACK)
            await writer.drain()
        while await reader.read(1024):
            pass  # PINGREQ, PUBLISH...: never answered
        seen.append("closed")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()


async def test_a_broker_that_stops_answering_is_noticed_within_twice_the_keepalive(
        loop_reports: list[dict[str, Any]]) -> None:
    keepalive = 1
    async with silent_broker(connack=True) as (port, seen):
        settings = MqttSettings(host="127.0.0.1", port=port, keepalive_s=keepalive,
                                timeout_s=GUARD_S, backoff_initial_s=GUARD_S,
                                backoff_max_s=GUARD_S)
        log = Recorder()
        session = MqttSession(settings, client_id="recovery-silent", log=log)
        started: list[float] = []
        stop = asyncio.Event()

        async def on_connected(client: MqttClient) -> None:
            started.append(time.monotonic())
            # Its PUBACK never comes: the publish would wait GUARD_S, the watchdog does not.
            await client.publish("showdown-test/silent", b"x", qos=1)

        async with running(session, on_connected, stop):
            await until("the loss", lambda: bool(log.events("mqtt_disconnected")))
            await until("the socket closed", lambda: seen == ["closed"])
    noticed = log.events("mqtt_disconnected")[0]
    seconds = noticed.at - started[0]
    print(f"silent broker noticed after {seconds:.2f} s (keepalive {keepalive} s):"
          f" {noticed.fields['error']}")
    assert "Keep alive timeout" in noticed.fields["error"]
    # paho's check runs once a second: twice the keepalive, plus that tick, plus a margin.
    assert seconds <= 2 * keepalive + 1 + 1.0
    assert loop_reports == []


async def test_a_connect_the_broker_never_answers_fails_at_the_keepalive_and_closes(
        loop_reports: list[dict[str, Any]]) -> None:
    async with silent_broker(connack=False) as (port, seen):
        settings = MqttSettings(host="127.0.0.1", port=port, keepalive_s=1, timeout_s=GUARD_S)
        began = time.monotonic()
        with pytest.raises(ConnectFailed, match="closed before the CONNACK"):
            async with connect(settings, client_id="recovery-connack"):
                pass  # pragma: no cover - never connects
        seconds = time.monotonic() - began
        # Its socket is closed, not left for a broker that wakes up to CONNACK later.
        await until("the socket closed", lambda: seen == ["closed"])
    print(f"an unanswered CONNECT failed after {seconds:.2f} s (timeout_s {GUARD_S})")
    assert seconds < GUARD_S / 2
    assert loop_reports == []


async def test_a_write_registered_for_a_socket_closed_meanwhile_is_no_traceback(
        loop_reports: list[dict[str, Any]]) -> None:
    # The race a frozen process meets when it wakes up: paho asks for a write (a PINGREQ), the
    # event loop is to register it a moment later, and the socket closes in between (the
    # broker had dropped us). aiomqtt alone registers the closed descriptor: EBADF in the
    # loop's exception handler.
    async with EmbeddedBroker() as broker:
        settings = MqttSettings(host=broker.host, port=broker.port, timeout_s=GUARD_S)
        async with connect(settings, client_id="recovery-race") as client:
            inner = client._client
            paho_client = inner._client
            sock = paho_client.socket()
            inner._on_socket_register_write(paho_client, None, sock)  # scheduled, not yet run
            paho_client._sock_close()  # the socket closes first
            await asyncio.sleep(0.05)
            assert client.loss() is not None
            client.mark_lost("closed by the test")
    assert loop_reports == []


@contextlib.asynccontextmanager
async def electing_node(hold_s: float) -> AsyncIterator[int]:
    """A cluster node that cannot load the session yet (a NATS node whose session stream is
    electing its leader): it takes the CONNECT, holds it ``hold_s`` and closes it unanswered."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        await asyncio.sleep(hold_s)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def _dead_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_node_that_held_the_connect_is_followed_at_once_by_the_next() -> None:
    """D419: within a round of the node list, the next node is tried once the first step has
    passed since the failed attempt began, so a node that held the CONNECT for longer than that
    is followed at once; a node refused at once waits out the rest of the step."""
    async with electing_node(hold_s=0.6) as electing, EmbeddedBroker() as live:
        dead, live_port = _dead_port(), live.port
        settings = MqttSettings(host="127.0.0.1", port=electing,
                                failover=(("127.0.0.1", dead), ("127.0.0.1", live_port)),
                                timeout_s=GUARD_S, backoff_initial_s=0.4, backoff_max_s=5.0)
        log = Recorder()
        session = MqttSession(settings, client_id="round-next", clean_session=True,
                              rng=random.Random(3), log=log)
        stop = asyncio.Event()
        connected: list[str] = []

        async def on_connected(client: MqttClient) -> None:
            connected.append(session.broker)
            await stop.wait()

        async with running(session, on_connected, stop):
            await until("connected", lambda: bool(connected))
    failed = [s.fields["port"] for s in log.events("mqtt_connect_failed")]
    waits = [s.fields for s in log.events("mqtt_reconnect_wait")]
    assert failed == [electing, dead]
    assert connected == [f"127.0.0.1:{live_port}"]
    # After the node that held the CONNECT 0.6 s (more than the 0.2-0.4 s first step): no
    # wait; after the refused one: the rest of its first step; neither grows the backoff.
    assert waits[0] == {"delay_s": 0.0, "attempt": 0}, waits
    assert 0.0 < waits[1]["delay_s"] <= 0.4 and waits[1]["attempt"] == 0, waits


async def test_with_every_node_down_the_backoff_grows_by_rounds_of_the_list() -> None:
    ports = [_dead_port(), _dead_port(), _dead_port()]
    settings = MqttSettings(host="127.0.0.1", port=ports[0],
                            failover=tuple(("127.0.0.1", p) for p in ports[1:]),
                            timeout_s=GUARD_S, backoff_initial_s=0.02, backoff_max_s=5.0)
    log = Recorder()
    session = MqttSession(settings, client_id="round-grow", clean_session=True,
                          rng=random.Random(5), log=log)
    stop = asyncio.Event()

    async def never(client: MqttClient) -> None:
        raise AssertionError(f"connected to {client.where}")

    async with running(session, never, stop):
        await until("three rounds", lambda: len(log.events("mqtt_reconnect_wait")) >= 9)
    waits = [s.fields for s in log.events("mqtt_reconnect_wait")][:9]
    # Two spaced attempts, then the round's growing wait: 0.02, 0.04, 0.08 s at most.
    assert [w["attempt"] for w in waits] == [0, 0, 1, 1, 1, 2, 2, 2, 3], waits
    assert [s.fields["port"] for s in log.events("mqtt_connect_failed")][:6] == ports * 2
    for n, ceiling in ((2, 0.02), (5, 0.04), (8, 0.08)):
        assert ceiling / 2 <= waits[n]["delay_s"] <= ceiling, waits
