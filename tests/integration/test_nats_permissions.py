"""The venue's generated NATS configuration, enforced by a real three-node nats-server cluster.

`deploy.nats_config` renders each node's file and the users' permissions from the same ACL as
Mosquitto's (`deploy.broker_acl`); the cluster (tests/integration/nats_cluster.py) runs those
files, with TLS on the MQTT listeners (a throw-away venue CA) and bcrypt passwords. Every check
below is one real MQTT client doing one thing, on one node or across two: what a table, the
central service and the desk may do works, and everything else is refused or dropped.

Nothing waits for something not to happen. A forged publish is acknowledged and dropped by
the node (nats-server answers PUBACK and logs a "Publish Violation"): after its PUBACK the
rightful publisher sends a barrier on the same topic, and the subscriber (one QoS 1
subscription: one JetStream consumer on one stream, delivered in stream order) must receive
the barrier first. A refused subscription is refused in its SUBACK (0x80).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import socket
import ssl
import subprocess
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import bcrypt
import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from cli.doctor.broker_streams import mqtt_stream_findings
from controller.journal import Journal
from deploy import broker_config as bc
from deploy import nats_config as nc
from leaderboard.models import Message
from tests import services
from tests.integration.cluster_support import (
    Service,
    ServiceLog,
    central_config,
    table_config,
    tournament_now,
    wait_until,
)
from tests.integration.nats_cluster import NATS_SERVER, NatsCluster, NatsNode

pytestmark = [pytest.mark.soak, pytest.mark.xdist_group("nats_permissions")]

VENUE = "casino-1"
TABLES = ("t01", "t02", "t03", "t04")
# t04 is the real simulated table of the last test: its virtual desk sends the desk's signed
# commands over the table's own connection, so t04 alone may also publish its own cmd.
SIM_TABLE = "t04"
BASE = f"showdown/v1/{VENUE}"
T = f"{BASE}/tables"
GUARD_S = 30.0  # guards against a hang only; no check asserts anything about time
SUBACK_FAILURE = 128
ROUTE_PASSWORD = secrets.token_urlsafe(24)


def _need(binary: str, why: str) -> None:
    if shutil.which(binary) is None:
        reason = f"{binary} is not installed ({why})"
        if services.services_required():
            pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
        pytest.skip(reason)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_pki(directory: Path) -> None:
    """A throw-away venue CA and one server certificate for 127.0.0.1 (every node's)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=showdown test venue CA", cwd=directory)
    directory.joinpath("san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=nats",
             cwd=directory)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext",
             cwd=directory)


@dataclass(frozen=True, slots=True)
class Venue:
    """The running cluster, every client's password and the clients' TLS context."""

    cluster: NatsCluster
    passwords: dict[str, str]
    tls: ssl.SSLContext

    def client(self, username: str | None, password: str | None = None, *, node: int = 0,
               identifier: str | None = None, tls: bool = True, **options: Any
               ) -> aiomqtt.Client:
        """A client of ``node`` logging in as ``username`` (its own password unless given)."""
        if username is not None and password is None:
            password = self.passwords[username]
        port = self.cluster.nodes[node].mqtt
        return aiomqtt.Client(
            "127.0.0.1", port, username=username, password=password,
            identifier=identifier or f"{username}-{secrets.token_hex(3)}",
            tls_context=self.tls if tls else None, timeout=GUARD_S, **options)


def _settings(pki: Path, nodes: Sequence[NatsNode], root: Path) -> nc.NatsSettings:
    broker = bc.BrokerSettings(
        venue=VENUE, tables=TABLES, acl_path="/unused/acl",
        password_path="/unused/passwd",  # noqa: S106 (a path; NATS keeps hashes in nats-auth.conf)
        tls=bc.TlsSettings(cafile=str(pki / "ca.crt"), certfile=str(pki / "server.crt"),
                           keyfile=str(pki / "server.key")))
    return nc.NatsSettings(broker=broker, nodes=tuple(
        nc.NatsNode(name=n.name, host="127.0.0.1", mqtt_port=n.mqtt, cluster_port=n.route,
                    client_port=n.client, monitor=f"127.0.0.1:{n.http}",
                    store_dir=str(root / n.name)) for n in nodes))


