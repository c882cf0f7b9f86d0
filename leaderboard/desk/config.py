"""The registration desk's configuration file, ``desk.toml``: where the desk's database is, how
it reaches the tables (broker, credentials, TLS CA, the desk's signing key, venue, topic root)
and which tournament settings it works to, so that no `showdown desk` command needs more than
its own arguments (docs/desk-config.md).

Found by ``--config FILE``, else ``$SHOWDOWN_DESK_CONFIG``, else the repository's
``config/desk.toml`` (development defaults). Validated when read: every error is one
`ConfigError` naming the file and the key; unknown sections and keys are refused. Relative
paths, a relative SQLite URL among them, are relative to the file (`runtime.config_paths`);
so are those of the credentials file it names, to that file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from game.errors import ConfigError
from leaderboard.config import NAME_MODES, NameMode, is_loopback
from leaderboard.desk.policy import AUTH_KEYS, AuthPolicy, parse_auth_policy
from runtime.config_paths import config_database_url, config_path
from runtime.settings_files import load_toml, shipped_or_configured
from wire.mqtt import MqttSettings
from wire.mqtt_section import Address, parse_brokers
from wire.topics import DEFAULT_ROOT, ID_PATTERN, TopicError, validate_root

__all__ = ["DESK_CONFIG_ENV", "DeskConfig", "default_desk_config_path", "read_desk_config"]

DESK_CONFIG_ENV: Final = "SHOWDOWN_DESK_CONFIG"
_SECTIONS: Final[dict[str, set[str]]] = {
    "desk": {"database", "venue", "topic_root", "tournament", "signing_key", "api_url",
             "api_ca_file", "names"},
    "mqtt": {"broker", "brokers", "credentials_file", "username", "password_file", "tls",
             "ca_file"},
    "auth": set(AUTH_KEYS),
}
_CREDENTIALS: Final = {"host", "port", "username", "password", "tls", "ca_file", "cert_file",
                       "key_file"}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskConfig:
    """Everything the desk's commands need besides their own arguments."""

    source: str
    database: str
    venue: str | None = None
    topic_root: str = DEFAULT_ROOT
    tournament: Path | None = None
    signing_key: Path | None = None
    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    ca_file: Path | None = None
    auth: AuthPolicy = field(default_factory=AuthPolicy)
    api_url: str | None = None  # the central service's desk API (https off the loopback)
    api_ca_file: Path | None = None  # the venue CA its certificate must chain to
    failover: tuple[Address, ...] = ()  # a cluster's other nodes, tried in turn after host
    names: NameMode = "entry_code"  # the page's name style, for the seat data (D332)

    def mqtt(self) -> MqttSettings:
        """The broker settings the desk's sender connects with (every node, in order)."""
        return MqttSettings(host=self.host, port=self.port, username=self.username,
                            password=self.password, tls=self.tls or self.ca_file is not None,
                            ca_file=self.ca_file, topic_root=self.topic_root,
                            failover=self.failover)


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str, base: Path) -> None:
        self.source, self.base = source, base
        unknown = sorted(set(data) - set(_SECTIONS))
        if unknown:
            raise self.fail(unknown[0], f"unknown section (known: {', '.join(_SECTIONS)})")
        self.tables: dict[str, dict[str, Any]] = {}
        for name, keys in _SECTIONS.items():
            table = data.get(name, {})
            if not isinstance(table, dict):
                raise self.fail(name, f"must be a table [{name}]")
            extra = sorted(set(table) - keys)
            if extra:
                raise self.fail(f"{name}.{extra[0]}",
                                f"unknown key (known: {', '.join(sorted(keys))})")
            self.tables[name] = table

    def fail(self, key: str, reason: str) -> ConfigError:
        return ConfigError(self.source, key, reason)

    def text(self, key: str) -> str | None:
        section, name = key.split(".")
        value = self.tables[section].get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty text (leave the key out instead)")
        return value.strip()

    def flag(self, key: str) -> bool | None:
        section, name = key.split(".")
        value = self.tables[section].get(name)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {type(value).__name__}")
        return value

    def path(self, key: str, *, must_exist: bool = True) -> Path | None:
        text = self.text(key)
        if text is None:
            return None
        path = config_path(text, self.base)
        if must_exist and not path.is_file():
            raise self.fail(key, f"no such file {path}")
        return path


def _database(r: _Reader) -> str:
    url = r.text("desk.database")
    if url is None:
        raise r.fail("desk.database", 'missing: the leaderboard database\'s URL, e.g.'
                     ' "sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3" or'
                     ' "postgresql+psycopg://desk@db.casino.lan/showdown"')
    try:
        make_url(url)
    except ArgumentError:
        raise r.fail("desk.database", f"{url!r} is not a database URL") from None
    return config_database_url(url, r.base)


