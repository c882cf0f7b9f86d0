"""Mosquitto configuration for a venue: listener, per-client ACL and password file (pure).

Three kinds of client connect to the venue's broker, each with username = client id:

- a table (its table id, e.g. ``t01``) writes only its own ``status``, ``events`` and
  ``scores`` and reads only its own ``cmd``;
- ``leaderboard`` reads every table's ``status``, ``events`` and ``scores``, writes every
  table's ``cmd`` (resend requests) and writes the venue's ``standings``;
- ``desk`` (the registration desk) writes every table's ``cmd`` and reads what answers it:
  every table's ``status``, ``events`` (command rejections) and ``scores`` (to acknowledge
  them), and the ``standings``.

Nobody else may do anything: anonymous clients are refused, and whatever the ACL does not
grant is denied. The table rights are ``pattern`` lines with ``%u`` (the authenticated
username), so adding a table needs only a password (or a certificate), not an ACL change.
Patterns apply to every user, so ``leaderboard`` and ``desk`` cannot be table ids and are
explicitly denied the table topics named after themselves. ``use_username_as_clientid``
stops one client from taking over another's session by claiming its client id.

Password hashes use Mosquitto's PBKDF2-HMAC-SHA512 format
``$7$<iterations>$<base64 salt>$<base64 hash>`` (12-byte salt and 64-byte hash, as
``mosquitto_passwd`` writes them). Everything here is pure: salts and passwords come in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from deploy.broker_acl import DESK_CLIENT, LEADERBOARD_CLIENT, venue_acl
from game.errors import ConfigError
from wire.topics import DEFAULT_ROOT, TopicError, validate_id, validate_root

__all__ = [
    "DEFAULT_ITERATIONS",
    "DEFAULT_PERSISTENCE_DIR",
    "DESK_CLIENT",
    "LEADERBOARD_CLIENT",
    "RESERVED_CLIENTS",
    "SALT_BYTES",
    "BrokerSettings",
    "TlsSettings",
    "acl_file",
    "clients",
    "credentials_toml",
    "hash_password",
    "listener_config",
    "parse_password_file",
    "password_file",
    "verify_password",
]

RESERVED_CLIENTS: Final = frozenset({LEADERBOARD_CLIENT, DESK_CLIENT})
# Mosquitto 2.1's own default; every password we generate is 256 random bits, which no
# iteration count could make stronger, while each CONNECT costs the (single-threaded) broker
# one hash: 1000 iterations is about a millisecond, so a venue reconnecting at once is cheap.
DEFAULT_ITERATIONS: Final = 1000
SALT_BYTES: Final = 12  # what mosquitto_passwd uses
HASH_BYTES: Final = 64  # SHA-512
DEFAULT_PERSISTENCE_DIR: Final = "/var/lib/mosquitto/"
PLAIN_PORT: Final = 1883
TLS_PORT: Final = 8883
TLS_VERSIONS: Final = ("tlsv1.2", "tlsv1.3")
_SOURCE: Final = "broker config"
_HASH_PREFIX: Final = "$7$"


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSettings:
    """TLS for the listener; paths are where the files live on the broker's host."""

    cafile: str
    certfile: str
    keyfile: str
    require_certificate: bool = False
    use_identity_as_username: bool = False
    tls_version: str = "tlsv1.2"

    def __post_init__(self) -> None:
        for key in ("cafile", "certfile", "keyfile"):
            _check_path(key, getattr(self, key))
        if self.use_identity_as_username and not self.require_certificate:
            raise ConfigError(_SOURCE, "use_identity_as_username",
                              "needs require_certificate (the identity is the client certificate)")
        if self.tls_version not in TLS_VERSIONS:
            raise ConfigError(_SOURCE, "tls_version",
                              f"must be one of {', '.join(TLS_VERSIONS)}, got {self.tls_version!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerSettings:
    """What the venue's broker serves and where its files are on the broker's host."""

    venue: str
    tables: tuple[str, ...]
    acl_path: str
    password_path: str
    port: int | None = None  # None: 8883 with TLS, 1883 without
    bind_address: str | None = None  # None: every interface
    persistence_dir: str = DEFAULT_PERSISTENCE_DIR
    tls: TlsSettings | None = None
    root: str = DEFAULT_ROOT
    run_as_user: str | None = None  # Mosquitto's `user` (when started as root); None: its default
    autosave_interval_s: int = 60
    max_queued_messages: int = 10_000
    persistent_client_expiration: str = "14d"

    def __post_init__(self) -> None:
        _checked_id("venue", self.venue)
        if not self.tables:
            raise ConfigError(_SOURCE, "tables", "name at least one table")
        seen: set[str] = set()
        for table in self.tables:
            _checked_id("tables", table)
            if table in RESERVED_CLIENTS:
                raise ConfigError(_SOURCE, "tables",
                                  f"{table!r} is reserved for the {table} client; rename the table")
            if table in seen:
                raise ConfigError(_SOURCE, "tables", f"table {table!r} is listed twice")
            seen.add(table)
        try:
            validate_root(self.root)
        except TopicError as exc:
            raise ConfigError(_SOURCE, "root", str(exc)) from None
        if self.port is not None and not 1 <= self.port <= 65535:
            raise ConfigError(_SOURCE, "port", f"must be 1..65535, got {self.port}")
        if self.bind_address is not None:
            _check_word("bind_address", self.bind_address)
        _check_path("acl_path", self.acl_path)
        if self.uses_passwords:
            _check_path("password_path", self.password_path)
        _check_path("persistence_dir", self.persistence_dir)
        if not self.persistence_dir.endswith("/"):
            # Mosquitto appends the file name to persistence_location as it is.
            raise ConfigError(_SOURCE, "persistence_dir", "must end with '/'")
        if self.run_as_user is not None:
            _check_word("run_as_user", self.run_as_user)
        if self.autosave_interval_s < 1:
            raise ConfigError(_SOURCE, "autosave_interval_s", "must be at least 1")
        if self.max_queued_messages < 1:
            raise ConfigError(_SOURCE, "max_queued_messages", "must be at least 1")
        _check_word("persistent_client_expiration", self.persistent_client_expiration)

    @property
    def listen_port(self) -> int:
        """The port the listener uses."""
        if self.port is not None:
            return self.port
        return TLS_PORT if self.tls is not None else PLAIN_PORT

    @property
    def uses_passwords(self) -> bool:
        """False when client certificates are the identity (no password file at all)."""
        return not (self.tls is not None and self.tls.use_identity_as_username)

    @property
    def venue_prefix(self) -> str:
        """``{root}/{venue}``."""
        return f"{self.root}/{self.venue}"


def clients(settings: BrokerSettings) -> tuple[str, ...]:
    """Every client that gets credentials: the leaderboard, the desk, then the tables."""
    return (LEADERBOARD_CLIENT, DESK_CLIENT, *settings.tables)


def listener_config(settings: BrokerSettings) -> str:
    """The text of ``mosquitto.conf`` for the venue: a complete file for ``mosquitto -c``."""
    s = settings
    listener = f"listener {s.listen_port}" + (f" {s.bind_address}" if s.bind_address else "")
    lines = [
        f"# Mosquitto for showdown venue {s.venue!r}: written by `showdown broker config`.",
        "# Regenerate rather than edit; see config/mosquitto/README.md. A complete file for",
        "# `mosquitto -c`, not a conf.d drop-in: Debian's main mosquitto.conf also sets",
        "# persistence_location, and Mosquitto refuses the duplicate. Logs go to stderr.",
        "",
        "# One set of security settings for the whole broker.",
        "per_listener_settings false",
        "allow_anonymous false",
    ]
    if s.uses_passwords:
        lines.append(f"password_file {s.password_path}")
    lines += [
        f"acl_file {s.acl_path}",
        "",
        "# Keep sessions and queued QoS 1 messages across a broker restart; save every "
        f"{s.autosave_interval_s} s",
        "# (Mosquitto's default is 30 minutes). Tables resend from their journals anyway.",
        "persistence true",
        f"persistence_location {s.persistence_dir}",
        f"autosave_interval {s.autosave_interval_s}",
        f"max_queued_messages {s.max_queued_messages}",
        f"persistent_client_expiration {s.persistent_client_expiration}",
    ]
    if s.run_as_user is not None:
        lines.append(f"user {s.run_as_user}")
    lines += [
        "",
        listener,
        "protocol mqtt",
        "# The client id is the username: nobody can take over another client's session.",
        "use_username_as_clientid true",
    ]
    if s.tls is not None:
        t = s.tls
        lines += [
            f"cafile {t.cafile}",
            f"certfile {t.certfile}",
            f"keyfile {t.keyfile}",
            f"tls_version {t.tls_version}",
            f"require_certificate {_bool(t.require_certificate)}",
        ]
        if t.use_identity_as_username:
            lines += [
                "# The certificate's CN is the username (and the client id). Any CA in cafile",
                "# can mint clients: keep cafile to the venue's own CA.",
                "use_identity_as_username true",
            ]
    return "\n".join(lines) + "\n"


def acl_file(settings: BrokerSettings) -> str:
    """The text of the ACL file, rendered from deploy.broker_acl: table patterns (``%u``),
    then the leaderboard's and the desk's rights."""
    lines = [
        f"# Mosquitto ACL for showdown venue {settings.venue!r}: written by "
        "`showdown broker config`.",
        "# Whatever is not granted here is denied; anonymous clients are refused outright.",
        f"# Tables: {', '.join(settings.tables)}",
    ]
    for rights in venue_acl(settings.venue_prefix):
        lines += ["", f"# {rights.comment}"]
        if rights.client is None:
            lines += [f"pattern {g.access} {g.for_table('%u').topic}" for g in rights.grants]
        else:
            lines.append(f"user {rights.client}")
            lines += [f"topic {g.access} {g.topic}" for g in rights.grants]
    return "\n".join(lines) + "\n"


def hash_password(password: str, *, salt: bytes, iterations: int = DEFAULT_ITERATIONS) -> str:
    """Mosquitto's PBKDF2-SHA512 hash of ``password``: ``$7$<iter>$<b64 salt>$<b64 hash>``."""
    if not password:
        raise ConfigError(_SOURCE, "password", "must not be empty")
    if len(salt) != SALT_BYTES:
        raise ConfigError(_SOURCE, "salt", f"must be {SALT_BYTES} bytes, got {len(salt)}")
    if iterations < 1:
        raise ConfigError(_SOURCE, "iterations", f"must be at least 1, got {iterations}")
    digest = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations)
    return f"{_HASH_PREFIX}{iterations}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, hashed: str) -> bool:
    """True if ``password`` matches a ``$7$`` hash (constant-time comparison)."""
    iterations, salt, digest = _split_hash(hashed)
    candidate = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations)
    return hmac.compare_digest(candidate, digest)


