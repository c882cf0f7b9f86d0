"""MqttLink publishing: the outbox in seq order, PUBACK before delivered, resends, retained
messages, and the availability birth and will (tests.controller.mqtt_link_support)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from controller.mqtt_link import (
    MqttLink,
    OutboxOrderError,
    TableIdentity,
)
from tests.controller.mqtt_link_support import (
    GUARD_S,
    T0,
    VENUE,
    Env,
    MemoryOutbox,
    proxied,
    subscribed,
    table_env,
)
from tests.fixtures.services import MqttBroker
from wire.envelope import Envelope
from wire.outbox import OutboxMessage
from wire.signing import KeyRing


@pytest.fixture
async def env(mqtt_broker: MqttBroker, unique_topic: str) -> AsyncIterator[Env]:
    async with table_env(mqtt_broker, unique_topic) as table:
        yield table


# --- publishing ----------------------------------------------------------------------------


async def test_outbox_is_published_in_seq_order_signed_and_marked_delivered(env: Env) -> None:
    env.outbox.add(20, "events")
    env.outbox.add(5, "scores")
    async with subscribed(env) as inbox, env.link() as link:
        await env.outbox.until_delivered(25)
        env.outbox.add(10, "events")  # more rows committed while running: wake() sends them
        link.wake()
        await env.outbox.until_delivered(35)
        await inbox.until(lambda i: len(i.seqs()) == 35)
        counters = link.counters()
    assert inbox.seqs() == list(range(1, 36))
    assert env.outbox.delivered == list(range(1, 36))
    assert env.outbox.pending_seqs() == []
    by_seq = {e.seq: e for e in inbox.envelopes() if e.seq > 0}
    assert {s for s, e in by_seq.items() if e.body == {"hand": s, "paid_cents": 2_500 * s}} == set(
        range(1, 36)
    )
    scores = [e.seq for e in inbox.envelopes("scores")]
    assert scores == [21, 22, 23, 24, 25]
    assert by_seq[3].ts == "2026-07-03T11:00:03.000Z"
    assert (by_seq[3].mono, by_seq[3].boot, by_seq[3].venue, by_seq[3].table) == (
        3_000, "boot-a", VENUE, env.table
    )
    assert (counters.published, counters.pending, counters.last_published_seq) == (35, 0, 35)
    assert {m.qos for m in inbox.messages if m.topic.endswith("/events")} == {1}


async def test_message_is_marked_delivered_only_after_the_puback(env: Env) -> None:
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(1)
        proxy.hold_replies()  # the broker's PUBACKs stop reaching the link
        env.outbox.add(2)  # seqs 2 and 3
        link.wake()
        # The broker has message 2 (the subscriber got it) but its PUBACK is held back.
        await inbox.until(lambda i: i.seqs() == [1, 2])
        assert env.outbox.pending_seqs() == [2, 3]
        assert env.outbox.delivered == [1]
        proxy.release_replies()
        await env.outbox.until_delivered(3)
        await inbox.until(lambda i: len(i.seqs()) == 3)
    assert inbox.seqs() == [1, 2, 3]  # 3 was sent only after 2 was acknowledged
    assert env.outbox.delivered == [1, 2, 3]


async def test_unacknowledged_message_is_sent_again_after_the_connection_drops(env: Env) -> None:
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(1)
        proxy.hold_replies()
        env.outbox.add(1)
        link.wake()
        await inbox.until(lambda i: i.seqs() == [1, 2])
        await proxy.cut()  # the PUBACK of 2 is lost with the connection
        assert env.outbox.pending_seqs() == [2]
        env.outbox.add(1)
        await proxy.restore()
        await env.outbox.until_delivered(3)
        await inbox.until(lambda i: len(i.seqs()) == 4)
        reconnects = link.counters().reconnects
    # At least once: 2 arrives twice (the receiver deduplicates by seq), never out of order.
    assert inbox.seqs() == [1, 2, 2, 3]
    assert env.outbox.delivered == [1, 2, 3]
    assert reconnects == 1


async def test_messages_made_during_an_outage_stay_pending_and_follow_in_order(env: Env) -> None:
    env.outbox.add(3)
    async with subscribed(env) as inbox, proxied(env) as proxy, env.link(proxy.port) as link:
        await env.outbox.until_delivered(3)
        await proxy.cut()
        env.outbox.add(5)  # hands keep being resolved while the broker is unreachable
        link.wake()
        assert env.outbox.pending_seqs() == [4, 5, 6, 7, 8]
        await proxy.restore()
        await env.outbox.until_delivered(8)
        await inbox.until(lambda i: len(i.seqs()) == 8)
        counters = link.counters()
    assert inbox.seqs() == list(range(1, 9))
    assert env.outbox.delivered == list(range(1, 9))
    assert counters.reconnects >= 1


async def test_resend_publishes_delivered_messages_again_in_the_order_given(env: Env) -> None:
    sent = env.outbox.add(4)
    async with subscribed(env) as inbox, env.link() as link:
        await env.outbox.until_delivered(4)
        link.resend(sent[1:3])
        env.outbox.add(1)
        link.wake()
        await env.outbox.until_delivered(5)
        await inbox.until(lambda i: len(i.seqs()) == 7)
        counters = link.counters()
    assert inbox.seqs() == [1, 2, 3, 4, 2, 3, 5]
    assert env.outbox.delivered == [1, 2, 3, 4, 5]  # resent ones are not marked again
    assert (counters.published, counters.resent) == (5, 2)


async def test_retained_outbox_message_is_published_retained(env: Env) -> None:
    message = OutboxMessage(seq=1, topic_suffix="status", type="table_state",
                            body={"mode": "error"}, wall=T0, mono_ns=1, boot_id="boot-a",
                            retain=True)
    env.outbox.messages[1] = message
    async with env.link():
        await env.outbox.until_delivered(1)
        # Published after the birth, so it is what the broker now retains on the status topic.
        async with subscribed(env, env.topics.status) as inbox:
            await inbox.until(lambda i: bool(i.messages))
    [retained] = inbox.messages
    assert retained.retain
    envelope = inbox.envelopes("status")[0]
    assert (envelope.seq, envelope.type, envelope.body) == (1, "table_state", {"mode": "error"})


async def test_outbox_out_of_order_stops_the_link(env: Env) -> None:
    class Shuffled(MemoryOutbox):
        def pending(self, limit: int = 100) -> list[OutboxMessage]:
            return list(reversed(super().pending(limit)))

    env.outbox = Shuffled()
    env.outbox.add(2)
    link = env.link()
    await link.__aenter__()
    async with asyncio.timeout(GUARD_S):
        while link.failed is None:
            await asyncio.sleep(0.01)
    with pytest.raises(OutboxOrderError, match=r"seqs \[2, 1\] not in increasing order"):
        await link.close()
    assert env.outbox.delivered == []


# --- availability: birth and will ----------------------------------------------------------


async def test_birth_on_every_connect_and_will_when_the_connection_is_lost(env: Env) -> None:
    async with subscribed(env, env.topics.status) as inbox, proxied(env) as proxy:
        async with env.link(proxy.port):
            await inbox.until(lambda i: i.states() == [("online", None)])
            await proxy.cut()  # abrupt: no DISCONNECT, the broker publishes the will
            await inbox.until(lambda i: len(i.states()) == 2)
            await proxy.restore()
            await inbox.until(lambda i: len(i.states()) == 3)
        await inbox.until(lambda i: len(i.states()) == 4)
        status = inbox.envelopes("status")
    assert inbox.states() == [
        ("online", None), ("offline", False), ("online", None), ("offline", True)
    ]
    assert {e.seq for e in status} == {0}  # availability is not part of the sequence
    assert status[2].body["link"]["reconnects"] == 1
    assert [m.retain for m in inbox.messages] == [False] * 4  # live deliveries
    async with subscribed(env, env.topics.status) as late:
        await late.until(lambda i: bool(i.messages))
    assert late.states() == [("offline", True)]
    assert late.messages[0].retain


async def test_publish_status_refreshes_the_retained_birth(env: Env) -> None:
    extra = {"mode": "running", "hands": 0}

    async def ignore(envelope: Envelope) -> None:
        return None

    link = MqttLink(
        env.settings(), TableIdentity(venue=VENUE, table=env.table, boot_id="boot-a"),
        env.table_key, env.outbox, ignore, command_keys=KeyRing(), status_extra=lambda: extra,
    )
    async with subscribed(env, env.topics.status) as inbox, link:
        await inbox.until(lambda i: len(i.states()) == 1)
        extra = {"mode": "error", "hands": 3}
        assert await link.publish_status()
        await inbox.until(lambda i: len(i.states()) == 2)
    online = [e.body for e in inbox.envelopes("status") if e.body["state"] == "online"]
    assert [b["status"] for b in online] == [{"mode": "running", "hands": 0},
                                            {"mode": "error", "hands": 3}]
    assert online[0]["link"]["connected"] is True


