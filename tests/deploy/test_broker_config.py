"""deploy.broker_config: the generated Mosquitto text, checked without a broker.

tests/integration/test_mosquitto_acl.py runs the same files in a real mosquitto.
"""

from __future__ import annotations

import base64
import tomllib

import pytest

from deploy import broker_config as bc
from game.errors import ConfigError

# Written by `mosquitto_passwd -c -b FILE u secret` (Mosquitto 2.0.11, Debian 12): an
# independent reference for the hash format and the PBKDF2 parameters.
REFERENCE_LINE = (
    "u:$7$101$K0tbF7hcuRIsoDaD$ZdpBXrTVrMfjOT5fC0PK0TkisMjePI7r1yW5ad8X/VU7ri/2QuyL4v8ph3beiC"
    "GvYnQ+Jm2Wyn+n4y4TK4li6g=="
)
SALT = bytes(range(12))


def settings(**overrides: object) -> bc.BrokerSettings:
    values: dict[str, object] = {
        "venue": "casino-1", "tables": ("t01", "t02"),
        "acl_path": "/etc/mosquitto/showdown/acl",
        "password_path": "/etc/mosquitto/showdown/passwd",
    }
    values.update(overrides)
    return bc.BrokerSettings(**values)  # type: ignore[arg-type]


def tls(**overrides: object) -> bc.TlsSettings:
    values: dict[str, object] = {
        "cafile": "/etc/mosquitto/certs/ca.pem", "certfile": "/etc/mosquitto/certs/broker.pem",
        "keyfile": "/etc/mosquitto/certs/broker.key",
    }
    values.update(overrides)
    return bc.TlsSettings(**values)  # type: ignore[arg-type]


def directives(text: str) -> list[tuple[str, str]]:
    """(keyword, rest) of every line that is not blank or a comment."""
    out = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, rest = line.partition(" ")
            out.append((key, rest))
    return out


# --- password hashes -----------------------------------------------------------------------


def test_hash_matches_mosquitto_passwd() -> None:
    user, _, reference = REFERENCE_LINE.partition(":")
    salt = base64.b64decode(reference.split("$")[3])
    assert bc.hash_password("secret", salt=salt, iterations=101) == reference
    assert bc.parse_password_file(REFERENCE_LINE + "\n") == {user: reference}
    assert bc.verify_password("secret", reference)
    assert not bc.verify_password("Secret", reference)


def test_hash_layout() -> None:
    hashed = bc.hash_password("pw", salt=SALT)
    empty, kind, iterations, salt, digest = hashed.split("$")
    assert (empty, kind, iterations) == ("", "7", str(bc.DEFAULT_ITERATIONS))
    assert base64.b64decode(salt) == SALT
    assert len(base64.b64decode(digest)) == 64  # SHA-512
    assert bc.verify_password("pw", hashed)


def test_salt_and_iterations_change_the_hash() -> None:
    one = bc.hash_password("pw", salt=SALT, iterations=1000)
    assert one != bc.hash_password("pw", salt=bytes(12), iterations=1000)
    assert one != bc.hash_password("pw", salt=SALT, iterations=1001)


