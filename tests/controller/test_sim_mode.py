"""Simulator mode without surprises (issue 31, decision D317): simulated devices start nothing
virtual; `[sim] virtual_desk` / `virtual_dealer` name the virtual desk and dealer; the virtual
desk signs with the key `[sim] desk_key` names, enrolled under `[keys.desk]` by whoever wrote
the config; the daemon never makes a key; the virtual desk connects with the table's own
broker settings (TLS, CA, client certificate, username and password); `[bench]` is only for a
table with a simulated device."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.app import TableDaemon
from controller.config import parse_table_config, read_table_config
from controller.embedded_broker import EmbeddedBroker
from controller.local_api import call
from controller.wiring import desk_signer, virtual_desk_task, wire_table
from game.errors import ConfigError
from simulators.table_toml import desk_key_file, simulated_table_toml, table_key_file
from tests.controller.test_mqtt_link_connection import TlsBroker, tls_broker  # noqa: F401
from wire.signing import Signer, save_private_key
from wire.topics import TableTopics

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 60.0  # against hangs only
QUIET_S = 2.0  # how long the daemon runs while nothing may come from a desk


def _data(tmp_path: Path, sim: dict[str, Any] | None = None, *,
          desk: dict[str, str] | None = None, bench: dict[str, Any] | None = None,
          kind: str = "sim") -> dict[str, Any]:
    data: dict[str, Any] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key", "desk": desk or {}},
        "api": {"socket": "console.sock"},
        "shoe": {"kind": kind}, "rfid": {"kind": kind}}
    if sim is not None:
        data["sim"] = sim
    if bench is not None:
        data["bench"] = bench
    return data


def _parse(tmp_path: Path, data: dict[str, Any]) -> Any:
    return parse_table_config(data, source="table.toml", base=tmp_path)


def test_simulated_devices_alone_name_nothing_virtual(tmp_path: Path) -> None:
    for sim in (None, {"seed": 7}):
        config = _parse(tmp_path, _data(tmp_path, sim))
        assert config.sim is not None  # simulator mode: the simulators' seed, built-in chips
        assert (config.sim.virtual_desk, config.sim.virtual_dealer, config.sim.desk_key) == (
            False, False, None)
        assert not config.bench.enabled


def test_the_virtual_desk_is_named_with_its_enrolled_key(tmp_path: Path) -> None:
    path, enrolled = desk_key_file(tmp_path)
    config = _parse(tmp_path, _data(tmp_path, {"virtual_desk": True, "desk_key": path.name,
                                               "virtual_dealer": True}, desk=enrolled))
    assert config.sim.virtual_desk and config.sim.virtual_dealer
    assert config.sim.desk_key == tmp_path / "desk.key"
    assert desk_signer(config).public_key.base64 == enrolled["virtual-desk"]


@pytest.mark.parametrize(("sim", "enrol", "key", "says"), [
    ({"virtual_desk": True}, True, "sim.desk_key", "missing: virtual_desk = true needs"),
    ({"virtual_desk": True, "desk_key": "desk.key"}, False, "sim.desk_key",
     "is not enrolled under [keys.desk]: add virtual-desk = "),
    ({"virtual_desk": True, "desk_key": "nowhere.key"}, True, "sim.desk_key",
     "does not exist"),
    ({"virtual_dealer": True}, True, "sim.virtual_dealer", "set sim.virtual_desk = true"),
    ({"desk_key": "desk.key"}, True, "sim.desk_key", "given without sim.virtual_desk"),
    ({"virtual_desk": "yes", "desk_key": "desk.key"}, True, "sim.virtual_desk",
     "expected bool"),
])
def test_a_virtual_desk_without_its_enrolled_key_is_a_config_error(
        tmp_path: Path, sim: dict[str, Any], enrol: bool, key: str, says: str) -> None:
    _, enrolled = desk_key_file(tmp_path)
    desk = enrolled if enrol else {"virtual-desk": Signer.generate("x").public_key.base64}
    with pytest.raises(ConfigError) as info:
        _parse(tmp_path, _data(tmp_path, sim, desk=desk))
    assert (info.value.source, info.value.key) == ("table.toml", key)
    assert says in info.value.reason


@pytest.mark.parametrize(("bench", "kind", "key", "says"), [
    ({"enabled": True}, "hardware", "bench.enabled", 'no device of this table has kind = "sim"'),
    ({"enabled": True, "bind": "localhost"}, "sim", "bench.bind", "must be an IP address"),
    ({"enabled": True, "port": 70000}, "sim", "bench.port", "must be 0..65535"),
    ({"enabled": True, "allowed_clients": []}, "sim", "bench.allowed_clients", "non-empty"),
    ({"enabled": True, "allowed_clients": ["laptop"]}, "sim", "bench.allowed_clients",
     "bad: ['laptop']"),
    ({"enabled": "yes"}, "sim", "bench.enabled", "expected bool"),
    ({"enable": True}, "sim", "bench.enable", "unknown key"),
])
def test_bench_settings_are_checked(tmp_path: Path, bench: dict[str, Any], kind: str,
                                    key: str, says: str) -> None:
    data = _data(tmp_path, bench=bench, kind=kind)
    if kind == "hardware":
        data["shoe"] = {"kind": "hardware", "url": "/dev/ttyUSB0"}
        data["rfid"] = {"kind": "manual"}
    with pytest.raises(ConfigError) as info:
        _parse(tmp_path, data)
    assert (info.value.key, info.value.reason.startswith(says) or says in info.value.reason) \
        == (key, True), info.value.reason


def test_the_bench_is_on_only_when_enabled(tmp_path: Path) -> None:
    config = _parse(tmp_path, _data(tmp_path, bench={"enabled": True, "port": 0}))
    assert (config.bench.enabled, config.bench.bind, config.bench.port,
            config.bench.allowed_clients) == (True, "127.0.0.1", 0, ("127.0.0.1", "::1"))


def _table_run(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli", "table", "run", "--config",
                             str(config)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def test_a_missing_table_key_is_the_production_error_naming_the_command(
        tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text(simulated_table_toml(
        venue="v", table="t01", broker="embedded", tournament=REPO / "config" /
        "tournament.toml", paytables=REPO / "config" / "paytables.toml",
        socket=tmp_path / "console.sock"))
    done = subprocess.run([sys.executable, "-m", "cli", "table", "run", "--config",
                           str(config)], cwd=REPO, capture_output=True, text=True,
                          timeout=GUARD_S, check=False)
    assert done.returncode == 2, done.stderr
    assert "keys.table_key" in done.stderr and "does not exist: make it with `showdown keys" \
        f" generate --out {tmp_path / 'table.key'} --name t01`" in done.stderr
    assert not (tmp_path / "table.key").exists()  # nothing made it


async def test_simulated_devices_start_no_desk_and_send_nothing(tmp_path: Path) -> None:
    """`showdown table run` on a table whose devices are all simulated and whose [sim] names
    nothing: on a private broker, nothing arrives on the table's command topic while the daemon
    runs; no roster, heat or seat reaches the table; no key is made or enrolled."""
    table_key_file(tmp_path, "t01")
    async with EmbeddedBroker() as broker:
        text = simulated_table_toml(
            venue="quiet", table="t01", broker=f"127.0.0.1:{broker.port}",
            tournament=REPO / "config" / "tournament.toml",
            paytables=REPO / "config" / "paytables.toml", socket=tmp_path / "console.sock",
            log_level="info")
        assert "virtual_desk" not in text and "[keys.desk]" not in text
        config = tmp_path / "table.toml"
        config.write_text(text)
        before = sorted(p.name for p in tmp_path.iterdir())
        topics = TableTopics("quiet", "t01")
        received: list[str] = []
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="watcher") as watcher:
            await watcher.subscribe(topics.cmd, qos=1)
            await watcher.subscribe(topics.status, qos=1)
            process = await asyncio.to_thread(_table_run, config)
            try:
                online = False
                async with asyncio.timeout(GUARD_S):
                    async for message in watcher.messages:
                        received.append(str(message.topic))
                        if str(message.topic) == topics.status and b"online" in message.payload:
                            online = True
                            break
                assert online
                quiet_until = time.monotonic() + QUIET_S
                while time.monotonic() < quiet_until:
                    try:
                        async with asyncio.timeout(quiet_until - time.monotonic()):
                            async for message in watcher.messages:
                                received.append(str(message.topic))
                    except TimeoutError:
                        pass
                status = await call(tmp_path / "console.sock", {"action": "status"})
            finally:
                process.terminate()
                output = (await asyncio.to_thread(process.communicate, timeout=GUARD_S))[0]
    assert process.returncode == 0, output.decode()
    assert topics.cmd not in received  # no desk command was ever sent
    assert status["ok"] is True
    state = status["detail"]
    assert state["state"] == "running"
    assert state.get("heat") is None and state.get("roster_version") is None
    assert state.get("seats") in ({}, None)
    assert b"virtual desk" not in output and b"virtual dealer" not in output
    assert b"console serving" in output and b"bench serving" not in output  # no [bench]
    after = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in after if n.endswith(".key") and n not in before]  # no key made
    assert read_table_config(config).desk_keys == {}  # nothing enrolled


async def test_the_virtual_desk_connects_with_the_tables_tls_and_password(
        tmp_path: Path, tls_broker: TlsBroker) -> None:  # noqa: F811
    """The virtual desk a config names seats a heat through a private Mosquitto that takes
    only TLS with a client certificate and a password: the table's own [mqtt] settings."""
    save_private_key(Signer.generate("t01"), tmp_path / "table.key")
    desk_key, enrolled = desk_key_file(tmp_path)
    (tmp_path / "mqtt.password").write_text(tls_broker.password + "\n")
    text = simulated_table_toml(
        venue="tls", table="t01", broker=f"127.0.0.1:{tls_broker.port}",
        tournament=REPO / "config" / "tournament.toml",
        paytables=REPO / "config" / "paytables.toml", socket=tmp_path / "console.sock",
        desk_keys=enrolled, desk_key=desk_key.name, players=2)
    text = text.replace(f'broker = "127.0.0.1:{tls_broker.port}"\n', "\n".join([
        f'broker = "127.0.0.1:{tls_broker.port}"', "tls = true",
        f"ca_file = {json.dumps(str(tls_broker.ca))}",
        f"cert_file = {json.dumps(str(tls_broker.cert))}",
        f"key_file = {json.dumps(str(tls_broker.key))}",
        f'username = "{tls_broker.username}"', 'password_file = "mqtt.password"', ""]))
    (tmp_path / "table.toml").write_text(text)
    config = read_table_config(tmp_path / "table.toml")
    assert config.sim is not None and config.sim.virtual_desk and not config.sim.virtual_dealer
    wired = wire_table(config)
    said: list[str] = []
    task = virtual_desk_task(wired, desk_signer(config), subscribed_wait_s=1.0,
                             on_ready=said.append)
    done = asyncio.Event()
    seen: dict[str, Any] = {}

    async def desk_only(daemon: TableDaemon) -> None:
        try:
            await task(daemon)
            seen.update(daemon.status())
            assert daemon.link is not None
            settings = daemon.link.settings
            seen["link"] = (settings.tls, settings.username, settings.cert_file)
        finally:
            done.set()

    stop = asyncio.Event()
    async with asyncio.timeout(GUARD_S):
        runner = asyncio.create_task(wired.daemon.run(stop, extra=desk_only))
        await done.wait()
        stop.set()
        assert await runner == 0
    assert said, "the virtual desk never seated the heat"
    assert seen["heat"] is not None and sorted(seen["seats"]) == ["1", "2"]
    assert seen["roster_version"] == 1
    assert seen["link"] == (True, tls_broker.username, tls_broker.cert)
