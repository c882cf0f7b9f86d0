"""`showdown doctor --central` on a real service config: a migrated SQLite database and the
test broker; faults: an unmigrated database, a broker that does not answer, an HTTPS
certificate about to expire, an unreadable key."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import socket
from pathlib import Path

import pytest

from cli.doctor.central import check_central
from cli.doctor.table import FAIL, OK, WARN, Finding, Probes, may_open
from deploy import certs
from leaderboard.central_lease import CentralLease
from leaderboard.config import read_leaderboard_config
from leaderboard.db import make_engine, upgrade
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import write_config
from wire.signing import Signer

PROBES = Probes(clock_synced=lambda: True, fail_below_bytes=0, warn_below_bytes=0)


async def _run(path: Path) -> list[Finding]:
    """The checks in a thread: the embedded test broker answers from this event loop."""
    return await asyncio.to_thread(check_central, path, PROBES)


async def _checks(path: Path) -> dict[str, Finding]:
    return {f.check: f for f in await _run(path)}


@pytest.fixture
def service_config(tmp_path: Path, mqtt_broker: MqttBroker) -> Path:
    path = write_config(tmp_path, mqtt_broker, f"t{secrets.token_hex(3)}/v1",
                        Signer.generate("t01"))
    engine = make_engine(read_leaderboard_config(path).database)
    upgrade(engine)
    engine.dispose()
    return path


async def test_a_ready_service_may_run(service_config: Path) -> None:
    findings = await _run(service_config)
    assert [(f.check, f.status) for f in findings] == [
        ("config", OK), ("database", OK), ("broker", WARN), ("key", OK), ("https", OK),
        ("clock", OK), ("disk", OK), ("retention", OK)]
    assert "without TLS" in findings[2].found
    assert may_open(findings)


async def test_the_database_finding_names_the_active_central_instance(
        service_config: Path) -> None:
    found = (await _checks(service_config))["database"]
    assert "central lease: free (no instance has run yet)" in found.found
    engine = make_engine(read_leaderboard_config(service_config).database)
    try:
        lease = CentralLease(engine, "central-a/1234", lease_s=30.0)
        assert lease.take() == 1
        found = (await _checks(service_config))["database"]
        assert found.status == OK
        assert "central lease: held by central-a/1234 (epoch 1, expires in" in found.found
        lease.release()
        found = (await _checks(service_config))["database"]
        assert ("free (last held by central-a/1234, epoch 1): no instance is active"
                in found.found)
    finally:
        engine.dispose()


async def test_an_unmigrated_database_fails(service_config: Path, tmp_path: Path) -> None:
    (tmp_path / "leaderboard.sqlite3").unlink()
    (tmp_path / "leaderboard.sqlite3").touch()
    found = (await _checks(service_config))["database"]
    assert found.status == FAIL and "empty" in found.found
    assert "showdown desk init" in found.fix


async def test_a_broker_that_does_not_answer_fails(service_config: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        text = service_config.read_text()
        start = text.index('broker = "') + len('broker = "')
        end = text.index('"', start)
        service_config.write_text(text[:start] + f"127.0.0.1:{port}" + text[end:])
        found = (await _checks(service_config))["broker"]
    assert found.status == FAIL and f"127.0.0.1:{port}" in found.found
    assert "broker runs" in found.fix


async def test_a_certificate_about_to_expire_warns(service_config: Path, tmp_path: Path) -> None:
    certs.make_ca(tmp_path / "ca.key", tmp_path / "ca.pem", name="venue CA", days=2)
    certs.make_server_certificate(cert=tmp_path / "web.pem", key=tmp_path / "web.key",
                                  ca_cert=tmp_path / "ca.pem", ca_key=tmp_path / "ca.key",
                                  common_name="127.0.0.1", names=("127.0.0.1",), days=2)
    service_config.write_text(service_config.read_text().replace(
        "[http]\n", '[http]\ntls_cert_file = "web.pem"\ntls_key_file = "web.key"\n'))
    found = (await _checks(service_config))["https"]
    assert found.status == WARN and "expires within 30 days" in found.found


async def test_a_key_readable_by_others_fails(service_config: Path, tmp_path: Path) -> None:
    (tmp_path / "leaderboard.key").chmod(0o644)
    found = await _checks(service_config)
    assert found["key"].status == FAIL and "0644" in found["key"].found
    assert not may_open(list(found.values()))


async def test_a_bad_config_is_the_only_finding(tmp_path: Path) -> None:
    path = tmp_path / "leaderboard.toml"
    path.write_text("[service]\nvenue = 'Bad Venue'\n")
    findings = await _run(path)
    assert [(f.check, f.status) for f in findings] == [("config", FAIL)]
    assert dataclasses.asdict(findings[0])["found"].startswith(str(path))
