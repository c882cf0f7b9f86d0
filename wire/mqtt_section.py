"""The keys every ``[mqtt]`` section shares (table, central service): the broker
addresses, ``broker = "host:port"`` or a cluster's ``brokers = ["host:port", ...]`` (one of the
two), the credentials file `showdown broker config` writes, and ``keepalive_s``'s range.
Errors are ConfigErrors naming the file and the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from game.errors import ConfigError

__all__ = ["CREDENTIAL_KEYS", "KEEPALIVE_DEFAULT_S", "KEEPALIVE_RANGE_S", "MAX_BROKERS",
           "Address", "keepalive_problem", "parse_address", "parse_brokers", "read_credentials"]

Address = tuple[str, int]
MAX_BROKERS: Final = 16  # a venue cluster has three or five nodes; more is a typo
# ``keepalive_s``: a silent link is noticed within about twice this (D403); under 2 s
# a busy machine's pause drops connections, over 10 minutes a frozen link goes unnoticed.
KEEPALIVE_DEFAULT_S: Final = 30
KEEPALIVE_RANGE_S: Final = (2, 600)
CREDENTIAL_KEYS: Final = frozenset({"host", "port", "username", "password", "tls", "ca_file",
                                    "cert_file", "key_file"})
_KINDS: Final = {"host": str, "username": str, "password": str, "tls": bool, "ca_file": str,
                 "cert_file": str, "key_file": str}


def keepalive_problem(value: int) -> str | None:
    """Why ``keepalive_s`` is refused (outside KEEPALIVE_RANGE_S), or None."""
    low, high = KEEPALIVE_RANGE_S
    if low <= value <= high:
        return None
    return (f"must be {low}..{high} seconds, got {value} (the link notices a silent broker"
            " within about twice this)")


def parse_address(text: str) -> Address:
    """``"host:port"`` (IPv6 as ``"[::1]:1883"``) as (host, port); ValueError saying why."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f'{text!r} is not "host:port" (port 1..65535)')
    return host, int(port_text)


def parse_brokers(section: Mapping[str, Any], *, source: str, embedded: bool = False
                  ) -> tuple[Address, ...] | None:
    """The addresses of ``broker`` or ``brokers`` in ``section`` (None if neither is given).

    ``embedded``: whether ``broker = "embedded"`` is allowed (a table daemon only); it is
    returned as an empty tuple. Giving both keys, an empty list, a repeated address or a
    value that is not ``"host:port"`` is a ConfigError naming the key.
    """
    if "broker" in section and "brokers" in section:
        raise ConfigError(source, "mqtt.brokers",
                          'give either broker = "host:port" or brokers = ["host:port", ...],'
                          " not both")
    if "broker" in section:
        value = section["broker"]
        if not isinstance(value, str):
            raise ConfigError(source, "mqtt.broker",
                              f'expected "host:port" as text, got {type(value).__name__}')
        if value.strip() == "embedded":
            if embedded:
                return ()
            raise ConfigError(source, "mqtt.broker",
                              "the central service and the desk connect to the venue's"
                              ' broker: write "host:port" ("embedded" is for a table daemon;'
                              " to watch a demo table, give the port its embedded broker"
                              ' printed, e.g. "127.0.0.1:1883")')
        try:
            return (parse_address(value),)
        except ValueError as exc:
            raise ConfigError(source, "mqtt.broker", str(exc)) from None
    if "brokers" not in section:
        return None
    value = section["brokers"]
    if not isinstance(value, list) or not value:
        raise ConfigError(source, "mqtt.brokers",
                          'expected a list of "host:port", e.g. ["mqtt1:1883", "mqtt2:1883"]')
    if len(value) > MAX_BROKERS:
        raise ConfigError(source, "mqtt.brokers",
                          f"{len(value)} addresses: at most {MAX_BROKERS}")
    addresses: list[Address] = []
    for i, item in enumerate(value):
        key = f"mqtt.brokers[{i}]"
        if not isinstance(item, str):
            raise ConfigError(source, key, f'expected "host:port" as text, got'
                                           f" {type(item).__name__}")
        if item.strip() == "embedded":
            raise ConfigError(source, key, '"embedded" is one broker of its own: write'
                                           ' broker = "embedded" instead of a list')
        try:
            address = parse_address(item)
        except ValueError as exc:
            raise ConfigError(source, key, str(exc)) from None
        if address in addresses:
            raise ConfigError(source, key, f"{item.strip()!r} is listed twice")
        addresses.append(address)
    return tuple(addresses)


def read_credentials(path: Path, *, source: str) -> dict[str, Any]:
    """The [mqtt] table of a credentials file written by `showdown broker config` (host, port,
    username, password, TLS files; relative file names made relative to the file's folder).

    Any problem is a ConfigError on ``mqtt.credentials_file`` of ``source`` saying what.
    """
    key = "mqtt.credentials_file"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(source, key, f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(source, key, f"{path} is not a TOML file: {exc}") from None
    table = data.get("mqtt")
    if not isinstance(table, dict) or set(data) != {"mqtt"}:
        raise ConfigError(source, key, f"{path} must hold one [mqtt] table (as `showdown"
                                       " broker config` writes it)")
    unknown = sorted(set(table) - CREDENTIAL_KEYS)
    if unknown:
        raise ConfigError(source, key, f"{path}: unknown key mqtt.{unknown[0]}")
    for name, kind in _KINDS.items():
        if name in table and not isinstance(table[name], kind):
            what = "true or false" if kind is bool else "text"
            raise ConfigError(source, key, f"{path}: mqtt.{name} must be {what}")
    port = table.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                             or not 1 <= port <= 65535):
        raise ConfigError(source, key, f"{path}: mqtt.port must be 1..65535")
    for name in ("ca_file", "cert_file", "key_file"):
        if name in table:
            p = Path(table[name]).expanduser()
            table[name] = str(p if p.is_absolute() else path.parent.absolute() / p)
    return table
