"""The central leaderboard service's configuration file (TOML), validated at start-up.

Every error is a `ConfigError` naming the file, the key and what was expected; unknown
sections and keys are refused, so a typo never falls back to a default silently. Relative
paths, a relative SQLite URL and the default database among them, are relative to the config
file (`runtime.config_paths`). The format is documented in docs/leaderboard.md.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from game.errors import ConfigError
from leaderboard.audit_trail.settings import AUDIT_KEYS, AuditSettings, parse_audit_settings
from leaderboard.desk.policy import AUTH_KEYS, AuthPolicy, parse_auth_policy
from runtime.config_paths import config_database_url, config_path
from runtime.settings_files import load_toml
from wire.mqtt_section import (
    KEEPALIVE_DEFAULT_S,
    Address,
    keepalive_problem,
    parse_brokers,
    read_credentials,
)
from wire.signing import KeyFormatError, KeyRing, parse_public_key
from wire.topics import DEFAULT_ROOT, ID_PATTERN, TopicError, validate_root

__all__ = [
    "DEFAULT_DATABASE",
    "NAME_MODES",
    "REGULATION_YEARS",
    "HttpConfig",
    "LeaderboardConfig",
    "NameMode",
    "PageConfig",
    "RetentionConfig",
    "ServiceMqttConfig",
    "is_loopback",
    "parse_leaderboard_config",
    "read_leaderboard_config",
]

T = TypeVar("T")
NameMode = Literal["entry_code", "first_name_initial", "screen_name"]
NAME_MODES: Final[tuple[NameMode, ...]] = ("entry_code", "first_name_initial", "screen_name")
_OLD_NAME_MODES: Final[Mapping[str, NameMode]] = {"entry_id": "entry_code"}  # before issue 16
DEFAULT_DATABASE: Final = "sqlite:///leaderboard.sqlite3"  # beside the config file (D334)
# The shared desk token is gone (issue 13): a config still naming it is told what replaces it.
_SIGN_IN_PER_PERSON: Final = (
    "the shared desk token is gone: every desk person signs in with their own staff account"
    " (showdown desk login, or POST /api/desk/session); remove this key and set"
    " http.desk_api = true to serve the desk API (docs/desk-auth.md)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceMqttConfig:
    """The venue broker the service connects to (never an embedded one: tables own those)."""

    host: str
    port: int
    client_id: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # from password/credentials file
    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    shared_group: str | None = None  # subscribe as $share/{group}/... (several instances)
    failover: tuple[Address, ...] = ()  # a cluster's other nodes, tried in turn after host
    keepalive_s: int = KEEPALIVE_DEFAULT_S  # MQTT keepalive (D403)

    @property
    def brokers(self) -> tuple[Address, ...]:
        """Every broker address in the order tried."""
        return ((self.host, self.port), *self.failover)


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpConfig:
    """Where the page and the APIs listen, and whether the desk API is served (its people
    sign in with their own staff accounts: leaderboard.desk.auth)."""

    host: str = "127.0.0.1"
    port: int = 8080
    desk_api: bool = False
    desk_answer_wait_s: float = 3.0  # how long a desk action waits for the tables' verdicts
    # how long a request's body may pause before it is answered 408 (D407)
    body_wait_s: float = 5.0
    tls_cert_file: Path | None = None  # HTTPS: the certificate (chain) the service presents
    tls_key_file: Path | None = None

    @property
    def uses_tls(self) -> bool:
        """True when the page and the desk API are served over HTTPS."""
        return self.tls_cert_file is not None

    @property
    def url(self) -> str:
        """The base URL people open (https when TLS is configured)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.uses_tls else 'http'}://{host}:{self.port}/"


@dataclass(frozen=True, slots=True, kw_only=True)
class PageConfig:
    """What the page shows: how many rows, its title, how patrons are named, when its
    connection indicator calls the data stale, and how long a room screen shows each page."""

    rows: int = 20
    title: str | None = None  # None: the venue name from the tournament settings
    names: NameMode = "entry_code"
    stale_after_s: float = 300.0  # no message from any table for this long: "no data since"
    page_seconds: float = 10.0  # a room screen's rows that do not fit: the next page after