def password_file(hashes: Mapping[str, str]) -> str:
    """The password file: one ``username:hash`` line per client, in the order given."""
    lines = []
    for username, hashed in hashes.items():
        _checked_client(username)
        _split_hash(hashed)
        lines.append(f"{username}:{hashed}")
    return "\n".join(lines) + "\n"


def parse_password_file(text: str) -> dict[str, str]:
    """Read a password file back into ``{username: hash}`` (only ``$7$`` hashes are kept)."""
    return parse_hash_lines(text, _split_hash)


def parse_hash_lines(text: str, check: Callable[[str], object]) -> dict[str, str]:
    """``{username: hash}`` from ``username:hash`` lines (blank and ``#`` lines skipped);
    ``check(hash)`` raises ConfigError for a hash of the wrong kind. A bad line is a
    ConfigError naming its number."""
    hashes: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        username, sep, hashed = line.partition(":")
        key = f"password file line {number}"
        if not sep or not username:
            raise ConfigError(_SOURCE, key, "expected 'username:hash'")
        try:
            check(hashed)
        except ConfigError as exc:
            raise ConfigError(_SOURCE, key, exc.reason) from None
        if username in hashes:
            raise ConfigError(_SOURCE, key, f"user {username!r} appears twice")
        hashes[username] = hashed
    return hashes


