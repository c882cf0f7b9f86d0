"""The ``[bench]`` section of the table config: the technician's bench (docs/operations/bench.md),
a page and an API that drive a simulated table's simulated devices, served by the daemon only
when enabled, on its own address and port, to the clients it lists. Documented in
docs/table-config.md ("[bench]")."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Final

from game.errors import ConfigError

__all__ = ["BenchConfig", "parse_bench"]

_KEYS: Final = frozenset({"enabled", "bind", "port", "allowed_clients"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """Where the bench listens and who may reach it (off unless enabled)."""

    enabled: bool = False
    bind: str = "127.0.0.1"  # the table PC's own address; never 0.0.0.0 by default
    port: int = 8091  # 0 = any free port (tests)
    allowed_clients: tuple[str, ...] = ("127.0.0.1", "::1")


def _ip(value: object) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def parse_bench(data: Any, *, source: str, simulated: bool) -> BenchConfig:
    """Read a ``[bench]`` table (absent: no bench); ``simulated``: whether any of the table's
    devices is simulated (a bench without one is a ConfigError naming bench.enabled)."""
    if data is None:
        return BenchConfig()
    if not isinstance(data, dict):
        raise ConfigError(source, "bench", "must be a table")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(source, f"bench.{unknown[0]}",
                          f"unknown key (known: {', '.join(sorted(_KEYS))})")
    d = BenchConfig()

    def get(key: str, kind: type, default: Any) -> Any:
        value = data.get(key, default)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(source, f"bench.{key}",
                              f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    enabled = get("enabled", bool, d.enabled)
    bind = get("bind", str, d.bind)
    if not _ip(bind):
        raise ConfigError(source, "bench.bind", f"must be an IP address, got {bind!r}")
    port = get("port", int, d.port)
    if not 0 <= port <= 65535:
        raise ConfigError(source, "bench.port", "must be 0..65535")
    clients = get("allowed_clients", list, list(d.allowed_clients))
    bad = [c for c in clients if not _ip(c)]
    if bad or not clients:
        raise ConfigError(source, "bench.allowed_clients",
                          f"must be a non-empty list of IP addresses (bad: {bad[:1]})")
    if enabled and not simulated:
        raise ConfigError(source, "bench.enabled",
                          'the bench drives simulated devices, and no device of this table'
                          ' has kind = "sim"')
    return BenchConfig(enabled=enabled, bind=bind, port=port,
                       allowed_clients=tuple(str(c) for c in clients))