# ---- issue 33 (certifier): records' retention and the seat draw's commitment --------------
REGULATION_YEARS: Final = 3  # Consumer Protection Act, regulation 11: records kept 3 years


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionConfig:
    """How long the promotion's records are kept ([retention], D381), and how long a seat
    draw's commitment may be used ([draw], D380)."""

    records_years: int = REGULATION_YEARS  # the database's records: never purged sooner
    backups_years: int = REGULATION_YEARS  # a backup younger than this is never pruned
    commitment_minutes: int = 30

    @property
    def backups_days(self) -> int:
        """The backups' retention in days (a year counted as 366 days, never too short)."""
        return self.backups_years * 366


def _retention(r: _Reader, t: Mapping[str, Any], d: Mapping[str, Any]) -> RetentionConfig:
    def years(v: int) -> str | None:
        return None if 1 <= v <= 100 else "must be 1..100 (years)"

    return RetentionConfig(
        records_years=r.get("retention", t, "records_years", int, REGULATION_YEARS,
                            check=years),
        backups_years=r.get("retention", t, "backups_years", int, REGULATION_YEARS,
                            check=years),
        commitment_minutes=r.get("draw", d, "commitment_minutes", int, 30,
                                 check=lambda v: None if 1 <= v <= 1440
                                 else "must be 1..1440 (minutes)"))
# ---- end of issue 33 (certifier) ----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderboardConfig:
    """Everything `showdown leaderboard serve` needs to start."""

    source: str
    venue: str
    database: str
    tournament: Path | None
    topic_root: str
    mqtt: ServiceMqttConfig
    signing_key: Path
    tables: Mapping[str, str]  # enrolled table id -> base64 public key
    http: HttpConfig
    page: PageConfig
    desk_auth: AuthPolicy = field(default_factory=AuthPolicy)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    audit: AuditSettings = field(default_factory=AuditSettings)
    debounce_seconds: float = 0.15
    instance: str = ""  # this instance's name in the central lease (empty: the host name)
    lease_s: float = 5.0  # the central lease's period (leaderboard.central_lease)
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: str = "info"

    def keyring(self) -> KeyRing:
        """The enrolled tables' public keys (what ingest verifies against)."""
        return KeyRing.from_mapping(self.tables)


_SECTIONS: Final[dict[str, set[str]]] = {
    "service": {"venue", "database", "tournament", "topic_root", "debounce_seconds",
                "instance", "lease_s"},
    "mqtt": {"broker", "brokers", "credentials_file", "client_id", "username", "password_file",
             "tls", "ca_file", "cert_file", "key_file", "shared_group", "keepalive_s"},
    "keys": {"signing_key", "tables", "tables_file"},
    "http": {"host", "port", "desk_api", "desk_token_file", "desk_answer_wait_s",
             "body_wait_s", "tls_cert_file", "tls_key_file"},
    "page": {"rows", "title", "names", "stale_after_s", "page_seconds"},
    "desk_auth": set(AUTH_KEYS),
    "audit": set(AUDIT_KEYS),
    "log": {"format", "level"},
    "retention": {"records_years", "backups_years"},
    "draw": {"commitment_minutes"},
}


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str, base: Path) -> None:
        self.data, self.source, self.base = data, source, base
        unknown = sorted(set(data) - set(_SECTIONS))
        if unknown:
            raise ConfigError(source, unknown[0],
                              f"unknown section (known: {', '.join(sorted(_SECTIONS))})")

    def fail(self, key: str, reason: str) -> ConfigError:
        return ConfigError(self.source, key, reason)

    def section(self, name: str, *, required: bool = False) -> dict[str, Any]:
        value = self.data.get(name)
        if value is None:
            if required:
                raise self.fail(f"[{name}]", "section missing")
            return {}
        if not isinstance(value, dict):
            raise self.fail(name, f"must be a table [{name}]")
        unknown = sorted(set(value) - _SECTIONS[name])
        if unknown:
            raise self.fail(f"{name}.{unknown[0]}",
                            f"unknown key (known: {', '.join(sorted(_SECTIONS[name]))})")
        return value

    def get(self, sec: str, d: Mapping[str, Any], key: str, kind: type[T],
            default: T | None = None, *, check: Callable[[T], str | None] | None = None) -> T:
        if key not in d:
            if default is None:
                raise self.fail(f"{sec}.{key}", "missing")
            return default
        value = d[key]
        ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise self.fail(f"{sec}.{key}",
                            f"expected {_kind_name(kind)}, got {type(value).__name__}")
        if check is not None and (why := check(value)):
            raise self.fail(f"{sec}.{key}", why)
        return value  # type: ignore[no-any-return]

    def optional_text(self, sec: str, d: Mapping[str, Any], key: str) -> str | None:
        if key not in d:
            return None
        return self.get(sec, d, key, str, check=lambda v: None if v.strip()
                        else "must not be empty (leave the key out instead)").strip()

    def path(self, sec: str, d: Mapping[str, Any], key: str) -> Path | None:
        text = self.optional_text(sec, d, key)
        if text is None:
            return None
        return config_path(text, self.base)  # no resolve(): a symlink loop is reported
        # when the file is opened, naming its key


