"""The generated Mosquitto files, enforced by a real, PRIVATE mosquitto process.

Each test starts ``mosquitto -c <generated mosquitto.conf>`` on 127.0.0.1 and a free port
(never the machine's 1883) from files written to tmp_path, and stops it in the fixture's
teardown. Without the ``mosquitto`` binary the tests skip (fail with SHOWDOWN_REQUIRE_SERVICES).

Nothing waits for something not to happen: after a message that must NOT arrive, the test
publishes a barrier that must arrive, on a path whose order Mosquitto guarantees (same
publisher, same subscriber, QoS 1), and checks the barrier is the first thing received.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from paho.mqtt.reasoncodes import ReasonCode

from deploy import broker_config as bc
from tests import services

VENUE = "casino-1"
BASE = f"showdown/v1/{VENUE}"
GUARD_S = 10.0  # guards against a hang only; no test asserts anything about time
BARRIER = b"barrier"
NOT_AUTHORISED = 135  # CONNACK 5 (MQTT 3.1.1) as paho 2 reports it: "Not authorized"


def _mosquitto_binary() -> str:
    path = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/sbin")
    if path is None:
        reason = "the mosquitto binary is not installed (apt-get install mosquitto)"
        if services.services_required():
            pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
        pytest.skip(reason)
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    assert port != 1883
    return port


@dataclass(frozen=True, slots=True)
class PrivateBroker:
    """A running private mosquitto and the passwords of its clients."""

    port: int
    passwords: dict[str, str]
    directory: Path

    def client(self, username: str | None, password: str | None = None,
               **options: Any) -> aiomqtt.Client:
        """A client logging in as ``username`` (with its own password unless given)."""
        if username is not None and password is None:
            password = self.passwords[username]
        return aiomqtt.Client("127.0.0.1", self.port, username=username, password=password,
                              identifier=options.pop("identifier", username),
                              timeout=GUARD_S, **options)


def _start(binary: str, conf: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen([binary, "-c", str(conf)], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + GUARD_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"mosquitto exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            if time.monotonic() > deadline:
                _stop(proc)
                pytest.fail(f"mosquitto did not listen on {port}:\n{log.read_text()}")
            time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run_as_user() -> str | None:
    # Started as root, mosquitto drops to the `mosquitto` user, which cannot read tmp_path.
    return getpass.getuser() if os.geteuid() == 0 else None


def _write_files(directory: Path, settings: bc.BrokerSettings,
                 passwords: dict[str, str] | None) -> Path:
    directory.joinpath("acl").write_text(bc.acl_file(settings))
    if passwords is not None:
        hashes = {name: bc.hash_password(pw, salt=secrets.token_bytes(bc.SALT_BYTES))
                  for name, pw in passwords.items()}
        directory.joinpath("passwd").write_text(bc.password_file(hashes))
        directory.joinpath("passwd").chmod(0o600)
    conf = directory / "mosquitto.conf"
    conf.write_text(bc.listener_config(settings))
    return conf


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[PrivateBroker]:
    """A private mosquitto with the generated files for tables t01 and t02."""
    binary = _mosquitto_binary()
    port = _free_port()
    settings = bc.BrokerSettings(
        venue=VENUE, tables=("t01", "t02"), port=port, bind_address="127.0.0.1",
        acl_path=str(tmp_path / "acl"), password_path=str(tmp_path / "passwd"),
        persistence_dir=f"{tmp_path}/", run_as_user=_run_as_user(),
    )
    passwords = {name: secrets.token_urlsafe(32) for name in bc.clients(settings)}
    conf = _write_files(tmp_path, settings, passwords)
    proc = _start(binary, conf, port, tmp_path / "mosquitto.log")
    try:
        yield PrivateBroker(port=port, passwords=passwords, directory=tmp_path)
    finally:
        _stop(proc)


async def _first(client: aiomqtt.Client) -> aiomqtt.Message:
    async with asyncio.timeout(GUARD_S):
        async for message in client.messages:
            return message
    raise AssertionError("the message stream ended")


def _refusal(exc: aiomqtt.MqttError) -> int | None:
    rc = getattr(exc, "rc", None)
    if isinstance(rc, ReasonCode):
        return int(rc.value)
    return rc if isinstance(rc, int) else None


async def _refused(client: aiomqtt.Client) -> int | None:
    with pytest.raises(aiomqtt.MqttError) as info:
        async with client:
            pass
    return _refusal(info.value)


# --- authentication ------------------------------------------------------------------------


async def test_table_authenticates_with_its_password(private_broker: PrivateBroker) -> None:
    async with private_broker.client("t01") as t01:
        await t01.publish(f"{BASE}/tables/t01/status", b"online", qos=1, retain=True)


async def test_wrong_password_is_refused(private_broker: PrivateBroker) -> None:
    wrong = private_broker.passwords["t02"]  # another client's valid password
    assert await _refused(private_broker.client("t01", wrong)) == NOT_AUTHORISED


async def test_unknown_user_is_refused(private_broker: PrivateBroker) -> None:
    password = private_broker.passwords["t01"]
    assert await _refused(private_broker.client("t03", password)) == NOT_AUTHORISED


async def test_anonymous_connection_is_refused(private_broker: PrivateBroker) -> None:
    assert await _refused(private_broker.client(None, identifier="anon")) == NOT_AUTHORISED


# --- what each client may do ---------------------------------------------------------------


async def test_table_event_reaches_the_leaderboard(private_broker: PrivateBroker) -> None:
    async with private_broker.client("leaderboard") as board, private_broker.client("t01") as t01:
        await board.subscribe(f"{BASE}/tables/+/events", qos=1)
        await t01.publish(f"{BASE}/tables/t01/events", b"hand 1 settled", qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/events",
                                                     b"hand 1 settled")


async def test_table_cannot_publish_as_another_table(private_broker: PrivateBroker) -> None:
    async with private_broker.client("leaderboard") as board, private_broker.client("t01") as t01:
        await board.subscribe(f"{BASE}/tables/+/#", qos=1)
        for suffix in ("events", "scores", "status"):
            await t01.publish(f"{BASE}/tables/t02/{suffix}", b"forged", qos=1)
        await t01.publish(f"{BASE}/standings", b"forged", qos=1)
        await t01.publish(f"{BASE}/tables/t01/events", BARRIER, qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/events", BARRIER)


async def test_table_cannot_read_another_tables_commands(private_broker: PrivateBroker) -> None:
    async with private_broker.client("t01") as t01, private_broker.client("desk") as desk:
        # Mosquitto 2.0 grants the SUBSCRIBE itself (its default ACL check skips
        # subscriptions) and applies the read ACL to every message it would deliver.
        await t01.subscribe(f"{BASE}/tables/t02/cmd", qos=1)
        await t01.subscribe(f"{BASE}/tables/t01/cmd", qos=1)
        await desk.publish(f"{BASE}/tables/t02/cmd", b"open heat", qos=1)
        await desk.publish(f"{BASE}/tables/t01/cmd", BARRIER, qos=1)
        message = await _first(t01)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/cmd", BARRIER)


async def test_table_wildcard_subscription_sees_only_its_own_commands(
    private_broker: PrivateBroker,
) -> None:
    async with (private_broker.client("t01") as t01, private_broker.client("t02") as t02,
                private_broker.client("desk") as desk):
        await t01.subscribe("#", qos=1)
        await t02.publish(f"{BASE}/tables/t02/events", b"t02 hand", qos=1)
        await desk.publish(f"{BASE}/tables/t02/cmd", b"for t02", qos=1)
        await desk.publish(f"{BASE}/tables/t01/cmd", BARRIER, qos=1)
        message = await _first(t01)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/cmd", BARRIER)


async def test_desk_command_reaches_the_table(private_broker: PrivateBroker) -> None:
    async with private_broker.client("t01") as t01, private_broker.client("desk") as desk:
        await t01.subscribe(f"{BASE}/tables/t01/cmd", qos=1)
        await desk.publish(f"{BASE}/tables/t01/cmd", b"open heat Q1", qos=1)
        message = await _first(t01)
    assert message.payload == b"open heat Q1"


async def test_leaderboard_resend_request_reaches_the_table(
    private_broker: PrivateBroker,
) -> None:
    async with private_broker.client("t02") as t02, private_broker.client("leaderboard") as lb:
        await t02.subscribe(f"{BASE}/tables/t02/cmd", qos=1)
        await lb.publish(f"{BASE}/tables/t02/cmd", b'{"from_seq": 17}', qos=1)
        message = await _first(t02)
    assert message.payload == b'{"from_seq": 17}'


async def test_standings_from_leaderboard_reach_the_desk(private_broker: PrivateBroker) -> None:
    async with private_broker.client("desk") as desk, private_broker.client("leaderboard") as lb:
        await desk.subscribe(f"{BASE}/standings", qos=1)
        await lb.publish(f"{BASE}/standings", b"standings", qos=1, retain=True)
        message = await _first(desk)
    assert message.payload == b"standings"


async def test_desk_cannot_pose_as_a_table(private_broker: PrivateBroker) -> None:
    # The table patterns use %u; `desk` and `leaderboard` are denied "their" table topics.
    async with (private_broker.client("leaderboard") as board,
                private_broker.client("desk") as desk, private_broker.client("t01") as t01):
        await board.subscribe(f"{BASE}/tables/+/#", qos=1)
        for suffix in ("events", "scores", "status"):
            await desk.publish(f"{BASE}/tables/desk/{suffix}", b"forged", qos=1)
            await desk.publish(f"{BASE}/tables/t01/{suffix}", b"forged", qos=1)
            await board.publish(f"{BASE}/tables/leaderboard/{suffix}", b"forged", qos=1)
        await desk.publish(f"{BASE}/standings", b"forged", qos=1)
        await t01.publish(f"{BASE}/tables/t01/events", BARRIER, qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/events", BARRIER)


async def test_client_id_cannot_take_over_another_tables_session(
    private_broker: PrivateBroker,
) -> None:
    async with private_broker.client("t02") as t02, private_broker.client("desk") as desk:
        await t02.subscribe(f"{BASE}/tables/t02/cmd", qos=1)
        # t01 claims t02's client id; the broker uses t01's username as its id instead,
        # so t02's connection is not taken over.
        async with private_broker.client("t01", identifier="t02"):
            await desk.publish(f"{BASE}/tables/t02/cmd", b"still here", qos=1)
            message = await _first(t02)
    assert message.payload == b"still here"


# --- the password hash against the real tools ----------------------------------------------


def test_mosquitto_passwd_hash_verifies_with_our_code(tmp_path: Path) -> None:
    tool = shutil.which("mosquitto_passwd")
    if tool is None:
        pytest.skip("mosquitto_passwd is not installed")
    path = tmp_path / "passwd"
    subprocess.run([tool, "-c", "-b", str(path), "t01", "s3cret pass"], check=True)
    hashes = bc.parse_password_file(path.read_text())
    assert bc.verify_password("s3cret pass", hashes["t01"])
    assert not bc.verify_password("s3cret pasS", hashes["t01"])


# --- TLS with client certificates (the certificate's CN is the username) -------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_pki(directory: Path, clients: tuple[str, ...]) -> None:
    """A throw-away CA, a server certificate for 127.0.0.1 and one client certificate each."""
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=showdown test CA", cwd=directory)
    directory.joinpath("san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, ext in (("server", ["-extfile", "san.ext"]), *((c, []) for c in clients)):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
                 cwd=directory)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", *ext, cwd=directory)


@pytest.fixture
def tls_broker(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A private mosquitto requiring client certificates; yields its port and the PKI dir."""
    binary = _mosquitto_binary()
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (needed to make test certificates)")
    pki = tmp_path / "pki"
    pki.mkdir()
    _make_pki(pki, ("t01", "leaderboard"))
    port = _free_port()
    settings = bc.BrokerSettings(
        venue=VENUE, tables=("t01", "t02"), port=port, bind_address="127.0.0.1",
        acl_path=str(tmp_path / "acl"), password_path=str(tmp_path / "passwd"),
        persistence_dir=f"{tmp_path}/", run_as_user=_run_as_user(),
        tls=bc.TlsSettings(cafile=str(pki / "ca.crt"), certfile=str(pki / "server.crt"),
                           keyfile=str(pki / "server.key"), require_certificate=True,
                           use_identity_as_username=True),
    )
    conf = _write_files(tmp_path, settings, passwords=None)
    proc = _start(binary, conf, port, tmp_path / "mosquitto.log")
    try:
        yield port, pki
    finally:
        _stop(proc)


