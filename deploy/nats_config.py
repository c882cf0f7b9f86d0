"""NATS cluster configuration for a venue's MQTT: users' permissions and each node's file (pure).

The same rights as Mosquitto's ACL (deploy.broker_acl), as NATS user permissions: NATS maps an
MQTT topic to a subject (``showdown/v1/v/tables/t01/events`` is ``showdown.v1.v.tables.t01.
events``, ``+`` is ``*``, ``#`` is ``>``). NATS has no ``%u`` pattern, so each table is a user
of its own. Every user may connect only over MQTT (``allowed_connection_types``), there is no
``no_auth_user`` (anonymous CONNECTs are refused) and passwords are bcrypt hashes (D392;
a table may claim another's client id and disconnect it, but read nothing: D393).

What an MQTT user needs besides its topics (nats-server 2.9, server/mqtt.go): a QoS 1
subscription is a JetStream consumer delivering to ``$MQTT.sub.<nuid>``, a subscription the
server makes *with the user's permissions*, so every user that reads may subscribe to
``$MQTT.sub.>`` (an MQTT client cannot subscribe to that prefix itself: the server refuses it
in the SUBSCRIBE). Storing QoS 1 and retained messages, sessions and acknowledgements go
through the account's internal client and need nothing. A publish the permissions refuse is
dropped and never stored or retained.

Each node's file has its ``server_name``, JetStream, the cluster block (routes authenticated
with a shared route password, so no other host can join and read every message) and the MQTT
listener (TLS with the venue's CA, the MQTT streams replicated on every node); it includes the
venue's ``nats-auth.conf``, the same on every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from deploy.broker_acl import Grant, venue_acl
from deploy.broker_config import BrokerSettings, clients, parse_hash_lines
from game.errors import ConfigError

__all__ = [
    "AUTH_FILE",
    "BCRYPT_COST",
    "DEFAULT_STORE_DIR",
    "MONITOR_PORT",
    "MQTT_DELIVERY",
    "ROUTE_USER",
    "NatsNode",
    "NatsSettings",
    "bcrypt_hash",
    "mqtt_subject",
    "nats_auth",
    "nats_password_file",
    "nats_permissions",
    "node_config",
    "parse_nats_password_file",
]

AUTH_FILE: Final = "nats-auth.conf"
DEFAULT_STORE_DIR: Final = "/var/lib/nats"
MONITOR_PORT: Final = 8222
# Every password is 256 random bits, which no cost could make stronger; each CONNECT costs
# a node one hash (cost 10: tens of milliseconds), so a floor reconnecting at once is cheap.
BCRYPT_COST: Final = 10
MQTT_DELIVERY: Final = "$MQTT.sub.>"  # the deliver subjects of a user's QoS 1 subscriptions
ROUTE_USER: Final = "route"
_SOURCE: Final = "broker config"
_BCRYPT_PREFIXES: Final = ("$2a$", "$2b$", "$2y$")


@dataclass(frozen=True, slots=True, kw_only=True)
class NatsNode:
    """One node: its name and where it listens (MQTT and routes on ``host``)."""

    name: str
    host: str
    mqtt_port: int | None = None  # None: the venue's port (8883 with TLS, 1883 without)
    cluster_port: int = 6222
    client_port: int = 4222  # NATS protocol: no user may use it, so loopback only
    monitor: str = f"127.0.0.1:{MONITOR_PORT}"  # /healthz, /jsz (doctor --broker-monitor)
    store_dir: str = DEFAULT_STORE_DIR

    def __post_init__(self) -> None:
        _check_word("nodes", self.name)
        _check_word("nodes", self.host)
        _check_word("nodes", self.monitor)
        for key in ("mqtt_port", "cluster_port", "client_port"):
            port = getattr(self, key)
            if port is not None and not 1 <= port <= 65535:
                raise ConfigError(_SOURCE, key, f"must be 1..65535, got {port}")
        if not self.store_dir.startswith("/"):
            raise ConfigError(_SOURCE, "store_dir",
                              f"must be an absolute path, got {self.store_dir!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class NatsSettings:
    """The venue (its tables, TLS files, topic root) and the cluster's nodes."""

    broker: BrokerSettings
    nodes: tuple[NatsNode, ...]
    max_file: str = "10GB"

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ConfigError(_SOURCE, "nodes", "name at least one node")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ConfigError(_SOURCE, "nodes", "two nodes have the same name")
        if any(ch in self.broker.root for ch in ". *>"):
            raise ConfigError(_SOURCE, "root", f"{self.broker.root!r}: a NATS topic root may"
                              " not contain '.', spaces, '*' or '>'")
        if self.broker.tls is not None and self.broker.tls.use_identity_as_username:
            raise ConfigError(_SOURCE, "use_identity_as_username",
                              "not supported with NATS: clients log in with passwords")
        _check_word("max_file", self.max_file)

    @property
    def cluster_name(self) -> str:
        """The cluster's name: ``showdown-<venue>``."""
        return f"showdown-{self.broker.venue}"


