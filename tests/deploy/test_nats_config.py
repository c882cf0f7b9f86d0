"""The NATS rendering of the venue's ACL (deploy.nats_config): fast, no server started except
`nats-server -t` (a config check, when the binary is there). The cluster itself enforcing it:
tests/integration/test_nats_permissions.py (soak)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import bcrypt
import pytest

from deploy import broker_config as bc
from deploy import nats_config as nc
from game.errors import ConfigError

S = "showdown.v1.casino-1"
NODES = (nc.NatsNode(name="mqtt1", host="10.0.0.11"), nc.NatsNode(name="mqtt2", host="10.0.0.12"),
         nc.NatsNode(name="mqtt3", host="10.0.0.13"))
TLS = bc.TlsSettings(cafile="/etc/nats/ca.crt", certfile="/etc/nats/server.crt",
                     keyfile="/etc/nats/server.key")
HASH = bcrypt.hashpw(b"secret", bcrypt.gensalt(4, prefix=b"2a")).decode()


def settings(nodes: tuple[nc.NatsNode, ...] = NODES, **overrides: object) -> nc.NatsSettings:
    broker: dict[str, object] = {
        "venue": "casino-1", "tables": ("t01", "t02"), "acl_path": "/etc/x/acl",
        "password_path": "/etc/x/passwd", "tls": TLS, **overrides}
    return nc.NatsSettings(broker=bc.BrokerSettings(**broker), nodes=nodes)  # type: ignore[arg-type]


def hashes(s: nc.NatsSettings) -> dict[str, str]:
    return dict.fromkeys(bc.clients(s.broker), HASH)


def test_topics_become_subjects() -> None:
    assert nc.mqtt_subject("showdown/v1/v/tables/t01/events") == "showdown.v1.v.tables.t01.events"
    assert nc.mqtt_subject("showdown/v1/v/tables/+/cmd") == "showdown.v1.v.tables.*.cmd"
    assert nc.mqtt_subject("showdown/v1/v/tables/desk/#") == "showdown.v1.v.tables.desk.>"


def test_permissions_are_the_mosquitto_acl_per_user() -> None:
    t = f"{S}.tables"
    assert nc.nats_permissions(settings()) == {
        "leaderboard": {
            "publish": {"allow": [f"{t}.*.cmd", f"{S}.standings"],
                        "deny": [f"{t}.leaderboard.>"]},
            "subscribe": {"allow": [f"{t}.*.status", f"{t}.*.events", f"{t}.*.scores",
                                    "$MQTT.sub.>"], "deny": [f"{t}.leaderboard.>"]}},
        "desk": {
            "publish": {"allow": [f"{t}.*.cmd"], "deny": [f"{t}.desk.>"]},
            "subscribe": {"allow": [f"{t}.*.status", f"{t}.*.events", f"{t}.*.scores",
                                    f"{S}.standings", "$MQTT.sub.>"], "deny": [f"{t}.desk.>"]}},
        "t01": {
            "publish": {"allow": [f"{t}.t01.status", f"{t}.t01.events", f"{t}.t01.scores"],
                        "deny": []},
            "subscribe": {"allow": [f"{t}.t01.cmd", "$MQTT.sub.>"], "deny": []}},
        "t02": {
            "publish": {"allow": [f"{t}.t02.status", f"{t}.t02.events", f"{t}.t02.scores"],
                        "deny": []},
            "subscribe": {"allow": [f"{t}.t02.cmd", "$MQTT.sub.>"], "deny": []}},
    }


def test_mosquitto_and_nats_render_one_rule_set() -> None:
    """Every Mosquitto ACL line has its NATS permission, and nothing more (the internal
    delivery subject aside)."""
    s = settings()
    mosquitto: set[tuple[str, str, str]] = set()
    user = ""
    for line in bc.acl_file(s.broker).splitlines():
        words = line.split()
        if words[:1] == ["user"]:
            user = words[1]
        elif words[:1] in (["pattern"], ["topic"]):
            who = "%u" if words[0] == "pattern" else user
            mosquitto.add((who, words[1], nc.mqtt_subject(words[2])))
    nats: set[tuple[str, str, str]] = set()
    for client, perms in nc.nats_permissions(s).items():
        who = client if client in bc.RESERVED_CLIENTS else "%u"
        for side, access in (("publish", "write"), ("subscribe", "read")):
            for subject in perms[side]["allow"]:
                if subject != nc.MQTT_DELIVERY:
                    nats.add((who, access, subject.replace(f".{client}.", ".%u.")))
            nats |= {(who, "deny", d) for d in perms[side]["deny"]}
    assert nats == mosquitto


def test_auth_file_users_are_mqtt_only_with_bcrypt_and_no_anonymous() -> None:
    text = nc.nats_auth(settings(), hashes(settings()))
    assert re.findall(r'user: "([^"]+)"', text) == ["leaderboard", "desk", "t01", "t02"]
    assert text.count('allowed_connection_types: ["MQTT"]') == 4
    assert text.count(f'password: "{HASH}"') == 4
    settings_only = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    for forbidden in ("no_auth_user", "default_permissions", '">"', "accounts"):
        assert forbidden not in settings_only


def test_auth_file_needs_every_clients_bcrypt_hash() -> None:
    s = settings()
    with pytest.raises(ConfigError, match="no password hash for t02"):
        nc.nats_auth(s, {c: HASH for c in bc.clients(s.broker) if c != "t02"})
    with pytest.raises(ConfigError, match="bcrypt"):
        nc.nats_auth(s, {**hashes(s), "t01": "$7$1000$abc$def"})


def test_node_config_cluster_tls_and_replicas() -> None:
    text = nc.node_config(settings(), NODES[1], "route-pw")
    assert 'server_name: "mqtt2"' in text
    assert 'listen: "127.0.0.1:4222"' in text  # NATS protocol: loopback only
    assert 'include "nats-auth.conf"' in text
    assert 'listen: "10.0.0.12:6222"' in text
    assert ("routes: [nats-route://route:route-pw@10.0.0.11:6222, "
            "nats-route://route:route-pw@10.0.0.13:6222]") in text
    assert 'authorization { user: "route", password: "route-pw" }' in text
    assert 'listen: "10.0.0.12:8883"' in text
    assert 'ca_file: "/etc/nats/ca.crt"' in text and "verify: false" in text
    assert "stream_replicas: 3" in text and "consumer_replicas: 3" in text


def test_one_node_has_no_cluster_block_and_plaintext_has_no_tls() -> None:
    text = nc.node_config(settings(NODES[:1], tls=None), NODES[0], "pw")
    assert "cluster {" not in text and "tls {" not in text
    assert 'listen: "10.0.0.11:1883"' in text
    assert "stream_replicas: 1" in text


def test_client_certificates_are_verified_when_required() -> None:
    tls = bc.TlsSettings(cafile="/c", certfile="/s", keyfile="/k", require_certificate=True)
    assert "verify: true" in nc.node_config(settings(tls=tls), NODES[0], "pw")


@pytest.mark.parametrize(("build", "key"), [
    (lambda: settings(nodes=()), "nodes"),
    (lambda: settings(nodes=(NODES[0], NODES[0])), "nodes"),
    (lambda: settings(root="show.down"), "root"),
    (lambda: settings(tls=bc.TlsSettings(cafile="/c", certfile="/s", keyfile="/k",
                                         require_certificate=True,
                                         use_identity_as_username=True)),
     "use_identity_as_username"),
    (lambda: nc.NatsNode(name="a b", host="h"), "nodes"),
    (lambda: nc.NatsNode(name="a", host="h", cluster_port=0), "cluster_port"),
    (lambda: nc.NatsNode(name="a", host="h", store_dir="nats"), "store_dir"),
    (lambda: nc.node_config(settings(), NODES[0], "bad pw"), "route password"),
])
def test_bad_settings_name_the_key(build: object, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.key == key


def test_password_file_round_trip_and_refusals() -> None:
    text = nc.nats_password_file({"t01": HASH, "desk": HASH})
    assert nc.parse_nats_password_file(text) == {"t01": HASH, "desk": HASH}
    with pytest.raises(ConfigError, match="line 1"):
        nc.parse_nats_password_file("t01:$7$1000$a$b\n")
    with pytest.raises(ConfigError, match="appears twice"):
        nc.parse_nats_password_file(f"t01:{HASH}\nt01:{HASH}\n")


def test_nats_server_accepts_the_files(tmp_path: Path) -> None:
    server = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin")
    if server is None:
        pytest.skip("nats-server is not installed")
    s = settings(tls=None)  # the TLS files would have to exist
    (tmp_path / nc.AUTH_FILE).write_text(nc.nats_auth(s, hashes(s)))
    conf = tmp_path / "nats.conf"
    conf.write_text(nc.node_config(s, NODES[0], "route-pw"))
    checked = subprocess.run([server, "-t", "-c", str(conf)], capture_output=True, text=True,
                             timeout=30, check=False)
    assert checked.returncode == 0, checked.stderr + checked.stdout
