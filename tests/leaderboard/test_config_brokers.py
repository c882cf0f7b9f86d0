"""The central service's and the desk's [mqtt] take a cluster's `brokers` list: the settings
they connect with hold every node in order; a list and `broker` together is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import ConfigError
from leaderboard.app import mqtt_settings
from leaderboard.config import read_leaderboard_config
from leaderboard.desk.config import parse_desk_config
from tests.leaderboard.test_config import MINIMAL, write

CLUSTER = 'brokers = ["10.0.0.1:1883", "10.0.0.2:1883", "10.0.0.3:1883"]'


def test_service_connects_with_every_node_in_order(tmp_path: Path) -> None:
    config = read_leaderboard_config(write(tmp_path, MINIMAL.replace(
        'broker = "127.0.0.1:1883"', CLUSTER)))
    assert mqtt_settings(config).brokers == (("10.0.0.1", 1883), ("10.0.0.2", 1883),
                                             ("10.0.0.3", 1883))


def test_service_refuses_broker_and_brokers_together(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace('broker = "127.0.0.1:1883"',
                                           'broker = "127.0.0.1:1883"\n' + CLUSTER))
    with pytest.raises(ConfigError) as caught:
        read_leaderboard_config(path)
    assert caught.value.source == str(path) and "mqtt.brokers" in str(caught.value)


def test_service_without_any_broker_says_what_to_write(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace('broker = "127.0.0.1:1883"', ""))
    with pytest.raises(ConfigError, match=r"mqtt\.broker.*brokers = "):
        read_leaderboard_config(path)


def test_the_desk_names_no_broker(tmp_path: Path) -> None:
    # The central service sends the desk's commands over its own broker account (issue 33).
    with pytest.raises(ConfigError) as caught:
        parse_desk_config({"desk": {"api_url": "https://lb.casino.lan/"},
                           "mqtt": {"brokers": ["a:1883", "b:1884"]}},
                          source="desk.toml", base=tmp_path)
    assert caught.value.key == "mqtt" and "goes through the central service" in str(
        caught.value)


def test_service_keepalive_is_a_setting_with_a_range(tmp_path: Path) -> None:
    assert mqtt_settings(read_leaderboard_config(write(tmp_path, MINIMAL))).keepalive_s == 30
    config = read_leaderboard_config(write(tmp_path, MINIMAL.replace(
        'broker = "127.0.0.1:1883"', 'broker = "127.0.0.1:1883"\nkeepalive_s = 4')))
    assert mqtt_settings(config).keepalive_s == 4
    for value in ("0", "601", '"4"'):
        path = write(tmp_path, MINIMAL.replace(
            'broker = "127.0.0.1:1883"', f'broker = "127.0.0.1:1883"\nkeepalive_s = {value}'))
        with pytest.raises(ConfigError) as caught:
            read_leaderboard_config(path)
        assert caught.value.source == str(path) and "mqtt.keepalive_s" in str(caught.value)
