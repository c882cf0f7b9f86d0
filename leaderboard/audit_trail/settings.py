"""The ``[audit]`` section of the leaderboard service's config: how often the service signs
the audit chain's head (docs/leaderboard.md, Configuration; docs/audit-trail.md). Every error
is a ConfigError naming the file and the key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from game.errors import ConfigError

__all__ = ["AUDIT_KEYS", "AuditSettings", "parse_audit_settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditSettings:
    """A head is signed once ``head_every_rows`` rows wait, or ``head_every_s`` seconds after
    the last head when any row waits; and at start and shutdown."""

    head_every_rows: int = 100
    head_every_s: int = 300


_LIMITS: Final[dict[str, tuple[int, int]]] = {
    "head_every_rows": (1, 100_000),
    "head_every_s": (10, 86_400),
}
AUDIT_KEYS: Final = frozenset(_LIMITS)


def parse_audit_settings(table: Mapping[str, Any], *, source: str) -> AuditSettings:
    """The settings of a config's ``[audit]`` table (absent keys: the defaults)."""
    values: dict[str, int] = {}
    for key, value in table.items():
        if key not in _LIMITS:
            raise ConfigError(source, f"audit.{key}",
                              f"unknown key (known: {', '.join(sorted(_LIMITS))})")
        low, high = _LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(source, f"audit.{key}",
                              f"must be a whole number {low}..{high}, got {value!r}")
        values[key] = value
    return AuditSettings(**values)