@pytest.fixture(scope="module")
def venue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venue]:
    """Three nodes started from the generated files (nats-auth.conf and one file per node)."""
    _need(NATS_SERVER, "the NATS cluster")
    _need("openssl", "the test venue CA")
    root = tmp_path_factory.mktemp("nats-venue")
    pki = root / "pki"
    pki.mkdir()
    _make_pki(pki)
    clients = (bc.LEADERBOARD_CLIENT, bc.DESK_CLIENT, *TABLES)
    passwords = {c: secrets.token_urlsafe(32) for c in clients}
    # Cost 4 (bcrypt's least) keeps 36 checks' CONNECTs cheap; the CLI writes BCRYPT_COST.
    hashes = {c: nc.bcrypt_hash(p, bcrypt.gensalt(4, prefix=b"2a"))
              for c, p in passwords.items()}

    def write(node: NatsNode, nodes: Sequence[NatsNode]) -> str:
        settings = _settings(pki, nodes, root)
        auth = nc.nats_auth(settings, hashes)
        own = f'publish: {{ allow: ["{nc.mqtt_subject(T)}.{SIM_TABLE}.status"'
        assert auth.count(own) == 1
        auth = auth.replace(own, own.replace("allow: [", f'allow: ["{nc.mqtt_subject(T)}.'
                                                         f'{SIM_TABLE}.cmd", '))
        (root / nc.AUTH_FILE).write_text(auth)
        ours = next(n for n in settings.nodes if n.name == node.name)
        return nc.node_config(settings, ours, ROUTE_PASSWORD)

    cluster = NatsCluster(root, nodes=3, config=write)
    cluster.start()
    try:
        yield Venue(cluster, passwords, ssl.create_default_context(cafile=str(pki / "ca.crt")))
    finally:
        cluster.stop()


async def _first(client: aiomqtt.Client, *, retained: bool = False) -> aiomqtt.Message:
    """The first message; unless ``retained``, the first live one (the checks share one
    cluster, so a topic may hold a retained message from an earlier check)."""
    async with asyncio.timeout(GUARD_S):
        async for message in client.messages:
            if retained or not message.retain:
                return message
    raise AssertionError("the subscription ended")


async def _refused(client: aiomqtt.Client) -> str:
    """The error of a CONNECT that must fail (AssertionError if it connects)."""
    try:
        async with client:
            pass
    except aiomqtt.MqttError as exc:
        return str(exc)
    raise AssertionError("connected")


async def _drop(client: aiomqtt.Client) -> None:
    """Cut a connected client's link without an MQTT DISCONNECT (the node sees a lost link)."""
    sock = client._client.socket()
    assert isinstance(sock, socket.socket)  # an ssl.SSLSocket
    sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(aiomqtt.MqttError):
        await client.__aexit__(None, None, None)


def _granted(result: Any) -> list[int]:
    return [int(getattr(code, "value", code)) for code in result]


# --- who may connect ------------------------------------------------------------------------

async def anonymous_is_refused(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client(None))


async def wrong_password_is_refused(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("t01", "not-the-password"))


async def unknown_user_is_refused(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("t09", v.passwords["t01"]))


async def empty_password_is_refused(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("t01", ""))


async def t01_password_cannot_log_in_as_t02(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("t02", v.passwords["t01"]))


async def t01_password_cannot_log_in_as_leaderboard(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("leaderboard", v.passwords["t01"]))


async def desk_password_cannot_log_in_as_a_table(v: Venue) -> None:
    assert "Not authorized" in await _refused(v.client("t01", v.passwords["desk"]))


async def plain_connection_is_refused(v: Venue) -> None:
    await _refused(v.client("t01", tls=False))  # the listener speaks TLS only


async def every_client_logs_in_on_every_node(v: Venue) -> None:
    for node in range(3):
        for name in v.passwords:
            async with v.client(name, node=node):
                pass


# --- what a table may not do ----------------------------------------------------------------

async def _forged_publish_is_dropped(v: Venue, forger: str, topic: str, rightful: str,
                                     reader: str) -> None:
    """``forger`` publishes on ``topic`` (PUBACKed and dropped); ``rightful``'s barrier on the
    same topic is the first thing ``reader`` (on another node) receives."""
    async with v.client(reader, node=1) as sub:
        assert _granted(await sub.subscribe(topic, qos=1)) == [1]
        async with v.client(forger, node=0) as bad:
            await bad.publish(topic, b"forged", qos=1)
        async with v.client(rightful, node=2) as good:
            await good.publish(topic, b"barrier", qos=1)
        assert (await _first(sub)).payload == b"barrier"