def _kind_name(kind: type) -> str:
    return {str: "text", int: "a whole number", float: "a number", bool: "true or false",
            dict: "a table"}.get(kind, kind.__name__)


def _ident(value: str) -> str | None:
    return None if ID_PATTERN.fullmatch(value) else "use 1 to 64 of a-z, 0-9 and '-'"


def _mqtt(r: _Reader, m: Mapping[str, Any], venue: str) -> ServiceMqttConfig:
    creds_path = r.path("mqtt", m, "credentials_file")
    creds = read_credentials(creds_path, source=r.source) if creds_path is not None else {}
    brokers = parse_brokers(m, source=r.source)
    if brokers is None and "host" in creds and "port" in creds:
        brokers = ((creds["host"], creds["port"]),)
    if not brokers:
        raise r.fail("mqtt.broker", 'missing: "host:port" of the venue broker, brokers ='
                                    ' ["host:port", ...] of a cluster, or a credentials_file'
                                    " that names host and port")
    (host, port), *failover = brokers
    group = r.optional_text("mqtt", m, "shared_group")
    if group is not None and _ident(group):
        raise r.fail("mqtt.shared_group", "use 1 to 64 of a-z, 0-9 and '-'")
    password_file = r.path("mqtt", m, "password_file")
    password: str | None = creds.get("password")
    if password_file is not None:
        try:
            password = password_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise r.fail("mqtt.password_file",
                         f"cannot read {password_file}: {getattr(exc, 'strerror', None) or exc}"
                         ) from None
    username = r.optional_text("mqtt", m, "username") or creds.get("username")

    def file(name: str) -> Path | None:
        given = r.path("mqtt", m, name)
        return given if given is not None else (Path(creds[name]) if name in creds else None)

    mqtt = ServiceMqttConfig(
        host=host, port=port,
        client_id=r.get("mqtt", m, "client_id", str, username or f"leaderboard-{venue}",
                        check=_ident),
        username=username, password=password,
        tls=r.get("mqtt", m, "tls", bool, bool(creds.get("tls", False))),
        ca_file=file("ca_file"), cert_file=file("cert_file"), key_file=file("key_file"),
        shared_group=group, failover=tuple(failover),
        keepalive_s=r.get("mqtt", m, "keepalive_s", int, KEEPALIVE_DEFAULT_S,
                          check=keepalive_problem),
    )
    if mqtt.password is not None and mqtt.username is None:
        raise r.fail("mqtt.password_file", "a password is given without mqtt.username")
    if mqtt.key_file is not None and mqtt.cert_file is None:
        raise r.fail("mqtt.key_file", "given without mqtt.cert_file")
    return mqtt


