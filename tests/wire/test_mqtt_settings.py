"""wire.mqtt.MqttSettings: every setting validated with the key named; TLS files checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.errors import ConfigError
from wire.mqtt import MqttSettings


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"port": 0}, "port: must be 1..65535"),
        ({"host": ""}, "host: must not be empty"),
        ({"password": "x"}, "password: given without a username"),
        ({"key_file": Path("k.pem")}, "key_file: given without cert_file"),
        ({"keepalive_s": 0}, "keepalive_s: must be 1..65535"),
        ({"timeout_s": 0}, "timeout_s: must be positive"),
        ({"backoff_initial_s": 5.0, "backoff_max_s": 1.0}, "need 0 < backoff_initial_s"),
        ({"batch_size": 0}, "batch_size: must be at least 1"),
        ({"topic_root": "showdown/#"}, "topic_root: .*must not contain"),
        ({"topic_root": "/showdown"}, "topic_root: .*non-empty levels"),
    ],
)
def test_settings_are_validated(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MqttSettings(**changes)


def test_tls_files_are_checked(tmp_path: Path) -> None:
    assert MqttSettings().ssl_context() is None
    assert MqttSettings(tls=True).ssl_context() is not None  # system CAs
    with pytest.raises(ConfigError, match=r"ca_file: .* is not a readable file"):
        MqttSettings(ca_file=tmp_path / "missing.pem").ssl_context()
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(ConfigError, match="tls: cannot load certificates"):
        MqttSettings(ca_file=garbage).ssl_context()


