"""wire.mqtt against real brokers (the embedded one always, Mosquitto where present): one
connection, the session that reconnects, and aiomqtt's errors mapped to ours.

Waits are guarded against hangs only; nothing asserts about time.
"""

from __future__ import annotations

import asyncio
import gc
import random
import socket
from collections.abc import Callable

import pytest

from controller.embedded_broker import EmbeddedBroker
from game.errors import ConfigError
from tests.fixtures.services import MqttBroker
from wire.mqtt import (
    ConnectFailed,
    ConnectionLost,
    MqttClient,
    MqttError,
    MqttSession,
    MqttSettings,
    SubscriptionRefused,
    connect,
    exception_leaves,
    publish_once,
    stopped_within,
    suback_refused,
)

GUARD_S = 10.0  # against hangs only


def settings_for(broker: MqttBroker) -> MqttSettings:
    return MqttSettings(host=broker.host, port=broker.port, timeout_s=GUARD_S)


def free_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_publish_subscribe_and_messages_in_order(mqtt_broker: MqttBroker,
                                                       unique_topic: str) -> None:
    settings = settings_for(mqtt_broker)
    topic = f"{unique_topic}/events"
    async with connect(settings) as subscriber:
        assert await subscriber.subscribe(topic, qos=1)
        for n in range(3):
            await publish_once(settings, topic, f"m{n}".encode(), client_id=f"pub-{n}")
        received = []
        async with asyncio.timeout(GUARD_S):
            async for message in subscriber.messages():
                if message.topic == topic:  # amqtt also sends others' retained messages
                    received.append((message.payload, message.qos))
                if len(received) == 3:
                    break
    assert received == [(b"m0", 1), (b"m1", 1), (b"m2", 1)]


async def test_take_nowait_hands_over_what_has_arrived(mqtt_broker: MqttBroker,
                                                       unique_topic: str) -> None:
    settings = settings_for(mqtt_broker)
    topic = f"{unique_topic}/batch"
    async with connect(settings) as subscriber, connect(settings) as publisher:
        await subscriber.subscribe(topic, qos=1)
        for n in range(5):
            await publisher.publish(topic, bytes([n]), qos=1)
        async with asyncio.timeout(GUARD_S):
            first = await subscriber.next_message()
            while first.topic != topic:
                first = await subscriber.next_message()
            taken = [first]
            while len(taken) < 5:
                taken.extend(m for m in subscriber.take_nowait(10) if m.topic == topic)
                await asyncio.sleep(0.01)
    assert [m.payload for m in taken] == [bytes([n]) for n in range(5)]
    assert subscriber.take_nowait(10) == []


async def test_a_retained_message_reaches_a_later_subscriber(mqtt_broker: MqttBroker,
                                                             unique_topic: str) -> None:
    settings = settings_for(mqtt_broker)
    status = f"{unique_topic}/status"
    async with connect(settings) as publisher:
        await publisher.publish(status, b"online", qos=1, retain=True)
    async with connect(settings) as late:
        await late.subscribe(status, qos=1)
        async with asyncio.timeout(GUARD_S):
            message = await late.next_message()
            while message.topic != status:
                message = await late.next_message()
    assert (message.payload, message.retain) == (b"online", True)
    async with connect(settings) as cleaner:  # the shared Mosquitto keeps retained messages
        await cleaner.publish(status, b"", qos=1, retain=True)


async def test_no_broker_is_connect_failed_an_mqtt_error() -> None:
    settings = MqttSettings(host="127.0.0.1", port=free_port(), timeout_s=GUARD_S)
    with pytest.raises(ConnectFailed, match=r"cannot connect to 127\.0\.0\.1:\d+") as failed:
        async with connect(settings):
            pass  # pragma: no cover
    assert isinstance(failed.value, MqttError)
    assert failed.value.__cause__ is not None  # the original aiomqtt error


async def test_a_refused_subscription_is_a_config_error_naming_the_setting() -> None:
    # The embedded amqtt broker refuses shared subscriptions (it cannot deliver them).
    async with EmbeddedBroker() as broker:
        port = broker.port
        settings = MqttSettings(host=broker.host, port=port, timeout_s=GUARD_S)
        async with connect(settings) as client:
            assert not await client.subscribe("$share/g/showdown-test/x", qos=1)
            with pytest.raises(SubscriptionRefused) as refused:
                await client.subscribe_all(["showdown-test/ok", "$share/g/showdown-test/x"])
    error = refused.value
    assert isinstance(error, ConfigError)
    assert isinstance(error, MqttError)
    assert error.topic_filter == "$share/g/showdown-test/x"
    assert str(error).startswith(f"mqtt: shared_group: the broker at 127.0.0.1:{port}"
                                 " refused the shared subscription $share/g/showdown-test/x")