@pytest.mark.parametrize(
    ("password", "salt", "iterations", "key"),
    [("", SALT, 1000, "password"), ("pw", bytes(11), 1000, "salt"),
     ("pw", SALT, 0, "iterations")],
)
def test_bad_hash_inputs(password: str, salt: bytes, iterations: int, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        bc.hash_password(password, salt=salt, iterations=iterations)
    assert info.value.key == key


def test_password_file_round_trip() -> None:
    hashes = {"leaderboard": bc.hash_password("a", salt=SALT),
              "t01": bc.hash_password("b", salt=SALT)}
    text = bc.password_file(hashes)
    assert text.splitlines() == [f"leaderboard:{hashes['leaderboard']}", f"t01:{hashes['t01']}"]
    assert bc.parse_password_file("# comment\n\n" + text) == hashes


@pytest.mark.parametrize(
    "text",
    ["t01\n", ":$7$1$AAAA$AAAA\n", "t01:plain-text\n", "t01:$6$c2FsdA==$aGFzaA==\n",
     "t01:$7$0$AAAAAAAAAAAAAAAA$" + "A" * 88 + "\n",
     "t01:$7$101$!!!!$" + "A" * 88 + "\n",
     "t01:$7$101$AAAAAAAAAAAAAAAA$AAAA\n"],
)
def test_unreadable_password_file_lines(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        bc.parse_password_file(text)
    assert info.value.key == "password file line 1"


def test_duplicate_user_in_password_file() -> None:
    line = f"t01:{bc.hash_password('x', salt=SALT)}\n"
    with pytest.raises(ConfigError, match="appears twice"):
        bc.parse_password_file(line + line)


def test_password_file_refuses_bad_usernames() -> None:
    with pytest.raises(ConfigError):
        bc.password_file({"t:01": bc.hash_password("x", salt=SALT)})


# --- the ACL -------------------------------------------------------------------------------


def acl_rules(text: str) -> set[tuple[str, str, str]]:
    """(who, access, topic): who is "pattern" or the user the `topic` line belongs to."""
    rules: set[tuple[str, str, str]] = set()
    user = "anonymous"
    for key, rest in directives(text):
        if key == "user":
            user = rest
        elif key == "pattern":
            access, topic = rest.split(" ")
            rules.add(("pattern", access, topic))
        else:
            assert key == "topic"
            access, topic = rest.split(" ")
            rules.add((user, access, topic))
    return rules


def test_acl_grants_exactly_the_rights_in_the_brief() -> None:
    t = "showdown/v1/casino-1/tables"
    assert acl_rules(bc.acl_file(settings())) == {
        ("pattern", "write", f"{t}/%u/status"),
        ("pattern", "write", f"{t}/%u/events"),
        ("pattern", "write", f"{t}/%u/scores"),
        ("pattern", "read", f"{t}/%u/cmd"),
        ("leaderboard", "deny", f"{t}/leaderboard/#"),
        ("leaderboard", "read", f"{t}/+/status"),
        ("leaderboard", "read", f"{t}/+/events"),
        ("leaderboard", "read", f"{t}/+/scores"),
        ("leaderboard", "write", f"{t}/+/cmd"),
        ("leaderboard", "write", "showdown/v1/casino-1/standings"),
        ("desk", "deny", f"{t}/desk/#"),
        ("desk", "write", f"{t}/+/cmd"),
        ("desk", "read", f"{t}/+/status"),
        ("desk", "read", f"{t}/+/events"),
        ("desk", "read", f"{t}/+/scores"),
        ("desk", "read", "showdown/v1/casino-1/standings"),
    }


def test_acl_nothing_for_anonymous_and_no_catch_all() -> None:
    rules = acl_rules(bc.acl_file(settings()))
    assert not [r for r in rules if r[0] == "anonymous"]
    assert not [r for r in rules if r[2] in ("#", "+/#") or r[2].startswith("$")]


def test_acl_follows_the_topic_root_and_venue() -> None:
    text = bc.acl_file(settings(venue="riviera", root="test/root"))
    assert "pattern write test/root/riviera/tables/%u/events" in text.splitlines()
    assert "showdown/v1" not in text


# --- mosquitto.conf ------------------------------------------------------------------------


def test_plain_listener_config() -> None:
    conf = dict(directives(bc.listener_config(settings())))
    assert conf == {
        "per_listener_settings": "false",
        "allow_anonymous": "false",
        "password_file": "/etc/mosquitto/showdown/passwd",
        "acl_file": "/etc/mosquitto/showdown/acl",
        "persistence": "true",
        "persistence_location": "/var/lib/mosquitto/",
        "autosave_interval": "60",
        "max_queued_messages": "10000",
        "persistent_client_expiration": "14d",
        "listener": "1883",
        "protocol": "mqtt",
        "use_username_as_clientid": "true",
    }


def test_listener_options_follow_the_listener_line() -> None:
    keys = [key for key, _ in directives(bc.listener_config(settings(tls=tls())))]
    listener = keys.index("listener")
    assert keys.index("allow_anonymous") < listener < keys.index("use_username_as_clientid")
    assert listener < keys.index("cafile")


def test_tls_listener_config() -> None:
    text = bc.listener_config(settings(tls=tls(), bind_address="10.0.0.5"))
    conf = dict(directives(text))
    assert conf["listener"] == "8883 10.0.0.5"
    assert (conf["cafile"], conf["certfile"], conf["keyfile"]) == (
        "/etc/mosquitto/certs/ca.pem", "/etc/mosquitto/certs/broker.pem",
        "/etc/mosquitto/certs/broker.key")
    assert conf["require_certificate"] == "false"
    assert conf["tls_version"] == "tlsv1.2"
    assert "use_identity_as_username" not in conf
    assert conf["password_file"] == "/etc/mosquitto/showdown/passwd"  # noqa: S105


def test_certificate_identity_has_no_password_file() -> None:
    s = settings(tls=tls(require_certificate=True, use_identity_as_username=True), port=9883)
    conf = dict(directives(bc.listener_config(s)))
    assert conf["require_certificate"] == "true"
    assert conf["use_identity_as_username"] == "true"
    assert conf["listener"] == "9883"
    assert "password_file" not in conf
    assert not s.uses_passwords


def test_run_as_user_and_persistence_dir() -> None:
    conf = dict(directives(bc.listener_config(settings(run_as_user="mosq",
                                                       persistence_dir="/srv/mq/"))))
    assert conf["user"] == "mosq"
    assert conf["persistence_location"] == "/srv/mq/"


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "key", "fragment"),
    [
        ({"tables": ()}, "tables", "at least one"),
        ({"tables": ("t01", "desk")}, "tables", "reserved"),
        ({"tables": ("leaderboard",)}, "tables", "reserved"),
        ({"tables": ("t01", "t01")}, "tables", "twice"),
        ({"tables": ("T01",)}, "tables", "not valid"),
        ({"tables": ("t/01",)}, "tables", "not valid"),
        ({"tables": ("t+",)}, "tables", "not valid"),
        ({"venue": "Casino 1"}, "venue", "not valid"),
        ({"root": "a/#"}, "root", "must not contain"),
        ({"port": 0}, "port", "1..65535"),
        ({"acl_path": "acl"}, "acl_path", "absolute"),
        ({"password_path": "/etc/my passwd"}, "password_path", "one word"),
        ({"persistence_dir": "/var/lib/mosquitto"}, "persistence_dir", "end with '/'"),
        ({"bind_address": "10.0.0.1 8883"}, "bind_address", "one word"),
        ({"autosave_interval_s": 0}, "autosave_interval_s", "at least 1"),
    ],
)
def test_bad_settings(overrides: dict[str, object], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings(**overrides)
    assert info.value.key == key
    assert fragment in info.value.reason


def test_bad_tls_settings() -> None:
    with pytest.raises(ConfigError) as info:
        tls(use_identity_as_username=True)
    assert info.value.key == "use_identity_as_username"
    with pytest.raises(ConfigError) as info:
        tls(tls_version="tlsv1.1")
    assert info.value.key == "tls_version"
    with pytest.raises(ConfigError) as info:
        tls(cafile="ca.pem")
    assert info.value.key == "cafile"


def test_clients_are_leaderboard_desk_then_tables() -> None:
    assert bc.clients(settings()) == ("leaderboard", "desk", "t01", "t02")


# --- credentials ---------------------------------------------------------------------------


def test_credentials_are_valid_toml_for_the_mqtt_settings() -> None:
    text = bc.credentials_toml("t01", 'p"w\\x', settings(), host="broker.casino.lan")
    assert tomllib.loads(text) == {"mqtt": {"host": "broker.casino.lan", "port": 1883,
                                            "username": "t01", "password": 'p"w\\x'}}


def test_credentials_with_tls_and_without_host() -> None:
    s = settings(tls=tls(require_certificate=True, use_identity_as_username=True))
    text = bc.credentials_toml("desk", None, s)
    assert tomllib.loads(text) == {"mqtt": {"port": 8883, "username": "desk", "tls": True}}
    assert "CN=desk" in text


def test_credentials_refuse_control_characters() -> None:
    with pytest.raises(ConfigError):
        bc.credentials_toml("t01", "a\nb", settings())