def _tls_client(port: int, pki: Path, name: str) -> aiomqtt.Client:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / f"{name}.crt"), str(pki / f"{name}.key"))
    return aiomqtt.Client("127.0.0.1", port, identifier=name, tls_context=context,
                          timeout=GUARD_S)


async def test_certificate_identity_gets_the_table_rights(
    tls_broker: tuple[int, Path],
) -> None:
    port, pki = tls_broker
    async with _tls_client(port, pki, "leaderboard") as board, \
            _tls_client(port, pki, "t01") as t01:
        await board.subscribe(f"{BASE}/tables/+/events", qos=1)
        await t01.publish(f"{BASE}/tables/t02/events", b"forged", qos=1)
        await t01.publish(f"{BASE}/tables/t01/events", b"hand 1", qos=1)
        message = await _first(board)
    assert (str(message.topic), message.payload) == (f"{BASE}/tables/t01/events", b"hand 1")


async def test_connection_without_a_client_certificate_is_refused(
    tls_broker: tuple[int, Path],
) -> None:
    port, pki = tls_broker
    # With TLS 1.3 the server's refusal of a missing certificate comes after the handshake,
    # where paho only notices it as a time-out; TLS 1.2 refuses in the handshake itself.
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    client = aiomqtt.Client("127.0.0.1", port, identifier="anon", tls_context=context,
                            timeout=GUARD_S)
    with pytest.raises(aiomqtt.MqttError) as info:
        async with client:
            pass
    assert "handshake failure" in str(info.value).lower()