def credentials_toml(
    client: str, password: str | None, settings: BrokerSettings, host: str | None = None
) -> str:
    """A client's connection settings as a TOML ``[mqtt]`` table (secret: keep it 0600)."""
    _checked_client(client)
    lines = [
        f"# MQTT credentials of {client!r} at venue {settings.venue!r}, written by "
        "`showdown broker config`.",
        "# Secret: keep this file mode 0600 (or 0640 root:showdown) on the client's machine.",
        "[mqtt]",
        f"host = {_toml_str(host)}" if host else '# host = "the broker\'s address"',
        f"port = {settings.listen_port}",
        f"username = {_toml_str(client)}",
    ]
    if password is not None:
        lines.append(f"password = {_toml_str(password)}")
    if settings.tls is not None:
        lines += [
            "tls = true",
            "# ca_file = \"/etc/showdown/venue-ca.pem\"   (the CA that signed the broker)",
        ]
        if settings.tls.require_certificate:
            lines += [
                f"# cert_file = \"/etc/showdown/{client}.crt\"   (certificate with CN={client})",
                f"# key_file = \"/etc/showdown/{client}.key\"",
            ]
    return "\n".join(lines) + "\n"


def _split_hash(hashed: str) -> tuple[int, bytes, bytes]:
    parts = hashed.split("$")
    # "$7$iter$salt$hash" splits into "", "7", iter, salt, hash.
    if len(parts) != 5 or parts[0] != "" or parts[1] != "7":
        raise ConfigError(_SOURCE, "password hash",
                          "expected Mosquitto's '$7$<iterations>$<salt>$<hash>'")
    iter_text, salt_text, hash_text = parts[2:]
    if not (iter_text.isascii() and iter_text.isdigit()) or int(iter_text) < 1:
        raise ConfigError(_SOURCE, "password hash", f"bad iteration count {iter_text!r}")
    try:
        salt = base64.b64decode(salt_text, validate=True)
        digest = base64.b64decode(hash_text, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(_SOURCE, "password hash", "salt or hash is not base64") from None
    if not salt:
        raise ConfigError(_SOURCE, "password hash", "empty salt")
    if len(digest) != HASH_BYTES:
        raise ConfigError(_SOURCE, "password hash",
                          f"hash must be {HASH_BYTES} bytes, got {len(digest)}")
    return int(iter_text), salt, digest


def _checked_id(key: str, value: str) -> str:
    try:
        return validate_id(key.rstrip("s"), value)
    except TopicError as exc:
        raise ConfigError(_SOURCE, key, str(exc)) from None


def _checked_client(client: str) -> str:
    return _checked_id("client", client)


def _check_path(key: str, value: str) -> None:
    if not value.startswith("/"):
        raise ConfigError(_SOURCE, key, f"must be an absolute path, got {value!r}")
    _check_word(key, value)


def _check_word(key: str, value: str) -> None:
    # Mosquitto reads one value per line up to the end: no spaces, no line breaks.
    if not value or any(ch.isspace() for ch in value) or "\0" in value:
        raise ConfigError(_SOURCE, key, f"must be one word without spaces, got {value!r}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _toml_str(value: str) -> str:
    if not (value.isascii() and value.isprintable()):
        raise ConfigError(_SOURCE, "credentials", f"{value!r} must be printable ASCII")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