def _tables(r: _Reader, k: Mapping[str, Any]) -> dict[str, str]:
    tables: dict[str, str] = {}
    inline = k.get("tables", {})
    if not isinstance(inline, dict):
        raise r.fail("keys.tables", 'must be a table of table id = "base64 public key"')
    for table_id, text in inline.items():
        key = f"keys.tables.{table_id}"
        if not isinstance(text, str):
            raise r.fail(key, f"expected the base64 public key as text, got {type(text).__name__}")
        try:
            tables[table_id] = parse_public_key(table_id, text).base64
        except KeyFormatError as exc:
            raise r.fail(key, str(exc)) from None
    path = r.path("keys", k, "tables_file")
    if path is not None:
        try:
            ring = KeyRing.load(path)
        except OSError as exc:
            raise r.fail("keys.tables_file", f"cannot read {path}: {exc.strerror or exc}"
                         ) from None
        except (KeyFormatError, UnicodeDecodeError) as exc:
            raise r.fail("keys.tables_file", str(exc)) from None
        for public in ring:
            known = tables.get(public.key_id)
            if known is not None and known != public.base64:
                raise r.fail("keys.tables_file",
                             f"table {public.key_id!r} is enrolled in {path} with another key"
                             " than in [keys.tables]")
            tables[public.key_id] = public.base64
    if not tables:
        raise r.fail("keys.tables",
                     "no table is enrolled: list them in [keys.tables] (id = \"base64\") or"
                     " name an enrolment file in keys.tables_file")
    return tables


def is_loopback(host: str) -> bool:
    """True for an address or name that only this machine can reach."""
    if host.strip("[]").lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to the LAN


def _http_tls(r: _Reader, h: Mapping[str, Any], http: HttpConfig) -> HttpConfig:
    """The [http] TLS files (both or neither, readable); the desk API off the loopback
    needs them, since staff passphrases and session tokens would cross the LAN in clear."""
    cert, key = r.path("http", h, "tls_cert_file"), r.path("http", h, "tls_key_file")
    if (cert is None) != (key is None):
        missing = "http.tls_key_file" if key is None else "http.tls_cert_file"
        raise r.fail(missing, "HTTPS needs both tls_cert_file and tls_key_file")
    for name, path in (("http.tls_cert_file", cert), ("http.tls_key_file", key)):
        if path is not None and not path.is_file():
            raise r.fail(name, f"no such file {path}")
    if cert is not None and key is not None:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise r.fail("http.tls_cert_file", f"cannot load {cert} with {key}: "
                         f"{exc.strerror or exc}") from None
    elif http.desk_api and not is_loopback(http.host):
        raise r.fail("http.host", f"the desk API on {http.host!r} (beyond this machine) needs"
                     " HTTPS: set http.tls_cert_file and http.tls_key_file (a certificate of"
                     " the venue CA: `showdown install central`), or serve on 127.0.0.1")
    return replace(http, tls_cert_file=cert, tls_key_file=key)