async def t01_cannot_publish_t02_events(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{T}/t02/events", "t02", "leaderboard")


async def t01_cannot_publish_t02_scores(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{T}/t02/scores", "t02", "leaderboard")


async def t01_cannot_publish_t02_status(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{T}/t02/status", "t02", "desk")


async def t01_cannot_publish_t02_commands(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{T}/t02/cmd", "desk", "t02")


async def t01_cannot_publish_its_own_commands(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{T}/t01/cmd", "desk", "t01")


async def t01_cannot_publish_standings(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "t01", f"{BASE}/standings", "leaderboard", "desk")


async def desk_cannot_publish_a_tables_events(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "desk", f"{T}/t01/events", "t01", "leaderboard")


async def desk_cannot_publish_standings(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "desk", f"{BASE}/standings", "leaderboard", "desk")


async def leaderboard_cannot_publish_a_tables_scores(v: Venue) -> None:
    await _forged_publish_is_dropped(v, "leaderboard", f"{T}/t01/scores", "t01", "desk")


async def forged_retained_status_does_not_replace_the_real_one(v: Venue) -> None:
    topic = f"{T}/t02/status"
    async with v.client("t02", node=2) as t02:
        await t02.publish(topic, b"t02-online", qos=1, retain=True)
    async with v.client("t01", node=0) as t01:
        await t01.publish(topic, b"forged-offline", qos=1, retain=True)
    async with v.client("desk", node=1) as later:
        await later.subscribe(topic, qos=1)
        first = await _first(later, retained=True)
    assert (first.payload, first.retain) == (b"t02-online", True)


async def forged_retained_status_reaches_no_later_subscriber(v: Venue) -> None:
    topic = f"{T}/t03/status"  # t03 has retained nothing: a forged message would be all
    async with v.client("t01", node=0) as t01:
        await t01.publish(topic, b"forged-offline", qos=1, retain=True)
    async with v.client("leaderboard", node=1) as later:
        await later.subscribe(topic, qos=1)
        async with v.client("t03", node=2) as t03:
            await t03.publish(topic, b"barrier", qos=1)
        first = await _first(later, retained=True)
    assert (first.payload, first.retain) == (b"barrier", False)


async def forged_will_is_not_published(v: Venue) -> None:
    topic = f"{T}/t02/status"
    async with v.client("desk", node=1) as sub:
        await sub.subscribe(topic, qos=1)
        will = aiomqtt.Will(topic, b"forged-will", qos=1, retain=True)
        bad = v.client("t01", node=0, will=will)
        await bad.__aenter__()
        await _drop(bad)  # a lost link: the node publishes the will (here it may not)
        async with v.client("t02", node=2) as t02:
            await t02.publish(topic, b"barrier", qos=1)
        assert (await _first(sub)).payload == b"barrier"


async def _subscription_refused(v: Venue, who: str, topic: str) -> None:
    async with v.client(who, node=1) as client:
        assert _granted(await client.subscribe(topic, qos=1)) == [SUBACK_FAILURE]


async def t01_cannot_read_t02_commands(v: Venue) -> None:
    await _subscription_refused(v, "t01", f"{T}/t02/cmd")


async def t01_cannot_read_every_tables_commands(v: Venue) -> None:
    await _subscription_refused(v, "t01", f"{T}/+/cmd")


async def t01_cannot_read_other_tables_events(v: Venue) -> None:
    await _subscription_refused(v, "t01", f"{T}/+/events")


async def t01_cannot_read_everything(v: Venue) -> None:
    await _subscription_refused(v, "t01", "#")


async def t01_cannot_read_the_internal_delivery_subjects(v: Venue) -> None:
    await _subscription_refused(v, "t01", "$MQTT/sub/#")


async def leaderboard_cannot_read_commands(v: Venue) -> None:
    await _subscription_refused(v, "leaderboard", f"{T}/+/cmd")


async def desk_cannot_read_commands(v: Venue) -> None:
    await _subscription_refused(v, "desk", f"{T}/+/cmd")


async def t01_cannot_take_over_t02s_session(v: Venue) -> None:
    topic, ident = f"{T}/t02/cmd", f"t02-{secrets.token_hex(3)}"
    async with v.client("t02", identifier=ident, clean_session=False, node=2) as t02:
        assert _granted(await t02.subscribe(topic, qos=1)) == [1]
    # t01 claims t02's client id: the node restores t02's subscription with t01's rights and
    # refuses it, so the command stays queued for t02 (were it delivered to t01, t01 would
    # have acknowledged it and t02 would never see it).
    async with (v.client("t01", identifier=ident, clean_session=False, node=0),
                v.client("desk", node=1) as desk):
        await desk.publish(topic, b"command-for-t02", qos=1)
    async with v.client("t02", identifier=ident, clean_session=False, node=1) as t02:
        assert (await _first(t02)).payload == b"command-for-t02"


# --- what each may do -----------------------------------------------------------------------

async def _delivered(v: Venue, publisher: str, topic: str, reader: str, *,
                     retain: bool = False) -> aiomqtt.Message:
    async with v.client(reader, node=1) as sub:
        assert _granted(await sub.subscribe(topic, qos=1)) == [1]
        async with v.client(publisher, node=0) as pub:
            await pub.publish(topic, b"legit", qos=1, retain=retain)  # waits for the PUBACK
        message = await _first(sub)
    assert message.payload == b"legit"
    return message


async def t01_publishes_its_events(v: Venue) -> None:
    await _delivered(v, "t01", f"{T}/t01/events", "leaderboard")


async def t01_publishes_its_scores(v: Venue) -> None:
    await _delivered(v, "t01", f"{T}/t01/scores", "desk")


async def t01_publishes_its_status(v: Venue) -> None:
    await _delivered(v, "t01", f"{T}/t01/status", "desk")


async def t01_retained_birth_reaches_a_later_subscriber(v: Venue) -> None:
    topic = f"{T}/t01/status"
    async with v.client("t01", node=0) as t01:
        await t01.publish(topic, b"online", qos=1, retain=True)
    async with v.client("leaderboard", node=2) as later:
        await later.subscribe(topic, qos=1)
        first = await _first(later, retained=True)
    assert (first.payload, first.retain) == (b"online", True)


async def t01_will_is_published_when_its_link_drops(v: Venue) -> None:
    topic = f"{T}/t01/status"
    async with v.client("desk", node=1) as sub:
        await sub.subscribe(topic, qos=1)
        t01 = v.client("t01", node=0, will=aiomqtt.Will(topic, b"offline", qos=1, retain=True))
        await t01.__aenter__()
        await _drop(t01)
        assert (await _first(sub)).payload == b"offline"


async def t01_session_keeps_its_commands_on_another_node(v: Venue) -> None:
    topic, ident = f"{T}/t01/cmd", f"t01-{secrets.token_hex(3)}"
    async with v.client("t01", identifier=ident, clean_session=False, node=0) as t01:
        assert _granted(await t01.subscribe(topic, qos=1)) == [1]
    async with v.client("desk", node=1) as desk:
        await desk.publish(topic, b"queued-command", qos=1)
    async with v.client("t01", identifier=ident, clean_session=False, node=2) as t01:
        assert (await _first(t01)).payload == b"queued-command"


async def leaderboard_reads_every_table(v: Venue) -> None:
    async with v.client("leaderboard", node=1) as sub:
        await sub.subscribe(f"{T}/+/events", qos=1)
        for i, table in enumerate(TABLES):
            async with v.client(table, node=i % 3) as pub:
                await pub.publish(f"{T}/{table}/events", table.encode(), qos=1)
        got = set()
        async with asyncio.timeout(GUARD_S):
            async for message in sub.messages:
                got.add(message.payload)
                if len(got) == len(TABLES):
                    break
    assert got == {t.encode() for t in TABLES}


async def leaderboard_asks_a_table_to_resend(v: Venue) -> None:
    await _delivered(v, "leaderboard", f"{T}/t02/cmd", "t02")


async def desk_sends_a_table_a_command(v: Venue) -> None:
    await _delivered(v, "desk", f"{T}/t01/cmd", "t01")


async def leaderboard_publishes_standings_to_the_desk(v: Venue) -> None:
    await _delivered(v, "leaderboard", f"{BASE}/standings", "desk", retain=True)


async def mqtt_streams_are_on_every_node(v: Venue) -> None:
    urls = [f"http://127.0.0.1:{n.http}" for n in v.cluster.nodes]
    findings = await asyncio.to_thread(mqtt_stream_findings, urls)
    assert [(f.status, f.found) for f in findings if f.status != "ok"] == []
    assert {f.check for f in findings} == {"mqtt streams"}
    assert all("3 replicas" in f.found for f in findings)


CHECKS: dict[str, Callable[[Venue], Awaitable[None]]] = {f.__name__: f for f in (
    anonymous_is_refused, wrong_password_is_refused, unknown_user_is_refused,
    empty_password_is_refused, t01_password_cannot_log_in_as_t02,
    t01_password_cannot_log_in_as_leaderboard, desk_password_cannot_log_in_as_a_table,
    plain_connection_is_refused, every_client_logs_in_on_every_node,
    t01_cannot_publish_t02_events, t01_cannot_publish_t02_scores, t01_cannot_publish_t02_status,
    t01_cannot_publish_t02_commands, t01_cannot_publish_its_own_commands,
    t01_cannot_publish_standings, desk_cannot_publish_a_tables_events,
    desk_cannot_publish_standings, leaderboard_cannot_publish_a_tables_scores,
    forged_retained_status_does_not_replace_the_real_one,
    forged_retained_status_reaches_no_later_subscriber, forged_will_is_not_published,
    t01_cannot_read_t02_commands, t01_cannot_read_every_tables_commands,
    t01_cannot_read_other_tables_events, t01_cannot_read_everything,
    t01_cannot_read_the_internal_delivery_subjects, leaderboard_cannot_read_commands,
    desk_cannot_read_commands, t01_cannot_take_over_t02s_session,
    t01_publishes_its_events, t01_publishes_its_scores, t01_publishes_its_status,
    t01_retained_birth_reaches_a_later_subscriber, t01_will_is_published_when_its_link_drops,
    t01_session_keeps_its_commands_on_another_node, leaderboard_reads_every_table,
    leaderboard_asks_a_table_to_resend, desk_sends_a_table_a_command,
    leaderboard_publishes_standings_to_the_desk, mqtt_streams_are_on_every_node,
)}


@pytest.mark.parametrize("check", list(CHECKS))
async def test_permission(venue: Venue, check: str) -> None:
    await CHECKS[check](venue)


# --- the real software within its rights ----------------------------------------------------

HAND_PAUSE_S = 0.5


def _credentials(directory: Path, v: Venue, client: str, ca: Path) -> Path:
    """The client's credentials file as `showdown broker config` writes it, with the CA."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"mqtt-{client}.toml"
    path.write_text(f'[mqtt]\nusername = "{client}"\npassword = "{v.passwords[client]}"\n'
                    f'tls = true\nca_file = "{ca}"\n')
    path.chmod(0o600)
    return path


def _with_credentials(config: Path, credentials: Path) -> None:
    text = config.read_text()
    assert "\nbrokers = [" in text
    config.write_text(text.replace("\nbrokers = [", f'\ncredentials_file = "{credentials}"'
                                   "\nbrokers = [", 1))


def _violations(v: Venue) -> int:
    return sum(node.log.read_text().count("Violation") for node in v.cluster.nodes)


def test_a_heat_through_the_permissioned_cluster(venue: Venue, tmp_path: Path) -> None:
    """The real table daemon and central service play a heat through the cluster with their
    own credentials and TLS: every message is stored, and no node logs a violation."""
    ca = venue.cluster.root / "pki" / "ca.crt"
    tournament = tournament_now(tmp_path)
    table_path, signer = table_config(tmp_path / "table", venue=VENUE, table=SIM_TABLE,
                                      brokers=venue.cluster.mqtt_brokers(0),
                                      hand_pause=HAND_PAUSE_S, tournament=tournament)
    _with_credentials(table_path, _credentials(tmp_path / "table", venue, SIM_TABLE, ca))
    central_path, database = central_config(tmp_path / "central", venue=VENUE,
                                            brokers=venue.cluster.mqtt_brokers(1),
                                            tables={SIM_TABLE: signer}, tournament=tournament)
    _with_credentials(central_path, _credentials(tmp_path / "central", venue, "leaderboard", ca))
    violations = _violations(venue)
    central = Service(["leaderboard", "serve", "--config", str(central_path)],
                      ServiceLog(tmp_path / "central.log"))
    daemon = Service(["table", "run", "--config", str(table_path)],
                     ServiceLog(tmp_path / "table.log"))
    journal_path = tmp_path / "table" / "journal.sqlite"

    def stored() -> list[int]:
        engine = create_engine(database)
        try:
            with Session(engine) as session:
                return list(session.scalars(select(Message.seq)
                                            .where(Message.table_id == SIM_TABLE)))
        finally:
            engine.dispose()

    def complete() -> bool:
        if not journal_path.exists():
            return False
        with Journal.open(journal_path, read_only=True) as journal:
            last, pending = journal.last_seq(), journal.pending_count()
            closed = "heat.closed" in {m.type for m in journal.messages(1)}
        return closed and pending == 0 and sorted(stored()) == list(range(1, last + 1))

    try:
        central.start()
        wait_until("the central service ready", lambda: central.log.last("ready") is not None,
                   central)
        daemon.start()
        wait_until("every message of the heat stored", complete, daemon, central)
    finally:
        codes = (daemon.stop(), central.stop())
    assert codes == (0, 0)
    with Journal.open(journal_path, read_only=True) as journal:
        journaled = journal.messages(1)
    assert sorted(stored()) == [m.seq for m in journaled] and len(journaled) > 10
    assert _violations(venue) == violations
    print(f"\nNATS permissions: a heat of {len(journaled)} messages through the permissioned"
          " cluster, stored once each, no violation logged")
