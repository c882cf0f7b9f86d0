"""The leaderboard service's config file: defaults, every refusal names the file and the key."""

from __future__ import annotations

import copy
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from game.errors import ConfigError
from leaderboard.config import DEFAULT_DATABASE, read_leaderboard_config
from leaderboard.desk.policy import AuthPolicy
from wire.signing import Signer

REPO = Path(__file__).resolve().parents[2]
T01 = Signer.from_seed("t01", bytes(range(32))).public_key
T02 = Signer.from_seed("t02", bytes(range(1, 33))).public_key

MINIMAL = f"""
[service]
venue = "casino-1"

[mqtt]
broker = "127.0.0.1:1883"

[keys]
signing_key = "lb.key"

[keys.tables]
t01 = "{T01.base64}"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "leaderboard.toml"
    path.write_text(text, encoding="utf-8")
    return path


def refusal(tmp_path: Path, text: str) -> ConfigError:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        read_leaderboard_config(path)
    assert caught.value.source == str(path)
    return caught.value


def test_minimal_config_takes_the_defaults(tmp_path: Path) -> None:
    config = read_leaderboard_config(write(tmp_path, MINIMAL))
    assert config.venue == "casino-1"
    assert DEFAULT_DATABASE == "sqlite:///leaderboard.sqlite3"
    assert config.database == f"sqlite:///{tmp_path}/leaderboard.sqlite3"  # beside the file
    assert config.tournament is None
    assert config.topic_root == "showdown/v1"
    assert (config.mqtt.host, config.mqtt.port) == ("127.0.0.1", 1883)
    assert config.mqtt.client_id == "leaderboard-casino-1"
    assert config.mqtt.shared_group is None
    assert config.signing_key == tmp_path / "lb.key"  # relative to the config file
    assert dict(config.tables) == {"t01": T01.base64}
    assert (config.http.host, config.http.port, config.http.desk_api) == (
        "127.0.0.1", 8080, False)
    assert config.http.body_wait_s == 5.0
    assert (config.page.rows, config.page.names, config.page.title) == (20, "entry_code", None)
    assert "t01" in config.keyring()
    assert (config.instance, config.lease_s) == ("", 5.0)  # the host name; 5 s


BASE: dict[str, Any] = {
    "service": {"venue": "casino-1"},
    "mqtt": {"broker": "127.0.0.1:1883"},
    "keys": {"signing_key": "lb.key", "tables": {"t01": T01.base64}},
}


@pytest.mark.parametrize(("section", "values", "key", "why"), [
    ("service", {"colour": "red"}, "service.colour", "unknown key"),
    ("extra", {"x": 1}, "extra", "unknown section"),
    ("service", {"venue": "Casino 1"}, "service.venue", "a-z, 0-9"),
    ("service", {"database": "leaderboard.sqlite3"}, "service.database", "SQLAlchemy URL"),
    ("service", {"topic_root": "a/+/b"}, "service.topic_root", "'+'"),
    ("service", {"debounce_seconds": "fast"}, "service.debounce_seconds", "expected a number"),
    ("service", {"lease_s": 0.5}, "service.lease_s", "1..60"),
    ("service", {"lease_s": "long"}, "service.lease_s", "expected a number"),
    ("service", {"instance": "a\nb"}, "service.instance", "printable name"),
    ("mqtt", {"broker": "embedded"}, "mqtt.broker", "venue's broker"),
    ("mqtt", {"broker": "localhost"}, "mqtt.broker", "host:port"),
    ("mqtt", {"broker": "127.0.0.1:99999"}, "mqtt.broker", "host:port"),
    ("mqtt", {"shared_group": "$share"}, "mqtt.shared_group", "a-z"),
    ("mqtt", {"tls": "yes"}, "mqtt.tls", "true or false"),
    ("mqtt", {"password_file": "pw"}, "mqtt.password_file", "cannot read"),
    ("http", {"port": 70000}, "http.port", "0..65535"),
    ("http", {"body_wait_s": 0}, "http.body_wait_s", "0.5..300"),
    ("page", {"rows": 0}, "page.rows", "1..200"),
    ("page", {"names": "full"}, "page.names", "entry_code, first_name_initial, screen_name"),
    ("page", {"stale_after_s": 5}, "page.stale_after_s", "10..86400"),
    ("page", {"page_seconds": "fast"}, "page.page_seconds", "expected a number"),
    ("log", {"level": "loud"}, "log.level", "debug, info"),
])
def test_refusals_name_the_key(tmp_path: Path, section: str, values: dict[str, Any], key: str,
                               why: str) -> None:
    data = copy.deepcopy(BASE)
    data.setdefault(section, {}).update(values)
    error = refusal(tmp_path, tomli_w.dumps(data))
    assert error.key == key
    assert why in error.reason


def test_missing_sections_and_keys(tmp_path: Path) -> None:
    assert refusal(tmp_path, "[service]\nvenue = 'v'\n").key == "[mqtt]"
    error = refusal(tmp_path, MINIMAL.replace('signing_key = "lb.key"', ""))
    assert error.key == "keys.signing_key"


def test_no_enrolled_table_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.split("[keys.tables]", maxsplit=1)[0]
    error = refusal(tmp_path, text)
    assert error.key == "keys.tables"
    assert "no table is enrolled" in error.reason


def test_a_malformed_table_key_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL.replace(T01.base64, "not-base64"))
    assert error.key == "keys.tables.t01"


def test_tables_file_adds_tables_and_refuses_a_conflicting_key(tmp_path: Path) -> None:
    (tmp_path / "tables.pub").write_text(f"# enrolled\n{T02.enrolment_line()}\n")
    text = MINIMAL.replace("[keys.tables]", 'tables_file = "tables.pub"\n[keys.tables]')
    config = read_leaderboard_config(write(tmp_path, text))
    assert set(config.tables) == {"t01", "t02"}
    other = Signer.from_seed("t01", bytes(range(2, 34))).public_key
    (tmp_path / "tables.pub").write_text(f"{other.enrolment_line()}\n")
    error = refusal(tmp_path, text)
    assert error.key == "keys.tables_file"
    assert "another key" in error.reason
    (tmp_path / "tables.pub").unlink()
    assert refusal(tmp_path, text).key == "keys.tables_file"


def test_credentials_file_from_broker_config(tmp_path: Path) -> None:
    (tmp_path / "creds.toml").write_text(
        '# written by showdown broker config\n[mqtt]\nhost = "broker.lan"\nport = 8883\n'
        'username = "leaderboard"\npassword = "s3cret-pass"\ntls = true\n')
    text = MINIMAL.replace('broker = "127.0.0.1:1883"',
                           'credentials_file = "creds.toml"\nca_file = "ca.pem"')
    config = read_leaderboard_config(write(tmp_path, text))
    m = config.mqtt
    assert (m.host, m.port, m.username, m.password, m.tls) == (
        "broker.lan", 8883, "leaderboard", "s3cret-pass", True)
    assert m.client_id == "leaderboard"  # the broker makes the username the client id
    assert m.ca_file == tmp_path / "ca.pem"
    assert "s3cret-pass" not in repr(config)
    # broker = overrides the file's host and port; a password file overrides its password.
    (tmp_path / "pw").write_text("other-pass\n")
    text2 = text.replace('credentials_file = "creds.toml"',
                         'credentials_file = "creds.toml"\nbroker = "10.0.0.5:1883"\n'
                         'password_file = "pw"')
    m2 = read_leaderboard_config(write(tmp_path, text2)).mqtt
    assert (m2.host, m2.port, m2.password) == ("10.0.0.5", 1883, "other-pass")
    (tmp_path / "creds.toml").write_text("[mqtt]\nport = 'x'\n")
    assert refusal(tmp_path, text).key == "mqtt.credentials_file"


def test_a_config_with_the_old_shared_desk_token_is_told_what_replaces_it(
    tmp_path: Path
) -> None:
    text = MINIMAL + '\n[http]\ndesk_token_file = "token"\n'
    with pytest.raises(ConfigError) as caught:
        read_leaderboard_config(write(tmp_path, text))
    assert caught.value.key == "http.desk_token_file"
    assert "showdown desk login" in str(caught.value)
    assert "http.desk_api = true" in str(caught.value)
    config = read_leaderboard_config(write(tmp_path, MINIMAL + '\n[http]\ndesk_api = true\n'))
    assert config.http.desk_api is True
    assert config.desk_auth == AuthPolicy()  # the house's defaults
    config = read_leaderboard_config(write(
        tmp_path, MINIMAL + '\n[desk_auth]\nsession_hours = 8\nlock_minutes = 60\n'))
    assert (config.desk_auth.lifetime, config.desk_auth.lock) == (timedelta(hours=8),
                                                                  timedelta(hours=1))
    assert refusal(tmp_path, MINIMAL + '\n[desk_auth]\nfailures = 1\n').key == (
        "desk_auth.failures")
    assert refusal(tmp_path, MINIMAL + '\n[http]\ndesk_api = "yes"\n').key == "http.desk_api"


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TOML syntax error"):
        read_leaderboard_config(write(tmp_path, "[service\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        read_leaderboard_config(tmp_path / "absent.toml")


def test_the_shipped_template_is_valid(tmp_path: Path) -> None:
    shutil.copy(REPO / "config" / "leaderboard.toml", tmp_path / "leaderboard.toml")
    (tmp_path / "tables.pub").write_text(f"{T01.enrolment_line()}\n{T02.enrolment_line()}\n")
    (tmp_path / "mqtt-leaderboard.toml").write_text(
        '[mqtt]\nhost = "broker.casino.lan"\nport = 8883\nusername = "leaderboard"\n'
        'password = "x"\ntls = true\n')
    config = read_leaderboard_config(tmp_path / "leaderboard.toml")
    assert config.venue == "casino-1"
    assert config.database.startswith("sqlite:////var/lib/showdown-leaderboard/")
    assert (config.mqtt.host, config.mqtt.port, config.mqtt.tls) == (
        "broker.casino.lan", 8883, True)
    assert set(config.tables) == {"t01", "t02"}
    assert config.http.desk_api is True


def test_the_page_settings_and_the_old_spelling_of_the_code_setting(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["page"] = {"names": "entry_id", "stale_after_s": 90, "page_seconds": 6}
    page = read_leaderboard_config(write(tmp_path, tomli_w.dumps(data))).page
    assert (page.names, page.stale_after_s, page.page_seconds) == ("entry_code", 90.0, 6.0)
