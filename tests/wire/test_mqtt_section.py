"""wire.mqtt_section: the broker addresses and credentials file every [mqtt] section shares,
and MqttSettings' view of several brokers (the order tried, one broker's settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.errors import ConfigError
from wire.mqtt import MqttSettings
from wire.mqtt_section import parse_address, parse_brokers, read_credentials


def test_one_broker_and_a_cluster_give_their_addresses_in_order() -> None:
    assert parse_brokers({"broker": "mqtt.lan:1883"}, source="f") == (("mqtt.lan", 1883),)
    assert parse_brokers({"brokers": ["a:1", " b:2", "[::1]:3"]}, source="f") == (
        ("a", 1), ("b", 2), ("::1", 3))
    assert parse_brokers({}, source="f") is None
    assert parse_brokers({"broker": "embedded"}, source="f", embedded=True) == ()


@pytest.mark.parametrize(("section", "key", "says"), [
    ({"broker": "a:1", "brokers": ["b:2"]}, "mqtt.brokers", "not both"),
    ({"brokers": []}, "mqtt.brokers", "list of"),
    ({"brokers": "a:1"}, "mqtt.brokers", "list of"),
    ({"brokers": ["a:1", "a:1"]}, "mqtt.brokers[1]", "listed twice"),
    ({"brokers": ["a:1", "b"]}, "mqtt.brokers[1]", "host:port"),
    ({"brokers": ["a:1", 2]}, "mqtt.brokers[1]", "got int"),
    ({"brokers": ["embedded"]}, "mqtt.brokers[0]", 'broker = "embedded"'),
    ({"brokers": [f"h:{p}" for p in range(1, 18)]}, "mqtt.brokers", "at most 16"),
    ({"broker": "a:0"}, "mqtt.broker", "port 1..65535"),
    ({"broker": 1883}, "mqtt.broker", "got int"),
    ({"broker": "embedded"}, "mqtt.broker", "is for a table daemon"),
])
def test_bad_addresses_name_the_file_and_key(section: dict[str, Any], key: str,
                                             says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_brokers(section, source="lb.toml")
    text = str(caught.value)
    assert "lb.toml" in text and key in text and says in text


def test_parse_address_refuses_a_missing_port() -> None:
    with pytest.raises(ValueError, match="host:port"):
        parse_address("mqtt.lan")


def test_credentials_file_relative_tls_files_are_beside_it(tmp_path: Path) -> None:
    creds = tmp_path / "t01.toml"
    creds.write_text('[mqtt]\nhost = "mqtt1"\nport = 8883\nusername = "t01"\npassword = "pw"\n'
                     'tls = true\nca_file = "ca.crt"\n')
    table = read_credentials(creds, source="table.toml")
    assert table["ca_file"] == str(tmp_path / "ca.crt")
    assert (table["host"], table["port"], table["username"]) == ("mqtt1", 8883, "t01")


@pytest.mark.parametrize(("text", "says"), [
    ("[other]\n", "one [mqtt] table"),
    ("[mqtt]\nhots = 1\n", "unknown key mqtt.hots"),
    ("[mqtt]\nport = 0\n", "mqtt.port must be 1..65535"),
    ("[mqtt]\ntls = 'yes'\n", "mqtt.tls must be true or false"),
    ("[mqtt\n", "not a TOML file"),
])
def test_bad_credentials_files_name_the_key(tmp_path: Path, text: str, says: str) -> None:
    creds = tmp_path / "c.toml"
    creds.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_credentials(creds, source="table.toml")
    assert "mqtt.credentials_file" in str(caught.value) and says in str(caught.value)


def test_missing_credentials_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_credentials(tmp_path / "none.toml", source="table.toml")


def test_settings_list_every_broker_and_give_each_its_own() -> None:
    s = MqttSettings.for_brokers([("a", 1), ("b", 2), ("c", 3)], username="u",
                                 password="p")  # noqa: S106
    assert s.brokers == (("a", 1), ("b", 2), ("c", 3))
    assert s.where_all == "a:1, b:2, c:3"
    one = s.at(4)
    assert (one.host, one.port, one.failover, one.username) == ("b", 2, (), "u")


def test_settings_refuse_a_repeated_or_bad_failover_address() -> None:
    with pytest.raises(ConfigError, match="listed twice"):
        MqttSettings(host="a", port=1, failover=(("a", 1),))
    with pytest.raises(ConfigError, match="not host:port"):
        MqttSettings(host="a", port=1, failover=(("b", 0),))
    with pytest.raises(ConfigError, match="no broker"):
        MqttSettings.for_brokers([])


def test_a_cluster_waits_less_for_a_connack_than_one_broker() -> None:
    one = MqttSettings(host="a", port=1, timeout_s=10.0)
    cluster = MqttSettings(host="a", port=1, failover=(("b", 2),), timeout_s=10.0)
    assert (one.connect_wait_s, one.at(0).connect_wait_s) == (10.0, 10.0)
    assert (cluster.connect_wait_s, cluster.at(1).connect_wait_s) == (5.0, 5.0)
    assert cluster.at(1).timeout_s == 10.0  # PUBACK and SUBACK waits stay as they were
    explicit = MqttSettings(host="a", port=1, failover=(("b", 2),), connect_timeout_s=2.0)
    assert explicit.at(1).connect_wait_s == 2.0
    with pytest.raises(ConfigError, match="connect_timeout_s"):
        MqttSettings(host="a", port=1, connect_timeout_s=0)
