"""MqttLink desk commands: verified and delivered to on_command, or rejected, counted and
answered with a signed notice; the link goes on whatever a command does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.controller.mqtt_link_support import (
    T0,
    VENUE,
    Env,
    connected,
    peer,
    subscribed,
    table_env,
)
from tests.fixtures.services import MqttBroker
from wire.envelope import Envelope, canonical_json, seal, verify_envelope
from wire.messages import CommandRejected
from wire.signing import KeyRing, Signer


@pytest.fixture
async def env(mqtt_broker: MqttBroker, unique_topic: str) -> AsyncIterator[Env]:
    async with table_env(mqtt_broker, unique_topic) as table:
        yield table


# --- commands ------------------------------------------------------------------------------


async def test_signed_desk_command_reaches_on_command(env: Env) -> None:
    async with env.link() as link:
        await connected(link)
        await env.send(env.command(1, seat=2))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    [command] = env.commands
    assert command.signer == "desk-1"
    assert command.type == "assign_seat"
    assert command.body == {"table": env.table, "seat": 2, "entry": "E-1"}
    assert (counters.commands, counters.commands_rejected) == (1, 0)


async def test_bad_commands_are_rejected_counted_answered_and_never_delivered(env: Env) -> None:
    unsigned = json.loads(env.command(2))
    del unsigned["sig"]
    forged = json.loads(env.command(3))
    forged["body"]["seat"] = 6  # changed after signing
    impostor = Signer.generate("desk-1")  # claims to be desk-1 with another key
    stranger = Signer.generate("desk-9")  # not enrolled
    bad = [
        (b"\x00\x01garbage", "not_json"),
        (b"", "not_json"),
        (b'["not", "an", "object"]', "not_object"),
        (canonical_json(unsigned), "missing_field"),
        (canonical_json(forged), "bad_signature"),
        (env.command(4, signer=impostor), "bad_signature"),
        (env.command(5, signer=stranger), "unknown_signer"),
        (env.command(6, table="t-other"), "wrong_table"),
        (env.command(7, venue="casino-2"), "wrong_venue"),
        (seal(venue=VENUE, table=env.table, seq=8, wall=T0, type="assign_seat",
              body={"table": env.table}, boot="b", mono=0, signer=env.table_key).encode(),
         "unknown_signer"),  # a table's own key is not a command key
    ]
    async with subscribed(env, env.topics.events) as inbox, env.link() as link:
        await connected(link)
        await env.send(*(payload for payload, _ in bad), env.command(9))
        # Commands are handled in order: when 9 arrives, every bad one has been handled.
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        await inbox.until(lambda i: len(i.messages) == len(bad))
        counters = link.counters()
    assert [c.seq for c in env.commands] == [9]
    notices = inbox.envelopes("events")
    assert {n.type for n in notices} == {CommandRejected.TYPE}
    assert {n.seq for n in notices} == {0}
    assert [n.body["reason"] for n in notices] == [reason for _, reason in bad]
    assert notices[5].body["claimed_sender"] == "desk-1"
    assert notices[5].body["claimed_seq"] == 4
    expected: dict[str, int] = {}
    for _, reason in bad:
        expected[reason] = expected.get(reason, 0) + 1
    assert counters.rejections == expected
    assert (counters.commands, counters.commands_rejected) == (1, len(bad))


async def test_messages_on_other_topics_are_dropped(env: Env) -> None:
    # amqtt sends, on CONNECT, retained messages matching any client's subscription (D12):
    # the link must not take them for commands.
    other = f"{env.topics.base}/other"
    async with peer(env.broker) as publisher:
        await publisher.publish(other, b"retained, not a command", qos=1, retain=True)
    try:
        async with subscribed(env), env.link() as link:
            await connected(link)
            await env.send(env.command(1))
            await env.commands_changed.until(lambda: len(env.commands) == 1)
            counters = link.counters()
        assert (counters.commands, counters.commands_rejected) == (1, 0)
    finally:
        async with peer(env.broker) as cleaner:
            await cleaner.publish(other, b"", qos=1, retain=True)


async def test_commands_sent_while_the_table_is_away_arrive_when_it_returns(env: Env) -> None:
    # The persistent session (same client id, clean_session False) keeps the cmd subscription
    # and queues QoS 1 commands while the table is disconnected.
    async with env.link() as link:
        await connected(link)
    await env.send(env.command(1), env.command(2))
    async with env.link() as link:
        await env.commands_changed.until(lambda: len(env.commands) == 2)
        counters = link.counters()
    assert [c.seq for c in env.commands] == [1, 2]
    assert counters.commands_rejected == 0


async def test_a_failing_verifier_rejects_the_command_and_the_link_goes_on(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller import mqtt_link

    def verify(raw: bytes, keyring: KeyRing) -> Envelope:
        if raw == b"boom":
            raise RuntimeError("verifier bug")
        return verify_envelope(raw, keyring)

    monkeypatch.setattr(mqtt_link, "verify_envelope", verify)
    async with env.link() as link:
        await connected(link)
        await env.send(b"boom", env.command(1))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    assert counters.rejections == {"verify_error": 1}
    assert link.failed is None


async def test_a_failing_command_handler_does_not_stop_the_link(env: Env) -> None:
    async def handler(envelope: Envelope) -> None:
        if envelope.seq == 1:
            raise RuntimeError("table service bug")
        env.commands.append(envelope)
        env.commands_changed.notify()

    async with env.link(on_command=handler) as link:
        await connected(link)
        await env.send(env.command(1), env.command(2))
        await env.commands_changed.until(lambda: len(env.commands) == 1)
        counters = link.counters()
    assert [c.seq for c in env.commands] == [2]
    assert (counters.commands, counters.command_errors) == (2, 1)


