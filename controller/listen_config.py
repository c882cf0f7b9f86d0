"""What the table config's web sections (``[console]``, ``[bench]``) read alike: a table of
known keys with typed values, and where the server listens (``bind``, ``port``) and for whom
(``allowed_clients``). Each error names the section and key."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from game.errors import ConfigError

__all__ = ["Listen", "SectionReader"]


@dataclass(frozen=True, slots=True)
class Listen:
    """Where a web section's server listens and the clients it answers."""

    bind: str
    port: int
    allowed_clients: tuple[str, ...]


def _is_ip(value: object) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


class SectionReader:
    """One section of a config file: its keys checked against ``known``, its values typed."""

    def __init__(self, data: Any, *, source: str, section: str, known: frozenset[str]) -> None:
        if not isinstance(data, dict):
            raise ConfigError(source, section, "must be a table")
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(source, f"{section}.{unknown[0]}",
                              f"unknown key (known: {', '.join(sorted(known))})")
        self.data: Mapping[str, Any] = data
        self.source, self.section = source, section

    def error(self, key: str, message: str) -> ConfigError:
        """A ConfigError naming ``section.key``."""
        return ConfigError(self.source, f"{self.section}.{key}", message)

    def get(self, key: str, kind: type, default: Any) -> Any:
        """The key's value of type ``kind`` (an int stands for a float), else ``default``."""
        value = self.data.get(key, default)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    def listen(self, default: Listen) -> Listen:
        """``bind`` (an IP address), ``port`` (0..65535, 0 = any free port) and
        ``allowed_clients`` (a non-empty list of IP addresses)."""
        bind = self.get("bind", str, default.bind)
        if not _is_ip(bind):
            raise self.error("bind", f"must be an IP address, got {bind!r}")
        port = self.get("port", int, default.port)
        if not 0 <= port <= 65535:
            raise self.error("port", "must be 0..65535")
        clients = self.get("allowed_clients", list, list(default.allowed_clients))
        bad = [c for c in clients if not _is_ip(c)]
        if bad or not clients:
            raise self.error("allowed_clients",
                             f"must be a non-empty list of IP addresses (bad: {bad[:1]})")
        return Listen(bind, port, tuple(str(c) for c in clients))