def mqtt_subject(topic: str) -> str:
    """The NATS subject of an MQTT topic or filter (``/`` -> ``.``, ``+`` -> ``*``,
    ``#`` -> ``>``)."""
    return ".".join({"+": "*", "#": ">"}.get(level, level) for level in topic.split("/"))


def bcrypt_hash(password: str, salt: bytes) -> str:
    """The bcrypt hash of ``password`` with ``salt`` (from ``bcrypt.gensalt``), as NATS reads
    it."""
    import bcrypt  # noqa: PLC0415  (only `broker config --kind nats` needs it)

    if not password:
        raise ConfigError(_SOURCE, "password", "must not be empty")
    return bcrypt.hashpw(password.encode("utf-8"), salt).decode("ascii")


def nats_auth(settings: NatsSettings, hashes: Mapping[str, str]) -> str:
    """The ``authorization`` block every node includes: one user per client, its bcrypt hash
    and its permissions, MQTT connections only."""
    everyone = clients(settings.broker)
    missing = [c for c in everyone if c not in hashes]
    if missing:
        raise ConfigError(_SOURCE, "passwords", f"no password hash for {', '.join(missing)}")
    permissions = nats_permissions(settings)
    lines = [
        f"# NATS users of showdown venue {settings.broker.venue!r}: written by "
        "`showdown broker config --kind nats`.",
        "# The same rights as the Mosquitto ACL (deploy/broker_acl.py). No no_auth_user:",
        "# anonymous CONNECTs are refused. Include it from every node's config.",
        "authorization {",
        "  users: [",
    ]
    for client in everyone:
        _check_hash(client, hashes[client])
        lines += _user(client, hashes[client], permissions[client])
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def nats_permissions(settings: NatsSettings) -> dict[str, dict[str, dict[str, list[str]]]]:
    """Every client's NATS permissions: ``{client: {"publish"|"subscribe": {"allow": [...],
    "deny": [...]}}}``, from deploy.broker_acl (a table's with its own id)."""
    rights = venue_acl(settings.broker.venue_prefix)
    table = next(r for r in rights if r.client is None)
    by_client = {r.client: r.grants for r in rights if r.client is not None}
    result = {}
    for client in clients(settings.broker):
        grants = by_client.get(client) or tuple(g.for_table(client) for g in table.grants)
        result[client] = _permissions(grants)
    return result


def _permissions(grants: tuple[Grant, ...]) -> dict[str, dict[str, list[str]]]:
    publish = [mqtt_subject(g.topic) for g in grants if g.access == "write"]
    subscribe = [mqtt_subject(g.topic) for g in grants if g.access == "read"]
    deny = [mqtt_subject(g.topic) for g in grants if g.access == "deny"]
    if subscribe:
        subscribe.append(MQTT_DELIVERY)
    return {"publish": {"allow": publish, "deny": deny},
            "subscribe": {"allow": subscribe, "deny": list(deny)}}


def _user(client: str, hashed: str, permissions: dict[str, dict[str, list[str]]]
          ) -> list[str]:
    def side(name: str) -> str:
        allow, deny = permissions[name]["allow"], permissions[name]["deny"]
        return f"        {name}: {{ allow: {_list(allow)}{_deny(deny)} }}"

    return [
        "    {",
        f"      user: {_q(client)}",
        f"      password: {_q(hashed)}",
        '      allowed_connection_types: ["MQTT"]',
        "      permissions: {",
        side("publish"),
        side("subscribe"),
        "      }",
        "    }",
    ]