async def test_a_publish_on_a_lost_connection_is_connection_lost() -> None:
    async with EmbeddedBroker() as broker:
        settings = MqttSettings(host=broker.host, port=broker.port, timeout_s=1.0)

        async def publish_until_lost() -> None:
            async with connect(settings) as client:
                await broker.stop()
                async with asyncio.timeout(GUARD_S):
                    while True:  # until the client notices the broker has gone
                        await client.publish("showdown-test/lost", b"x", qos=1)
                        await asyncio.sleep(0.02)

        with pytest.raises(ConnectionLost):
            await publish_until_lost()


async def test_the_session_reconnects_after_a_restart_and_counts(unique_topic: str) -> None:
    port = free_port()
    settings = MqttSettings(host="127.0.0.1", port=port, timeout_s=GUARD_S,
                            backoff_initial_s=0.02, backoff_max_s=0.1)
    session = MqttSession(settings, client_id="session-test", clean_session=True,
                          rng=random.Random(3))
    stop = asyncio.Event()
    clients: list[MqttClient] = []
    changed = asyncio.Event()

    async def on_connected(client: MqttClient) -> None:
        clients.append(client)
        changed.set()
        # Until the connection is lost (ConnectionLost) or stop is set.
        reading = asyncio.ensure_future(client.next_message())
        stopping = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if reading in done:
            reading.result()
        reading.cancel()

    async def until(condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(GUARD_S):
            while not condition():
                changed.clear()
                await stopped_within(changed, 0.02)

    task = asyncio.create_task(session.run(on_connected, stop))
    await until(lambda: session.connect_failures >= 2)  # nothing listens yet
    assert not session.connected
    async with EmbeddedBroker(port=port) as broker:
        await until(lambda: len(clients) == 1)
        assert (session.connections, session.reconnects) == (1, 0)
        await broker.stop()
    async with EmbeddedBroker(port=port):
        await until(lambda: len(clients) == 2)
        assert session.reconnects == 1
        stop.set()
        async with asyncio.timeout(GUARD_S):
            await task
    assert session.connections == 2


async def test_the_session_stops_at_once_while_waiting_and_passes_other_errors_on() -> None:
    settings = MqttSettings(host="127.0.0.1", port=free_port(), timeout_s=GUARD_S,
                            backoff_initial_s=30.0, backoff_max_s=30.0)
    session = MqttSession(settings, client_id="waiting")
    stop = asyncio.Event()

    async def never(client: MqttClient) -> None:  # pragma: no cover - never connects
        del client

    task = asyncio.create_task(session.run(never, stop))
    async with asyncio.timeout(GUARD_S):
        while session.connect_failures == 0:
            await asyncio.sleep(0.01)
        stop.set()  # while it waits its 15-30 s backoff
        await task
    async with EmbeddedBroker() as broker:
        failing = MqttSession(MqttSettings(host=broker.host, port=broker.port), client_id="bug")

        async def bug(client: MqttClient) -> None:
            raise RuntimeError("a bug, not the connection")

        with pytest.raises(RuntimeError, match="a bug"):
            await failing.run(bug, asyncio.Event())


def test_suback_codes_and_exception_leaves() -> None:
    class Code:
        def __init__(self, value: int) -> None:
            self.value = value

    assert [suback_refused(c) for c in (0, 1, 2, 0x80, Code(1), Code(0x87), "x")] == [
        False, False, False, True, False, True, False]
    inner = ValueError("inner")
    group = BaseExceptionGroup("outer", [KeyError("k"), BaseExceptionGroup("mid", [inner])])
    assert [type(e) for e in exception_leaves(group)] == [KeyError, ValueError]


async def test_a_broker_gone_before_the_block_ends_leaves_no_unretrieved_error() -> None:
    # aiomqtt 2.5 keeps an unexpected disconnection's reason in a future that nobody reads
    # when the block ends after the broker went away; asyncio then logs it at error level.
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    try:
        async with EmbeddedBroker() as broker:
            settings = MqttSettings(host=broker.host, port=broker.port, timeout_s=1.0)
            async with connect(settings) as client:
                await broker.stop()
                async with asyncio.timeout(GUARD_S):
                    while not client._client._disconnected.done():  # paho has seen it drop
                        await asyncio.sleep(0.02)
        await asyncio.sleep(0)
        del client
        gc.collect()  # an unretrieved future reports itself when it is collected
    finally:
        loop.set_exception_handler(None)
    assert reported == []
