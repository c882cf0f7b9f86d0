"""The house's desk sign-in rules (docs/desk-auth.md): how many wrong passphrases lock an
account and for how long, how long a desk session lasts and how long it may sit unused.

Settings of the house: the ``[auth]`` section of desk.toml (the command line's sign-ins) and
``[desk_auth]`` of the leaderboard service's config (the desk API's); `parse_auth_policy`
reads either, every error a ConfigError naming the file and the key. A session keeps the
expiry and idle timeout it was opened with, so every reader of the database agrees on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from game.errors import ConfigError

__all__ = ["AUTH_KEYS", "AuthPolicy", "parse_auth_policy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthPolicy:
    """``failures`` wrong passphrases within ``window`` lock the account for ``lock``; a
    session lasts at most ``lifetime`` and ends after ``idle`` without a desk action."""

    failures: int = 5
    window: timedelta = timedelta(minutes=15)
    lock: timedelta = timedelta(minutes=15)
    lifetime: timedelta = timedelta(hours=12)  # a shift
    idle: timedelta = timedelta(minutes=30)


# key -> (lowest, highest, the unit's minutes)
_LIMITS: Final[dict[str, tuple[int, int, int]]] = {
    "failures": (3, 20, 0),
    "failure_window_minutes": (1, 24 * 60, 1),
    "lock_minutes": (1, 24 * 60, 1),
    "session_hours": (1, 24, 60),
    "idle_minutes": (1, 8 * 60, 1),
}
AUTH_KEYS: Final = frozenset(_LIMITS)


def parse_auth_policy(table: Mapping[str, Any], *, source: str, section: str) -> AuthPolicy:
    """The policy of a config's ``[section]`` (absent keys: the defaults)."""
    values: dict[str, int] = {}
    for key, value in table.items():
        if key not in _LIMITS:
            raise ConfigError(source, f"{section}.{key}",
                              f"unknown key (known: {', '.join(sorted(_LIMITS))})")
        low, high, _ = _LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(source, f"{section}.{key}",
                              f"must be a whole number {low}..{high}, got {value!r}")
        values[key] = value
    default = AuthPolicy()

    def minutes(key: str, fallback: timedelta) -> timedelta:
        return fallback if key not in values else timedelta(
            minutes=values[key] * _LIMITS[key][2])
    return AuthPolicy(failures=values.get("failures", default.failures),
                      window=minutes("failure_window_minutes", default.window),
                      lock=minutes("lock_minutes", default.lock),
                      lifetime=minutes("session_hours", default.lifetime),
                      idle=minutes("idle_minutes", default.idle))
