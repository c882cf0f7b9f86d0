"""MqttLink connections: reconnecting after a broker restart or while none listens, the
table's own key, and TLS with a client certificate and password (a private Mosquitto)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.embedded_broker import EmbeddedBroker
from controller.mqtt_link import (
    MqttLink,
    TableIdentity,
)
from game.errors import ConfigError
from tests.controller.mqtt_link_support import (
    GUARD_S,
    VENUE,
    Env,
    MemoryOutbox,
    subscribed,
)
from tests.fixtures.services import MqttBroker
from wire.envelope import Envelope, verify_envelope
from wire.mqtt import MqttSettings, connect
from wire.signing import KeyRing, Signer

# --- broker restart (embedded broker only: the shared Mosquitto is never stopped) ----------


async def test_reconnects_after_the_embedded_broker_restarts(unique_topic: str) -> None:
    async with EmbeddedBroker() as broker:
        where = MqttBroker(kind="embedded", host=broker.host, port=broker.port)
        table = f"t-{unique_topic.rsplit('/', 1)[1]}"
        env = Env(broker=where, root=unique_topic, table=table,
                  table_key=Signer.generate(table), desk_key=Signer.generate("desk-1"))
        env.outbox.add(3)
        async with env.link() as link:
            await env.outbox.until_delivered(3)
            await broker.stop()
            env.outbox.add(3)  # made while the broker is down
            link.wake()
            assert env.outbox.pending_seqs() == [4, 5, 6]
            restarted = EmbeddedBroker(port=where.port)
            async with restarted:
                # Delivered means acknowledged by the restarted broker.
                await env.outbox.until_delivered(6)
                async with subscribed(env) as inbox:
                    # The new broker knows nothing of the old one: the retained "online"
                    # it holds was published on reconnect.
                    await inbox.until(lambda i: i.states() == [("online", None)])
                    env.outbox.add(2)
                    link.wake()
                    await inbox.until(lambda i: i.seqs() == [7, 8])
                    # Commands work on the new connection too.
                    await env.send(env.command(1))
                    await env.commands_changed.until(lambda: len(env.commands) == 1)
                counters = link.counters()
    assert env.outbox.delivered == list(range(1, 9))
    assert counters.reconnects >= 1
    assert counters.published == 8


async def test_link_keeps_trying_while_no_broker_listens(unique_topic: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    where = MqttBroker(kind="embedded", host="127.0.0.1", port=port)
    table = f"t-{unique_topic.rsplit('/', 1)[1]}"
    env = Env(broker=where, root=unique_topic, table=table,
              table_key=Signer.generate(table), desk_key=Signer.generate("desk-1"))
    env.outbox.add(2)
    async with env.link() as link:
        assert not link.connected
        async with EmbeddedBroker(port=port):
            await env.outbox.until_delivered(2)
    assert env.outbox.delivered == [1, 2]
    # Leaving while the broker is down is immediate and quiet; nothing is lost.
    env.outbox.add(1)
    async with env.link():
        pass
    assert env.outbox.pending_seqs() == [3]


# --- settings and wiring -------------------------------------------------------------------


def test_the_signing_key_must_be_the_tables() -> None:
    signer = Signer.generate("t-2")

    async def ignore(envelope: Envelope) -> None:
        return None

    with pytest.raises(ConfigError, match="signing key is 't-2' but this table is 't-1'"):
        MqttLink(MqttSettings(), TableIdentity(venue=VENUE, table="t-1", boot_id="b"), signer,
                 MemoryOutbox(), ignore, command_keys=KeyRing())



# --- TLS, client certificate and password (a private Mosquitto started for the test) --------


@dataclass(frozen=True)
class TlsBroker:
    port: int
    ca: Path
    cert: Path
    key: Path
    username: str = "table"
    password: str = "s3cret"  # noqa: S105 - a throwaway test broker


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _make_certificates(d: Path) -> None:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate, all EC P-256."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", d / "ca.key", "-out", d / "ca.pem", "-days", "2",
             "-subj", "/CN=showdown test CA")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, subject, extra in (("server", "/CN=127.0.0.1", ("-extfile", d / "san.ext")),
                                 ("client", "/CN=table", ())):
        _openssl("req", *ec, "-keyout", d / f"{name}.key", "-out", d / f"{name}.csr",
                 "-subj", subject)
        _openssl("x509", "-req", "-in", d / f"{name}.csr", "-CA", d / "ca.pem", "-CAkey",
                 d / "ca.key", "-CAcreateserial", "-out", d / f"{name}.pem", "-days", "2", *extra)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def tls_broker(tmp_path: Path) -> AsyncIterator[TlsBroker]:
    missing = [tool for tool in ("mosquitto", "mosquitto_passwd", "openssl")
               if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} installed")
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    _make_certificates(tmp_path)
    broker = TlsBroker(port=_free_port(), ca=tmp_path / "ca.pem", cert=tmp_path / "client.pem",
                       key=tmp_path / "client.key")
    passwords = tmp_path / "passwords"
    passwords.touch(mode=0o600)
    subprocess.run(["mosquitto_passwd", "-b", str(passwords), broker.username, broker.password],
                   check=True, capture_output=True)
    user = "user root\n" if os.getuid() == 0 else ""
    (tmp_path / "mosquitto.conf").write_text(
        f"listener {broker.port} 127.0.0.1\ncafile {broker.ca}\n"
        f"certfile {tmp_path / 'server.pem'}\nkeyfile {tmp_path / 'server.key'}\n"
        f"require_certificate true\nallow_anonymous false\npassword_file {passwords}\n"
        f"persistence false\n{user}"
    )
    process = await asyncio.create_subprocess_exec(
        mosquitto, "-c", str(tmp_path / "mosquitto.conf"),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(GUARD_S):  # until it listens
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", broker.port)
                except OSError:
                    await asyncio.sleep(0.02)
                    continue
                writer.close()
                break
        yield broker
    finally:
        process.terminate()
        await process.wait()


def _tls_env(broker: TlsBroker, unique_topic: str) -> Env:
    table = f"t-{unique_topic.rsplit('/', 1)[1]}"
    return Env(broker=MqttBroker(kind="mosquitto-tls", host="127.0.0.1", port=broker.port),
               root=unique_topic, table=table, table_key=Signer.generate(table),
               desk_key=Signer.generate("desk-1"))


def _tls_options(broker: TlsBroker, **changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"ca_file": broker.ca, "cert_file": broker.cert,
                               "key_file": broker.key, "username": broker.username,
                               "password": broker.password}
    options.update(changes)
    return options


async def test_tls_with_client_certificate_and_password(
    tls_broker: TlsBroker, unique_topic: str
) -> None:
    env = _tls_env(tls_broker, unique_topic)
    env.outbox.add(3)
    tls = MqttSettings(**{"host": "127.0.0.1", "port": tls_broker.port,
                          **_tls_options(tls_broker)})
    async with connect(dataclasses.replace(tls, timeout_s=GUARD_S)) as watcher:
        await watcher.subscribe(f"{env.topics.base}/events", qos=1)
        async with env.link(**_tls_options(tls_broker)) as link:
            await env.outbox.until_delivered(3)
            received: list[int] = []
            async with asyncio.timeout(GUARD_S):
                async for message in watcher.messages():
                    received.append(verify_envelope(message.payload, env.table_keys).seq)
                    if len(received) == 3:
                        break
            await watcher.publish(env.topics.cmd, env.command(1), qos=1)
            await env.commands_changed.until(lambda: len(env.commands) == 1)
            assert link.connected
    assert received == [1, 2, 3]


async def test_a_refused_password_is_retried_with_backoff(
    tls_broker: TlsBroker, unique_topic: str
) -> None:
    env = _tls_env(tls_broker, unique_topic)
    async with env.link(**_tls_options(tls_broker, password="wrong")) as link:  # noqa: S106
        async with asyncio.timeout(GUARD_S):
            while link.counters().connect_failures < 3:
                await asyncio.sleep(0.02)
        counters = link.counters()
    assert not counters.connected
    assert counters.reconnects == 0
