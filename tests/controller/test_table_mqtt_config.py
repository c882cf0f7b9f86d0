"""The table config's [mqtt]: the embedded broker, one venue broker or a cluster's list, and
the credentials file `showdown broker config` writes; each mistake names the file and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.config import MqttConfig, parse_table_config
from game.errors import ConfigError


def mqtt(tmp_path: Path, section: dict[str, Any] | None) -> MqttConfig:
    """The [mqtt] of a manual table config with this section (None: no section)."""
    data: dict[str, Any] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}}
    if section is not None:
        data["mqtt"] = section
    return parse_table_config(data, source="table.toml", base=tmp_path).mqtt


def test_no_section_and_embedded_run_the_embedded_broker(tmp_path: Path) -> None:
    for section in (None, {"broker": "embedded", "embedded_port": 1884}):
        m = mqtt(tmp_path, section)
        assert m.embedded and m.broker == "embedded"


def test_a_cluster_is_tried_in_the_order_listed(tmp_path: Path) -> None:
    m = mqtt(tmp_path, {"brokers": ["mqtt1:1883", "mqtt2:1883", "mqtt3:1884"]})
    settings = m.settings()
    assert settings.brokers == (("mqtt1", 1883), ("mqtt2", 1883), ("mqtt3", 1884))
    assert m.broker == "mqtt1:1883"


def test_credentials_file_gives_address_user_password_and_tls(tmp_path: Path) -> None:
    (tmp_path / "t1.toml").write_text(
        '[mqtt]\nhost = "mqtt1"\nport = 8883\nusername = "t1"\npassword = "s3cret"\n'
        'tls = true\nca_file = "ca.crt"\n')
    m = mqtt(tmp_path, {"credentials_file": "t1.toml"})
    assert m.brokers == (("mqtt1", 8883),)
    assert (m.username, m.password, m.tls, m.ca_file) == ("t1", "s3cret", True,
                                                         tmp_path / "ca.crt")
    # the cluster's list replaces the file's one address; the credentials stay
    m = mqtt(tmp_path, {"credentials_file": "t1.toml", "brokers": ["a:8883", "b:8883"]})
    s = m.settings()
    assert s.brokers == (("a", 8883), ("b", 8883)) and s.username == "t1" and s.tls


def test_password_file_is_read_at_start(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("hunter2\n")
    m = mqtt(tmp_path, {"broker": "mqtt1:1883", "username": "t1", "password_file": "pw"})
    assert m.password == "hunter2"  # noqa: S105
    assert "hunter2" not in repr(m)


@pytest.mark.parametrize(("section", "key", "says"), [
    ({"broker": "a:1", "brokers": ["b:1"]}, "mqtt.brokers", "not both"),
    ({"brokers": ["a:1", "nope"]}, "mqtt.brokers[1]", "host:port"),
    ({"broker": "localhost"}, "mqtt.broker", "host:port"),
    ({"credentials_file": "missing.toml"}, "mqtt.credentials_file", "cannot read"),
    ({"broker": "embedded", "username": "t1"}, "mqtt.username", "embedded"),
    ({"brokers": ["a:1"], "embedded_port": 5}, "mqtt.embedded_port", "embedded broker only"),
    ({"broker": "a:1", "password_file": "missing"}, "mqtt.password_file", "cannot read"),
    ({"broker": "a:1", "key_file": "k.pem"}, "mqtt.key_file", "cert_file"),
    ({"broker": "a:1", "brokerz": 1}, "mqtt.brokerz", "unknown key"),
])
def test_mistakes_name_the_file_and_key(tmp_path: Path, section: dict[str, Any], key: str,
                                        says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        mqtt(tmp_path, section)
    text = str(caught.value)
    assert "table.toml" in text and key in text and says in text


def test_password_without_username_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("x\n")
    with pytest.raises(ConfigError, match=r"without mqtt\.username"):
        mqtt(tmp_path, {"broker": "a:1", "password_file": "pw"})


def test_keepalive_is_a_setting_for_the_venue_and_the_embedded_broker(tmp_path: Path) -> None:
    assert mqtt(tmp_path, None).keepalive_s == 30
    assert mqtt(tmp_path, {"broker": "mqtt1:1883", "keepalive_s": 5}).settings().keepalive_s == 5
    assert mqtt(tmp_path, {"broker": "embedded", "keepalive_s": 3}).keepalive_s == 3


@pytest.mark.parametrize(("value", "says"), [
    (1, "must be 2..600 seconds, got 1"), (601, "must be 2..600 seconds, got 601"),
    (2.5, "expected int, got float"), (True, "expected int, got bool"),
    ("30", "expected int, got str")])
def test_keepalive_out_of_range_names_the_key(tmp_path: Path, value: object, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        mqtt(tmp_path, {"broker": "mqtt1:1883", "keepalive_s": value})
    assert caught.value.source == "table.toml"
    assert str(caught.value).startswith("table.toml: mqtt.keepalive_s: ")
    assert says in str(caught.value)