def parse_leaderboard_config(data: Mapping[str, Any], *, source: str,
                             base: Path) -> LeaderboardConfig:
    """Validate a parsed TOML document into a LeaderboardConfig (ConfigError names the key)."""
    r = _Reader(data, source, base)
    s = r.section("service", required=True)
    m = r.section("mqtt", required=True)
    k = r.section("keys", required=True)
    h = r.section("http")
    p = r.section("page")
    lg = r.section("log")
    venue = r.get("service", s, "venue", str, check=_ident)
    root = r.get("service", s, "topic_root", str, DEFAULT_ROOT)
    try:
        validate_root(root)
    except TopicError as exc:
        raise r.fail("service.topic_root", str(exc)) from None
    database = config_database_url(r.get(
        "service", s, "database", str, DEFAULT_DATABASE,
        check=lambda v: None if "://" in v else
        'a SQLAlchemy URL such as "sqlite:////var/lib/showdown-leaderboard/'
        'leaderboard.sqlite3" or "postgresql+psycopg://user@host/db"'), base)
    mqtt = _mqtt(r, m, venue)
    signing_key = r.path("keys", k, "signing_key")
    if signing_key is None:
        raise r.fail("keys.signing_key", "missing: the leaderboard's private key file"
                     " (`showdown keys generate --out leaderboard.key`)")
    http = HttpConfig(
        host=r.get("http", h, "host", str, "127.0.0.1",
                   check=lambda v: None if v.strip() else "must not be empty"),
        port=r.get("http", h, "port", int, 8080,
                   check=lambda v: None if 0 <= v <= 65535 else "must be 0..65535 (0 = any)"),
        desk_api=r.get("http", h, "desk_api", bool, False),
        desk_answer_wait_s=r.get("http", h, "desk_answer_wait_s", float, 3.0,
                                 check=lambda v: None if 0 <= v <= 30 else "must be 0..30"),
        body_wait_s=r.get("http", h, "body_wait_s", float, 5.0,
                          check=lambda v: None if 0.5 <= v <= 300 else "must be 0.5..300"),
    )
    if "desk_token_file" in h:
        raise r.fail("http.desk_token_file", _SIGN_IN_PER_PERSON)
    http = _http_tls(r, h, http)
    names = r.get("page", p, "names", str, "entry_code",
                  check=lambda v: None if v in NAME_MODES or v in _OLD_NAME_MODES
                  else f"must be one of {', '.join(NAME_MODES)}")
    page = PageConfig(
        rows=r.get("page", p, "rows", int, 20,
                   check=lambda v: None if 1 <= v <= 200 else "must be 1..200"),
        title=r.optional_text("page", p, "title"),
        names=_OLD_NAME_MODES.get(names, names),  # type: ignore[arg-type]
        stale_after_s=r.get("page", p, "stale_after_s", float, 300.0,
                            check=lambda v: None if 10 <= v <= 86_400 else "must be 10..86400"),
        page_seconds=r.get("page", p, "page_seconds", float, 10.0,
                           check=lambda v: None if 3 <= v <= 600 else "must be 3..600"),
    )
    fmt = r.get("log", lg, "format", str, "auto",
                check=lambda v: None if v in ("auto", "json", "console")
                else "must be auto, json or console")
    return LeaderboardConfig(
        source=source, venue=venue, database=database,
        tournament=r.path("service", s, "tournament"), topic_root=root, mqtt=mqtt,
        signing_key=signing_key, tables=_tables(r, k), http=http, page=page,
        desk_auth=parse_auth_policy(r.section("desk_auth"), source=source,
                                    section="desk_auth"),
        retention=_retention(r, r.section("retention"), r.section("draw")),
        audit=parse_audit_settings(r.section("audit"), source=source),
        debounce_seconds=r.get("service", s, "debounce_seconds", float, 0.15,
                               check=lambda v: None if 0 <= v <= 60 else "must be 0..60"),
        instance=r.get("service", s, "instance", str, "",
                       check=lambda v: None if len(v) <= 100 and v.isprintable()
                       else "must be a printable name of at most 100 characters"),
        lease_s=r.get("service", s, "lease_s", float, 5.0,
                      check=lambda v: None if 1 <= v <= 60 else "must be 1..60"),
        log_format=fmt,  # type: ignore[arg-type]
        log_level=r.get("log", lg, "level", str, "info",
                        check=lambda v: None if v.lower() in
                        ("debug", "info", "warning", "error", "critical")
                        else "must be debug, info, warning, error or critical"),
    )


def read_leaderboard_config(path: Path) -> LeaderboardConfig:
    """Read and validate a leaderboard config file; errors name the file and key."""
    data = load_toml(Path(path))
    return parse_leaderboard_config(data, source=str(path), base=Path(path).resolve().parent)