def node_config(settings: NatsSettings, node: NatsNode, route_password: str) -> str:
    """The text of one node's config for ``nats-server -c`` (it includes :data:`AUTH_FILE`,
    kept beside it)."""
    if node not in settings.nodes:
        raise ConfigError(_SOURCE, "nodes", f"{node.name!r} is not a node of the cluster")
    if not route_password or any(not (ch.isalnum() or ch in "-_") for ch in route_password):
        raise ConfigError(_SOURCE, "route password", "must be non-empty, of A-Z a-z 0-9 - _")
    b = settings.broker
    replicas = min(3, len(settings.nodes))
    routes = ", ".join(f"nats-route://{ROUTE_USER}:{route_password}@{other.host}:"
                       f"{other.cluster_port}" for other in settings.nodes if other is not node)
    lines = [
        f"# NATS node {node.name} of showdown venue {b.venue!r}: written by "
        "`showdown broker config --kind nats`.",
        "# Secret (the route password): keep it mode 0640 root:nats. Regenerate, do not edit.",
        f"server_name: {_q(node.name)}",
        f"listen: {_q(f'127.0.0.1:{node.client_port}')}  # no user may connect over NATS",
        f"http: {_q(node.monitor)}  # monitoring: /healthz, /jsz (showdown doctor)",
        "",
        f"include {_q(AUTH_FILE)}",
        "",
        "jetstream {",
        f"  store_dir: {_q(node.store_dir)}  # a local disk, not NFS",
        f"  max_file: {settings.max_file}",
        "}",
        "",
    ]
    if len(settings.nodes) > 1:  # JetStream refuses a cluster block without routes
        lines += [
            "cluster {",
            f"  name: {_q(settings.cluster_name)}",
            f"  listen: {_q(f'{node.host}:{node.cluster_port}')}",
            "  # Only the venue's nodes may join: a route sees every message.",
            f"  authorization {{ user: {_q(ROUTE_USER)}, password: {_q(route_password)} }}",
            f"  routes: [{routes}]",
            "}",
            "",
        ]
    lines += [
        "mqtt {",
        f"  listen: {_q(f'{node.host}:{node.mqtt_port or b.listen_port}')}",
    ]
    if b.tls is not None:
        t = b.tls
        lines += [
            "  tls {  # the venue CA's files on this node",
            f"    cert_file: {_q(t.certfile)}",
            f"    key_file: {_q(t.keyfile)}",
            f"    ca_file: {_q(t.cafile)}",
            f"    verify: {'true' if t.require_certificate else 'false'}",
            "    timeout: 2",
            "  }",
        ]
    lines += [
        "  # Sessions, retained and queued QoS 1 messages on every node (at most 3): set",
        "  # before the first MQTT client connects (the streams are made then).",
        f"  stream_replicas: {replicas}",
        f"  consumer_replicas: {replicas}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def nats_password_file(hashes: Mapping[str, str]) -> str:
    """The kept hashes: one ``username:bcrypt hash`` line per client (so a re-run keeps the
    passwords it does not rotate)."""
    lines = []
    for username, hashed in hashes.items():
        _check_hash(username, hashed)
        lines.append(f"{username}:{hashed}")
    return "\n".join(lines) + "\n"


def parse_nats_password_file(text: str) -> dict[str, str]:
    """Read :func:`nats_password_file` back into ``{username: hash}``."""
    return parse_hash_lines(text, _bcrypt_prefix)


def _bcrypt_prefix(hashed: str) -> None:
    if not hashed.startswith(_BCRYPT_PREFIXES):
        raise ConfigError(_SOURCE, "password hash", "expected a bcrypt hash ('$2a$...')")


def _check_hash(username: str, hashed: str) -> None:
    if not hashed.startswith(_BCRYPT_PREFIXES) or len(hashed) != 60:
        raise ConfigError(_SOURCE, "password hash",
                          f"{username!r}: expected a bcrypt hash ('$2a$...', 60 characters)")


def _check_word(key: str, value: str) -> None:
    if not value or any(ch.isspace() or ch in "\"'\\#" for ch in value) or "\0" in value:
        raise ConfigError(_SOURCE, key, f"must be one word without spaces or quotes, got {value!r}")


def _q(value: str) -> str:
    if any(ch in value for ch in '"\\\n\r\0'):
        raise ConfigError(_SOURCE, "value", f"{value!r} cannot be written in a NATS config")
    return f'"{value}"'


def _list(values: list[str]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _deny(values: list[str]) -> str:
    return f", deny: {_list(values)}" if values else ""