def _brokers(r: _Reader, creds: Mapping[str, Any]) -> tuple[Address, ...]:
    m = r.tables["mqtt"]
    if isinstance(m.get("broker"), str) and not m["broker"].strip():
        raise r.fail("mqtt.broker", "must be a non-empty text (leave the key out instead)")
    brokers = parse_brokers(m, source=r.source)
    if brokers is None:
        if isinstance(creds.get("host"), str) and isinstance(creds.get("port"), int):
            return ((creds["host"], creds["port"]),)
        return (("127.0.0.1", 1883),)
    return brokers


def _credentials(r: _Reader) -> dict[str, Any]:
    """The [mqtt] table of a credentials file (as `showdown broker config` writes it)."""
    path = r.path("mqtt.credentials_file")
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise r.fail("mqtt.credentials_file", f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise r.fail("mqtt.credentials_file", f"{path} is not a TOML file: {exc}") from None
    table = data.get("mqtt")
    if not isinstance(table, dict) or set(data) != {"mqtt"} or set(table) - _CREDENTIALS:
        raise r.fail("mqtt.credentials_file", f"{path} must hold one [mqtt] table (as"
                     " `showdown broker config` writes it)")
    for name in ("ca_file", "cert_file", "key_file"):  # relative to the credentials file
        if isinstance(table.get(name), str):
            table[name] = str(config_path(table[name], path.parent))
    return table


def _password(r: _Reader, creds: Mapping[str, Any]) -> str | None:
    path = r.path("mqtt.password_file")
    if path is None:
        value = creds.get("password")
        return value if isinstance(value, str) else None
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise r.fail("mqtt.password_file", f"cannot read {path}: {exc}") from None
    if not text:
        raise r.fail("mqtt.password_file", f"{path} is empty")
    return text


def _api(r: _Reader) -> tuple[str | None, Path | None]:
    """desk.api_url and desk.api_ca_file: https (checked against the venue CA) unless the
    service is on this machine, since a session token must not cross the LAN in clear."""
    url, ca = r.text("desk.api_url"), r.path("desk.api_ca_file")
    if url is None:
        if ca is not None:
            raise r.fail("desk.api_ca_file", "given without desk.api_url")
        return None, None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        raise r.fail("desk.api_url", f"{url!r} is not an http(s) URL such as"
                     " \"https://leaderboard.casino.lan:8443/\"")
    if parts.scheme == "http" and not is_loopback(host):
        raise r.fail("desk.api_url", f"{url!r} would send staff sign-ins across the network in"
                     " clear text: use https:// (and desk.api_ca_file, the venue CA)")
    return url if url.endswith("/") else url + "/", ca


def parse_desk_config(data: Mapping[str, Any], *, source: str, base: Path) -> DeskConfig:
    """Validate a parsed desk.toml; ConfigError names the file and the key."""
    r = _Reader(data, source, base)
    venue = r.text("desk.venue")
    if venue is not None and not ID_PATTERN.fullmatch(venue):
        raise r.fail("desk.venue", "use 1 to 64 of a-z, 0-9 and '-'")
    root = r.text("desk.topic_root") or DEFAULT_ROOT
    try:
        validate_root(root)
    except TopicError as exc:
        raise r.fail("desk.topic_root", str(exc)) from None
    creds = _credentials(r)
    (host, port), *failover = _brokers(r, creds)
    username = r.text("mqtt.username") or (
        creds["username"] if isinstance(creds.get("username"), str) else None)
    password = _password(r, creds)
    if password is not None and username is None:
        raise r.fail("mqtt.password_file", "a password without mqtt.username")
    ca_file = r.path("mqtt.ca_file")
    if ca_file is None and isinstance(creds.get("ca_file"), str):
        ca_file = Path(creds["ca_file"])
    tls = r.flag("mqtt.tls")
    api_url, api_ca = _api(r)
    names = r.text("desk.names") or "entry_code"
    if names not in NAME_MODES:
        raise r.fail("desk.names", f"{names!r} is not one of {', '.join(NAME_MODES)} (the"
                     " leaderboard service's [page] names)")
    return DeskConfig(
        source=source, database=_database(r), venue=venue, topic_root=root,
        tournament=r.path("desk.tournament"),
        signing_key=r.path("desk.signing_key", must_exist=False),
        host=host, port=port, username=username, password=password,
        tls=bool(creds.get("tls", False)) if tls is None else tls, ca_file=ca_file,
        failover=tuple(failover),
        auth=parse_auth_policy(r.tables["auth"], source=source, section="auth"),
        api_url=api_url, api_ca_file=api_ca, names=names)


def default_desk_config_path() -> Path:
    """$SHOWDOWN_DESK_CONFIG if set, else the shipped desk.toml."""
    return shipped_or_configured(DESK_CONFIG_ENV, "desk.toml", what="desk config",
                                 flag="--config")


def read_desk_config(path: Path | None = None) -> DeskConfig:
    """Read and validate a desk config (the default one when ``path`` is None)."""
    path = default_desk_config_path() if path is None else Path(path)
    return parse_desk_config(load_toml(path), source=str(path),
                             base=path.resolve().parent)
