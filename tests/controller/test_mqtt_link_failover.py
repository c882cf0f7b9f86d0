"""The table's link over several brokers (a cluster's nodes): a lost node moves the link to
the next address, the outbox goes on from the first message not acknowledged, and the link
says where it is and how long the failover took. Two independent embedded brokers stand in
for two nodes here (the link's side only); tests/integration/test_broker_cluster.py runs a
real NATS cluster."""

from __future__ import annotations

import socket

import pytest

from controller.embedded_broker import EmbeddedBroker
from tests.controller.mqtt_link_support import Env, subscribed
from tests.fixtures.services import MqttBroker
from wire.mqtt import ConnectFailed, MqttSettings, connect, publish_once
from wire.signing import Signer


def _env(broker: EmbeddedBroker, unique_topic: str) -> Env:
    table = f"t-{unique_topic.rsplit('/', 1)[1]}"
    return Env(broker=MqttBroker(kind="embedded", host=broker.host, port=broker.port),
               root=unique_topic, table=table, table_key=Signer.generate(table),
               desk_key=Signer.generate("desk-1"))


def _dead_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_lost_node_moves_the_link_to_the_next_and_nothing_is_lost(
        unique_topic: str) -> None:
    async with EmbeddedBroker() as first, EmbeddedBroker() as second:
        env = _env(first, unique_topic)
        first_port, second_port = first.port, second.port
        env.outbox.add(3)
        async with env.link(failover=(("127.0.0.1", second_port),)) as link:
            await env.outbox.until_delivered(3)
            assert link.counters().broker == f"127.0.0.1:{first_port}"
            await first.stop()
            env.outbox.add(3)  # made while the first node is gone
            link.wake()
            await env.outbox.until_delivered(6)
            counters = link.counters()
            # The second node's subscriber sees the birth and what the link sends from now.
            env.broker = MqttBroker(kind="embedded", host=second.host, port=second.port)
            async with subscribed(env) as inbox:
                await inbox.until(lambda i: ("online", None) in i.states())
                env.outbox.add(1)
                link.wake()
                await inbox.until(lambda i: i.seqs() == [7])
                await env.send(env.command(1))  # commands arrive through the new node too
                await env.commands_changed.until(lambda: len(env.commands) == 1)
    assert env.outbox.delivered == list(range(1, 8))
    assert counters.broker == f"127.0.0.1:{second_port}"
    assert counters.failovers >= 1
    assert counters.last_failover_s is not None and counters.last_failover_s >= 0
    assert counters.as_dict()["broker"] == counters.broker


async def test_a_node_down_at_start_is_skipped(unique_topic: str) -> None:
    async with EmbeddedBroker() as live:
        env = _env(live, unique_topic)
        live_port = live.port
        env.outbox.add(2)
        dead = _dead_port()
        async with env.link(port=dead, failover=(("127.0.0.1", live.port),)) as link:
            await env.outbox.until_delivered(2)
            counters = link.counters()
    assert counters.broker == f"127.0.0.1:{live_port}"
    assert counters.connect_failures >= 1 and counters.failovers >= 1
    assert counters.last_failover_s is None  # no connection was ever lost


async def test_publish_once_tries_each_node_until_one_takes_it(unique_topic: str) -> None:
    async with EmbeddedBroker() as live:
        settings = MqttSettings(host="127.0.0.1", port=_dead_port(),
                                failover=(("127.0.0.1", live.port),), timeout_s=10.0)
        topic = f"{unique_topic}/once"
        async with connect(MqttSettings(host=live.host, port=live.port)) as watcher:
            await watcher.subscribe(topic, qos=1)
            await publish_once(settings, topic, b"hello", client_id="desk-once")
            message = await watcher.next_message()
    assert (message.topic, message.payload) == (topic, b"hello")


async def test_publish_once_names_every_node_when_none_answers() -> None:
    ports = [_dead_port(), _dead_port()]
    settings = MqttSettings(host="127.0.0.1", port=ports[0],
                            failover=(("127.0.0.1", ports[1]),), timeout_s=5.0)
    with pytest.raises(ConnectFailed) as caught:
        await publish_once(settings, "x/y", b"z", client_id="desk-none")
    text = str(caught.value)
    assert all(f"127.0.0.1:{p}" in text for p in ports), text
